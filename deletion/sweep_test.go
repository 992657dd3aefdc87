package deletion_test

// Sweep's promises: one full pass of its own checks only, whoever runs
// them and whether Start begins or stops meanwhile; it returns once every
// check it waits for is held by one stuck past its deadline, whoever began
// it, and at once when that is known already; and it retries nothing
// before its backoff once it has returned.

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// TestASecondSweepDoesNotWaitForACheckKnownStuck: CheckTimeout 1s and a
// GetPod that ignores its context for 20s. The first Sweep returns once
// the check is stuck past its deadline (about 2s); the next one, which
// begins with that check past its deadline already, returns at once, for
// its default CheckTimeout of 30s too.
func TestASecondSweepDoesNotWaitForACheckKnownStuck(t *testing.T) {
	for _, timeout := range []time.Duration{time.Second, deletion.DefaultCheckTimeout} {
		t.Run(timeout.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
					select { // ignores its context
					case <-time.After(20 * timeout):
					case <-release:
					}
					return podAt(key, key.Name), nil
				})
				c := deletiontest.NewEngine(t, getter, newDestroyLog(), deletion.Options{CheckTimeout: timeout})
				require.NoError(t, c.Track(pu("x")))
				t0 := time.Now()
				c.Sweep(context.Background())
				first := time.Since(t0)
				assert.LessOrEqual(t, first, timeout+2*time.Second, "the first Sweep leaves the stuck check past its deadline")
				t1 := time.Now()
				c.Sweep(context.Background())
				assert.Less(t, time.Since(t1), 100*time.Millisecond, "the second Sweep does not wait for a check known stuck")
				close(release)
				synctest.Wait()
			})
		})
	}
}

// TestASweepIsAFullPassThoughStartStops protects, from Sweep: "Sweep checks
// every tracked PU once [...] and returns when all are done or ctx is. Its
// checks go through the one queue: Start's workers run them, or, while
// Start does not run, Sweep's own goroutines".
//
// A Sweep runs while Start does (one worker); its first check is in a
// slow GetPod (it honours its context) when Start's context ends. The
// Sweep's context is not done: its own goroutines check the second PU.
func TestASweepIsAFullPassThoughStartStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var entered atomic.Int32
		getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			entered.Add(1)
			select { // slow, but it honours its context
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(5 * time.Second):
			}
			return nil, ports.ErrPodNotFound
		})
		c := deletiontest.NewEngine(t, getter, newDestroyLog(), deletion.Options{Workers: 1, SweepInterval: time.Hour})
		require.NoError(t, c.Track(pu("a")))
		require.NoError(t, c.Track(pu("b")))
		stop := deletiontest.Start(t, c)
		synctest.Wait()

		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		returned := sweepInBackground(ctx, t, c)
		time.Sleep(time.Second) // the Sweep's first check is in GetPod
		require.Equal(t, int32(1), entered.Load())
		stop()
		took := returned()
		require.NoError(t, ctx.Err(), "the Sweep's context is not done")
		assert.Equal(t, int32(2), entered.Load(),
			"Sweep returned after %v, its context not done, having checked 1 of its 2 PUs", took)
	})
}

// TestASweepBeforeStartWaitsForItsTurnsThoughStartStops protects, from
// Sweep: "returns when all are done or ctx is [...] while Start does not
// run, Sweep's own goroutines [run its checks] [...] Under DestroyRate, a
// destroy a check decides is one of Sweep's checks: Sweep waits for its
// turn" (README: "under a destroy rate it waits for the turns of the
// destroys it decides (end it sooner with its context)").
//
// A Sweep begins before Start under 0.5 destroy/s: one PU is destroyed,
// the other waits for its turn (at 2s). Start begins at 0.5s and stops at
// 1s: the Sweep, its context not done, goes on and destroys b on its turn.
func TestASweepBeforeStartWaitsForItsTurnsThoughStartStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy := newDestroyLog()
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{DestroyRate: 0.5, DestroyBurst: 1, SweepInterval: time.Hour})
		require.NoError(t, c.Track(pu("a")))
		require.NoError(t, c.Track(pu("b")))
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		returned := sweepInBackground(ctx, t, c)
		time.Sleep(500 * time.Millisecond)
		stop := deletiontest.Start(t, c)
		time.Sleep(500 * time.Millisecond)
		stop()
		took := returned()
		require.NoError(t, ctx.Err())
		assert.Len(t, policy.puids(), 2,
			"Sweep returned after %v, its context not done, without the second destroy at its turn", took)
		assert.Equal(t, 0, c.Len())
	})
}

