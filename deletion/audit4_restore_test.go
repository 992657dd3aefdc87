package deletion_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// Promise (go doc deletion.Observer): "Observe is called synchronously: EventTracked and EventUntracked in the Track or
// Untrack call, EventRestored and the Inventory's EventTracked in Start". go doc Engine.Start: "Start returns within
// about ShutdownTimeout even when a port hangs, the Inventory included"; Engine.Track: "once Start's context is done
// (Start stops), nothing would check it".
//
// The Inventory is slow and ignores its context: it answers 5 s after Start's context is done, 3 s after Start has
// returned (ShutdownTimeout 2 s). The engine then tracks what it listed and tells the Observer EventTracked and
// EventRestored, after Start has returned: an agent that closes its journal once Start returns gets writes after it.
func TestAuditNoRestoreAfterStartReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var startReturned atomic.Bool
		var lateEvents atomic.Int32
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if startReturned.Load() {
				lateEvents.Add(1)
			}
		})
		stopAt := make(chan struct{})
		inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
			<-stopAt
			time.Sleep(5 * time.Second) // ignores ctx, but answers well within its own deadline (CheckTimeout 30 s + 1 s)
			return []ports.PU{uidPU("a"), uidPU("b")}, nil
		})
		cluster := deletiontest.NewCluster()
		e := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{Inventory: inv, Observer: obs})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Start(ctx) }()
		synctest.Wait()
		cancel()
		close(stopAt)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		startReturned.Store(true)
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := lateEvents.Load(); n > 0 || e.Len() > 0 {
			t.Errorf("after Start returned: the Observer was told %d events, and the engine tracks %d PUs the Inventory listed", n, e.Len())
		}
	})
}
