package deletion_test

// The destroy rate's line: at most rate*w + burst destroys start in any
// window, however turns are reserved, given back or left unused; a PU
// waiting for its turn leaves the line once seen alive, and is counted by
// Backlog;
// Untrack during a wait gives the turn back; a Sweep is one full pass under
// a rate; and a destroy never waits for its turn past half of its check's
// time left.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
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

// goneKeys returns the keys of n pods named prefix0, prefix1..., which do
// not exist.
func goneKeys(prefix string, n int) []ports.PU {
	out := make([]ports.PU, n)
	for i := range out {
		name := fmt.Sprintf("%s%d", prefix, i)
		out[i] = ports.PU{PUID: name, Pod: types.NamespacedName{Namespace: "ns", Name: name}}
	}
	return out
}

// TestASweepUnderARateIsOneFullPass: without Start, DestroyRate 10 and 50
// PUs whose pods are gone: a Sweep is one full pass, which under a rate
// takes longer; it does not stop short. It returns once all 50 are
// destroyed, in about 5s, at the rate's pace.
func TestASweepUnderARateIsOneFullPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy := newDestroyLog()
		getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			return nil, ports.ErrPodNotFound
		})
		c := deletiontest.NewEngine(t, getter, policy, deletion.Options{DestroyRate: 10})
		for _, pu := range goneKeys("pu", 50) {
			require.NoError(t, c.Track(pu))
		}
		c.Sweep(context.Background())
		took := policy.since()
		assert.Len(t, policy.starts(), 50, "the Sweep destroyed every PU")
		assert.Zero(t, c.Len())
		assert.InDelta(t, 4.9, took.Seconds(), 0.5, "50 destroys at 10 a second, the first at once")
		assertRateBound(t, policy.starts(), 10, 1)
	})
}

// TestATurnIsNotHeldPastHalfTheCheckTimeLeft: the destroy rate promises
// that a destroy waits in its check only for a turn within a moment and
// half of the check's time left, so that DestroyPU keeps at least half of
// its deadline. CheckTimeout 100ms and DestroyRate 16 (a turn every
// 62.5ms, under the 62.5ms a tick of 500ms spreads, over the 50ms half of
// the check's time): the second PU's DestroyPU still has at least half of
// its deadline when it starts.
func TestATurnIsNotHeldPastHalfTheCheckTimeLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var least atomic.Int64
		least.Store(int64(time.Hour))
		policy := ports.PolicyHandlerFunc(func(ctx context.Context, _ ports.DestroyEvent) error {
			d, ok := ctx.Deadline()
			require.True(t, ok)
			if left := time.Until(d); int64(left) < least.Load() {
				least.Store(int64(left))
			}
			return nil
		})
		getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			return nil, ports.ErrPodNotFound
		})
		c := deletiontest.NewEngine(t, getter, policy, deletion.Options{DestroyRate: 16, Workers: 1, CheckTimeout: 100 * time.Millisecond,
			SweepInterval: 32 * time.Second})
		for _, pu := range goneKeys("pu", 2) {
			require.NoError(t, c.Track(pu))
		}
		deletiontest.Start(t, c)
		c.TriggerAll()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		require.Zero(t, c.Len(), "both are destroyed")
		assert.GreaterOrEqual(t, time.Duration(least.Load()), 50*time.Millisecond-time.Millisecond,
			"DestroyPU started with less than half of its check's deadline left")
	})
}

// TestASweepUnderARateRetriesAFailedDestroyOnItsTurn: Sweep checks every
// PU, "those waiting for a retry or their turn included", and under
// DestroyRate waits for the turns of the destroys it decides. DestroyRate
// 2: a Sweep's destroy fails; the next Sweep, at once, checks the retry
// early, waits for a turn and destroys it.
func TestASweepUnderARateRetriesAFailedDestroyOnItsTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy := newDestroyLog()
		policy.failFirst(errors.New("policy engine busy"), nil)
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{DestroyRate: 2, RetryMinDelay: time.Minute})
		require.NoError(t, c.Track(pu("x")))
		c.Sweep(context.Background())
		require.Len(t, policy.starts(), 1, "the first destroy fails")
		c.Sweep(context.Background())
		assert.Len(t, policy.starts(), 2, "the second Sweep tries it again, on its turn")
		assert.Zero(t, c.Len())
		assert.Less(t, policy.since(), time.Second, "within a turn of 500ms, not the retry's minute")
		assertRateBound(t, policy.starts(), 2, 1)
	})
}

