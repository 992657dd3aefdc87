package rounds_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// reentrant is an Observer that asks the Collector what it would free when told of one (Collector: "its methods are
// safe from any goroutine").
type reentrant struct {
	c        atomic.Pointer[cni.Collector]
	entered  chan struct{}
	returned chan int
}

func (r *reentrant) ReservationFreed(string, string)      {}
func (r *reentrant) ReservationFreeFailed(string, string) {}
func (r *reentrant) ReservationReported(string, string)   {}
func (r *reentrant) ReservationNetwork(string)            {}
func (r *reentrant) ReservationWouldFree(string, string) {
	select {
	case r.entered <- struct{}{}:
	default:
	}
	r.returned <- len(r.c.Load().WouldFree())
}

func TestAuditWouldFreeFromObserverDeadlocks(t *testing.T) {
	pd := testcni.PluginsDir(t)
	e := newEnv(t)
	write(t, filepath.Join(e.conf, "10-net.conf"), strings.ReplaceAll(hlConf, "DATA", e.data), 0)
	write(t, filepath.Join(e.data, "net", "10.22.0.5"), "gone\r\neth0", time.Hour)
	o := &reentrant{entered: make(chan struct{}, 1), returned: make(chan int, 10)}
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{pd}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: &testcni.Runtime{}, ReservationGrace: time.Minute, Observer: o, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	o.c.Store(c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = c.Resync(ctx, testcni.NopTracker{}) }() // left behind if it deadlocks
	select {
	case <-o.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("setup: the Observer was never told of a reservation a dry run would free")
	}
	select {
	case n := <-o.returned:
		if n != 1 {
			t.Logf("WouldFree from the Observer: %d", n)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Collector.WouldFree, called from the Observer's ReservationWouldFree on Resync's goroutine, did not return in 3s: " +
			"the Collector holds its own lock while it calls the Observer")
	}
}
