package deletion_test

// The health checks' promises: LivenessCheck fails only when restarting
// could help, never while nothing is wedged (a slow first list, intervals
// and deadlines of a year); ReadinessCheck fails while the engine is behind.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// TestLivenessPassesDuringAFirstListLongAfterTrack: SweepInterval 1s,
// CheckTimeout 10s; a is tracked, and Start comes 30s later with an
// Inventory whose list takes 2s. A check due before Start is not overdue
// for a scheduler that was not running: liveness passes all through the
// list and after it.
func TestLivenessPassesDuringAFirstListLongAfterTrack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), newDestroyLog(), deletion.Options{
			SweepInterval: time.Second, CheckTimeout: 10 * time.Second, Inventory: slowInventory(2 * time.Second)})
		require.NoError(t, c.Track(pu("a")))
		time.Sleep(30 * time.Second)
		deletiontest.Start(t, c)
		for range 8 {
			time.Sleep(500 * time.Millisecond)
			synctest.Wait()
			assert.NoError(t, c.LivenessCheck(nil), "during or after the first list")
		}
		assert.Zero(t, c.Len(), "a is destroyed once the list is in")
	})
}

// TestACheckTimeoutOfAYearIsNoStuckWorker: Options.CheckTimeout takes up to
// MaxDuration (more is refused), and LivenessCheck fails when every Workers
// slot "is held by a check stuck in a port past its deadline". With
// CheckTimeout a year, one worker, and a GetPod that takes a minute, the
// slot is busy, not past any deadline: LivenessCheck passes, and a Sweep
// waits for its check.
func TestACheckTimeoutOfAYearIsNoStuckWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			select {
			case <-time.After(time.Minute):
				return podAt(key, key.Name), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
		_, err := deletion.New(getter, newDestroyLog(), deletion.Options{CheckTimeout: math.MaxInt64})
		require.ErrorIs(t, err, deletion.ErrInvalidOptions)
		c := deletiontest.NewEngine(t, getter, newDestroyLog(), deletion.Options{CheckTimeout: deletion.MaxDuration, Workers: 1, SweepInterval: time.Hour})
		require.NoError(t, c.Track(pu("a")))
		deletiontest.Start(t, c)
		c.TriggerAll()
		time.Sleep(10 * time.Second)
		assert.NoError(t, c.LivenessCheck(nil), "a check 10s into a deadline of centuries")
		took := sweepFor(c, time.Hour)
		assert.GreaterOrEqual(t, took, 50*time.Second, "Sweep left a check that was not stuck behind after %v", took)
	})
}

// TestAnIntervalOfAYearIsLiveAndReady: Options.SweepInterval takes up to
// MaxDuration (150 years is refused), and LivenessCheck and ReadinessCheck
// fail only when the engine is wedged, stuck or behind. An idle engine with
// SweepInterval a year, started and with nothing to do, is neither.
func TestAnIntervalOfAYearIsLiveAndReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, err := deletion.New(getterOf(nil, ports.ErrPodNotFound), newDestroyLog(), deletion.Options{SweepInterval: math.MaxInt64 / 2})
		require.ErrorIs(t, err, deletion.ErrInvalidOptions)
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), newDestroyLog(), deletion.Options{SweepInterval: deletion.MaxDuration})
		deletiontest.Start(t, c)
		time.Sleep(time.Second)
		synctest.Wait()
		assert.NoError(t, c.LivenessCheck(nil))
		assert.NoError(t, c.ReadinessCheck(nil))
	})
}

