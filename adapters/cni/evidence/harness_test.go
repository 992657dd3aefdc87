package evidence_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

type env struct {
	cache, conf, data, plugins string
}

func newEnv(t *testing.T) env {
	root := t.TempDir()
	e := env{cache: filepath.Join(root, "cache"), conf: filepath.Join(root, "conf"), data: filepath.Join(root, "data"), plugins: testcni.PluginsDir(t)}
	for _, d := range []string{e.cache, e.conf, e.data, filepath.Join(e.cache, "results")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// hostLocalConf is a conflist running host-local itself with dataDir.
func hostLocalConf(name, dataDir, subnet string, disableGC bool) []byte {
	var extra map[string]any
	if disableGC {
		extra = map[string]any{"disableGC": true}
	}
	return testcni.HostLocalConflist(name, dataDir, testcni.Subnet(subnet), extra)
}

func (e env) writeConf(t *testing.T, file string, b []byte) {
	if err := os.WriteFile(filepath.Join(e.conf, file), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// reserve writes a host-local reservation file as host-local does, dated at.
func (e env) reserve(t *testing.T, network, ip, cid, ifName string, at time.Time) string {
	return testcni.Reservation(t, e.data, network, ip, cid, ifName, at)
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
	return testcni.WriteFile(t, testcni.EntryPath(e.cache, network, cid, ifName), b, 0o600, at)
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

func (e env) opts(rt cni.Runtime) cni.Options {
	return cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		ResyncInterval: time.Hour, ReservationGrace: time.Minute, Runtime: rt, Logger: testcni.Quiet()}
}

// runRound runs Resync until cond holds (its first round), then stops it.
func runRound(t *testing.T, c *cni.Collector, cond func() bool) {
	t.Helper()
	if held, _ := testcni.ResyncUntil(c, &testcni.Recorder{}, 20*time.Second, 5*time.Millisecond, cond); !held {
		t.Fatal("the round never got there")
	}
}

func address(c *cni.Collector, ip string) cni.AddressStatus {
	rec := httptest.NewRecorder()
	c.AddressHandler().ServeHTTP(rec, httptest.NewRequest("GET", cni.AddressPath+"?ip="+ip, nil))
	var st cni.AddressStatus
	_ = json.Unmarshal(rec.Body.Bytes(), &st)
	return st
}
