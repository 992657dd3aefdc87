package deletion_test

// The destroy rate's line keeps its order: a PU that waits for its turn is
// not overtaken by one behind it, a trigger or a turn left unused
// notwithstanding.

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// TestTheLastInTheRateLineDoesNotOvertakeOneAheadOfIt: a turn every 1.3s;
// a is destroyed at once, and b, c, d, found gone in that order, wait for
// their turns at about 1.3, 2.6 and 3.9s. b's pod turns out alive, so its
// turn goes unused, and d is triggered at 1.5s: c, ahead of d, is still
// destroyed before it, and the rate holds.
func TestTheLastInTheRateLineDoesNotOvertakeOneAheadOfIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = 1300 * time.Millisecond
		w := deletiontest.NewCluster() // no pods: every pod is gone
		policy := newDestroyLog()
		c := deletiontest.NewEngine(t, w, policy, deletion.Options{DestroyRate: rate.Limit(1 / every.Seconds()), DestroyBurst: 1,
			Workers: 1, SweepInterval: time.Hour})
		for _, name := range []string{"a", "b", "c", "d"} {
			require.NoError(t, c.Track(pu(name)))
		}
		deletiontest.Start(t, c)
		synctest.Wait()
		c.TriggerPod(pu("a").Pod)
		synctest.Wait()
		require.Equal(t, []string{"a"}, policy.puids(), "a takes the burst")
		for _, name := range []string{"b", "c", "d"} {
			c.TriggerPod(pu(name).Pod)
		}
		synctest.Wait()
		require.Equal(t, 3, c.Backlog().RateLimited, "b, c and d wait for their turns")

		time.Sleep(time.Second)
		w.AddPod(podAt(pu("b").Pod, "b"), "") // b's pod is alive after all
		time.Sleep(500 * time.Millisecond)
		c.TriggerPod(pu("d").Pod)
		time.Sleep(5 * time.Second)
		synctest.Wait()

		assert.Equal(t, []string{"a", "c", "d"}, policy.puids(), "c waited ahead of d; DestroyPU started at %v", policy.starts())
		assertRateBound(t, policy.starts(), 1/every.Seconds(), 1)
	})
}
