package deletion_test

// A second scenario for each of the engine's promises that promises_test.go
// and promises_sweep_test.go hold it to, so that a fix put back wrong fails
// two tests, each from another side.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// TestUntrackDuringARateWaitGivesTheTurnBack: a destroy that waits for its
// turn inside its check (DestroyRate 10, the turn 100ms away) and whose PU
// is untracked meanwhile calls no DestroyPU, and its turn goes back to the
// limiter: a destroy decided right after starts at once, not a turn later.
func TestUntrackDuringARateWaitGivesTheTurnBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy := newDestroyLog()
		c := newQuiet(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			DestroyRate: 10, Workers: 2, SweepInterval: time.Hour, CheckTimeout: 10 * time.Second})
		for _, name := range []string{"a", "b", "c"} {
			require.NoError(t, c.Track(pu(name)))
		}
		startEngine(t, c)
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
		w := newPodWorld()
		var blip atomic.Bool
		blip.Store(true)
		live := ports.PU{PUID: "p0", Pod: w.put("p0", "p0", testNode, "", corev1.PodRunning)}
		policy := newDestroyLog()
		policy.fail = func(ports.DestroyEvent) error { return errBoom }
		c := newQuiet(t, blipGetter(w, &blip), policy, deletion.Options{SweepInterval: time.Hour, RetryMinDelay: time.Second})
		require.NoError(t, c.Track(live))
		startEngine(t, c)
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
		c := newQuiet(t, getter, newDestroyLog(), deletion.Options{Workers: 4, CheckTimeout: time.Hour})
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
		c := newQuiet(t, port, newDestroyLog(), deletion.Options{Workers: 4, CheckTimeout: 10 * time.Second})
		require.NoError(t, c.Track(pu("p")))
		require.NoError(t, c.Track(pu("q")))
		require.LessOrEqual(t, sweepFor(c, time.Hour), 15*time.Second, "the first Sweep leaves the stuck check behind")

		took := sweepFor(c, time.Hour)
		assert.LessOrEqual(t, took, 5*time.Second, "the second Sweep waited %v behind a check stuck past its deadline", took)
		close(port.release)
		synctest.Wait()
	})
}

// TestChecksBeginWhenTheInventoryIgnoresItsDeadline: Start lists the
// Inventory before its first check, under a deadline of CheckTimeout. An
// Inventory that ignores its context hangs; once its deadline has passed
// (and a second more), the checks begin without it, and a PU whose pod is
// gone is destroyed.
func TestChecksBeginWhenTheInventoryIgnoresItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) {
			<-release // ignores its context, on purpose
			return nil, nil
		})
		policy := newDestroyLog()
		c := newQuiet(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			Inventory: inv, CheckTimeout: 5 * time.Second, SweepInterval: time.Second})
		require.NoError(t, c.Track(entryWith("")))
		stop := startEngine(t, c)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Empty(t, policy.starts(), "no check within the list's deadline")
		time.Sleep(3 * time.Second)
		synctest.Wait()
		assert.Len(t, policy.starts(), 1, "the checks began once the list's deadline had passed")
		close(release)
		stop()
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
		rec := &events{}
		c := newQuiet(t, getterOf(livePod(testUID, testNode), nil), newDestroyLog(), deletion.Options{
			Inventory: inv, Observer: rec, SweepInterval: deletion.MinSweepInterval, CheckTimeout: 3 * time.Second})
		require.NoError(t, c.Track(entryWith("")))
		startEngine(t, c)
		for range 19 { // 1.9s
			time.Sleep(100 * time.Millisecond)
			require.NoError(t, c.LivenessCheck(nil), "during the first list")
		}
		assert.Empty(t, rec.kinds(deletion.EventChecked), "no check before the list answers")
		time.Sleep(100*time.Millisecond + deletion.MinSweepInterval + 500*time.Millisecond)
		synctest.Wait()
		assert.NotEmpty(t, rec.kinds(deletion.EventChecked), "the PU is checked after the list")
		assert.NoError(t, c.LivenessCheck(nil))
	})
}

// TestAPUDestroyedWhileARetriedListIsUnderWayIsNotRestored: a PU destroyed
// by a check cannot come back from a list that answered after it, for every
// list, not only Start's first. The first list fails, so checks begin and
// the list is retried; while the retry is under way, a check destroys a PU
// the retry's answer (read before that destroy) still lists. It is
// destroyed once and not tracked again.
func TestAPUDestroyedWhileARetriedListIsUnderWayIsNotRestored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gone := pu("gone")
		var mu sync.Mutex
		lists, destroyed := 0, false
		answer := make(chan struct{})
		inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
			mu.Lock()
			lists++
			first, list := lists == 1, []ports.PU{}
			if !destroyed {
				list = append(list, gone)
			}
			mu.Unlock()
			if first {
				return nil, errors.New("inventory unavailable")
			}
			select {
			case <-answer:
				return list, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
		policy := newDestroyLog()
		policy.fail = func(ports.DestroyEvent) error {
			mu.Lock()
			destroyed = true
			mu.Unlock()
			return nil
		}
		rec := &events{}
		c := newQuiet(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			Inventory: inv, SweepInterval: time.Hour, RetryMinDelay: time.Second, CheckTimeout: time.Minute, Observer: rec})
		startEngine(t, c)
		time.Sleep(1500 * time.Millisecond) // the first list failed; the retry waits for its answer
		synctest.Wait()
		mu.Lock()
		require.Equal(t, 2, lists, "the list is retried")
		mu.Unlock()
		require.NoError(t, c.Track(gone)) // a pod informer's add
		c.TriggerPod(gone.Pod)
		synctest.Wait()
		require.Len(t, policy.of("gone"), 1, "a check destroyed it while the retry was under way")
		close(answer)
		synctest.Wait()
		c.TriggerAll()
		synctest.Wait()

		assert.Len(t, policy.of("gone"), 1, "destroyed once")
		assert.Zero(t, c.Len(), "not tracked again from a list made before its destroy")
		assert.Len(t, rec.kinds(deletion.EventTracked), 1, "tracked once, by the informer's add")
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
		c := newQuiet(t, getter, newDestroyLog(), deletion.Options{Workers: 2, CheckTimeout: 10 * time.Second, SweepInterval: time.Hour})
		require.NoError(t, c.Track(pu("a")))
		require.NoError(t, c.Track(pu("b")))
		require.LessOrEqual(t, sweepFor(c, time.Hour), 15*time.Second, "the Sweep leaves the stuck checks behind")
		stop := startEngine(t, c)
		synctest.Wait()
		assert.ErrorIs(t, c.ReadinessCheck(nil), deletion.ErrWorkersStuck)
		assert.ErrorIs(t, c.LivenessCheck(nil), deletion.ErrWorkersStuck)
		close(release)
		synctest.Wait()
		assert.NoError(t, c.ReadinessCheck(nil), "the port returned: the slots are free again")
		stop()
	})
}
