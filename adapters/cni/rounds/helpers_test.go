package rounds_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

type obs struct {
	mu                                   sync.Mutex
	freed, failed, would, reported, nets int
	ch                                   chan string
}

func newObs() *obs { return &obs{ch: make(chan string, 1000)} }
func (o *obs) ReservationFreed(n, r string) {
	o.mu.Lock()
	o.freed++
	o.mu.Unlock()
	o.ch <- "freed"
}
func (o *obs) ReservationFreeFailed(n, r string) {
	o.mu.Lock()
	o.failed++
	o.mu.Unlock()
	o.ch <- "failed"
}
func (o *obs) ReservationWouldFree(n, r string) {
	o.mu.Lock()
	o.would++
	o.mu.Unlock()
	o.ch <- "would"
}
func (o *obs) ReservationReported(n, r string) {
	o.mu.Lock()
	o.reported++
	o.mu.Unlock()
	o.ch <- "reported"
}
func (o *obs) ReservationNetwork(n string) { o.mu.Lock(); o.nets++; o.mu.Unlock(); o.ch <- "net" }

type env struct {
	root, cache, conf, data string
}

func newEnv(t *testing.T) env {
	root := t.TempDir()
	e := env{root: root, cache: filepath.Join(root, "cache"), conf: filepath.Join(root, "conf"), data: filepath.Join(root, "data")}
	for _, d := range []string{filepath.Join(e.cache, "results"), e.conf, e.data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func write(t *testing.T, path, content string, age time.Duration) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if age > 0 {
		m := time.Now().Add(-age)
		if err := os.Chtimes(path, m, m); err != nil {
			t.Fatal(err)
		}
	}
}

// runRound runs Resync until the first round of the reservations' sweep is seen done by done(), or timeout.
func runRound(t *testing.T, c *cni.Collector, done func() bool, timeout time.Duration) {
	t.Helper()
	_, _ = testcni.ResyncUntil(c, testcni.NopTracker{}, timeout, 20*time.Millisecond, done)
}

func page(t *testing.T, c *cni.Collector, ip string) (cni.AddressStatus, http.Header) {
	t.Helper()
	rec := httptest.NewRecorder()
	c.AddressHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, cni.AddressPath+"?ip="+ip, nil))
	var st cni.AddressStatus
	if rec.Code != 200 {
		t.Fatalf("page %s: %d %s", ip, rec.Code, rec.Body.String())
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	return st, rec.Header()
}

func stateOf(t *testing.T, c *cni.Collector, ip string) string {
	st, _ := page(t, c, ip)
	if len(st.Reservations) == 0 {
		return ""
	}
	return st.Reservations[0].State
}

// hlConf is a network "net" run by host-local itself, in the data directory DATA (replaced).
const hlConf = `{"cniVersion":"1.0.0","name":"net","type":"host-local","ipam":{"type":"host-local","dataDir":"DATA","ranges":[[{"subnet":"10.22.0.0/24"}]]}}`

// sweep sets up network "net" (host-local), writes the reservations files (ip -> content, age), runs Resync until
// every ip's page state is not "" and not "to free", and returns the collector.
func sweep(t *testing.T, rt cni.Runtime, files map[string]string, ages map[string]time.Duration, mod func(*cni.Options, env)) (*cni.Collector, env, *obs) {
	t.Helper()
	pd := testcni.PluginsDir(t)
	e := newEnv(t)
	write(t, filepath.Join(e.conf, "10-net.conf"), strings.ReplaceAll(hlConf, "DATA", e.data), 0)
	for ip, content := range files {
		age := time.Hour
		if a, ok := ages[ip]; ok {
			age = a
		}
		write(t, filepath.Join(e.data, "net", ip), content, age)
	}
	o := newObs()
	opts := cni.Options{CacheDir: e.cache, PluginDirs: []string{pd}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: rt, ReservationGrace: time.Minute, Observer: o}
	if mod != nil {
		mod(&opts, e)
	}
	c, err := cni.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	runRound(t, c, func() bool {
		for ip := range files {
			if s := stateOf(t, c, ip); s == "" || s == "to free" {
				return false
			}
		}
		return true
	}, 5*time.Second)
	return c, e, o
}
