package evidence_test

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testnode"
	"github.com/podsweeper/podsweeper/ports"
)

// pluginsDir is the real CNI plugins' directory: $CNI_PLUGINS_DIR, or the one `make cni-plugins` fills.
func pluginsDir(t *testing.T) string {
	d, _ := filepath.Abs(cmp.Or(os.Getenv("CNI_PLUGINS_DIR"), "../../../bin/cni"))
	if _, err := os.Stat(filepath.Join(d, "host-local")); err != nil {
		testnode.Unavailable(t, "no host-local in %s (run `make cni-plugins`, or `make test`): %v", d, err)
	}
	return d
}

type env struct {
	cache, conf, data, plugins string
}

func newEnv(t *testing.T) env {
	root := t.TempDir()
	e := env{cache: filepath.Join(root, "cache"), conf: filepath.Join(root, "conf"), data: filepath.Join(root, "data"), plugins: pluginsDir(t)}
	for _, d := range []string{e.cache, e.conf, e.data, filepath.Join(e.cache, "results")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// hostLocalConf is a conflist running host-local itself with dataDir.
func hostLocalConf(name, dataDir, subnet string, disableGC bool) []byte {
	m := map[string]any{"cniVersion": "1.0.0", "name": name, "plugins": []any{map[string]any{
		"type": "host-local", "ipam": map[string]any{"type": "host-local", "dataDir": dataDir, "ranges": []any{[]any{map[string]any{"subnet": subnet}}}},
	}}}
	if disableGC {
		m["disableGC"] = true
	}
	b, _ := json.Marshal(m)
	return b
}

func (e env) writeConf(t *testing.T, file string, b []byte) {
	if err := os.WriteFile(filepath.Join(e.conf, file), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// reserve writes a host-local reservation file as host-local does, dated at.
func (e env) reserve(t *testing.T, network, ip, cid, ifName string, at time.Time) string {
	d := filepath.Join(e.data, network)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(d, ip)
	if err := os.WriteFile(p, []byte(cid+"\r\n"+ifName), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
	return p
}

// entry writes a libcni cache entry.
func (e env) entry(t *testing.T, conf []byte, network, cid, ifName, netns, uid, ns, name string, result string, at time.Time) string {
	args := [][2]string{{"IgnoreUnknown", "1"}}
	if uid != "" {
		args = append(args, [2]string{"K8S_POD_UID", uid})
	}
	if ns != "" {
		args = append(args, [2]string{"K8S_POD_NAMESPACE", ns})
	}
	if name != "" {
		args = append(args, [2]string{"K8S_POD_NAME", name})
	}
	m := map[string]any{"kind": "cniCacheV1", "containerId": cid, "config": base64.StdEncoding.EncodeToString(conf), "ifName": ifName,
		"networkName": network, "cniArgs": args}
	if netns != "" {
		m["netns"] = netns
	}
	if result != "" {
		m["result"] = json.RawMessage(result)
	}
	b, _ := json.Marshal(m)
	p := filepath.Join(e.cache, "results", network+"-"+cid+"-"+ifName)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if !at.IsZero() {
		os.Chtimes(p, at, at)
	}
	return p
}

// fakeRuntime answers ListPodSandbox with what list returns.
type fakeRuntime struct {
	mu    sync.Mutex
	list  func(n int) ([]*runtimeapi.PodSandbox, error)
	calls int
}

func (f *fakeRuntime) ListPodSandbox(ctx context.Context, _ *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	f.mu.Lock()
	f.calls++
	n := f.calls
	l := f.list
	f.mu.Unlock()
	if l == nil {
		return nil, nil
	}
	return l(n)
}

func sbx(id, uid string, ready bool, created time.Time) *runtimeapi.PodSandbox {
	st := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if ready {
		st = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	s := &runtimeapi.PodSandbox{Id: id, State: st, Labels: map[string]string{"io.kubernetes.pod.uid": uid},
		Metadata: &runtimeapi.PodSandboxMetadata{Uid: uid, Name: "p", Namespace: "ns"}}
	if !created.IsZero() {
		s.CreatedAt = created.UnixNano()
	}
	return s
}

type tracker struct {
	mu       sync.Mutex
	tracked  []ports.PU
	untracks []string
	triggers []types.NamespacedName
}

func (tr *tracker) Track(pu ports.PU) error {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.tracked = append(tr.tracked, pu)
	return nil
}
func (tr *tracker) Untrack(puid string) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.untracks = append(tr.untracks, puid)
	return true
}
func (tr *tracker) TriggerPod(n types.NamespacedName) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.triggers = append(tr.triggers, n)
}

func (e env) opts(rt cni.Runtime) cni.Options {
	return cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		ResyncInterval: time.Hour, ReservationGrace: time.Minute, Runtime: rt, Logger: quiet()}
}

// runRound runs Resync until cond holds (its first round), then stops it.
func runRound(t *testing.T, c *cni.Collector, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Resync(ctx, &tracker{}) }()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatal("the round never got there")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func quiet() logr.Logger { return funcr.New(func(string, string) {}, funcr.Options{}) }

func address(c *cni.Collector, ip string) cni.AddressStatus {
	rec := httptest.NewRecorder()
	c.AddressHandler().ServeHTTP(rec, httptest.NewRequest("GET", cni.AddressPath+"?ip="+ip, nil))
	var st cni.AddressStatus
	_ = json.Unmarshal(rec.Body.Bytes(), &st)
	return st
}