// TestATinyDestroyRateDelaysWithoutSpinning: Options.DestroyRate takes any
// rate of at least one a year (a smaller one is refused); a destroy beyond
// the budget waits "for about when its turn would come ... and is checked
// again then: nothing is lost, only delayed". At one destroy a year, two
// PUs are found gone: one is destroyed, the other waits for its turn. Over
// the next hour (SweepInterval 1h) it is checked about once, not in a loop
// that re-checks it without end, and Status says its next attempt is
// ahead, not in the past.
func TestATinyDestroyRateDelaysWithoutSpinning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var gets atomic.Int64
		getter := ports.PodGetterFunc(func(ctx context.Context, _ types.NamespacedName) (*corev1.Pod, error) {
			if gets.Add(1) > 1000 { // a loop: let time pass, so that the test ends
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return nil, ports.ErrPodNotFound
		})
		policy := newDestroyLog()
		_, err := deletion.New(getter, policy, deletion.Options{DestroyRate: 1e-10})
		require.ErrorIs(t, err, deletion.ErrInvalidOptions, "a turn every 317 years")
		yearly := rate.Limit(1 / deletion.MaxDuration.Seconds())
		c := deletiontest.NewEngine(t, getter, policy, deletion.Options{DestroyRate: yearly, SweepInterval: time.Hour, CheckTimeout: time.Second, Workers: 1})
		require.NoError(t, c.Track(pu("a")))
		require.NoError(t, c.Track(pu("b")))
		deletiontest.Start(t, c)
		c.TriggerAll()
		synctest.Wait()
		checked := policy.since()
		require.Len(t, policy.starts(), 1, "one destroy within the burst")
		time.Sleep(time.Hour)
		synctest.Wait()

		assert.LessOrEqual(t, gets.Load(), int64(4), "GetPod called %d times in the hour after two PUs were checked", gets.Load())
		if st := c.Status(); assert.Len(t, st, 1, "the other PU waits for its turn") {
			assert.Equal(t, "waiting for its turn", st[0].State)
			assert.Greater(t, time.Until(st[0].NextAttempt), time.Hour,
				"its next attempt is %v (%v from now), %v after the check", st[0].NextAttempt, time.Until(st[0].NextAttempt), checked)
		}
	})
}

// TestANaNDestroyRateIsRejected: "values out of range are rejected by New"
// (Options), and DestroyRate "bounds how many DestroyPU calls start per
// second"; 0 is the only "no limit" besides rate.Inf. A NaN rate (what
// strconv.ParseFloat makes of a flag set to "NaN") is no rate: New must
// reject it with ErrInvalidOptions, not run without a limit.
func TestANaNDestroyRateIsRejected(t *testing.T) {
	_, err := deletion.New(getterOf(nil, ports.ErrPodNotFound), newDestroyLog(), deletion.Options{DestroyRate: rate.Limit(math.NaN()), Logger: deletiontest.Discard()})
	assert.ErrorIs(t, err, deletion.ErrInvalidOptions)
}