// TestLivenessPassesThroughASlowFirstListAtAShortInterval: LivenessCheck
// allows Start's first list its deadline, whatever the interval: at
// SweepInterval 100ms (three intervals: 300ms), a first list of 2s within
// a CheckTimeout of 3s does not fail it, and the first check follows the
// list within an interval.
func TestLivenessPassesThroughASlowFirstListAtAShortInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inv := slowInventory(2 * time.Second)
		rec := &deletiontest.Events{}
		c := deletiontest.NewEngine(t, getterOf(livePod(testUID, testNode), nil), newDestroyLog(), deletion.Options{
			Inventory: inv, Observer: rec, SweepInterval: deletion.MinSweepInterval, CheckTimeout: 3 * time.Second})
		require.NoError(t, c.Track(entryWith("")))
		deletiontest.Start(t, c)
		for range 19 { // 1.9s
			time.Sleep(100 * time.Millisecond)
			require.NoError(t, c.LivenessCheck(nil), "during the first list")
		}
		assert.Empty(t, rec.Of(deletion.EventChecked), "no check before the list answers")
		time.Sleep(100*time.Millisecond + deletion.MinSweepInterval + 500*time.Millisecond)
		synctest.Wait()
		assert.NotEmpty(t, rec.Of(deletion.EventChecked), "the PU is checked after the list")
		assert.NoError(t, c.LivenessCheck(nil))
	})
}

// TestReadinessFailsWhenChecksASweepLeftBehindHoldEverySlot: ReadinessCheck
// fails "when every one of the Workers slots is held by a check stuck in a
// port past its deadline", whoever began it. With two workers, a Sweep
// before Start leaves two checks stuck in a port that ignores its context;
// once Start runs, no check can, and ReadinessCheck (as LivenessCheck) says
// so with ErrWorkersStuck, until the port returns.
func TestReadinessFailsWhenChecksASweepLeftBehindHoldEverySlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			<-release // ignores its context, on purpose
			return podAt(key, key.Name), nil
		})
		c := deletiontest.NewEngine(t, getter, newDestroyLog(), deletion.Options{Workers: 2, CheckTimeout: 10 * time.Second, SweepInterval: time.Hour})
		require.NoError(t, c.Track(pu("a")))
		require.NoError(t, c.Track(pu("b")))
		require.LessOrEqual(t, sweepFor(c, time.Hour), 15*time.Second, "the Sweep leaves the stuck checks behind")
		stop := deletiontest.Start(t, c)
		synctest.Wait()
		assert.ErrorIs(t, c.ReadinessCheck(nil), deletion.ErrWorkersStuck)
		assert.ErrorIs(t, c.LivenessCheck(nil), deletion.ErrWorkersStuck)
		close(release)
		synctest.Wait()
		assert.NoError(t, c.ReadinessCheck(nil), "the port returned: the slots are free again")
		stop()
	})
}

// TestLivenessFailsWhenStuckChecksHoldEveryWorker: LivenessCheck fails
// "when every worker is stuck in a port past its deadline", and Workers is
// how many checks may run at once, whoever runs them. A Sweep before Start
// (one worker, CheckTimeout 10s) leaves behind a check stuck in a port that
// ignores its context; Start then runs for 30 intervals, and a PU whose pod
// is gone is tracked. Either Start's worker checks (and destroys) it, or no
// check can run and LivenessCheck says so with ErrWorkersStuck: an engine
// that runs no check for 30 intervals must not pass liveness.
func TestLivenessFailsWhenStuckChecksHoldEveryWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		port := newStuckPort("stuck")
		getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			if key.Name == "gone" {
				return nil, ports.ErrPodNotFound
			}
			return port.GetPod(ctx, key)
		})
		policy := newDestroyLog()
		c := deletiontest.NewEngine(t, getter, policy, deletion.Options{Workers: 1, CheckTimeout: 10 * time.Second, SweepInterval: time.Second})
		require.NoError(t, c.Track(pu("stuck")))
		require.LessOrEqual(t, sweepFor(c, time.Hour), 15*time.Second, "the Sweep leaves the stuck check behind")
		stop := deletiontest.Start(t, c)
		require.NoError(t, c.Track(pu("gone")))
		time.Sleep(30 * time.Second)
		synctest.Wait()

		err := c.LivenessCheck(nil)
		if len(policy.of("gone")) == 0 && !errors.Is(err, deletion.ErrWorkersStuck) {
			assert.Fail(t, "no check ran for 30 intervals, and liveness did not say so",
				"the PU of a gone pod was not checked while a check stuck past its deadline held the only worker; LivenessCheck: %v", err)
		}
		close(port.release)
		synctest.Wait()
		stop()
	})
}

