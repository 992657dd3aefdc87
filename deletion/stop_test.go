package deletion_test

// What stops once Start's context is done, and what does not: no check and
// no DestroyPU of Start's own starts (a check held in the engine's lock
// included), Track fails with ErrNotRunning while Start stops and after it
// returned, the Observer hears nothing from a late Inventory once Start has
// returned; a Sweep under way goes on until its own context is done.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// Start: "Once ctx is done, no check of its own and no DestroyPU of them starts". Start with a cancelled context.
func TestAuditHoldsStartWithCancelledContextChecksNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{})
		pu := cluster.CreatePod(key("a"), "node-a", "")
		_ = engine.Track(pu)
		cluster.DeletePod(pu.Pod)
		engine.TriggerAll()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := engine.Start(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if cluster.AllReads() != 0 || policy.CallCount() != 0 {
			t.Errorf("%d reads, %d destroys after Start on a cancelled context", cluster.AllReads(), policy.CallCount())
		}
		if err := engine.LivenessCheck(nil); !errors.Is(err, deletion.ErrNotRunning) {
			t.Errorf("LivenessCheck after Start returned: %v", err)
		}
	})
}

// Sweep: "A ctx done already checks nothing". A Sweep called with a cancelled context, with or without Start (whose
// workers would run its checks), reads no pod and destroys nothing, every time.
func TestASweepWithACancelledContextChecksNothing(t *testing.T) {
	for i := range 20 {
		synctest.Test(t, func(t *testing.T) {
			cluster := deletiontest.NewCluster()
			policy := &deletiontest.Policy{}
			engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{SweepInterval: time.Hour})
			pu := cluster.CreatePod(key("a"), "node-a", "")
			_ = engine.Track(pu)
			cluster.DeletePod(pu.Pod)
			if i%2 == 0 {
				deletiontest.Start(t, engine)
				synctest.Wait()
			}
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			engine.Sweep(ctx)
			synctest.Wait()
			if cluster.AllReads() != 0 || policy.CallCount() != 0 {
				t.Fatalf("%d reads, %d destroys after a Sweep on a cancelled context", cluster.AllReads(), policy.CallCount())
			}
		})
	}
}

// docs/sdk/engine.md:21-22: "`Start` returns soon after its context ends, even with a hung port; once its context is
// done no check and no destroy starts." deletion/workers.go:19 (go doc Engine.Start): "Once ctx is done, no check of
// its own and no DestroyPU of them starts".
//
// A TriggerPod made right after Start's context is cancelled (TriggerPod is documented to do nothing only once Start
// has returned) wakes one of Start's workers, which begins a check: GetPod is called with the dead context, fails,
// and the Observer hears a spurious EventGetFailed.
func TestAuditNoCheckStartsOnceStartsContextIsDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		evs := &deletiontest.Events{}
		e := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{Observer: evs})
		pu := cluster.CreatePod(nsKey("a"), "", "")
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		returned := make(chan error)
		go func() { returned <- e.Start(ctx) }()
		synctest.Wait()
		reads, failed := cluster.Reads(pu.Pod), evs.Count(deletion.EventGetFailed)

		cancel() // Start's context is done from here on
		e.TriggerPod(pu.Pod)
		<-returned
		synctest.Wait()

		if n := cluster.Reads(pu.Pod) - reads; n != 0 {
			t.Errorf("%d check(s) began after Start's context was done (GetPod called); %d EventGetFailed told",
				n, evs.Count(deletion.EventGetFailed)-failed)
		}
	})
}

// gateClock is the real clock; once armed, the next read of it waits until open: it pins a check inside the engine's
// lock (settle reads the clock there), as a check waits there in production for a Status or Backlog over every PU.
type gateClock struct {
	clock.RealClock
	mu    sync.Mutex
	armed bool
	gate  chan struct{}
}

