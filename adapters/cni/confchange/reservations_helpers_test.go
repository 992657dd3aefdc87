package confchange_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

type nopTracker struct {
	mu  sync.Mutex
	pus []ports.PU
}

func (t *nopTracker) Track(pu ports.PU) error {
	t.mu.Lock()
	t.pus = append(t.pus, pu)
	t.mu.Unlock()
	return nil
}
func (t *nopTracker) Untrack(string) bool             { return false }
func (t *nopTracker) TriggerPod(types.NamespacedName) {}

// withHostLocal copies the real host-local into the env's plugin dir and writes net's conflist in ConfDir,
// whose chain is plugins (JSON objects), with host-local's data directory e.data.
func (e *env) withHostLocal(name string, extra string) {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(testcni.PluginsDir(e.t), "host-local"))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.plugins, "host-local"), b, 0o755); err != nil {
		e.t.Fatal(err)
	}
	conf := `{"cniVersion":"1.0.0","name":"` + name + `"` + extra + `,"plugins":[{"type":"host-local","ipam":{"type":"host-local","dataDir":"` + e.data + `","ranges":[[{"subnet":"10.9.0.0/24"}]]}}]}`
	if err := os.WriteFile(filepath.Join(e.conf, "10-"+name+".conflist"), []byte(conf), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// reservation writes host-local's file for ip of container id, ifName, at when.
func (e *env) reservation(network, ip, id, ifName string, when time.Time) string {
	e.t.Helper()
	d := filepath.Join(e.data, network)
	if err := os.MkdirAll(d, 0o755); err != nil {
		e.t.Fatal(err)
	}
	p := filepath.Join(d, ip)
	if err := os.WriteFile(p, []byte(id+"\r\n"+ifName), 0o644); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Chtimes(p, when, when); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// resyncOnce runs Resync until cond holds or d passes, and returns whether cond held.
func resyncUntil(t *testing.T, c *cni.Collector, d time.Duration, cond func() bool) bool {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Resync(ctx, &nopTracker{}) }()
	deadline := time.Now().Add(d)
	ok := false
	for time.Now().Before(deadline) {
		if cond() {
			ok = true
			time.Sleep(300 * time.Millisecond) // the DEL under way ends
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	return ok
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }
