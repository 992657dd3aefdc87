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

// EventRestored (observer.go): "Count and ListCalls are set, and Err when some of them were invalid"; Count is "the
// number of PUs restored: new, or given their sandbox"; engine.md:64-65: "an Inventory that lists invalid PUs gets one
// error line a list". A list with a new PU, a PU the informer tracked without its sandbox, the same listed twice, and
// three invalid ones.
func TestHoldsEventRestoredCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		a := w.add("a", "uid-a", "sa")
		b := w.add("b", "uid-b", "sb")
		calls := 0
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) {
			calls++
			if calls <= 0 {
				return nil, nil
			}
			return []ports.PU{a, b, b, {PUID: "x"}, {Pod: key("y")}, {PUID: "z", Pod: key("")}}, nil
		})
		ev := &deletiontest.Events{}
		logs := &errorLines{}
		e, err := deletion.New(w.getter(), w.policy(), deletion.Options{Inventory: inv, Observer: ev, Logger: logs.logger(),
			RetryMinDelay: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		_ = e.Track(ports.PU{PUID: "uid-b", Pod: key("b")})
		deletiontest.Start(t, e)
		advance(10 * time.Second)
		r := ev.Of(deletion.EventRestored)
		if len(r) != 1 || r[0].Count != 2 || r[0].ListCalls != 1 || r[0].Err == nil {
			t.Fatalf("EventRestored %+v", r)
		}
		if got := logs.matching("skipping PUs the Inventory listed"); len(got) != 1 {
			t.Fatalf("invalid PUs error lines: %d", len(got))
		}
		if st := e.Status(); len(st) != 2 || st[1].SandboxID != "sb" {
			t.Fatalf("status %+v", st)
		}
	})
}