func (g *gateClock) wait() {
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
func (g *gateClock) Now() time.Time                  { g.wait(); return g.RealClock.Now() }
func (g *gateClock) Since(t time.Time) time.Duration { g.wait(); return g.RealClock.Since(t) }
func (g *gateClock) arm()                            { g.mu.Lock(); g.armed, g.gate = true, make(chan struct{}); g.mu.Unlock() }
func (g *gateClock) open()                           { g.mu.Lock(); close(g.gate); g.mu.Unlock() }

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
		clk := &gateClock{}
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

// docs/sdk/engine.md:4-5: "`Track` ... once `Start`'s context is done it fails with `ErrNotRunning`";
// deletion/queue.go:431 (go doc Engine.Track): "once Start's context is done (Start stops), nothing would check it:
// Track returns an error wrapping ErrNotRunning."
//
// Track right after Start's context is cancelled returns nil: the engine only notices the context once Start's own
// goroutine has run, and the PU is tracked by an engine that never checks it again.
func TestAuditTrackFailsOnceStartsContextIsDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		e := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{})
		ctx, cancel := context.WithCancel(t.Context())
		returned := make(chan error)
		go func() { returned <- e.Start(ctx) }()
		synctest.Wait()

		pu := cluster.CreatePod(nsKey("a"), "", "")
		cancel() // Start's context is done from here on
		err := e.Track(pu)
		<-returned

		if !errors.Is(err, deletion.ErrNotRunning) {
			t.Errorf("Track after Start's context is done returned %v, want ErrNotRunning; the engine, stopped, tracks %d PU(s)",
				err, e.Len())
		}
	})
}

// Track: "once Start's context is done (Start stops), nothing would check it: Track returns an error wrapping
// ErrNotRunning"; ErrNotRunning: "Start has not been called, or is stopping or has returned". While Start waits its
// ShutdownTimeout for a check stuck in a port, it is stopping: Track fails, and says so.
func TestAuditHoldsTrackFailsOnceStartsContextIsDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := make(chan struct{})
		getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			<-hang // ignores its context
			return nil, errors.New("late")
		})
		engine := deletiontest.NewEngine(t, getter, &deletiontest.Policy{}, deletion.Options{ShutdownTimeout: 10 * time.Second})
		if err := engine.Track(ports.PU{PUID: "uid-1", Pod: nsKey("web")}); err != nil {
			t.Fatal(err)
		}
		engine.TriggerAll()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- engine.Start(ctx) }()
		synctest.Wait()
		cancel()
		time.Sleep(time.Second) // Start waits for the stuck check, up to 10s
		select {
		case <-done:
			t.Fatal("Start returned already")
		default:
		}
		err := engine.Track(ports.PU{PUID: "uid-2", Pod: nsKey("db")})
		if !errors.Is(err, deletion.ErrNotRunning) || !strings.Contains(err.Error(), "context is done") {
			t.Errorf("Track while Start stops: %v, want ErrNotRunning saying Start's context is done", err)
		}
		<-done
		close(hang)
	})
}

// TestTrackAfterStartHasReturnedFails: once Start has returned nothing
// checks a PU any more, so Track says so with an error wrapping
// ErrNotRunning instead of nil.
func TestTrackAfterStartHasReturnedFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := deletiontest.NewEngine(t, goneGetter, &deletiontest.Policy{}, deletion.Options{})
		stop := deletiontest.Start(t, c)
		synctest.Wait()
		stop()
		assert.ErrorIs(t, c.Track(pu("a")), deletion.ErrNotRunning)
	})
}

// Promise (go doc deletion.Observer): "Observe is called synchronously: EventTracked and EventUntracked in the Track or
// Untrack call, EventRestored and the Inventory's EventTracked in Start". go doc Engine.Start: "Start returns within
// about ShutdownTimeout even when a port hangs, the Inventory included"; Engine.Track: "once Start's context is done
// (Start stops), nothing would check it".
//
// The Inventory is slow and ignores its context: it answers 5 s after Start's context is done, 3 s after Start has
// returned (ShutdownTimeout 2 s). The engine then tracks what it listed and tells the Observer EventTracked and
// EventRestored, after Start has returned: an agent that closes its journal once Start returns gets writes after it.
func TestAuditNoRestoreAfterStartReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var startReturned atomic.Bool
		var lateEvents atomic.Int32
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if startReturned.Load() {
				lateEvents.Add(1)
			}
		})
		stopAt := make(chan struct{})
		inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
			<-stopAt
			time.Sleep(5 * time.Second) // ignores ctx, but answers well within its own deadline (CheckTimeout 30 s + 1 s)
			return []ports.PU{uidPU("a"), uidPU("b")}, nil
		})
		cluster := deletiontest.NewCluster()
		e := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{Inventory: inv, Observer: obs})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Start(ctx) }()
		synctest.Wait()
		cancel()
		close(stopAt)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		startReturned.Store(true)
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := lateEvents.Load(); n > 0 || e.Len() > 0 {
			t.Errorf("after Start returned: the Observer was told %d events, and the engine tracks %d PUs the Inventory listed", n, e.Len())
		}
	})
}

