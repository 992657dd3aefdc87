package contracts_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// Start's doc: "A Sweep under way goes on, with goroutines of its own, until its own context is done"; Options.
// DestroyRate: "a Sweep waits for them". A Sweep waiting for turns under Start; Start stops mid-way; the Sweep destroys
// the rest at their turns and returns.
func TestHoldsSweepWaitingTurnsOutlivesStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		e := newEngine(t, w, deletion.Options{Workers: 2, DestroyRate: 0.5, SweepInterval: time.Hour})
		for _, n := range []string{"a", "b", "c", "d"} {
			_ = e.Track(w.add(n, "uid-"+n, ""))
			w.del(n)
		}
		stop := deletiontest.Start(t, e)
		advance(0)
		done := make(chan time.Time, 1)
		t0 := time.Now()
		go func() { e.Sweep(context.Background()); done <- time.Now() }()
		advance(3 * time.Second)
		stop()
		advance(10 * time.Second)
		select {
		case at := <-done:
			if len(w.destroyed()) != 4 || e.Len() != 0 {
				t.Fatalf("destroyed %v", w.destroyed())
			}
			if d := at.Sub(t0); d > 7*time.Second {
				t.Fatalf("Sweep took %v for 4 turns 2s apart", d)
			}
		default:
			t.Fatalf("Sweep did not return; destroyed %v at %v", w.destroyed(), w.times())
		}
	})
}
