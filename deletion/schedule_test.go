package deletion_test

// The scheduler's promises: every PU is checked about every SweepInterval,
// whatever was removed meanwhile; at most Workers checks run at once, never
// two of one PU, whoever runs them (Start or a Sweep); a retry comes after
// its backoff, at any interval, and not before, whatever brings the PU up;
// a slow check holds back no other of its batch; and an engine with nothing
// due does not wake up.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// TestARemovalFromALargeHeapKeepsEveryOtherCheck: 5,000 PUs of live pods,
// more than the heap's 4,096 it gives back once empty; one is untracked.
// Every other PU is still checked within an interval.
func TestARemovalFromALargeHeapKeepsEveryOtherCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		live := map[types.NamespacedName]string{}
		pus := make([]ports.PU, 5_000)
		for i := range pus {
			name := fmt.Sprint(i)
			key := types.NamespacedName{Namespace: "ns", Name: name}
			live[key] = name
			pus[i] = ports.PU{PUID: name, Pod: key}
		}
		gets := clusterOf(live)
		c := deletiontest.NewEngine(t, gets, newDestroyLog(), deletion.Options{SweepInterval: 10 * time.Second, Workers: 8})
		for _, pu := range pus {
			require.NoError(t, c.Track(pu))
		}
		deletiontest.Start(t, c)
		time.Sleep(time.Second)
		require.True(t, c.Untrack(pus[0].PUID))
		time.Sleep(11 * time.Second)
		synctest.Wait()
		unchecked := 0
		for _, pu := range pus[1:] {
			if gets.Reads(pu.Pod) == 0 {
				unchecked++
			}
		}
		assert.Zero(t, unchecked, "PUs never checked within an interval after one was untracked")
		assert.Equal(t, len(pus)-1, c.Len())
	})
}

// TestARetryAtAnIntervalOfHoursComesAfterItsBackoff: RetryMinDelay "is the
// wait after the first failed DestroyPU of a PU before it is tried again"
// (README: "A failed destroy is tried again after RetryMinDelay (1 s)");
// a retry comes at its own time (schedule.go). At SweepInterval 24h, a
// destroy that fails once is tried again a second later, not at the next of
// 3,600 ticks of the day.
func TestARetryAtAnIntervalOfHoursComesAfterItsBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy := newDestroyLog()
		policy.failFirst(errBoom, nil)
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			SweepInterval: 24 * time.Hour, RetryMinDelay: time.Second, RetryMaxDelay: time.Second})
		require.NoError(t, c.Track(pu("a")))
		deletiontest.Start(t, c)
		c.TriggerAll()
		time.Sleep(time.Minute)
		synctest.Wait()

		got := policy.of("a")
		require.Len(t, got, 2, "the failed destroy is retried within a minute")
		assert.LessOrEqual(t, got[1]-got[0], 2*time.Second, "the retry came %v after the failure, its backoff 1s", got[1]-got[0])
	})
}

// TestASlowCheckDoesNotHoldBackTheRestOfItsBatch: Workers is "how many
// checks may run at once", and a port that ignores its context "keeps one
// worker until it returns" (README, The engine): the other workers go on.
// Four workers, two PUs whose periodic checks come at the same tick
// (SweepInterval 1s), and nothing else tracked. The first GetPod of the
// batch is slow (20s, within a CheckTimeout of 30s), or hangs past its
// deadline, ignoring its context; the other PU's pod is gone. Its check
// must not wait behind the slow one while three workers are idle: its
// destroy starts within a couple of seconds.
func TestASlowCheckDoesNotHoldBackTheRestOfItsBatch(t *testing.T) {
	for _, hang := range []bool{false, true} {
		t.Run(map[bool]string{false: "slow", true: "hung"}[hang], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				defer close(release)
				var calls atomic.Int32
				getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
					if calls.Add(1) == 1 { // the batch's first check
						if hang {
							<-release // ignores its context
						} else {
							select {
							case <-time.After(20 * time.Second):
							case <-ctx.Done():
							}
						}
						return podAt(key, key.Name), nil
					}
					return nil, ports.ErrPodNotFound
				})
				policy := newDestroyLog()
				c := deletiontest.NewEngine(t, getter, policy, deletion.Options{Workers: 4, SweepInterval: time.Second, CheckTimeout: 30 * time.Second})
				a, b := pu("a"), pu(wheelNeighbour("a")) // the same phase
				require.NoError(t, c.Track(a))
				require.NoError(t, c.Track(b))
				deletiontest.Start(t, c)
				time.Sleep(3 * time.Second) // the batch of both comes within the first second
				synctest.Wait()
				assert.Len(t, policy.starts(), 1,
					"the other PU of the batch waited %v in the queue behind a slow check, with three workers idle", time.Since(c.Backlog().OldestQueuedSince))
				assert.NoError(t, c.LivenessCheck(nil))
			})
		})
	}
}