// TestLivenessAllowsTheFirstListItsCheckTimeout: Start's first list "delays
// the first check by as long as it takes (at most CheckTimeout)", and
// LivenessCheck fails only when restarting could help. A PU is tracked
// before Start (a pod informer's add), and the Inventory takes 25s to
// answer, within its CheckTimeout of 30s, at SweepInterval 5s (the PU's
// first check is due 20s before the list answers, over three intervals):
// LivenessCheck passes throughout, and the PU is checked once the list has
// answered.
func TestLivenessAllowsTheFirstListItsCheckTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inv := slowInventory(25 * time.Second)
		rec := &deletiontest.Events{}
		c := deletiontest.NewEngine(t, getterOf(livePod(testUID, testNode), nil), newDestroyLog(), deletion.Options{Inventory: inv, Observer: rec})
		require.NoError(t, c.Track(entryWith("")))
		began := time.Now()
		deletiontest.Start(t, c)
		var failed error
		var at time.Duration
		for range 60 { // 30s
			time.Sleep(500 * time.Millisecond)
			if err := c.LivenessCheck(nil); err != nil && failed == nil {
				failed, at = err, time.Since(began)
			}
		}
		if failed != nil {
			assert.Fail(t, "LivenessCheck failed while the first list was within its CheckTimeout",
				"at %v, the list taking 25s: %v", at, failed)
		}
		assert.NotEmpty(t, rec.Of(deletion.EventChecked), "the PU is checked once the list has answered")
	})
}

// Start: "Start returns within about ShutdownTimeout even when a port hangs"; LivenessCheck fails "when every worker
// is stuck in a port".
func TestAuditHoldsHungPortLivenessAndStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		release := make(chan struct{})
		getter := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			<-release
			return cluster.GetPod(context.Background(), k)
		})
		engine := deletiontest.NewEngine(t, getter, &deletiontest.Policy{}, deletion.Options{Workers: 2, CheckTimeout: time.Second})
		_ = engine.Track(cluster.CreatePod(key("a"), "node-a", ""))
		_ = engine.Track(cluster.CreatePod(key("b"), "node-a", ""))
		stop := deletiontest.Start(t, engine)
		deletiontest.Advance(10 * time.Second)
		if err := engine.LivenessCheck(nil); !errors.Is(err, deletion.ErrWorkersStuck) {
			t.Errorf("LivenessCheck = %v, want ErrWorkersStuck", err)
		}
		began := time.Now()
		stop()
		if took := time.Since(began); took > 3*time.Second {
			t.Errorf("Start took %v to return", took)
		}
		close(release)
		synctest.Wait()
	})
}

// status.go:105 (go doc Backlog) "OldestGoneSince is since when the oldest PU found to go has waited for its destroy;
// zero when none waits." docs/metrics.md:152 podsweeper_oldest_pending_destroy_seconds: "Age of the oldest processing
// unit found gone and not destroyed yet; 0 when none is."
// A PU found gone by a lagging cache waits its turn under DestroyRate; its next check sees the pod alive (same UID)
// while the SandboxExtractor fails: it leaves the line and waits for nothing, yet it stays the oldest found gone.
func TestBacklogOldestGoneSinceZeroWhenNoneWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := deletiontest.NewCluster()
		x := c.CreatePod(nsKey("x"), testNode, "sx")
		a := c.CreatePod(nsKey("a"), testNode, "sa")
		pol := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, c, pol, deletion.Options{NodeName: testNode, SandboxExtractor: c,
			DestroyRate: rate.Every(time.Hour)})
		_ = e.Track(x)
		_ = e.Track(a)
		deletiontest.Start(t, e)
		deletiontest.Advance(time.Second)
		c.DeletePod(nsKey("x")) // takes the one turn at hand
		e.TriggerPod(nsKey("x"))
		deletiontest.Advance(time.Second)
		c.FailReads(nsKey("a"), ports.ErrPodNotFound) // the cache lags: a looks gone, and waits for its turn
		e.TriggerPod(nsKey("a"))
		deletiontest.Advance(time.Second)
		if b := e.Backlog(); b.RateLimited != 1 || b.OldestGoneSince.IsZero() {
			t.Fatalf("setup: backlog %+v", b)
		}
		c.FailReads(nsKey("a"), nil) // the cache catches up: a's pod lives
		c.FailSandboxIDs(errors.New("runtime down"))
		e.TriggerPod(nsKey("a"))
		deletiontest.Advance(time.Second)
		b := e.Backlog()
		if b.RateLimited != 0 || b.Retrying != 0 {
			t.Fatalf("a still waits: %+v", b)
		}
		deletiontest.Advance(20 * time.Minute)
		b = e.Backlog()
		if !b.OldestGoneSince.IsZero() {
			t.Fatalf("no PU waits for a destroy (RateLimited %d, Retrying %d, pod a alive, destroys %d), yet OldestGoneSince is %v ago",
				b.RateLimited, b.Retrying, pol.CallCount(), time.Since(b.OldestGoneSince))
		}
	})
}

