package contracts_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
)

func TestHoldsSweepRateUntrackHeadGivesTurnOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		e := newEngine(t, w, deletion.Options{Workers: 1, DestroyRate: 0.1})
		for _, n := range []string{"a", "b", "c"} {
			_ = e.Track(w.add(n, "uid-"+n, ""))
			w.del(n)
		}
		t0 := time.Now()
		done := make(chan struct{})
		go func() { e.Sweep(context.Background()); close(done) }()
		time.Sleep(time.Second)
		synctest.Wait()
		first := w.destroyed()
		if len(first) != 1 {
			t.Fatalf("first %v", first)
		}
		// the one at the head of the line now
		st := e.Status()
		var head string
		var at time.Time
		for _, s := range st {
			if at.IsZero() || s.NextAttempt.Before(at) {
				head, at = s.PUID, s.NextAttempt
			}
		}
		e.Untrack(head)
		<-done
		el := time.Since(t0)
		t.Logf("destroyed %v at %v, sweep %v", w.destroyed(), w.times(), el)
		if len(w.destroyed()) != 2 || slices.Contains(w.destroyed(), head) || el > 11*time.Second {
			t.Fatalf("destroyed %v in %v", w.destroyed(), el)
		}
	})
}
