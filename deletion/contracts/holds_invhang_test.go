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

// Options.Inventory: the first list "delays the first check by at most its deadline (CheckTimeout, at least a
// second) and a second"; Start "returns within about ShutdownTimeout even when a port hangs, the Inventory included";
// LivenessCheck allows the first list its deadline.
func TestHoldsHungInventory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		release := make(chan struct{})
		defer close(release)
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) {
			<-release // ignores its context
			return nil, nil
		})
		ev := &deletiontest.Events{}
		e := newEngine(t, w, deletion.Options{Inventory: inv, Observer: ev, CheckTimeout: 2 * time.Second})
		_ = e.Track(w.add("a", "uid-a", ""))
		w.del("a")
		e.TriggerPod(key("a"))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan time.Time, 1)
		go func() { _ = e.Start(ctx); done <- time.Now() }()
		advance(2*time.Second + 900*time.Millisecond)
		if len(w.destroyed()) != 0 {
			t.Fatalf("checked before the list's deadline and a second")
		}
		if err := e.LivenessCheck(nil); err != nil {
			t.Fatalf("liveness during the first list: %v", err)
		}
		advance(200 * time.Millisecond)
		if len(w.destroyed()) != 1 {
			t.Fatalf("first check not begun 3.1s after Start (deadline 2s and a second)")
		}
		advance(time.Minute)
		if err := e.LivenessCheck(nil); err != nil {
			t.Fatalf("liveness while lists hang: %v", err)
		}
		if ev.Count(deletion.EventListFailed) == 0 {
			t.Fatalf("no EventListFailed")
		}
		t0 := time.Now()
		cancel()
		advance(5 * time.Second)
		select {
		case at := <-done:
			if at.Sub(t0) > 2500*time.Millisecond {
				t.Fatalf("Start returned %v after its ctx", at.Sub(t0))
			}
		default:
			t.Fatalf("Start did not return")
		}
	})
}
