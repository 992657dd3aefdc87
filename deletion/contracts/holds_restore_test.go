package contracts_test

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// Options.DryRun: "Until the Inventory's first list is in, it remembers the latest dropped PUs, at least as many as it
// ever tracked at once (and 16) ..., so that the list does not report them again"; Options.Inventory: "A list never
// brings back ... one destroyed ... while no list had answered yet".
func TestHoldsListAfterFailureBringsBackNoDroppedOrDestroyed(t *testing.T) {
	for _, dry := range []bool{false, true} {
		t.Run(fmt.Sprint("dry=", dry), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld()
				var pus []ports.PU
				for i := range 20 {
					n := fmt.Sprintf("p%02d", i)
					pus = append(pus, w.add(n, "uid-"+n, "sb-"+n))
				}
				inv := deletiontest.NewInventory(pus...)
				inv.FailNextLists(1, errors.New("journal busy"))
				ev := &deletiontest.Events{}
				e := newEngine(t, w, deletion.Options{DryRun: dry, Inventory: inv, Observer: ev, SweepInterval: time.Hour,
					RetryMinDelay: 10 * time.Second, RetryMaxDelay: 10 * time.Second})
				for _, pu := range pus {
					_ = e.Track(pu)
				}
				for _, pu := range pus {
					w.del(pu.Pod.Name)
				}
				deletiontest.Start(t, e)
				advance(2 * time.Second) // the first list failed; checks begin
				e.TriggerAll()
				advance(time.Second)
				if e.Len() != 0 {
					t.Fatalf("left %d", e.Len())
				}
				advance(20 * time.Second) // the second list answers with all 20
				if inv.Lists() < 2 || e.Len() != 0 {
					t.Fatalf("lists %d, tracked again %d", inv.Lists(), e.Len())
				}
				if dry && ev.Count(deletion.EventWouldDestroy) != 20 {
					t.Fatalf("reported %d", ev.Count(deletion.EventWouldDestroy))
				}
				if !dry && len(w.destroyed()) != 20 {
					t.Fatalf("destroyed %d", len(w.destroyed()))
				}
			})
		})
	}
}