// TestRateLimitedCountsEveryPUWaitingForItsTurn: Backlog().RateLimited "is
// how many PUs wait for their turn under the destroy rate" (the metric
// podsweeper_pus_waiting_for_destroy_rate, which README's rollout reads as
// "the queue"). DestroyRate 0.01 (a turn every 100s): ten PUs are found
// gone, one is destroyed and nine wait for turns 100 to 900 s away, checked
// meanwhile by their periodic checks (SweepInterval 5s), each taking 400ms
// of a GetPod, within the one worker's means. For the minute that follows
// no turn comes, so nine PUs wait for theirs at every instant, whether one
// of them is being checked or queued for its periodic check or not.
func TestRateLimitedCountsEveryPUWaitingForItsTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		getter := ports.PodGetterFunc(func(ctx context.Context, _ types.NamespacedName) (*corev1.Pod, error) {
			select {
			case <-time.After(400 * time.Millisecond):
				return nil, ports.ErrPodNotFound
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
		policy := newDestroyLog()
		c := deletiontest.NewEngine(t, getter, policy, deletion.Options{DestroyRate: 0.01, Workers: 1, CheckTimeout: time.Second, SweepInterval: 5 * time.Second})
		for i := range 10 {
			require.NoError(t, c.Track(pu(num8(i))))
		}
		deletiontest.Start(t, c)
		c.TriggerAll()
		time.Sleep(5 * time.Second) // ten checks of 400ms
		require.Len(t, policy.starts(), 1, "one destroy within the burst")
		minimum, off, samples := 9, 0, 0
		for range 240 { // a minute
			time.Sleep(250 * time.Millisecond)
			n := c.Backlog().RateLimited
			samples++
			if n != 9 {
				off++
				minimum = min(minimum, n)
			}
		}
		require.Len(t, policy.starts(), 1, "no turn came in that minute")
		assert.Zero(t, off, "Backlog().RateLimited was not 9 in %d of %d samples (as low as %d) while nine PUs waited for their turns",
			off, samples, minimum)
	})
}

// TestTheDestroyRateHoldsWhenAReservationIsLate: DestroyRate: "in any
// window of w seconds, at most DestroyRate*w + DestroyBurst start".
// DestroyRate 1, burst 1, two workers, PUs found gone by triggers at 0s,
// 0.5s, 1s and 1.5s. The check of the second reads the clock at 0.5s for
// its turn and is held up until 1.2s (see lateClock); meanwhile the third's
// check takes the turn of 1s. A turn asked for with an old time must not
// hand out the time between twice: the fourth PU's destroy may not start
// before 2s.
func TestTheDestroyRateHoldsWhenAReservationIsLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Now's calls: New's epoch, then one per turn asked for.
		clk := &lateClock{lateCall: 3, late: 700 * time.Millisecond}
		policy := newDestroyLog()
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			Clock: clk, DestroyRate: 1, Workers: 2, SweepInterval: time.Hour, CheckTimeout: 10 * time.Second})
		for _, name := range []string{"a", "b", "c", "d"} {
			require.NoError(t, c.Track(pu(name)))
		}
		deletiontest.Start(t, c)
		for _, name := range []string{"a", "b", "c", "d"} {
			c.TriggerPod(pu(name).Pod)
			time.Sleep(500 * time.Millisecond)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		require.Zero(t, c.Len(), "every PU is destroyed")
		require.Len(t, policy.of("c"), 1)
		if d := policy.of("d"); assert.Len(t, d, 1) {
			assert.GreaterOrEqual(t, d[0], 2*time.Second, "d's destroy started at %v, c's at %v", d[0], policy.of("c")[0])
		}
		assertRateBound(t, policy.starts(), 1, 1)
	})
}

// TestUntrackDuringARateWaitGivesTheTurnBack: a destroy that waits for its
// turn inside its check (DestroyRate 10, the turn 100ms away) and whose PU
// is untracked meanwhile calls no DestroyPU, and its turn goes back to the
// limiter: a destroy decided right after starts at once, not a turn later.
func TestUntrackDuringARateWaitGivesTheTurnBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy := newDestroyLog()
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			DestroyRate: 10, Workers: 2, SweepInterval: time.Hour, CheckTimeout: 10 * time.Second})
		for _, name := range []string{"a", "b", "c"} {
			require.NoError(t, c.Track(pu(name)))
		}
		deletiontest.Start(t, c)
		c.TriggerPod(pu("a").Pod)
		synctest.Wait() // a's destroy took the turn at hand
		c.TriggerPod(pu("b").Pod)
		synctest.Wait() // b waits 100ms for its turn, inside its check
		time.Sleep(50 * time.Millisecond)
		require.True(t, c.Untrack("b"))
		time.Sleep(100 * time.Millisecond) // b's turn has come and gone
		synctest.Wait()
		c.TriggerPod(pu("c").Pod)
		asked := policy.since()
		synctest.Wait()

		assert.Empty(t, policy.of("b"), "no DestroyPU of an untracked PU")
		if at := policy.of("c"); assert.Len(t, at, 1, "c is destroyed") {
			assert.Equal(t, asked, at[0], "c's destroy starts at once, on the turn b gave back")
		}
	})
}

