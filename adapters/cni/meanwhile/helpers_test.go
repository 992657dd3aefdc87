package meanwhile_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// fakeRuntime lists a fixed set of sandboxes.
type fakeRuntime struct {
	mu  sync.Mutex
	sbs []*runtimeapi.PodSandbox
	err error
}

func (f *fakeRuntime) ListPodSandbox(ctx context.Context, _ *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sbs, f.err
}

// obs records the Observer's calls with their times.
type obs struct {
	mu     sync.Mutex
	freed  []time.Time
	failed int
	would  int
	report int
}

func (o *obs) ReservationFreed(network, reason string) {
	o.mu.Lock()
	o.freed = append(o.freed, time.Now())
	o.mu.Unlock()
}
func (o *obs) ReservationFreeFailed(network, reason string) { o.mu.Lock(); o.failed++; o.mu.Unlock() }
func (o *obs) ReservationWouldFree(network, reason string)  { o.mu.Lock(); o.would++; o.mu.Unlock() }
func (o *obs) ReservationReported(network, reason string)   { o.mu.Lock(); o.report++; o.mu.Unlock() }
func (o *obs) ReservationNetwork(network string)            {}
func (o *obs) freedTimes() []time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]time.Time(nil), o.freed...)
}

type env struct {
	cache, conf, data, plugins string
}

func newEnv(t *testing.T, plugins string) env {
	t.Helper()
	root := t.TempDir()
	e := env{cache: filepath.Join(root, "cache"), conf: filepath.Join(root, "net.d"), data: filepath.Join(root, "networks"), plugins: plugins}
	for _, d := range []string{e.cache, e.conf, e.data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if e.plugins == "" {
		e.plugins = filepath.Join(root, "bin")
		if err := os.MkdirAll(e.plugins, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// reserve writes a host-local reservation file, reserved long ago.
func reserve(t *testing.T, path, content string) {
	t.Helper()
	testcni.Write(t, path, content)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

func (e env) collector(t *testing.T, mod func(*cni.Options)) *cni.Collector {
	t.Helper()
	o := cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		ResyncInterval: time.Hour, ReservationGrace: time.Minute, Runtime: &fakeRuntime{}, Logger: logr.Discard()}
	if mod != nil {
		mod(&o)
	}
	c, err := cni.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// resyncUntil runs Resync until cond holds or d passes, then stops it.
func resyncUntil(t *testing.T, c *cni.Collector, d time.Duration, cond func() bool) {
	t.Helper()
	if _, err := testcni.ResyncUntil(c, testcni.NopTracker{}, d, 20*time.Millisecond, cond); err != nil {
		t.Fatalf("Resync: %v", err)
	}
}

// rowOf returns the row of the freeing table the collector's last round took on the reservation of ip (-2: none).
func rowOf(t *testing.T, c *cni.Collector, ip string) int {
	t.Helper()
	w := httptest.NewRecorder()
	c.AddressHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, cni.AddressPath+"?ip="+ip, nil))
	var st cni.AddressStatus
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || len(st.Reservations) == 0 {
		return -2
	}
	return st.Reservations[0].Decision.Row
}
