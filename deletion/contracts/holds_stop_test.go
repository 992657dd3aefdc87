package contracts_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
)

// engine.md:28: "Start returns soon after its context ends, even with a hung port"; Start: "within about
// ShutdownTimeout". Here the Observer hangs in a check (it is seen as stuck as a port is) and in Untrack.
func TestHoldsStartReturnsWithAHungObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		release := make(chan struct{})
		defer close(release)
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventChecked || ev.Kind == deletion.EventUntracked {
				<-release
			}
		})
		e := newEngine(t, w, deletion.Options{Observer: obs, Workers: 2, SweepInterval: time.Second})
		_ = e.Track(w.add("a", "uid-a", ""))
		_ = e.Track(w.add("b", "uid-b", ""))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = e.Start(ctx); close(done) }()
		advance(3 * time.Second)
		go e.Untrack("uid-b")
		synctest.Wait()
		cancel()
		time.Sleep(deletion.DefaultShutdownTimeout + 100*time.Millisecond)
		select {
		case <-done:
		default:
			t.Fatalf("Start did not return within ShutdownTimeout")
		}
	})
}