// TestBacklogForgetsAPUSeenAliveAgain: OldestGoneSince is "since when the
// oldest PU that a check found must go has been waiting for its destroy".
// Without the destroy rate: a cache reads a pod as gone, the policy engine
// fails the destroy, and the retry's check sees the pod alive again. It no
// longer waits for a destroy: OldestGoneSince and Retrying are zero.
func TestBacklogForgetsAPUSeenAliveAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := deletiontest.NewCluster()
		var blip atomic.Bool
		blip.Store(true)
		live := ports.PU{PUID: "p0", Pod: addPod(w, "p0", "p0", testNode, "", corev1.PodRunning)}
		policy := newDestroyLog()
		policy.Fail(errBoom)
		c := deletiontest.NewEngine(t, blipGetter(w, &blip), policy, deletion.Options{SweepInterval: time.Hour, RetryMinDelay: time.Second})
		require.NoError(t, c.Track(live))
		deletiontest.Start(t, c)
		c.TriggerAll()
		synctest.Wait()
		b := c.Backlog()
		require.Equal(t, 1, b.Retrying, "the failed destroy waits for its retry")
		require.False(t, b.OldestGoneSince.IsZero())

		blip.Store(false)
		time.Sleep(2 * time.Second) // the retry's check
		synctest.Wait()
		b = c.Backlog()
		assert.Zero(t, b.Retrying)
		assert.True(t, b.OldestGoneSince.IsZero(), "a PU seen alive waits for no destroy; OldestGoneSince is %v", b.OldestGoneSince)
		assert.Len(t, policy.of("p0"), 1, "the retry destroyed nothing")
	})
}

// TestNoDestroyStartsAfterUntrackReturnsDuringARateWait: Untrack promises
// that once it returns, no DestroyPU of that PU starts. Under DestroyRate 10
// (a turn every 100ms) with one worker, two PUs are found gone at once: the
// first is destroyed, and the second's check waits the 100ms for its turn,
// a wait short enough to be spent inside the check. Untrack of that PU
// returns during the wait, and the agent tracks a new PU under the same
// PUID, for a live pod. No DestroyPU of that PUID may start after Untrack
// returned, whether Start's worker or a Sweep (without Start) runs the
// check, and the new PU stays tracked.
func TestNoDestroyStartsAfterUntrackReturnsDuringARateWait(t *testing.T) {
	for _, runner := range []string{"Start", "Sweep"} {
		t.Run(runner, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := deletiontest.NewCluster()
				policy := newDestroyLog()
				c := deletiontest.NewEngine(t, w, policy, deletion.Options{DestroyRate: 10, Workers: 1, SweepInterval: time.Hour})
				pus := map[string]ports.PU{}
				for _, id := range []string{"a", "b"} {
					pus[id] = ports.PU{PUID: id, Pod: types.NamespacedName{Namespace: "ns", Name: id}} // no pod: gone
					require.NoError(t, c.Track(pus[id]))
				}
				swept := make(chan struct{})
				if runner == "Start" {
					close(swept)
					deletiontest.Start(t, c)
					c.TriggerAll()
				} else {
					go func() {
						defer close(swept)
						c.Sweep(context.Background())
					}()
				}
				synctest.Wait()
				first := policy.puids()
				require.Len(t, first, 1, "one destroy at once, the other waits 100ms for its turn")
				waiting := pus["a"]
				if first[0] == "a" {
					waiting = pus["b"]
				}

				require.True(t, c.Untrack(waiting.PUID))
				untracked := policy.since()
				addPod(w, waiting.Pod.Name, waiting.PUID, testNode, "", corev1.PodRunning)
				require.NoError(t, c.Track(waiting)) // a new PU under the same PUID
				time.Sleep(time.Second)
				synctest.Wait()
				<-swept

				for _, at := range policy.of(waiting.PUID) {
					assert.Fail(t, "a DestroyPU started after Untrack returned",
						"DestroyPU of %s started at %v; Untrack returned at %v, during its rate wait", waiting.PUID, at, untracked)
				}
				assert.Equal(t, []ports.PU{waiting}, deletiontest.PUs(c), "the new PU of that PUID stays tracked")
			})
		})
	}
}

