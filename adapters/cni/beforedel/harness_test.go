package beforedel_test

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testnode"
	"github.com/podsweeper/podsweeper/ports"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// realPlugins is the directory of the real CNI plugins: CNI_PLUGINS_DIR, or the clone's bin/cni (make cni-plugins).
var realPlugins = func() string {
	d, _ := filepath.Abs(cmp.Or(os.Getenv("CNI_PLUGINS_DIR"), "../../../bin/cni"))
	return d
}()

type env struct {
	root, conf, cache, data, bin string
	mu                           sync.Mutex
	ips                          []string // the addresses reserve wrote (a Runtime's hook may reserve, under mu)
}

func newEnv(t *testing.T) *env {
	if _, err := os.Stat(filepath.Join(realPlugins, "host-local")); err != nil {
		testnode.Unavailable(t, "no host-local in %s (run `make cni-plugins`, or `make test`): %v", realPlugins, err)
	}
	t.Helper()
	root := t.TempDir()
	e := &env{root: root, conf: filepath.Join(root, "net.d"), cache: filepath.Join(root, "cache"), data: filepath.Join(root, "data"), bin: realPlugins}
	for _, d := range []string{e.conf, e.cache, e.data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// hostLocalConf writes a conflist of one host-local plugin (itself) with the given range sets.
func (e *env) hostLocalConf(t *testing.T, file, name string, ranges [][]map[string]string, extra map[string]any) {
	t.Helper()
	ipam := map[string]any{"type": "host-local", "dataDir": e.data, "ranges": ranges}
	plugin := map[string]any{"type": "host-local", "ipam": ipam}
	list := map[string]any{"cniVersion": "1.0.0", "name": name, "plugins": []any{plugin}}
	for k, v := range extra {
		list[k] = v
	}
	b, _ := json.Marshal(list)
	if err := os.WriteFile(filepath.Join(e.conf, file), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (e *env) reserve(t *testing.T, network, ip, id, ifName string, age time.Duration) string {
	t.Helper()
	dir := filepath.Join(e.data, network)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, ip)
	e.mu.Lock()
	e.ips = append(e.ips, ip)
	e.mu.Unlock()
	if err := os.WriteFile(p, []byte(id+"\r\n"+ifName), 0o644); err != nil {
		t.Fatal(err)
	}
	if age > 0 {
		at := time.Now().Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// fakeRuntime lists sbs; hook runs on each call (n counts from 1).
type fakeRuntime struct {
	mu   sync.Mutex
	n    int
	hook func(n int)
	sbs  func(n int) []*runtimeapi.PodSandbox
}

func (f *fakeRuntime) ListPodSandbox(ctx context.Context, _ *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	if f.hook != nil {
		f.hook(n)
	}
	if f.sbs != nil {
		return f.sbs(n), nil
	}
	return nil, nil
}

func (f *fakeRuntime) calls() int { f.mu.Lock(); defer f.mu.Unlock(); return f.n }

type nopTracker struct{}

func (nopTracker) Track(ports.PU) error            { return nil }
func (nopTracker) Untrack(string) bool             { return false }
func (nopTracker) TriggerPod(types.NamespacedName) {}

// obs records the Observer's calls.
type obs struct {
	mu     sync.Mutex
	events []string
	ch     chan string
}

func newObs() *obs { return &obs{ch: make(chan string, 1024)} }
func (o *obs) add(s string) {
	o.mu.Lock()
	o.events = append(o.events, s)
	o.mu.Unlock()
	select {
	case o.ch <- s:
	default:
	}
}
func (o *obs) ReservationFreed(n, r string)      { o.add("freed " + n + " " + r) }
func (o *obs) ReservationFreeFailed(n, r string) { o.add("failed " + n + " " + r) }
func (o *obs) ReservationWouldFree(n, r string)  { o.add("would " + n + " " + r) }
func (o *obs) ReservationReported(n, r string)   { o.add("reported " + n + " " + r) }
func (o *obs) ReservationNetwork(n string)       { o.add("network " + n) }
func (o *obs) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.events...)
}

func (e *env) opts(rt cni.Runtime, o cni.Observer) cni.Options {
	return cni.Options{CacheDir: e.cache, PluginDirs: []string{e.bin}, ConfDir: e.conf, HostLocalDataDir: e.data,
		ResyncInterval: time.Hour, Runtime: rt, ReservationGrace: time.Minute, Observer: o}
}

// oneRound runs Resync until its first sweep is over: done tells it (polled), then it stops Resync.
func oneRound(t *testing.T, c *cni.Collector, done func() bool, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Resync(ctx, nopTracker{}) }()
	deadline := time.Now().Add(timeout)
	for !done() {
		if time.Now().After(deadline) {
			cancel()
			<-errc
			t.Fatalf("round did not end within %v", timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

var _ = fmt.Sprintf

func podOf(uid string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: types.UID(uid)}}
}

// settled reports whether the round decided and carried out every reservation reserve wrote: the address page
// tells each in a state other than "to free" (a reservation kept, never touched, or freed), or none.
func (e *env) settled(t *testing.T, c *cni.Collector) bool {
	t.Helper()
	e.mu.Lock()
	ips := slices.Clone(e.ips)
	e.mu.Unlock()
	for _, ip := range ips {
		rec := httptest.NewRecorder()
		c.AddressHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/?ip="+ip, nil))
		var st cni.AddressStatus
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
			t.Fatalf("the address page of %s: %v", ip, err)
		}
		if st.ReservationsRead == nil {
			return false
		}
		for _, r := range st.Reservations {
			if r.State == "" || r.State == cni.ReservationToFree {
				return false
			}
		}
	}
	return true
}

// entryJSON returns a libcni cache entry of a pod's attachment, its config conf (network name of it).
func entryJSON(conf []byte, network, id, ifName, uid, netns, ip string) []byte {
	entry := map[string]any{"kind": "cniCacheV1", "containerId": id, "config": base64.StdEncoding.EncodeToString(conf), "ifName": ifName,
		"networkName": network, "netns": netns, "cniArgs": [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_UID", uid}, {"K8S_POD_NAMESPACE", "default"}, {"K8S_POD_NAME", "web"}},
		"result": json.RawMessage(`{"cniVersion":"1.0.0","ips":[{"address":"` + ip + `/24"}]}`)}
	b, _ := json.Marshal(entry)
	return b
}
