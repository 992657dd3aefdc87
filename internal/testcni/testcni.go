package testcni

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testnode"
	"github.com/podsweeper/podsweeper/ports"
)

// PluginsRel is where the real CNI plugins are, from a package directory
// under adapters/cni, when CNI_PLUGINS_DIR is not set: the clone's bin/cni,
// which `make cni-plugins` fills.
const PluginsRel = "../../../bin/cni"

// PluginsPath is the absolute directory of the real CNI plugins:
// $CNI_PLUGINS_DIR, or PluginsRel. It does not look whether they are there.
func PluginsPath() string {
	d, _ := filepath.Abs(cmp.Or(os.Getenv("CNI_PLUGINS_DIR"), PluginsRel))
	return d
}

// NeedPlugins marks t unavailable (testnode.Unavailable) when dir holds no
// host-local plugin.
func NeedPlugins(t testing.TB, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "host-local")); err != nil {
		testnode.Unavailable(t, "no host-local in %s (run `make cni-plugins`, or `make test`): %v", dir, err)
	}
}

// PluginsDir is PluginsPath, once NeedPlugins found host-local there.
func PluginsDir(t testing.TB) string {
	t.Helper()
	d := PluginsPath()
	NeedPlugins(t, d)
	return d
}

// Exists reports whether there is anything at p (a link counts, whatever it
// points to).
func Exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// Quiet is a logger that writes nothing, at every verbosity funcr's
// defaults let through.
func Quiet() logr.Logger { return funcr.New(func(string, string) {}, funcr.Options{}) }

// NopTracker is a Resync Tracker that records nothing: Untrack reports no PU.
type NopTracker struct{}

// Track does nothing.
func (NopTracker) Track(ports.PU) error { return nil }

// Untrack does nothing and reports false.
func (NopTracker) Untrack(string) bool { return false }

// TriggerPod does nothing.
func (NopTracker) TriggerPod(types.NamespacedName) {}

// Write writes content to path (mode 0644), making its directory first.
func Write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Ago is the time d ago, or the zero time when d is not above zero (a
// file Reservation leaves as written).
func Ago(d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return time.Now().Add(-d)
}

// Reservation writes host-local's reservation file <dataDir>/<network>/<ip>
// of container id's interface ifName, as host-local does, dated at (the
// zero time: as written), and returns its path.
func Reservation(t testing.TB, dataDir, network, ip, id, ifName string, at time.Time) string {
	t.Helper()
	p := filepath.Join(dataDir, network, ip)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	return WriteFile(t, p, []byte(id+"\r\n"+ifName), 0o644, at)
}

// HostLocalConflist is the conflist of network name whose one plugin is
// host-local itself, its ipam host-local in dataDir with ranges; extra
// adds (or replaces) top-level keys.
func HostLocalConflist(name, dataDir string, ranges [][]map[string]string, extra map[string]any) []byte {
	ipam := map[string]any{"type": "host-local", "dataDir": dataDir, "ranges": ranges}
	list := map[string]any{"cniVersion": "1.0.0", "name": name, "plugins": []any{map[string]any{"type": "host-local", "ipam": ipam}}}
	for k, v := range extra {
		list[k] = v
	}
	b, _ := json.Marshal(list)
	return b
}

// Subnet is the ranges of HostLocalConflist of one range: subnet.
func Subnet(subnet string) [][]map[string]string {
	return [][]map[string]string{{{"subnet": subnet}}}
}

// Address asks c's address page about ip; t fails when the page does not
// answer 200 with an AddressStatus.
func Address(t testing.TB, c *cni.Collector, ip string) cni.AddressStatus {
	t.Helper()
	rec := httptest.NewRecorder()
	c.AddressHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, cni.AddressPath+"?ip="+ip, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("address page of %s: %d %s", ip, rec.Code, rec.Body.String())
	}
	var st cni.AddressStatus
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatalf("address page of %s: %v: %s", ip, err, rec.Body.String())
	}
	return st
}

// ResyncUntil runs c.Resync with tr until cond holds, asking it every poll,
// or until timeout passes; then it stops Resync and waits for it to
// return. It reports whether cond held, and Resync's error.
func ResyncUntil(c *cni.Collector, tr cni.Tracker, timeout, poll time.Duration, cond func() bool) (bool, error) {
	return RunUntil(func(ctx context.Context) error { return c.Resync(ctx, tr) }, timeout, poll, cond)
}

// RunUntil is ResyncUntil of any run that stops when its context is done.
func RunUntil(run func(context.Context) error, timeout, poll time.Duration, cond func() bool) (bool, error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	deadline := time.Now().Add(timeout)
	held := true
	for !cond() {
		if time.Now().After(deadline) {
			held = false
			break
		}
		time.Sleep(poll)
	}
	cancel()
	return held, <-done
}

// EntryPath is the file libcni caches an attachment in:
// <cacheDir>/results/<network>-<id>-<ifName>.
func EntryPath(cacheDir, network, id, ifName string) string {
	return filepath.Join(cacheDir, "results", network+"-"+id+"-"+ifName)
}

// WriteFile writes b to path with perm, dated at (the zero time: as
// written), and returns path. It makes no directory.
func WriteFile(t testing.TB, path string, b []byte, perm os.FileMode, at time.Time) string {
	t.Helper()
	if err := os.WriteFile(path, b, perm); err != nil {
		t.Fatal(err)
	}
	if !at.IsZero() {
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	return path
}