// TestAPUKeptAfterARateWaitLeavesTheBacklog: Backlog().RateLimited "is how
// many PUs wait for their turn under the destroy rate", and OldestGoneSince
// is since when the oldest PU found to go has waited for its destroy, "zero
// when none waits". After a blip (see afterABlip), the nine PUs that waited
// for their turns are checked again and kept: none waits any more, so
// RateLimited is 0 and OldestGoneSince is zero.
func TestAPUKeptAfterARateWaitLeavesTheBacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _, _, _ := afterABlip(t)
		b := c.Backlog()
		assert.Zero(t, b.RateLimited, "the PUs kept no longer wait for a turn")
		assert.True(t, b.OldestGoneSince.IsZero(), "no PU waits for its destroy, yet OldestGoneSince is %v old",
			time.Since(b.OldestGoneSince))
		assert.Zero(t, b.Retrying)
	})
}

// TestTheDestroyRateHoldsForPodsDeletedAfterABlip: DestroyRate "bounds how
// many DestroyPU calls start per second, with DestroyBurst at once". After
// a blip (see afterABlip), in which nine PUs waited for turns they never
// used, their pods are really deleted: the nine destroys must still be
// spread at one a second (at most rate*w + burst in any window w), not all
// start at once on turns left over from the blip.
func TestTheDestroyRateHoldsForPodsDeletedAfterABlip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, w, policy, kept := afterABlip(t)
		for _, pu := range kept {
			w.DeletePod(pu.Pod)
		}
		c.TriggerAll()
		time.Sleep(30 * time.Second)
		synctest.Wait()
		assert.Zero(t, c.Len(), "every PU destroyed once its pod was deleted")
		assertRateBound(t, policy.starts(), 1, 1)
	})
}

// TestTurnsThatNoDestroyUsedAreGivenBack: a turn reserved for a destroy
// that a later check does not carry out (the PU is kept) is given back, so
// that it does not delay the destroys that follow. DestroyRate 1 (burst 1),
// SweepInterval 5s, which re-checks every entry, CheckTimeout 1s (see
// afterABlip): 30 PUs are read gone in a blip (one destroyed, 29 waiting for
// turns up to 29 s away); the blip ends,
// and two intervals later, when every one of the 29 has been checked again
// and kept, one pod is really deleted. Its destroy is the only one the
// engine has to make, and the last started 12 s earlier: it must start
// within a couple of seconds, not wait behind the 29 turns nobody used.
func TestTurnsThatNoDestroyUsedAreGivenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := deletiontest.NewCluster()
		var blip atomic.Bool
		policy := newDestroyLog()
		c := deletiontest.NewEngine(t, blipGetter(w, &blip), policy, deletion.Options{DestroyRate: 1, CheckTimeout: time.Second, SweepInterval: 5 * time.Second})
		trackLive(t, c, w, "blip", 30)
		deletiontest.Start(t, c)
		synctest.Wait()
		blip.Store(true)
		c.TriggerAll()
		synctest.Wait()
		blip.Store(false)
		require.Len(t, policy.starts(), 1)
		late := trackLive(t, c, w, "late", 1)[0]

		time.Sleep(12 * time.Second)
		synctest.Wait()
		require.Len(t, policy.starts(), 1, "the blip's PUs are kept")
		w.DeletePod(late.Pod)
		deleted := policy.since()
		c.TriggerPod(late.Pod)
		time.Sleep(30 * time.Second)
		synctest.Wait()

		got := policy.of(late.PUID)
		require.Len(t, got, 1, "the PU of the deleted pod is destroyed")
		assert.LessOrEqual(t, got[0]-deleted, 2*time.Second,
			"its destroy started %v after its pod was deleted, behind turns that no destroy used", got[0]-deleted)
		assertRateBound(t, policy.starts(), 1, 1)
	})
}