// engine.md:47-48 "LivenessCheck ... fails only when a restart could help: once Start has returned, when the scheduler
// is wedged ..., and when every worker is stuck in a port"; go doc Engine.LivenessCheck "it fails once Start has
// returned". While Start waits ShutdownTimeout for a check in a port, LivenessCheck already fails, saying "Start has
// returned".
func TestLivenessFailsOnlyOnceStartReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := deletiontest.NewCluster()
		pu := c.CreatePod(nsKey("a"), testNode, "")
		release := make(chan struct{})
		var once sync.Once
		t.Cleanup(func() { once.Do(func() { close(release) }) })
		pol := &deletiontest.Policy{}
		pol.SetAnswer(func(ctx context.Context, ev ports.DestroyEvent) error { <-release; return nil })
		e := deletiontest.NewEngine(t, c, pol, deletion.Options{NodeName: testNode, Workers: 2})
		_ = e.Track(pu)
		c.DeletePod(nsKey("a"))
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		returned := make(chan struct{})
		go func() { _ = e.Start(ctx); close(returned) }()
		e.TriggerPod(nsKey("a"))
		deletiontest.Advance(time.Second)
		if err := e.LivenessCheck(nil); err != nil {
			t.Fatalf("before stop: %v", err)
		}
		cancel()
		deletiontest.Advance(time.Second) // Start waits up to ShutdownTimeout (2s) for the check in DestroyPU
		select {
		case <-returned:
			t.Fatal("setup: Start returned already")
		default:
		}
		if err := e.LivenessCheck(nil); err != nil {
			t.Fatalf("Start has not returned, one worker of two is in a port within its deadline, yet LivenessCheck: %v", err)
		}
		once.Do(func() { close(release) })
	})
}

// TestWhileStartStopsReadinessSaysSoAndNothingIsWedged: Start's context is
// done while a DestroyPU hangs (ShutdownTimeout 1 min): ReadinessCheck
// fails with ErrNotRunning at once, and neither check says the scheduler is
// wedged three intervals on; LivenessCheck passes until Start returns.
func TestWhileStartStopsReadinessSaysSoAndNothingIsWedged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := deletiontest.NewCluster()
		pu := c.CreatePod(nsKey("a"), testNode, "")
		release := make(chan struct{})
		pol := &deletiontest.Policy{}
		pol.SetAnswer(func(context.Context, ports.DestroyEvent) error { <-release; return nil })
		e := deletiontest.NewEngine(t, c, pol, deletion.Options{NodeName: testNode, ShutdownTimeout: time.Minute})
		_ = e.Track(pu)
		c.DeletePod(nsKey("a"))
		ctx, cancel := context.WithCancel(context.Background())
		returned := make(chan struct{})
		go func() { _ = e.Start(ctx); close(returned) }()
		e.TriggerPod(nsKey("a"))
		deletiontest.Advance(time.Second)
		cancel()
		deletiontest.Advance(time.Second)
		require.ErrorIs(t, e.ReadinessCheck(nil), deletion.ErrNotRunning)
		deletiontest.Advance(30 * time.Second) // three intervals and more
		assert.ErrorIs(t, e.ReadinessCheck(nil), deletion.ErrNotRunning)
		assert.NoError(t, e.LivenessCheck(nil))
		close(release)
		<-returned
		assert.ErrorIs(t, e.LivenessCheck(nil), deletion.ErrNotRunning)
	})
}

