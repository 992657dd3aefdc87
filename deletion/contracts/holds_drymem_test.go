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
// ever tracked at once (and 16) and at most twice that, so that the list does not report them again." 40 tracked at
// once and dropped while the first lists fail: none is reported again when a list answers.
func TestHoldsDryRunMemoryAsLargeAsTrackedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		var pus []ports.PU
		for i := range 40 {
			n := fmt.Sprintf("p%02d", i)
			pus = append(pus, w.add(n, "uid-"+n, ""))
		}
		inv := deletiontest.NewInventory(pus...)
		inv.FailNextLists(3, errors.New("journal busy"))
		ev := &deletiontest.Events{}
		e := newEngine(t, w, deletion.Options{DryRun: true, Inventory: inv, Observer: ev, SweepInterval: time.Second})
		for _, pu := range pus {
			_ = e.Track(pu)
			w.del(pu.Pod.Name)
		}
		deletiontest.Start(t, e)
		advance(time.Minute)
		if e.Len() != 0 || ev.Count(deletion.EventWouldDestroy) != 40 || ev.Count(deletion.EventRestored) != 1 {
			t.Fatalf("tracked %d, reported %d, restored events %d", e.Len(), ev.Count(deletion.EventWouldDestroy), ev.Count(deletion.EventRestored))
		}
	})
}