// sweepInBackground runs c.Sweep(ctx) on a goroutine of its own; the
// returned func waits, a minute at most, for it to return, and says how
// long it took.
func sweepInBackground(ctx context.Context, t *testing.T, c *deletion.Engine) func() time.Duration {
	t.Helper()
	returned := make(chan time.Duration, 1)
	go func() {
		began := time.Now()
		c.Sweep(ctx)
		returned <- time.Since(began)
	}()
	return func() time.Duration {
		select {
		case took := <-returned:
			return took
		case <-time.After(time.Minute):
			t.Fatal("Sweep did not return within a minute")
			return 0
		}
	}
}

// TestASweepThatReturnedRetriesNothingBeforeItsBackoff: RetryMinDelay: "No
// periodic check or trigger tries a PU earlier; Sweep does", and Sweep
// "returns when all are done or ctx is". A PU's destroy failed (backoff
// 1m); with Start's one worker busy for 20s on another PU's slow check, a
// Sweep under a context of 1s returns at 1s, before it could check either.
// Once the Sweep has returned, only the PU's backoff may bring its retry:
// no DestroyPU of it starts before a minute after it failed.
func TestASweepThatReturnedRetriesNothingBeforeItsBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := make(chan struct{})
		getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			if key.Name == "slow" {
				select {
				case <-slow:
				case <-time.After(20 * time.Second):
				case <-ctx.Done():
				}
				return podAt(key, key.Name), nil
			}
			return nil, ports.ErrPodNotFound
		})
		policy := newDestroyLog()
		policy.Fail(errBoom)
		c := deletiontest.NewEngine(t, getter, policy, deletion.Options{
			Workers: 1, SweepInterval: time.Hour, CheckTimeout: time.Minute, RetryMinDelay: time.Minute, RetryMaxDelay: time.Hour})
		require.NoError(t, c.Track(pu("a")))
		deletiontest.Start(t, c)
		c.TriggerAll()
		synctest.Wait()
		require.Len(t, policy.of("a"), 1, "a's destroy failed; its retry is a minute away")
		require.NoError(t, c.Track(pu("slow")))
		c.TriggerPod(pu("slow").Pod) // the one worker is busy for 20s
		synctest.Wait()
		took := sweepFor(c, time.Second)
		require.LessOrEqual(t, took, 2*time.Second, "the Sweep returns with its context")
		sweptAt := policy.since()
		time.Sleep(50 * time.Second)
		synctest.Wait()

		got := policy.of("a")
		if len(got) > 1 {
			assert.GreaterOrEqual(t, got[1]-got[0], time.Minute,
				"a's destroy was retried %v after it failed, before its backoff of 1m, %v after the Sweep had returned",
				got[1]-got[0], got[1]-sweptAt)
		}
	})
}

