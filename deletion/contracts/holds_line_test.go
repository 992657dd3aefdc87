package contracts_test

import (
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// Options.DestroyRate: "The PUs whose checks decide a destroy form a line in the order they were found to go, and
// turns go to them in that order"; "A check that sees the pod alive ... takes it out of the line" — with thousands in
// line (the line's compaction).
func TestHoldsLongLineKeepsOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		var mu sync.Mutex
		var found []string
		seen := map[string]bool{}
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventChecked && ev.Verdict.Action == deletion.Destroy {
				mu.Lock()
				if !seen[ev.PU.PUID] {
					seen[ev.PU.PUID] = true
					found = append(found, ev.PU.PUID)
				}
				mu.Unlock()
			}
		})
		e := newEngine(t, w, deletion.Options{Workers: 1, DestroyRate: 100, SweepInterval: time.Hour, Observer: obs})
		const n = 3000
		for i := range n {
			nm := fmt.Sprintf("p%04d", i)
			_ = e.Track(w.add(nm, "uid-"+nm, ""))
		}
		deletiontest.Start(t, e)
		advance(0)
		for i := range n {
			w.del(fmt.Sprintf("p%04d", i))
		}
		e.TriggerAll()
		advance(0)
		rng := rand.New(rand.NewSource(7))
		revived := map[string]bool{}
		for range 300 {
			i := rng.Intn(n)
			nm := fmt.Sprintf("p%04d", i)
			w.add(nm, "uid-"+nm, "")
			revived["uid-"+nm] = true
			e.TriggerPod(key(nm))
			advance(7 * time.Millisecond)
		}
		advance(time.Minute)
		got := w.destroyed()
		var want []string
		mu.Lock()
		for _, id := range found {
			if !slices.Contains(got, id) && revived[id] {
				continue
			}
			want = append(want, id)
		}
		mu.Unlock()
		if !slices.Equal(got, want) {
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Fatalf("destroys %d, found %d; first difference at %d: %s vs %s", len(got), len(want), i, got[i], want[i])
				}
			}
			t.Fatalf("destroys %d, want %d", len(got), len(want))
		}
		at := w.times()
		for i := 1; i < len(at); i++ {
			if at[i].Sub(at[i-1]) < 10*time.Millisecond {
				t.Fatalf("two destroys %v apart at %d", at[i].Sub(at[i-1]), i)
			}
		}
	})
}
