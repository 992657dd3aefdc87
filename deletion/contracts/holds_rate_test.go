package contracts_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

func TestHoldsRateUnusedTurnToNextInLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		var pus []ports.PU
		for _, n := range []string{"a", "b", "c"} {
			pus = append(pus, w.add(n, "uid-"+n, ""))
		}
		e := newEngine(t, w, deletion.Options{Workers: 1, DestroyRate: 0.1, SweepInterval: time.Hour})
		for _, pu := range pus {
			if err := e.Track(pu); err != nil {
				t.Fatal(err)
			}
		}
		deletiontest.Start(t, e)
		advance(0)
		t0 := time.Now()
		for _, n := range []string{"a", "b", "c"} {
			w.del(n)
		}
		for _, n := range []string{"a", "b", "c"} {
			e.TriggerPod(key(n))
			advance(0)
		}
		if got := w.destroyed(); !slices.Equal(got, []string{"uid-a"}) {
			t.Fatalf("destroyed %v", got)
		}
		advance(2 * time.Second)
		e.Untrack("uid-b")
		advance(9 * time.Second)
		got, at := w.destroyed(), w.times()
		t.Logf("destroyed %v at %v", got, at)
		if !slices.Equal(got, []string{"uid-a", "uid-c"}) || at[1].Sub(t0) > 11*time.Second {
			t.Fatalf("c should take b's turn at 10s: destroyed %v at %v", got, at)
		}
	})
}

func TestHoldsRateRetryAtBackOfLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		var pus []ports.PU
		for _, n := range []string{"a", "b", "c"} {
			pus = append(pus, w.add(n, "uid-"+n, ""))
		}
		failed := false
		w.destroyErr = func(ev ports.DestroyEvent) error {
			if ev.PUID == "uid-a" && !failed {
				failed = true
				return errors.New("boom")
			}
			return nil
		}
		e := newEngine(t, w, deletion.Options{Workers: 1, DestroyRate: 0.1, SweepInterval: time.Hour})
		for _, pu := range pus {
			_ = e.Track(pu)
		}
		deletiontest.Start(t, e)
		advance(0)
		for _, n := range []string{"a", "b", "c"} {
			w.del(n)
		}
		for _, n := range []string{"a", "b", "c"} {
			e.TriggerPod(key(n))
			advance(0)
		}
		advance(45 * time.Second)
		got, at := w.destroyed(), w.times()
		t.Logf("destroyed %v at %v", got, at)
		if !slices.Equal(got, []string{"uid-a", "uid-b", "uid-c", "uid-a"}) {
			t.Fatalf("order %v", got)
		}
	})
}

func TestHoldsRateSweepWithoutStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		e := newEngine(t, w, deletion.Options{Workers: 2, DestroyRate: 1})
		for _, n := range []string{"a", "b", "c", "d"} {
			_ = e.Track(w.add(n, "uid-"+n, ""))
			w.del(n)
		}
		t0 := time.Now()
		e.Sweep(context.Background())
		el := time.Since(t0)
		t.Logf("sweep took %v, destroyed %v at %v", el, w.destroyed(), w.times())
		if len(w.destroyed()) != 4 || e.Len() != 0 {
			t.Fatalf("destroyed %v, len %d", w.destroyed(), e.Len())
		}
		if el > 3500*time.Millisecond {
			t.Fatalf("took %v", el)
		}
	})
}

func TestHoldsRateFailedCheckKeepsPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		var pus []ports.PU
		for _, n := range []string{"a", "b", "c"} {
			pus = append(pus, w.add(n, "uid-"+n, ""))
		}
		e := newEngine(t, w, deletion.Options{Workers: 1, DestroyRate: 0.1, SweepInterval: time.Hour})
		for _, pu := range pus[:2] {
			_ = e.Track(pu)
		}
		deletiontest.Start(t, e)
		advance(0)
		w.del("a")
		w.del("b")
		e.TriggerPod(key("a"))
		advance(0)
		e.TriggerPod(key("b"))
		advance(0)
		w.failGet("b", errors.New("api down"))
		advance(5 * time.Second)
		_ = e.Track(pus[2])
		w.del("c")
		e.TriggerPod(key("c"))
		advance(20 * time.Second)
		if got := w.destroyed(); !slices.Equal(got, []string{"uid-a"}) {
			t.Fatalf("c must not take b's place: destroyed %v", got)
		}
		w.failGet("b", nil)
		advance(2 * time.Second)
		got, at := w.destroyed(), w.times()
		t.Logf("destroyed %v at %v", got, at)
		if !slices.Equal(got[:2], []string{"uid-a", "uid-b"}) {
			t.Fatalf("b first: %v", got)
		}
	})
}