// TestOldTurnsAreNotSpentAtOnceByTheNextSweep: DestroyRate bounds how many
// DestroyPU calls start per second, and Sweep checks every PU through the
// same rules. Without Start, DestroyRate 10 (a turn every 100ms) and
// CheckTimeout 100ms (no check waits for a turn over 50ms away): a Sweep
// whose context ends after 1s finds 50 PUs gone, destroys about ten and
// leaves the rest waiting for their turns; a minute later, Sweeps come
// again until every PU is destroyed.
// The turns of the first Sweep are long past by then: the later Sweeps'
// destroys must still start at most rate*w + burst in any window w, not 49
// in one instant.
func TestOldTurnsAreNotSpentAtOnceByTheNextSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy := newDestroyLog()
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{DestroyRate: 10, CheckTimeout: 100 * time.Millisecond})
		for i := range 50 {
			id := fmt.Sprint(i)
			require.NoError(t, c.Track(ports.PU{PUID: id, Pod: types.NamespacedName{Namespace: "ns", Name: id}}))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c.Sweep(ctx)
		cancel()
		require.Less(t, len(policy.starts()), 50, "the first Sweep leaves destroys waiting for their turns")
		time.Sleep(time.Minute)
		for c.Len() > 0 && policy.since() < 3*time.Minute {
			c.Sweep(context.Background())
			time.Sleep(100 * time.Millisecond)
		}
		assert.Zero(t, c.Len(), "Sweeps destroy every PU in the end")
		assertRateBound(t, policy.starts(), 10, 1)
	})
}

// TestRetryHoldsItsBackoffAfterARateWait: RetryMinDelay "is the wait after
// the first failed DestroyPU of a PU before it is tried again"; no periodic
// check or trigger tries a PU earlier. DestroyRate 10, RetryMinDelay 1m: a
// Sweep (before Start) whose context ends after 50ms destroys one PU and
// leaves the other waiting for its turn, 100ms away; a second Sweep then
// checks it, its destroy waits out the rest of its turn in the check and
// fails. Start then runs, with no Sweep: the failed destroy is tried again
// no earlier than a minute after it failed, and once that minute is over.
func TestRetryHoldsItsBackoffAfterARateWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy := newDestroyLog()
		policy.failFirst(nil, errBoom)
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			DestroyRate: 10, Workers: 1, RetryMinDelay: time.Minute, RetryMaxDelay: time.Hour,
		})
		for _, id := range []string{"a", "b"} {
			require.NoError(t, c.Track(ports.PU{PUID: id, Pod: types.NamespacedName{Namespace: "ns", Name: id}}))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		c.Sweep(ctx)
		cancel()
		require.Len(t, policy.starts(), 1, "one destroy at once, the other waits for its turn")
		require.Equal(t, 1, c.Len())
		failing := c.Status()[0].PUID
		c.Sweep(context.Background())
		deletiontest.Start(t, c)
		time.Sleep(70 * time.Second)
		synctest.Wait()

		got := policy.of(failing)
		require.GreaterOrEqual(t, len(got), 2, "the failed destroy of %s is tried again within 70s (calls at %v)", failing, got)
		assert.GreaterOrEqual(t, got[1]-got[0], time.Minute,
			"the retry came %v after the failed destroy, before its backoff of 1m", got[1]-got[0])
		assert.LessOrEqual(t, got[1]-got[0], time.Minute+5*time.Second, "and soon after it")
	})
}

