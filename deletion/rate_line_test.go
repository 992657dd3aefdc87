package deletion_test

// The destroy rate's line: a PU waiting for its turn keeps its place
// through a check that learns nothing, a Sweep is one full pass under a
// rate, and a destroy never waits for its turn past half of its check's
// time left.

import (
	"context"
	"errors"
	"fmt"
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

// TestAFailedCheckKeepsAPUsPlaceInTheRateLine: DestroyRate 0.1 (a turn
// every 10s), burst 1, one worker; four PUs are found gone; one is
// destroyed and three wait for turns at about 10, 20 and 30s. A trigger at
// 5s of the first in line, b, meets one GetPod error: a check that learns
// nothing does not take b out of the line, so b is still destroyed at
// about its turn, and Backlog still counts three waiting until then.
func TestAFailedCheckKeepsAPUsPlaceInTheRateLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var failing atomic.Value
		failing.Store("")
		getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			if key.Name == failing.Load() && failing.CompareAndSwap(key.Name, "") {
				return nil, errors.New("API server unavailable")
			}
			return nil, ports.ErrPodNotFound
		})
		policy := newDestroyLog()
		c := newQuiet(t, getter, policy, deletion.Options{DestroyRate: 0.1, Workers: 1, SweepInterval: time.Hour})
		for _, pu := range goneKeys("pu", 4) {
			require.NoError(t, c.Track(pu))
		}
		startEngine(t, c)
		c.TriggerAll()
		synctest.Wait()
		require.Len(t, policy.starts(), 1, "one destroy at once; three wait for their turns")
		require.Equal(t, 3, c.Backlog().RateLimited)
		var b deletion.PUStatus
		for _, s := range c.Status() {
			if b.PUID == "" || s.NextAttempt.Before(b.NextAttempt) {
				b = s
			}
		}
		require.Equal(t, "waiting for its turn", b.State)

		time.Sleep(5 * time.Second)
		failing.Store(b.Pod.Name)
		c.TriggerPod(b.Pod)
		synctest.Wait()
		require.Empty(t, failing.Load(), "the trigger's check met the error")
		assert.Equal(t, 3, c.Backlog().RateLimited, "b still waits for its turn")

		time.Sleep(time.Until(b.NextAttempt) + 2*time.Second)
		synctest.Wait()
		assert.Len(t, policy.of(b.PUID), 1, "b is destroyed at about its turn, %v", b.NextAttempt.Sub(policy.t0))
		time.Sleep(40 * time.Second)
		synctest.Wait()
		assert.Len(t, policy.starts(), 4, "all four are destroyed within 45s")
		assertRateBound(t, policy.starts(), 0.1, 1)
	})
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
		c := newQuiet(t, getter, policy, deletion.Options{DestroyRate: 10})
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
		c := newQuiet(t, getter, policy, deletion.Options{DestroyRate: 16, Workers: 1, CheckTimeout: 100 * time.Millisecond,
			SweepInterval: 32 * time.Second})
		for _, pu := range goneKeys("pu", 2) {
			require.NoError(t, c.Track(pu))
		}
		startEngine(t, c)
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
		var calls atomic.Int32
		policy := newDestroyLog()
		policy.fail = func(ports.DestroyEvent) error {
			if calls.Add(1) == 1 {
				return errors.New("policy engine busy")
			}
			return nil
		}
		c := newQuiet(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{DestroyRate: 2, RetryMinDelay: time.Minute})
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

// TestATriggeredPUKeepsItsPlaceInTheRateLine protects, from TriggerPod:
// "one waiting for its turn is checked, and keeps its place", and from
// DestroyRate: "the PU waits [...] until about its turn, behind those
// waiting".
//
// Under 1 destroy/s: a is destroyed, then b and c enter the line in that
// order (b's turn at about 1s, c's at about 2s). c is triggered just
// before b's turn: its check takes b's turn, and b goes behind it.
func TestATriggeredPUKeepsItsPlaceInTheRateLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy := newDestroyLog()
		c := newQuiet(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{DestroyRate: 1, DestroyBurst: 1, SweepInterval: time.Hour})
		for _, n := range []string{"a", "b", "c"} {
			require.NoError(t, c.Track(pu(n)))
		}
		startEngine(t, c)
		synctest.Wait()
		for _, n := range []string{"a", "b", "c"} {
			c.TriggerPod(pu(n).Pod)
			synctest.Wait()
		}
		require.Equal(t, []string{"a"}, policy.puids())
		require.Equal(t, 2, c.Backlog().RateLimited, "b and c wait for their turns, b first")

		time.Sleep(970 * time.Millisecond) // just before b's turn
		c.TriggerPod(pu("c").Pod)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"a", "b", "c"}, policy.puids(),
			"a trigger of c, which waited behind b, made c take b's turn")
	})
}
