package contracts_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// docs/sdk/restarts.md: a sandbox replaced while the agent was down is destroyed as changed, whenever the
// Inventory's list answers. Here it answers while the PU's first check, which recorded the runtime's sandbox s2 (row
// 7), still tells the Observer of it: the sandbox listed, s1, is the PU's, and s2 replaced it.
func TestSandboxListedWhileTheFirstCheckTellsItsAdoptionIsStillDestroyedAsChanged(t *testing.T) {
	for _, observer := range []time.Duration{5 * time.Second, 30 * time.Second} {
		t.Run(fmt.Sprint(observer), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld()
				w.add("a", "uid-a", "s2") // replaced while the agent was down
				listed := ports.PU{PUID: "uid-a", Pod: key("a"), SandboxID: "s1"}
				lists := 0
				inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) {
					if lists++; lists <= 3 { // the first lists fail: the checks begin, and it is retried
						return nil, errors.New("journal not open yet")
					}
					return []ports.PU{listed}, nil
				})
				obs := deletion.ObserverFunc(func(ev deletion.Event) {
					if ev.Kind == deletion.EventAdopted && ev.PU.SandboxID == "s2" {
						time.Sleep(observer) // the list answers meanwhile
					}
				})
				e := newEngine(t, w, deletion.Options{SandboxExtractor: w.extractor(), Inventory: inv, Observer: obs})
				if err := e.Track(ports.PU{PUID: "uid-a", Pod: key("a")}); err != nil {
					t.Fatal(err)
				}
				deletiontest.Start(t, e)
				advance(time.Minute)
				if len(w.destroys) != 1 || w.destroys[0].SandboxID != "s1" {
					t.Fatalf("destroys %v, tracked %v: want the PU of s1 destroyed as changed", w.destroys, deletiontest.PUs(e))
				}
			})
		})
	}
}
