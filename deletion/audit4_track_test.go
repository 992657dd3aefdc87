package deletion_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// Promise (go doc deletion Engine.Track; docs/sdk/engine.md:3-4): "Track returns once the Observer has been told
// (EventTracked), the second Track of a PU too".
//
// A first Track of P is blocked in the Observer on P's EventTracked. A second Track of P waits. An Untrack of P
// comes (it waits its turn behind the EventTracked). Any other PU's event wakes the second Track, which sees P
// removed and returns, while P's EventTracked is still being told.
func TestAuditSecondTrackWaitsForEventTracked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, q := uidPU("p"), uidPU("q")
		release := make(chan struct{})
		var toldP atomic.Bool // Observe of P's EventTracked has returned
		var once sync.Once
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventTracked && ev.PU.PUID == p.PUID {
				blocked := false
				once.Do(func() { blocked = true })
				if blocked {
					<-release
					toldP.Store(true)
				}
			}
		})
		cluster := deletiontest.NewCluster()
		e := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{Observer: obs})

		go func() { _ = e.Track(p) }() // first Track: blocked in the Observer
		synctest.Wait()
		var secondReturned atomic.Bool
		var toldWhenReturned atomic.Bool
		go func() {
			_ = e.Track(p) // second Track: must wait until the Observer has been told P's EventTracked
			toldWhenReturned.Store(toldP.Load())
			secondReturned.Store(true)
		}()
		synctest.Wait()
		go func() { e.Untrack(p.PUID) }() // waits its turn behind the EventTracked
		synctest.Wait()
		if err := e.Track(q); err != nil { // another PU's event
			t.Fatal(err)
		}
		synctest.Wait()
		returnedEarly := secondReturned.Load()
		close(release)
		synctest.Wait()
		if returnedEarly || (secondReturned.Load() && !toldWhenReturned.Load()) {
			t.Errorf("the second Track of %s returned while the Observer was still being told its EventTracked", p.PUID)
		}
	})
}