// listing is an Inventory that answers at once with pus.
func listing(pus ...ports.PU) ports.Inventory {
	return ports.InventoryFunc(func(context.Context) ([]ports.PU, error) { return pus, nil })
}

// TestLivenessFailsWhileNoPUOfTheFirstListGoesIn: Options.Inventory: the
// PUs a list that answered in time lists go in before any check, each
// waiting for the Observer's EventTracked, "and LivenessCheck fails while
// none goes in for three SweepIntervals". A journal that blocks for good on
// the EventTracked of the one PU listed stops every check (gone-1's too):
// LivenessCheck passes for three intervals, then fails with ErrBehind, so
// that a restart can help; once the journal answers, the checks begin.
func TestLivenessFailsWhileNoPUOfTheFirstListGoesIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventTracked && ev.PU.PUID == "inv-stuck" {
				<-release
			}
		})
		policy := newDestroyLog()
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			SweepInterval: time.Second, CheckTimeout: time.Second, Inventory: listing(pu("inv-stuck")), Observer: obs})
		require.NoError(t, c.Track(pu("gone-1")))
		c.TriggerPod(pu("gone-1").Pod)
		deletiontest.Start(t, c)
		time.Sleep(2900 * time.Millisecond)
		synctest.Wait()
		require.NoError(t, c.LivenessCheck(nil), "within three intervals of the last PU that went in")
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		err := c.LivenessCheck(nil)
		require.ErrorIs(t, err, deletion.ErrBehind, "no PU of the list has gone in for three intervals")
		assert.Contains(t, err.Error(), "Observer")
		assert.Empty(t, policy.Calls(), "no check before the list's PUs are in")
		close(release)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.NoError(t, c.LivenessCheck(nil))
		assert.Len(t, policy.CallsOf("gone-1"), 1, "the checks begin once they are in")
	})
}

// TestASlowJournalThatGoesOnIsNoWedge: a journal that takes 100 ms a
// commit, and a list of 200 PUs (5 s of commits at 4 Workers, more than
// three intervals of 1 s): each goes in within an interval of the one
// before, so LivenessCheck passes all through.
func TestASlowJournalThatGoesOnIsNoWedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventTracked {
				time.Sleep(100 * time.Millisecond)
			}
		})
		var pus []ports.PU
		for i := range 200 {
			pus = append(pus, pu(fmt.Sprintf("inv-%03d", i)))
		}
		c := deletiontest.NewEngine(t, getterOf(livePod(testUID, testNode), nil), newDestroyLog(), deletion.Options{
			SweepInterval: time.Second, CheckTimeout: time.Second, Workers: 4, Inventory: listing(pus...), Observer: obs})
		deletiontest.Start(t, c)
		for range 70 {
			time.Sleep(100 * time.Millisecond)
			require.NoError(t, c.LivenessCheck(nil), "a journal that goes on is no wedge")
		}
		assert.Equal(t, 200, c.Len())
	})
}

