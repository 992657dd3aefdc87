package deletion_test

// LivenessCheck's promise: it fails only when restarting could help, never
// while nothing is wedged.

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// TestLivenessPassesDuringAFirstListLongAfterTrack: SweepInterval 1s,
// CheckTimeout 10s; a is tracked, and Start comes 30s later with an
// Inventory whose list takes 2s. A check due before Start is not overdue
// for a scheduler that was not running: liveness passes all through the
// list and after it.
func TestLivenessPassesDuringAFirstListLongAfterTrack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newQuiet(t, getterOf(nil, ports.ErrPodNotFound), newDestroyLog(), deletion.Options{
			SweepInterval: time.Second, CheckTimeout: 10 * time.Second, Inventory: slowInventory(2 * time.Second)})
		require.NoError(t, c.Track(pu("a")))
		time.Sleep(30 * time.Second)
		startEngine(t, c)
		for range 8 {
			time.Sleep(500 * time.Millisecond)
			synctest.Wait()
			assert.NoError(t, c.LivenessCheck(nil), "during or after the first list")
		}
		assert.Zero(t, c.Len(), "a is destroyed once the list is in")
	})
}