// TestASweepReturnsWithItsContextWhileAnotherSweepRuns: Sweep "returns when
// all are done or ctx is"; "One Sweep runs at a time"; a Sweep whose
// context is over before the call returns at once (as
// TestBadInputStartAndSweepWithDoneContexts holds). Without Start, a first Sweep waits for a GetPod that
// answers only when the test lets it, within its CheckTimeout; a second
// Sweep is called meanwhile under a context that is already done. It may
// not run while the first does, but it must return, not wait for the
// first to end. (Not in a synctest bubble: the second Sweep waits on a
// mutex, which a bubble does not count as blocked, so that its time would
// stand still. The test waits for nothing when the Sweep returns at once;
// the 10s bound only turns a hang into a failure.)
func TestASweepReturnsWithItsContextWhileAnotherSweepRuns(t *testing.T) {
	release := make(chan struct{})
	var entered atomic.Int32
	getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		entered.Add(1)
		select {
		case <-release:
			return podAt(key, key.Name), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	c := deletiontest.NewEngine(t, getter, newDestroyLog(), deletion.Options{CheckTimeout: time.Hour})
	require.NoError(t, c.Track(pu("slow")))
	first := make(chan struct{})
	go func() { defer close(first); c.Sweep(context.Background()) }()
	for entered.Load() == 0 {
		runtime.Gosched() // the first Sweep's check is in GetPod
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	second := make(chan struct{})
	go func() { defer close(second); c.Sweep(done) }()
	select {
	case <-second:
	case <-time.After(10 * time.Second):
		assert.Fail(t, "a Sweep whose context is done did not return while another Sweep ran",
			"it waits for the first Sweep, which waits for its check")
	}
	close(release)
	<-first
	<-second
}

// TestASweepCountsNoCheckOfAnOlderSweep: Sweep marks carry their
// generation. With four workers, p is untracked while a first Sweep's
// check of it hangs in a port, and that Sweep is cancelled; a second Sweep
// checks q, which is slow. When p's check ends, the second Sweep goes on
// waiting for q's, and returns after it.
func TestASweepCountsNoCheckOfAnOlderSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pRelease, qRelease := make(chan struct{}), make(chan struct{})
		getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			switch key.Name {
			case "p":
				<-pRelease
			case "q":
				<-qRelease
			}
			return podAt(key, key.Name), nil
		})
		c := deletiontest.NewEngine(t, getter, newDestroyLog(), deletion.Options{Workers: 4, CheckTimeout: time.Hour})
		require.NoError(t, c.Track(pu("p")))
		ctx, cancel := context.WithCancel(context.Background())
		first := make(chan struct{})
		go func() { defer close(first); c.Sweep(ctx) }()
		synctest.Wait()
		require.True(t, c.Untrack("p"))
		cancel()
		<-first
		require.NoError(t, c.Track(pu("q")))

		second := make(chan struct{})
		go func() { defer close(second); c.Sweep(context.Background()) }()
		synctest.Wait()
		close(pRelease) // the first Sweep's check of p ends
		synctest.Wait()
		select {
		case <-second:
			assert.Fail(t, "the second Sweep returned when the first Sweep's check of p ended; its own check of q still runs")
		default:
		}
		close(qRelease)
		synctest.Wait()
		select {
		case <-second:
		default:
			assert.Fail(t, "the second Sweep did not return once its own check of q had ended")
		}
	})
}

// TestASecondSweepLeavesAStuckCheckBehindWhileOtherSlotsAreFree: a Sweep
// returns once every check it still waits for is held by a check stuck in
// a port past its deadline, whoever began it. With four workers, a first
// Sweep gives up on p's stuck check; a second Sweep checks q and waits for
// p's next check, which cannot begin while the stuck one holds p: it must
// return within a few seconds, though three of the four slots are free.
func TestASecondSweepLeavesAStuckCheckBehindWhileOtherSlotsAreFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		port := newStuckPort("p")
		c := deletiontest.NewEngine(t, port, newDestroyLog(), deletion.Options{Workers: 4, CheckTimeout: 10 * time.Second})
		require.NoError(t, c.Track(pu("p")))
		require.NoError(t, c.Track(pu("q")))
		require.LessOrEqual(t, sweepFor(c, time.Hour), 15*time.Second, "the first Sweep leaves the stuck check behind")

		took := sweepFor(c, time.Hour)
		assert.LessOrEqual(t, took, 5*time.Second, "the second Sweep waited %v behind a check stuck past its deadline", took)
		close(port.release)
		synctest.Wait()
	})
}