// TestAJournalThatCommitsOneAtATimeIsNoWedge: LivenessCheck fails only
// "when the first list answered and no PU of its answer has gone in for
// three SweepIntervals". A journal commits one write at a time, so the PUs
// the Workers begin together go in one after the other: each goes in well
// within three intervals of the one before, though the last of Workers
// begun at once goes in long after it began. The same when the list gives
// sandboxes to PUs the wiring tracked first (an EventAdopted commit each).
func TestAJournalThatCommitsOneAtATimeIsNoWedge(t *testing.T) {
	for _, tc := range []struct {
		name     string
		n        int
		workers  int
		interval time.Duration
		commit   time.Duration
		adopt    bool
	}{
		{name: "a commit of 2s, interval 1s, 4 Workers", n: 12, workers: 4, interval: time.Second, commit: 2 * time.Second},
		{name: "a commit of 200ms, interval 5s, 100 Workers", n: 300, workers: 100, interval: 5 * time.Second, commit: 200 * time.Millisecond},
		{name: "the list's sandboxes adopted, a commit of 2s, interval 1s", n: 12, workers: 4, interval: time.Second, commit: 2 * time.Second, adopt: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				commits := make(chan struct{}, 1) // one at a time
				kind := deletion.EventTracked
				if tc.adopt {
					kind = deletion.EventAdopted
				}
				var mu sync.Mutex
				var in []time.Time
				obs := deletion.ObserverFunc(func(ev deletion.Event) {
					if ev.Kind == kind {
						commits <- struct{}{}
						time.Sleep(tc.commit)
						<-commits
						mu.Lock()
						in = append(in, time.Now())
						mu.Unlock()
					}
				})
				var pus []ports.PU
				for i := range tc.n {
					p := pu(fmt.Sprintf("inv-%03d", i))
					p.SandboxID = fmt.Sprintf("sb-%03d", i)
					pus = append(pus, p)
				}
				c := deletiontest.NewEngine(t, getterOf(livePod(testUID, testNode), nil), newDestroyLog(), deletion.Options{
					SweepInterval: tc.interval, Workers: tc.workers, Inventory: listing(pus...), Observer: obs})
				if tc.adopt {
					for _, p := range pus {
						p.SandboxID = "" // as the wiring tracks a pod's PU before the list
						require.NoError(t, c.Track(p))
					}
				}
				t0 := time.Now()
				deletiontest.Start(t, c)
				for time.Since(t0) < time.Duration(tc.n+2)*tc.commit {
					time.Sleep(100 * time.Millisecond)
					require.NoError(t, c.LivenessCheck(nil), "at %v: a PU goes in every %v", time.Since(t0), tc.commit)
				}
				mu.Lock()
				defer mu.Unlock()
				require.Len(t, in, tc.n, "every PU of the list went in")
			})
		})
	}
}

// TestEventRestoredHoldsNoCheck: Options.Inventory: "EventRestored is told
// once the checks may begin". An Observer that takes 10 s over
// EventRestored (a metrics push) holds no check: a PU of a gone pod,
// tracked and triggered before Start, is destroyed within the list's
// deadline and a second.
func TestEventRestoredHoldsNoCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventRestored {
				time.Sleep(10 * time.Second)
			}
		})
		policy := newDestroyLog()
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			SweepInterval: time.Second, CheckTimeout: time.Second, Inventory: listing(), Observer: obs})
		require.NoError(t, c.Track(pu("gone-1")))
		c.TriggerPod(pu("gone-1").Pod)
		deletiontest.Start(t, c)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Len(t, policy.CallsOf("gone-1"), 1, "destroyed within the list's deadline and a second")
		time.Sleep(9 * time.Second) // the Observer's push ends
	})
}