// Options.DestroyRate: "in any window of w seconds, at most DestroyRate*w + DestroyBurst start." Sweeps without and
// with Start, triggers, failed destroys and their retries, Untracks.
func TestAuditHoldsDestroyRateBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		const rate, burst = 2.0, 3
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{
			DestroyRate: rate, DestroyBurst: burst, RetryMinDelay: 100 * time.Millisecond, Workers: 3,
		})
		var pus []ports.PU
		for i := range 30 {
			pu := cluster.CreatePod(key(fmt.Sprint("p", i)), "node-a", "")
			pus = append(pus, pu)
			_ = engine.Track(pu)
		}
		for _, pu := range pus[:20] {
			cluster.DeletePod(pu.Pod)
		}
		policy.FailNext(4, errors.New("busy"))
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		engine.Sweep(ctx) // without Start, ended early
		cancel()
		stop := deletiontest.Start(t, engine)
		go engine.Sweep(t.Context())
		for i := range 10 {
			engine.TriggerAll()
			engine.Untrack(pus[20-i-1].PUID)
			cluster.DeletePod(pus[20+i].Pod)
			engine.TriggerPod(pus[20+i].Pod)
			deletiontest.Advance(700 * time.Millisecond)
		}
		stop()
		engine.Sweep(t.Context()) // after Start returned
		deletiontest.Advance(time.Minute)

		calls := policy.Calls()
		for i := range calls {
			for j := i; j < len(calls); j++ {
				w := calls[j].At.Sub(calls[i].At).Seconds()
				if n := float64(j - i + 1); n > rate*w+burst+1e-9 {
					t.Fatalf("%v DestroyPU calls started within %.3fs: over %v*w+%d", n, w, rate, burst)
				}
			}
		}
		t.Logf("%d calls", len(calls))
	})
}

// deletion/options.go:113-114: "in any window of w seconds, at most DestroyRate*w + DestroyBurst start", under
// triggers, Untracks, failing reads and destroys, Sweeps with and without Start.
func TestAuditHoldsDestroyRateBoundOverRandomMixes(t *testing.T) {
	for seed := range 10 {
		synctest.Test(t, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 1))
			cluster := deletiontest.NewCluster()
			pol := &deletiontest.Policy{}
			e := deletiontest.NewEngine(t, cluster, pol, deletion.Options{DestroyRate: rate.Limit(2), DestroyBurst: 3,
				SweepInterval: time.Second, RetryMinDelay: 200 * time.Millisecond})
			var pus []ports.PU
			for i := range 40 {
				pu := cluster.CreatePod(nsKey(fmt.Sprint("p", i)), "", "")
				pus = append(pus, pu)
				_ = e.Track(pu)
			}
			stop := deletiontest.Start(t, e)
			for step := range 200 {
				pu := pus[rng.IntN(len(pus))]
				switch rng.IntN(8) {
				case 0, 1:
					cluster.DeletePod(pu.Pod)
				case 2:
					e.TriggerPod(pu.Pod)
				case 3:
					e.Untrack(pu.PUID)
				case 4:
					pol.FailNext(1, errors.New("x"))
				case 5:
					cluster.FailReads(pu.Pod, errors.New("y"))
				case 6:
					cluster.FailReads(pu.Pod, nil)
				case 7:
					if step%20 == 0 {
						go e.Sweep(context.Background())
					}
				}
				deletiontest.Advance(time.Duration(rng.IntN(300)) * time.Millisecond)
				if step == 150 {
					stop()
					go e.Sweep(context.Background())
				}
			}
			deletiontest.Advance(time.Minute)
			calls := pol.Calls()
			for i := range calls {
				for j := i; j < len(calls); j++ {
					if w := calls[j].At.Sub(calls[i].At).Seconds(); float64(j-i+1) > w*2+3+1e-9 {
						t.Fatalf("seed %d: %d DestroyPU calls in %.3fs", seed, j-i+1, w)
					}
				}
			}
		})
	}
}