// TestASweepWaitsForItsOwnChecksOnly: Sweep "returns when all are done or
// ctx is". A first Sweep (no Start, two workers) is cancelled while the
// check of PU p is inside a port that ignores its context, and p is
// untracked meanwhile; a second Sweep then checks q, whose GetPod blocks.
// When p's old check ends, the second Sweep must go on waiting for its own
// check of q, and return once that check has ended and been observed.
func TestASweepWaitsForItsOwnChecksOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		releaseP, releaseQ := make(chan struct{}), make(chan struct{})
		var qCalls atomic.Int32
		getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			switch {
			case key.Name == "p":
				<-releaseP // ignores its context
			case key.Name == "q" && qCalls.Add(1) == 2:
				<-releaseQ // the second Sweep's check of q
			}
			return podAt(key, key.Name), nil
		})
		rec := &deletiontest.Events{}
		c := deletiontest.NewEngine(t, getter, newDestroyLog(), deletion.Options{Workers: 2, Observer: rec})
		require.NoError(t, c.Track(pu("p")))
		require.NoError(t, c.Track(pu("q")))

		ctx, cancel := context.WithCancel(context.Background())
		first := make(chan struct{})
		go func() {
			defer close(first)
			c.Sweep(ctx)
		}()
		synctest.Wait() // p's check is in GetPod, q's is done
		require.True(t, c.Untrack("p"))
		cancel()
		<-first

		second := make(chan struct{})
		go func() {
			defer close(second)
			c.Sweep(context.Background())
		}()
		synctest.Wait() // the second Sweep's check of q is in GetPod
		require.Equal(t, int32(2), qCalls.Load(), "the second Sweep checks q")
		close(releaseP) // p's old check ends
		synctest.Wait()
		early := false
		select {
		case <-second:
			early = true
			assert.Fail(t, "Sweep returned while its own check of q was still in GetPod",
				"the end of the check of p, which an earlier Sweep began and Untrack ended, counted as one of its own")
		default:
		}
		close(releaseQ)
		<-second
		if !early {
			var qChecked int
			for _, ev := range rec.Of(deletion.EventChecked) {
				if ev.PU.PUID == "q" {
					qChecked++
				}
			}
			assert.Equal(t, 2, qChecked, "each Sweep's check of q was observed by the time it returned")
		}
	})
}

// TestASweepAfterStartReturnedLeavesAStuckCheckBehind: Sweep leaves behind
// a check stuck in a port past its deadline, returning "once every check it
// still waits for is held by a worker so stuck, or every worker is"; after
// Start has returned, Sweep alone checks PUs. Start (one worker,
// CheckTimeout 10s) leaves a check stuck in a port that ignores its
// context when it stops; a Sweep then waits for that PU and another, which
// no check can run for while the stuck one holds the only worker: it must
// return about when the stuck check passes its deadline, not when its own
// context ends an hour later.
func TestASweepAfterStartReturnedLeavesAStuckCheckBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		port := newStuckPort("stuck")
		c := deletiontest.NewEngine(t, port, newDestroyLog(), deletion.Options{Workers: 1, CheckTimeout: 10 * time.Second, SweepInterval: time.Hour})
		require.NoError(t, c.Track(pu("stuck")))
		require.NoError(t, c.Track(pu("other")))
		stop := deletiontest.Start(t, c)
		c.TriggerPod(port.stuck)
		synctest.Wait()
		require.Equal(t, int32(1), port.entered.Load(), "the check is stuck in GetPod")
		time.Sleep(time.Second)
		stop() // returns after ShutdownTimeout, leaving the stuck check behind

		took := sweepFor(c, time.Hour)
		assert.LessOrEqual(t, took, 15*time.Second,
			"Sweep waited %v for a check stuck in a port past its deadline of 10s", took)
		close(port.release)
		synctest.Wait()
	})
}

// TestASecondSweepLeavesAStuckCheckBehind: a check stuck in a port past its
// deadline is left behind by every Sweep, not only by the one that began
// it. Without Start (one worker, CheckTimeout 10s), a first Sweep gives up
// on a check stuck in a port that ignores its context; a second Sweep,
// whose checks cannot run while that check holds the only worker, must
// return at once (within a few seconds), not wait as long as the port.
func TestASecondSweepLeavesAStuckCheckBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		port := newStuckPort("stuck")
		c := deletiontest.NewEngine(t, port, newDestroyLog(), deletion.Options{Workers: 1, CheckTimeout: 10 * time.Second})
		require.NoError(t, c.Track(pu("stuck")))
		require.NoError(t, c.Track(pu("other")))
		first := sweepFor(c, time.Hour)
		require.LessOrEqual(t, first, 15*time.Second, "the first Sweep leaves the stuck check behind")
		require.Equal(t, int32(1), port.entered.Load())

		took := sweepFor(c, time.Hour)
		assert.LessOrEqual(t, took, 5*time.Second,
			"the second Sweep waited %v behind a check already stuck past its deadline", took)
		close(port.release)
		synctest.Wait()
	})
}