// TestLivenessSeesTheOnlyWorkerHeldByAListsSandbox: Observer: "An Observer blocked in a check holds its Workers slot
// and is seen as stuck past the check's deadline". A PU tracked without its sandbox has its first check record one
// (row 7) while the retried first list answers with the sandbox it had before the restart: the check tells that
// sandbox's EventAdopted too, and a journal blocks on it for good. With one worker, no check runs any more (a gone
// pod's PU waits): LivenessCheck fails with ErrWorkersStuck.
func TestLivenessSeesTheOnlyWorkerHeldByAListsSandbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		web := cl.CreatePod(types.NamespacedName{Namespace: "ns", Name: "web"}, "n", "sb-new")
		web.SandboxID = "" // as the wiring tracks a pod's PU before its sandbox is known
		other := cl.CreatePod(types.NamespacedName{Namespace: "ns", Name: "other"}, "n", "sb-o")
		inv := deletiontest.NewInventory(ports.PU{PUID: web.PUID, Pod: web.Pod, SandboxID: "sb-old"})
		inv.FailNextLists(1, errors.New("the journal is not open yet"))
		forever := make(chan struct{})
		t.Cleanup(func() { close(forever) })
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			switch {
			case ev.Kind != deletion.EventAdopted || ev.PU.PUID != web.PUID:
			case ev.Verdict.Row == 7:
				time.Sleep(2 * time.Second) // the commit of the check's sandbox, during which the retried list answers
			default:
				<-forever // the commit of the listed sandbox never ends
			}
		})
		e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{NodeName: "n", SandboxExtractor: cl,
			Inventory: inv, Observer: obs, Workers: 1, SweepInterval: time.Second})
		require.NoError(t, e.Track(web))
		require.NoError(t, e.Track(other))
		deletiontest.Start(t, e)
		time.Sleep(10 * time.Millisecond) // the first list failed: the checks begin
		e.TriggerPod(web.Pod)
		time.Sleep(5 * time.Second)
		require.Equal(t, 2, inv.Lists(), "the retried list answered during the check")
		reads := cl.Reads(other.Pod)
		cl.DeletePod(other.Pod)
		e.TriggerPod(other.Pod)
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Equal(t, reads, cl.Reads(other.Pod), "the one worker is held: no check runs")
		// The retried list's answer waits for that check too (no PU of it goes in): either is a wedge.
		err := e.LivenessCheck(nil)
		assert.True(t, errors.Is(err, deletion.ErrWorkersStuck) || errors.Is(err, deletion.ErrBehind), "%v", err)
	})
}

// TestLivenessSeesTheListsHeldByTheObserver: Observer: one blocked on an event of the Inventory's lists "holds the
// lists, and LivenessCheck fails after three SweepIntervals"; Options.Inventory: its failed list is retried. A journal
// blocks on EventListFailed (or EventRestored): LivenessCheck passes for three intervals, then fails with ErrBehind
// naming the event. Meanwhile the checks go on (a gone pod's PU is destroyed); once the journal answers, the failed
// list is retried and its PU goes in.
func TestLivenessSeesTheListsHeldByTheObserver(t *testing.T) {
	for _, kind := range []deletion.EventKind{deletion.EventListFailed, deletion.EventRestored} {
		t.Run(kind.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				var once sync.Once
				t.Cleanup(func() { once.Do(func() { close(release) }) })
				obs := deletion.ObserverFunc(func(ev deletion.Event) {
					if ev.Kind == kind {
						<-release
					}
				})
				inv := deletiontest.NewInventory(pu("listed"))
				if kind == deletion.EventListFailed {
					inv.FailNextLists(1, errors.New("the journal is not open yet"))
				}
				policy := newDestroyLog()
				c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
					SweepInterval: time.Second, CheckTimeout: time.Second, Inventory: inv, Observer: obs})
				require.NoError(t, c.Track(pu("gone-1")))
				c.TriggerPod(pu("gone-1").Pod)
				deletiontest.Start(t, c)
				time.Sleep(2900 * time.Millisecond)
				synctest.Wait()
				require.NoError(t, c.LivenessCheck(nil), "within three intervals")
				assert.Len(t, policy.CallsOf("gone-1"), 1, "the checks go on while the Observer holds the lists")
				time.Sleep(200 * time.Millisecond)
				synctest.Wait()
				err := c.LivenessCheck(nil)
				require.ErrorIs(t, err, deletion.ErrBehind, "the Observer has held the lists for three intervals")
				assert.Contains(t, err.Error(), "Event"+kind.String())
				once.Do(func() { close(release) })
				time.Sleep(5 * time.Second)
				synctest.Wait()
				assert.NoError(t, c.LivenessCheck(nil))
				assert.True(t, c.InventoryListed(), "the failed list is retried once the Observer answers")
			})
		})
	}
}