// Options.DestroyRate (doc: "in any window of w seconds, at most DestroyRate*w + DestroyBurst start"). At 0.3 a
// second, burst 1, two DestroyPU calls may start only 1/0.3 = 3.333...s apart: 2 <= 0.3*w + 1 needs w >= 3.333...s.
func TestAuditDestroyRateWindowBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const r, burst = 0.3, 1
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{DestroyRate: r, DestroyBurst: burst})
		for _, name := range []string{"a", "b", "c"} {
			pu := cluster.CreatePod(nsKey(name), "node-a", "")
			if err := engine.Track(pu); err != nil {
				t.Fatal(err)
			}
			cluster.DeletePod(pu.Pod)
		}
		deletiontest.Start(t, engine)
		deletiontest.Advance(time.Minute)
		calls := policy.Calls()
		if len(calls) != 3 {
			t.Fatalf("%d calls, want 3", len(calls))
		}
		for i := range calls {
			for j := i + 1; j < len(calls); j++ {
				w := calls[j].At.Sub(calls[i].At).Seconds()
				if n := float64(j - i + 1); n > r*w+burst {
					t.Errorf("%v DestroyPU calls started in a window of %v (from %v to %v): over DestroyRate*w + DestroyBurst = %.10f",
						n, calls[j].At.Sub(calls[i].At), calls[i].At.Format("15:04:05.000000000"),
						calls[j].At.Format("15:04:05.000000000"), r*w+burst)
				}
			}
		}
	})
}

// Options.DestroyBurst (doc: "DestroyBurst is how many DestroyPU calls may start at once under DestroyRate"; Options:
// "values out of range are rejected by New"; DestroyRate: "a PU destroys only when fewer PUs are ahead of it than
// turns are at hand"). New takes a large burst; a PU alone in line must then destroy at once, not never.
func TestAuditLargeDestroyBurstStillDestroys(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rate  rate.Limit
		burst int
	}{
		{"1/s, burst MaxInt", 1, math.MaxInt},
		{"1/min, burst MaxInt32", rate.Every(time.Minute), math.MaxInt32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cluster := deletiontest.NewCluster()
				policy := &deletiontest.Policy{}
				opts := deletion.Options{DestroyRate: tc.rate, DestroyBurst: tc.burst, SweepInterval: time.Second}
				if err := opts.Validate(); err != nil {
					t.Skipf("rejected, as documented: %v", err)
				}
				engine := deletiontest.NewEngine(t, cluster, policy, opts)
				pu := cluster.CreatePod(nsKey("web"), "node-a", "")
				if err := engine.Track(pu); err != nil {
					t.Fatal(err)
				}
				deletiontest.Start(t, engine)
				cluster.DeletePod(pu.Pod)
				deletiontest.Advance(time.Hour)
				if n := policy.CallCount(); n != 1 {
					t.Errorf("DestroyBurst %d under DestroyRate %v: %d DestroyPU calls an hour after the only PU's pod went, want 1 (status %+v)",
						tc.burst, tc.rate, n, engine.Status())
				}
			})
		})
	}
}

// Untrack: "Once it returns, no DestroyPU of that PU starts". A PU waits for its turn under DestroyRate in a Sweep.
func TestAuditHoldsUntrackWhileWaitingForTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{DestroyRate: 0.1})
		a := cluster.CreatePod(key("a"), "node-a", "")
		b := cluster.CreatePod(key("b"), "node-a", "")
		_ = engine.Track(a)
		_ = engine.Track(b)
		cluster.DeletePod(a.Pod)
		cluster.DeletePod(b.Pod)
		done := make(chan struct{})
		go func() { engine.Sweep(t.Context()); close(done) }()
		synctest.Wait()
		first := policy.Calls()[0].Event.PUID
		waiting := a.PUID
		if first == a.PUID {
			waiting = b.PUID
		}
		engine.Untrack(waiting)
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Error("Sweep still waits for the turn of an untracked PU")
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if policy.Count(waiting) != 0 {
			t.Errorf("untracked PU destroyed")
		}
		<-done
	})
}
