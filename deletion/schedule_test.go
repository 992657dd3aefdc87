package deletion_test

// The scheduler's promise at scale: every PU is checked about every
// SweepInterval, whatever was removed meanwhile.

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
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
		gets := newPodGets(live)
		c := newQuiet(t, gets, newDestroyLog(), deletion.Options{SweepInterval: 10 * time.Second, Workers: 8})
		for _, pu := range pus {
			require.NoError(t, c.Track(pu))
		}
		startEngine(t, c)
		time.Sleep(time.Second)
		require.True(t, c.Untrack(pus[0].PUID))
		time.Sleep(11 * time.Second)
		synctest.Wait()
		unchecked := 0
		for _, pu := range pus[1:] {
			if gets.of(pu.Pod) == 0 {
				unchecked++
			}
		}
		assert.Zero(t, unchecked, "PUs never checked within an interval after one was untracked")
		assert.Equal(t, len(pus)-1, c.Len())
	})
}
