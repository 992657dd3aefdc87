package contracts_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// deletion.Observers: "A panic in one does not keep the others from being told: the first is raised again once all
// were"; Observer: "A panic in it is recovered". A panicking metrics Observer before the journal: the journal still
// holds exactly what the engine tracks, and Track, Untrack and Sweep return.
func TestHoldsPanickingObserverBeforeTheJournal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		inv := deletiontest.NewInventory()
		boom := deletion.ObserverFunc(func(deletion.Event) { panic("metrics") })
		e := newEngine(t, w, deletion.Options{SandboxExtractor: w.extractor(), Observer: deletion.Observers(boom, inv)})
		w.add("a", "uid-a", "s-a")
		_ = e.Track(ports.PU{PUID: "uid-a", Pod: key("a")})
		w.add("b", "uid-b", "s-b")
		_ = e.Track(ports.PU{PUID: "uid-b", Pod: key("b")})
		w.add("c", "uid-c", "s-c")
		_ = e.Track(ports.PU{PUID: "uid-c", Pod: key("c")})
		e.Sweep(context.Background()) // adopts their sandboxes
		w.del("a")
		e.Untrack("uid-b")
		e.Sweep(context.Background())
		got, want := inv.PUs(), deletiontest.PUs(e)
		if len(got) != 1 || len(want) != 1 || got[0] != want[0] || got[0].SandboxID == "" {
			t.Fatalf("journal %v, engine %v", got, want)
		}
	})
}
