package contracts_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// Engine.Untrack: "Once it returns, no DestroyPU of that PU starts, though the Inventory's list under way holds it";
// Options.Inventory: "A list never brings back a PU removed from when it began until its answer is tracked". A slow
// first list (an answer in time) that still holds a PU untracked meanwhile, and one whose PUID the engine never held.
func TestHoldsSlowListAnsweringAfterARemoval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		x := w.add("x", "uid-x", "sx")
		y := w.add("y", "uid-y", "sy")
		inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
			time.Sleep(500 * time.Millisecond)
			return []ports.PU{x, y}, nil
		})
		ev := &deletiontest.Events{}
		e := newEngine(t, w, deletion.Options{Inventory: inv, Observer: ev})
		_ = e.Track(x)
		w.del("x")
		w.del("y")
		deletiontest.Start(t, e)
		advance(100 * time.Millisecond)
		if !e.Untrack("uid-x") || e.Untrack("uid-y") {
			t.Fatalf("Untrack")
		}
		advance(time.Minute)
		if len(w.destroyed()) != 0 || e.Len() != 0 {
			t.Fatalf("destroyed %v, tracked %v", w.destroyed(), deletiontest.PUs(e))
		}
		if ev.Count(deletion.EventRestored) != 1 {
			t.Fatalf("no EventRestored")
		}
	})
}