// Sweep (doc, Engine.Sweep: "Sweep checks every tracked PU once ... and returns when all are done or ctx is";
// Engine.Start: "A Sweep under way goes on, with goroutines of its own, until its own context is done").
// A Sweep's check that Start's worker runs when Start's context ends is cut short by Start's context, not the
// Sweep's: the Sweep must still check that PU (it goes on), not count it done and return with it unchecked.
func TestAuditSweepGoesOnWhenStartStopsMidCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{
			Workers: 1, SweepInterval: time.Hour, CheckTimeout: 10 * time.Second,
		})
		pu := cluster.CreatePod(nsKey("web"), "node-a", "")
		if err := engine.Track(pu); err != nil {
			t.Fatal(err)
		}
		startCtx, stopStart := context.WithCancel(t.Context())
		started := make(chan error, 1)
		go func() { started <- engine.Start(startCtx) }()
		deletiontest.Advance(time.Second) // Start's first checks are over
		cluster.DeletePod(pu.Pod)
		cluster.SetReadDelay(2 * time.Second)
		swept := make(chan struct{})
		go func() { engine.Sweep(t.Context()); close(swept) }()
		time.Sleep(time.Second) // Start's worker is in the Sweep's check of the PU
		stopStart()
		if err := <-started; err != nil {
			t.Fatal(err)
		}
		<-swept
		if policy.CallCount() != 1 || engine.Len() != 0 {
			t.Errorf("the Sweep returned with the PU of a deleted pod kept: %d DestroyPU calls, %d tracked (status %+v)",
				policy.CallCount(), engine.Len(), engine.Status())
		}
	})
}

// deletion/workers.go:21-22: "A Sweep under way goes on, with goroutines of its own, until its own context is done".
func TestAuditHoldsSweepOutlivesStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		pol := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cluster, pol, deletion.Options{})
		pu := cluster.CreatePod(nsKey("a"), "", "")
		_ = e.Track(pu)
		stop := deletiontest.Start(t, e)
		deletiontest.Advance(10 * time.Second)
		cluster.DeletePod(pu.Pod)
		cluster.SetReadDelay(2 * time.Second)
		done := make(chan struct{})
		go func() { e.Sweep(context.Background()); close(done) }()
		deletiontest.Advance(time.Second)
		stop()
		<-done
		if e.Len() != 0 || pol.CallCount() != 1 {
			t.Errorf("len %d calls %d", e.Len(), pol.CallCount())
		}
	})
}

// deletion.Engine.Sweep: "Sweep returns once every check it waits for, or every Workers slot, is held by one stuck in
// a port a second past its deadline (CheckTimeout), whoever began them: with a CheckTimeout of 100ms, about 1.1 to
// 2.1s after such a check began."
func TestSweepReturnsPastStuckCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		block := make(chan struct{})
		defer close(block)
		g := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			<-block
			return nil, errors.New("late")
		})
		e := deletiontest.NewEngine(t, g, &deletiontest.Policy{}, deletion.Options{CheckTimeout: 100 * time.Millisecond, Workers: 1})
		if err := e.Track(ports.PU{PUID: "u1", Pod: nsKey(fmt.Sprintf("pod-%d", 1))}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		e.Sweep(context.Background())
		if d := time.Since(start); d < 1100*time.Millisecond || d > 2100*time.Millisecond {
			t.Errorf("Sweep returned %v after a check stuck in a port began, want 1.1 to 2.1s", d)
		}
	})
}

// slowPod is a PodGetter on w that takes 2s to read the pod of slow, or until its context ends.
func slowPod(w *deletiontest.Cluster, slow types.NamespacedName) ports.PodGetter {
	return ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
		if k == slow {
			select {
			case <-time.After(2 * time.Second):
			case <-ctx.Done():
			}
		}
		return w.GetPod(ctx, k)
	})
}

