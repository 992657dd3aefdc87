package deletion_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// Track (doc: "Track returns once the Observer has been told (EventTracked), the second Track of a PU too";
// Observer: "Track (a second Track of the same PU too) and Untrack return once their own event has been told").
// A second Track of a PU whose EventTracked was told long ago must return at once, not wait for a later event of the
// PU (an EventChecked) that the Observer takes a minute to take (a slow metrics push).
func TestAuditSecondTrackReturnsOnceEventTrackedWasTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		pu := cluster.CreatePod(nsKey("web"), "node-a", "")
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventChecked {
				time.Sleep(time.Minute)
			}
		})
		engine := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{
			Observer: obs, CheckTimeout: 2 * time.Minute,
		})
		if err := engine.Track(pu); err != nil { // EventTracked told here
			t.Fatal(err)
		}
		swept := make(chan struct{})
		go func() { engine.Sweep(t.Context()); close(swept) }() // its EventChecked takes the Observer a minute
		synctest.Wait()
		began := time.Now()
		if err := engine.Track(pu); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); took > 0 {
			t.Errorf("a second Track of a PU whose EventTracked was told already took %v: it waited for the PU's EventChecked", took)
		}
		<-swept
	})
}