// LivenessCheck fails "from a Track's EventTracked (the Track waits for it: a journal whose commit hangs)" held three
// intervals: after Start, the journal's commit of a new PU hangs; the Track, the pod handler that calls it, and the
// PU wait. The other PUs' checks go on.
func TestLivenessSeesATrackHeldByTheObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var once sync.Once
		t.Cleanup(func() { once.Do(func() { close(release) }) })
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventTracked && ev.PU.PUID == "held" {
				<-release
			}
		})
		policy := newDestroyLog()
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			SweepInterval: time.Second, CheckTimeout: time.Second, Observer: obs})
		deletiontest.Start(t, c)
		tracked := make(chan error, 1)
		go func() { tracked <- c.Track(pu("held")) }()
		require.NoError(t, c.Track(pu("gone-1")))
		time.Sleep(2900 * time.Millisecond)
		synctest.Wait()
		require.NoError(t, c.LivenessCheck(nil), "within three intervals")
		assert.Len(t, policy.CallsOf("gone-1"), 1, "the other PUs' checks go on")
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		err := c.LivenessCheck(nil)
		require.ErrorIs(t, err, deletion.ErrBehind, "a Track held three intervals")
		assert.Contains(t, err.Error(), `EventTracked of PU "held"`)
		once.Do(func() { close(release) })
		require.NoError(t, <-tracked)
		synctest.Wait()
		assert.NoError(t, c.LivenessCheck(nil))
	})
}

// LivenessCheck fails "when the Observer has not returned for three SweepIntervals from an event of the Inventory's
// lists ... or from a Track's EventTracked"; Options.Inventory: "LivenessCheck fails while none goes in for three
// SweepIntervals". A first list that failed is retried once the checks have begun: a journal that hangs on the
// EventTracked of the retried list's answer holds the lists as much as one that hangs on the first's.
func TestLivenessSeesARetriedListsAnswerHeldByTheObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		listed := ports.PU{PUID: "uid-listed", Pod: types.NamespacedName{Namespace: "ns", Name: "listed"}}
		inv := deletiontest.NewInventory(listed)
		inv.FailNextLists(1, errors.New("the journal is busy"))
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventTracked && ev.PU.PUID == listed.PUID {
				<-release // a journal whose commit hangs
			}
		})
		e := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), &deletiontest.Policy{}, deletion.Options{
			SweepInterval: time.Second, Inventory: inv, Observer: obs, RetryMinDelay: time.Second})
		deletiontest.Start(t, e)
		time.Sleep(2 * time.Second) // the retry answered; its PU's EventTracked hangs
		synctest.Wait()
		require.Equal(t, 2, inv.Lists())
		require.NoError(t, e.LivenessCheck(nil), "held for less than three intervals")
		time.Sleep(4 * time.Second)
		synctest.Wait()
		assert.ErrorIs(t, e.LivenessCheck(nil), deletion.ErrBehind)
	})
}

// TestAHealthCheckDropsTheStaleChecksOfADrain: LivenessCheck "reads a few fields, whatever the number of PUs". The
// one worker held in a slow read, TriggerAll queues 10,000 PUs and the agent untracks them all (a drain it tore down
// itself): their queued checks are stale. The first health check drops them from the head of the ready queue, once,
// rather than every health check walking past them under the engine's lock.
func TestAHealthCheckDropsTheStaleChecksOfADrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		held := addPod(cl, "held", "held", testNode, "", corev1.PodRunning)
		release := cl.HangReads(held)
		c := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{Workers: 1, CheckTimeout: time.Minute})
		require.NoError(t, c.Track(ports.PU{PUID: "held", Pod: held}))
		deletiontest.Start(t, c)
		c.TriggerPod(held)
		synctest.Wait() // the worker is in the read
		const n = 10_000
		for i := range n {
			require.NoError(t, c.Track(ports.PU{PUID: fmt.Sprint("u", i), Pod: types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("p", i)}}))
		}
		c.TriggerAll()
		for i := range n {
			require.True(t, c.Untrack(fmt.Sprint("u", i)))
		}
		require.GreaterOrEqual(t, deletion.ReadyEntries(c), n, "the drain's checks queued, stale")
		require.NoError(t, c.ReadinessCheck(nil))
		assert.Less(t, deletion.ReadyEntries(c), 10, "a health check left the stale entries for the next to walk past")
		release()
	})
}
