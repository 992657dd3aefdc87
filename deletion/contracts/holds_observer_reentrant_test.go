package contracts_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// An Observer may read the engine and ask for checks from Observe (only Track and Untrack of the PU it is told about
// are ruled out, observer.go:15-16): Status, Len, Backlog, the probes, TriggerPod and Track of another PU.
func TestHoldsObserverReentrantCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		var e *deletion.Engine
		n := 0
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			_ = e.Status()
			_ = e.Len()
			_ = e.Backlog()
			_ = e.LivenessCheck(nil)
			_ = e.ReadinessCheck(nil)
			e.TriggerPod(ev.PU.Pod)
			if ev.Kind == deletion.EventTracked && ev.PU.PUID == "uid-a" && n == 0 {
				n++
				_ = e.Track(w.add("b", "uid-b", ""))
			}
		})
		e = newEngine(t, w, deletion.Options{Observer: obs})
		_ = e.Track(w.add("a", "uid-a", ""))
		w.del("a")
		e.Sweep(context.Background())
		if e.Len() != 1 || len(w.destroyed()) != 1 {
			t.Fatalf("len %d destroyed %v", e.Len(), w.destroyed())
		}
		_ = ports.PU{}
	})
}