// docs/sdk/engine.md:11: "At most Workers (4) checks run at once, never two of one PU, whoever runs them (Start or a
// Sweep)". Sweeps before, during and after Start, triggers, and slow reads.
func TestAuditHoldsWorkersBoundAndOneCheckPerPU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		var mu sync.Mutex
		inFlight, max := map[types.NamespacedName]int{}, 0
		total := 0
		pg := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			mu.Lock()
			inFlight[k]++
			total++
			if inFlight[k] > 1 {
				t.Errorf("two checks of %s at once", k)
			}
			if total > max {
				max = total
			}
			mu.Unlock()
			time.Sleep(300 * time.Millisecond)
			mu.Lock()
			inFlight[k]--
			total--
			mu.Unlock()
			return cluster.GetPod(ctx, k)
		})
		engine := deletiontest.NewEngine(t, pg, &deletiontest.Policy{}, deletion.Options{Workers: 3, SweepInterval: time.Second})
		for i := range 12 {
			_ = engine.Track(cluster.CreatePod(key(fmt.Sprint("p", i)), "node-a", ""))
		}
		var wg sync.WaitGroup
		ctx, cancel := context.WithCancel(t.Context())
		defer func() { cancel(); wg.Wait(); time.Sleep(time.Second) }()
		wg.Go(func() { engine.Sweep(ctx) })
		deletiontest.Advance(200 * time.Millisecond)
		stop := deletiontest.Start(t, engine)
		for i := range 10 {
			wg.Go(func() { engine.Sweep(ctx) })
			engine.TriggerAll()
			engine.TriggerPod(key(fmt.Sprint("p", i)))
			deletiontest.Advance(150 * time.Millisecond)
		}
		stop()
		wg.Go(func() { engine.Sweep(ctx) })
		deletiontest.Advance(10 * time.Second)
		if max > 3 {
			t.Errorf("%d checks at once, Workers 3", max)
		}
	})
}

// Retries: "tried again after RetryMinDelay ..., and not before, whatever brings the PU up (its periodic check, a
// trigger)".
func TestAuditHoldsRetryNotBeforeItsDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{RetryMinDelay: 10 * time.Second, RetryMaxDelay: time.Minute})
		pu := cluster.CreatePod(key("a"), "node-a", "")
		_ = engine.Track(pu)
		deletiontest.Start(t, engine)
		policy.FailNext(1, errors.New("busy"))
		cluster.DeletePod(pu.Pod)
		engine.TriggerPod(pu.Pod)
		deletiontest.Advance(0)
		first := policy.Calls()[0].At
		for range 9 {
			engine.TriggerPod(pu.Pod)
			engine.TriggerAll()
			deletiontest.Advance(time.Second)
		}
		calls := policy.Calls()
		if len(calls) > 1 && calls[1].At.Sub(first) < 10*time.Second {
			t.Errorf("retry %v after the failure, want >= 10s", calls[1].At.Sub(first))
		}
		deletiontest.Advance(10 * time.Second)
		if engine.Len() != 0 {
			t.Errorf("not retried")
		}
	})
}

type countingClock struct {
	clock.RealClock
	now atomic.Int64
}

func (c *countingClock) Now() time.Time { c.now.Add(1); return time.Now() }

// readsClock counts every read of the time, Since's too (the engine's own times are Since its epoch).
type readsClock struct {
	clock.RealClock
	reads atomic.Int64
}

func (c *readsClock) Now() time.Time                  { c.reads.Add(1); return time.Now() }
func (c *readsClock) Since(t time.Time) time.Duration { c.reads.Add(1); return time.Since(t) }

// docs/sdk/engine.md:12-13: "an engine with nothing due does not wake up" (after work, failures and a retry too).
func TestAuditHoldsIdleEngineDoesNotWakeUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := &countingClock{}
		cluster := deletiontest.NewCluster()
		pol := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cluster, pol, deletion.Options{Clock: cl})
		deletiontest.Start(t, e)
		a, b := cluster.CreatePod(nsKey("a"), "", ""), cluster.CreatePod(nsKey("b"), "", "")
		_, _ = e.Track(a), e.Track(b)
		cluster.FailReads(b.Pod, errors.New("boom"))
		deletiontest.Advance(10 * time.Second)
		e.Untrack(b.PUID)
		cluster.DeletePod(a.Pod)
		pol.FailNext(1, errors.New("busy"))
		e.TriggerPod(a.Pod)
		deletiontest.Advance(time.Minute)
		if e.Len() != 0 {
			t.Fatalf("%d PUs left", e.Len())
		}
		n := cl.now.Load()
		deletiontest.Advance(time.Hour)
		if d := cl.now.Load() - n; d != 0 {
			t.Errorf("an idle engine read its clock %d times in an hour", d)
		}
	})
}

