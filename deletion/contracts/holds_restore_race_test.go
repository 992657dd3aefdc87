package contracts_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// docs/sdk/restarts.md:28-33: whether the informer's Track (without a sandbox) comes before the list, while its
// EventTracked is told, or after, the PU ends with the sandbox the Inventory recorded, and a sandbox replaced while
// the agent was down is destroyed as changed.
func TestHoldsInformerTrackRacingTheFirstList(t *testing.T) {
	for _, at := range []time.Duration{-1, 0, 100 * time.Millisecond, 300 * time.Millisecond, 700 * time.Millisecond} {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld()
				listed := ports.PU{PUID: "uid-a", Pod: key("a"), SandboxID: "s1"}
				w.add("a", "uid-a", "s2") // replaced while the agent was down
				inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) {
					time.Sleep(200 * time.Millisecond)
					return []ports.PU{listed}, nil
				})
				obs := deletion.ObserverFunc(func(ev deletion.Event) {
					if ev.Kind == deletion.EventTracked {
						time.Sleep(250 * time.Millisecond) // a journal's commit
					}
				})
				e := newEngine(t, w, deletion.Options{SandboxExtractor: w.extractor(), Inventory: inv, Observer: obs})
				informer := func() { _ = e.Track(ports.PU{PUID: "uid-a", Pod: key("a")}) }
				if at < 0 {
					informer()
				}
				deletiontest.Start(t, e)
				if at >= 0 {
					time.Sleep(at)
					go informer()
				}
				advance(20 * time.Second)
				if len(w.destroys) != 1 || w.destroys[0].SandboxID != "s1" {
					t.Fatalf("destroys %v, tracked %v", w.destroys, deletiontest.PUs(e))
				}
			})
		})
	}
}
