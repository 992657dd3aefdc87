package deletion_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// gateClock4 is the real clock; once armed, the next read of it waits until open: it pins a check inside the engine's
// lock (settle reads the clock there), as a check waits there in production for a Status or Backlog over every PU.
type gateClock4 struct {
	clock.RealClock
	mu    sync.Mutex
	armed bool
	gate  chan struct{}
}

func (g *gateClock4) wait() {
	g.mu.Lock()
	var ch chan struct{}
	if g.armed {
		g.armed, ch = false, g.gate
	}
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
}
func (g *gateClock4) Now() time.Time                  { g.wait(); return g.RealClock.Now() }
func (g *gateClock4) Since(t time.Time) time.Duration { g.wait(); return g.RealClock.Since(t) }
func (g *gateClock4) arm()                            { g.mu.Lock(); g.armed, g.gate = true, make(chan struct{}); g.mu.Unlock() }
func (g *gateClock4) open()                           { g.mu.Lock(); close(g.gate); g.mu.Unlock() }

// Promise (go doc Engine.Start): "Once ctx is done, no check of its own and no DestroyPU of them starts"; engine.md:21-22
// "once its context is done no check and no destroy starts"; node-or-cluster.md:25 "a leader that loses the Lease
// starts no destroy from then on".
//
// A check of P reads "not found" in time; it is held in the engine's lock while it records its verdict (here by a slow
// clock read; in production the same window is the wait for that lock behind a Status or Backlog over every PU at a
// scrape). Start's context ends meanwhile. Once the lock is free the check calls DestroyPU anyway, with a context already
// cancelled: a destroy starts after Start's context is done (after the Lease was lost).
func TestAuditNoDestroyStartsAfterStartContextDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := &gateClock4{}
		cluster := deletiontest.NewCluster()
		p := cluster.CreatePod(nsKey("web"), "node-a", "")
		var armed atomic.Bool
		releaseGet := make(chan struct{})
		getter := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			if armed.Load() && k == p.Pod {
				<-releaseGet
			}
			return cluster.GetPod(ctx, k)
		})
		var stopped atomic.Bool
		var late atomic.Int32
		policy := ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
			if stopped.Load() {
				late.Add(1)
			}
			return nil
		})
		e := deletiontest.NewEngine(t, getter, policy, deletion.Options{Clock: clk})
		if err := e.Track(p); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = e.Start(ctx); close(done) }()
		deletiontest.Advance(time.Second)

		cluster.DeletePod(p.Pod)
		armed.Store(true)
		e.TriggerPod(p.Pod)
		synctest.Wait() // the check of P is in GetPod

		clk.arm()
		close(releaseGet) // GetPod answers "not found"; the check records its verdict under the engine's lock
		synctest.Wait()   // ...and is held there
		stopped.Store(true)
		cancel() // Start's context ends (the Lease is lost)
		clk.open()
		<-done
		time.Sleep(time.Minute)
		if n := late.Load(); n > 0 {
			t.Errorf("%d DestroyPU call(s) started after Start's context was done", n)
		}
	})
}