// TestNothingWakesOnceTheLastPUIsUntracked: the scheduler's timer, armed
// for the last PU's next check, is stopped when that PU is untracked: the
// engine reads its clock no more ("nothing wakes when nothing is due").
func TestNothingWakesOnceTheLastPUIsUntracked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := &readsClock{}
		cluster := deletiontest.NewCluster()
		e := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{Clock: cl})
		deletiontest.Start(t, e)
		a := cluster.CreatePod(nsKey("a"), "", "")
		require.NoError(t, e.Track(a))
		deletiontest.Advance(time.Second) // checked; its next check is an interval away
		require.True(t, e.Untrack(a.PUID))
		synctest.Wait()
		n := cl.reads.Load()
		deletiontest.Advance(time.Hour)
		if d := cl.reads.Load() - n; d != 0 {
			t.Errorf("the engine read its clock %d times in the hour after its last PU was untracked", d)
		}
	})
}

// docs/sdk/decision-table.md:71-73: "A failed destroy is tried again after RetryMinDelay (1 s), doubling up to
// RetryMaxDelay (1 min), and not before, whatever brings the PU up (its periodic check, a trigger)".
func TestRetryNotBeforeItsTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		pu := cl.CreatePod(nsKey(fmt.Sprintf("pod-%d", 1)), "node-a", "")
		policy := &deletiontest.Policy{}
		policy.Fail(errors.New("down"))
		e := deletiontest.NewEngine(t, cl, policy, deletion.Options{NodeName: "node-a", SweepInterval: 500 * time.Millisecond,
			RetryMinDelay: 4 * time.Second, RetryMaxDelay: 16 * time.Second})
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		deletiontest.Start(t, e)
		cl.DeletePod(nsKey(fmt.Sprintf("pod-%d", 1)))
		e.TriggerPod(nsKey(fmt.Sprintf("pod-%d", 1)))
		deletiontest.Advance(10 * time.Millisecond)
		for i := 0; i < 30; i++ {
			e.TriggerPod(nsKey(fmt.Sprintf("pod-%d", 1)))
			deletiontest.Advance(100 * time.Millisecond)
		}
		calls := policy.Calls()
		for i := 1; i < len(calls); i++ {
			want := 4 * time.Second << (i - 1)
			if want > 16*time.Second {
				want = 16 * time.Second
			}
			if d := calls[i].At.Sub(calls[i-1].At); d < want {
				t.Errorf("attempt %d came %v after the one before, want %v", i+1, d, want)
			}
		}
	})
}

// armingClock is the real clock (the bubble's under synctest) that counts
// each time the engine arms a timer on it: each sleep of its scheduler, or
// of a Sweep's wait for a turn, until a time.
type armingClock struct {
	clock.RealClock
	arms atomic.Int64
}

type armingTimer struct {
	clock.Timer
	c *armingClock
}

func (t armingTimer) Reset(d time.Duration) bool { t.c.arms.Add(1); return t.Timer.Reset(d) }

func (c *armingClock) NewTimer(d time.Duration) clock.Timer {
	return armingTimer{c.RealClock.NewTimer(d), c}
}

func (c *armingClock) After(d time.Duration) <-chan time.Time {
	c.arms.Add(1)
	return c.RealClock.After(d)
}

// docs/sdk/engine.md: "an engine with nothing due does not wake up", and
// BENCHMARKS.md: "the engine's scheduler wakes about twice a second at
// node scale". One PU checked once an hour: one sleep per check, none
// between (a batch whose checks are fast wakes no other worker later);
// 250 PUs at a SweepInterval of 5s: one sleep per batch tick, two a
// second.
func TestTheSchedulerSleepsOncePerBatchAndWakesForNothingElse(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pus      int
		interval time.Duration
		over     time.Duration
		most     int64
	}{
		{"one PU hourly", 1, time.Hour, 10 * time.Hour, 10},
		{"node scale", 250, 5 * time.Second, 100 * time.Second, 2 * 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cl := &armingClock{}
				cluster := deletiontest.NewCluster()
				e := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{Clock: cl, SweepInterval: tc.interval})
				for i := range tc.pus {
					require.NoError(t, e.Track(cluster.CreatePod(nsKey(fmt.Sprintf("p%d", i)), "", "")))
				}
				deletiontest.Start(t, e)
				deletiontest.Advance(tc.interval)
				before := cl.arms.Load()
				deletiontest.Advance(tc.over)
				if n := cl.arms.Load() - before; n > tc.most {
					t.Errorf("the scheduler slept %d times in %v, want at most %d", n, tc.over, tc.most)
				}
			})
		})
	}
}
