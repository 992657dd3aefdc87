package deletion_test

// Sweep's promises where it meets checks stuck in ports: it returns once
// every check it waits for is held by one stuck past its deadline,
// whoever began it, and sooner when it is known stuck already.

import (
	"context"
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
				c := newQuiet(t, getter, newDestroyLog(), deletion.Options{CheckTimeout: timeout})
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
		c := newQuiet(t, getter, newDestroyLog(), deletion.Options{Workers: 1, SweepInterval: time.Hour})
		require.NoError(t, c.Track(pu("a")))
		require.NoError(t, c.Track(pu("b")))
		stop := startEngine(t, c)
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
		c := newQuiet(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{DestroyRate: 0.5, DestroyBurst: 1, SweepInterval: time.Hour})
		require.NoError(t, c.Track(pu("a")))
		require.NoError(t, c.Track(pu("b")))
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		returned := sweepInBackground(ctx, t, c)
		time.Sleep(500 * time.Millisecond)
		stop := startEngine(t, c)
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