// TestASweepRunsOnlyItsOwnChecksOnceStartHasStopped: a Sweep under way when
// Start's context ends goes on with its own checks, with goroutines of its
// own, and with nothing else: the check of a PU tracked after it began,
// queued by a trigger or by Start's schedule behind the busy worker, is
// Start's, so that no check of it and no DestroyPU starts once Start's
// context is done.
func TestASweepRunsOnlyItsOwnChecksOnceStartHasStopped(t *testing.T) {
	for _, by := range []string{"trigger", "schedule"} {
		t.Run(by, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := deletiontest.NewCluster()
				p := &deletiontest.Policy{}
				interval := time.Hour
				if by == "schedule" {
					interval = 500 * time.Millisecond
				}
				e := deletiontest.NewEngine(t, slowPod(w, nsKey("slow")), p, deletion.Options{NodeName: "node-a", Workers: 1, SweepInterval: interval})
				assert.NoError(t, e.Track(w.CreatePod(nsKey("slow"), "node-a", "")))
				stop := deletiontest.Start(t, e)
				deletiontest.Advance(0)
				swept := make(chan struct{})
				go func() { e.Sweep(context.Background()); close(swept) }()
				deletiontest.Advance(100 * time.Millisecond) // the Sweep's check of slow holds the one worker
				x := w.CreatePod(nsKey("x"), "node-a", "")
				assert.NoError(t, e.Track(x)) // after the Sweep began: not one of its checks
				w.DeletePod(nsKey("x"))
				if by == "trigger" {
					e.TriggerPod(nsKey("x"))
				}
				deletiontest.Advance(time.Second) // x's check is queued behind the busy worker
				assert.Zero(t, p.CallCount(), "nothing destroyed while the worker is busy")
				stop()
				stopped := time.Now()
				deletiontest.Advance(5 * time.Second)
				<-swept
				for _, call := range p.CallsOf(x.PUID) {
					assert.True(t, call.At.Before(stopped), "DestroyPU of Start's check of x began %v after Start's context ended", call.At.Sub(stopped))
				}
				assert.Equal(t, 2, e.Len(), "slow (alive) and x are still tracked: x for the next Start")
			})
		})
	}
}

// TestATriggerBeforeStartWaitsForStartNotForASweep: a check asked for
// before Start runs when Start begins ("Checks asked before Start run when
// it begins"; without Start nothing runs between two Sweeps): a Sweep under
// way, which x was tracked after, does not check it with its goroutines.
func TestATriggerBeforeStartWaitsForStartNotForASweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := deletiontest.NewCluster()
		p := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, slowPod(w, nsKey("slow")), p, deletion.Options{NodeName: "node-a", Workers: 2, SweepInterval: time.Hour})
		assert.NoError(t, e.Track(w.CreatePod(nsKey("slow"), "node-a", "")))
		assert.NoError(t, e.Track(w.CreatePod(nsKey("fast"), "node-a", ""))) // its lane is free early
		swept := make(chan struct{})
		go func() { e.Sweep(context.Background()); close(swept) }()
		deletiontest.Advance(100 * time.Millisecond)
		x := w.CreatePod(nsKey("x"), "node-a", "")
		assert.NoError(t, e.Track(x))
		w.DeletePod(nsKey("x"))
		e.TriggerPod(nsKey("x"))
		deletiontest.Advance(5 * time.Second)
		<-swept
		assert.Zero(t, w.Reads(nsKey("x")), "x read by the Sweep's goroutines")
		assert.Zero(t, p.Count(x.PUID), "x destroyed before any Start")
		deletiontest.Start(t, e)
		deletiontest.Advance(time.Second)
		assert.Equal(t, 1, p.Count(x.PUID), "Start checks x when it begins")
	})
}

// docs/operating/troubleshooting.md: "a program stopped meanwhile logs `checks or the Inventory still stuck` with how
// many". The line names the PUs whose checks it leaves behind, so that the operator of a program its liveness probe
// restarts learns which pods' ports hang.
func TestStartsStopNamesThePUsItLeavesBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		g := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			<-release // ignores its context
			return nil, ports.ErrPodNotFound
		})
		var mu sync.Mutex
		var lines []string
		log := funcr.New(func(prefix, args string) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, args)
		}, funcr.Options{})
		e := deletiontest.NewEngine(t, g, &deletiontest.Policy{}, deletion.Options{Workers: 2, ShutdownTimeout: time.Second,
			CheckTimeout: time.Second, Logger: log})
		require.NoError(t, e.Track(swPU("a")))
		require.NoError(t, e.Track(swPU("b")))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- e.Start(ctx) }()
		e.TriggerAll()
		time.Sleep(5 * time.Second)
		cancel()
		require.NoError(t, <-done)
		mu.Lock()
		defer mu.Unlock()
		i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "still stuck in ports") })
		require.GreaterOrEqual(t, i, 0, "the line: %q", lines)
		assert.Contains(t, lines[i], `"puIDs"=["uid-a" "uid-b"]`)
	})
}
