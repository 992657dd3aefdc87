package contracts_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// Track: "a second Track of the same PU tells nothing and returns once the first one's EventTracked has been told"
// (engine.md:3-5); an Untrack during Track's EventTracked is told after it (engine.md:7-9).
func TestHoldsConcurrentTracksAndUntrackDuringCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		var told atomic.Int32
		var mu sync.Mutex
		var order []deletion.EventKind
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventTracked {
				time.Sleep(time.Second) // a journal's commit
				told.Add(1)
			}
			mu.Lock()
			order = append(order, ev.Kind)
			mu.Unlock()
		})
		e := newEngine(t, w, deletion.Options{Observer: obs})
		pu := w.add("a", "uid-a", "s1")
		var wg sync.WaitGroup
		returned := make([]time.Duration, 2)
		t0 := time.Now()
		for i := range 2 {
			wg.Go(func() {
				_ = e.Track(ports.PU{PUID: pu.PUID, Pod: pu.Pod, SandboxID: []string{"s1", "s9"}[i]})
				returned[i] = time.Since(t0)
			})
		}
		var untracked bool
		wg.Go(func() {
			time.Sleep(100 * time.Millisecond)
			untracked = e.Untrack(pu.PUID)
		})
		wg.Wait()
		if told.Load() != 1 || returned[0] < time.Second || returned[1] < time.Second || !untracked {
			t.Fatalf("told %d, Tracks returned after %v, untracked %v", told.Load(), returned, untracked)
		}
		if len(order) != 2 || order[0] != deletion.EventTracked || order[1] != deletion.EventUntracked {
			t.Fatalf("order %v", order)
		}
	})
}
