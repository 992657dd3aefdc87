package contracts_test

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

func TestHoldsRateTriggerKeepsPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		var pus []ports.PU
		names := []string{"a", "b", "c", "d"}
		for _, n := range names {
			pus = append(pus, w.add(n, "uid-"+n, ""))
		}
		e := newEngine(t, w, deletion.Options{Workers: 1, DestroyRate: 0.1, SweepInterval: 2 * time.Second})
		for _, pu := range pus {
			_ = e.Track(pu)
		}
		deletiontest.Start(t, e)
		advance(0)
		for _, n := range names {
			w.del(n)
			e.TriggerPod(key(n))
			advance(0)
		}
		for range 20 {
			e.TriggerPod(key("d"))
			e.TriggerPod(key("c"))
			advance(time.Second)
		}
		advance(20 * time.Second)
		got, at := w.destroyed(), w.times()
		t.Logf("%v %v", got, at)
		if !slices.Equal(got, []string{"uid-a", "uid-b", "uid-c", "uid-d"}) {
			t.Fatalf("order %v", got)
		}
		for i := 1; i < len(at); i++ {
			if d := at[i].Sub(at[i-1]); d < 10*time.Second || d > 11*time.Second {
				t.Fatalf("turns %v", at)
			}
		}
	})
}
