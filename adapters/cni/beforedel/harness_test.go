package beforedel_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

type env struct {
	root, conf, cache, data, bin string
	mu                           sync.Mutex
	ips                          []string // the addresses reserve wrote (a Runtime's hook may reserve, under mu)
}

func newEnv(t *testing.T) *env {
	bin := testcni.PluginsDir(t)
	t.Helper()
	root := t.TempDir()
	e := &env{root: root, conf: filepath.Join(root, "net.d"), cache: filepath.Join(root, "cache"), data: filepath.Join(root, "data"), bin: bin}
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
	b := testcni.HostLocalConflist(name, e.data, ranges, extra)
	if err := os.WriteFile(filepath.Join(e.conf, file), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (e *env) reserve(t *testing.T, network, ip, id, ifName string, age time.Duration) string {
	t.Helper()
	e.mu.Lock()
	e.ips = append(e.ips, ip)
	e.mu.Unlock()
	return testcni.Reservation(t, e.data, network, ip, id, ifName, testcni.Ago(age))
}

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
	held, err := testcni.ResyncUntil(c, testcni.NopTracker{}, timeout, 5*time.Millisecond, done)
	if !held {
		t.Fatalf("round did not end within %v", timeout)
	}
	if err != nil {
		t.Fatal(err)
	}
}

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
