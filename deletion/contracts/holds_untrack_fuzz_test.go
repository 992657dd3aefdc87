package contracts_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// Engine.Untrack: "Once it returns, no DestroyPU of that PU starts, though the Inventory's list under way holds it;
// one the engine had already started may finish, and so may one a check had decided under the engine's lock before
// Untrack took it". Random Tracks, Untracks, triggers, Sweeps, failing destroys and reads, with and without a rate:
// no DestroyPU of a PUID starts later in time than an Untrack of it returned, unless it was tracked again since.
func TestHoldsNoDestroyAfterUntrack(t *testing.T) {
	for seed := int64(1); seed <= 300; seed++ {
		if !t.Run(fmt.Sprint(seed), func(t *testing.T) { synctest.Test(t, func(t *testing.T) { untrackOnce(t, seed) }) }) {
			return
		}
	}
}

func untrackOnce(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	w := newWorld()
	var mu sync.Mutex
	untrackedAt := map[string]time.Time{} // the latest Untrack that returned true, since the latest Track began
	failDestroy := false
	w.destroyErr = func(ev ports.DestroyEvent) error {
		mu.Lock()
		defer mu.Unlock()
		if at, ok := untrackedAt[ev.PUID]; ok && time.Now().After(at) {
			t.Errorf("seed %d: DestroyPU of %s started %v after its Untrack returned", seed, ev.PUID, time.Since(at))
		}
		if failDestroy {
			return errors.New("busy")
		}
		return nil
	}
	opts := deletion.Options{Inventory: deletiontest.NewInventory(), Workers: 3, SweepInterval: time.Second}
	if rng.Intn(2) == 0 {
		opts.DestroyRate = 2
	}
	e := newEngine(t, w, opts)
	stop := deletiontest.Start(t, e)
	var bg sync.WaitGroup
	sctx, scancel := context.WithCancel(context.Background())
	names := []string{"a", "b", "c"}
	for step := 0; step < 60; step++ {
		n := names[rng.Intn(len(names))]
		id := "uid-" + n
		switch rng.Intn(8) {
		case 0, 1:
			pu := w.add(n, id, "")
			mu.Lock()
			delete(untrackedAt, id)
			mu.Unlock()
			_ = e.Track(pu)
		case 2:
			w.del(n)
		case 3:
			if e.Untrack(id) {
				mu.Lock()
				untrackedAt[id] = time.Now()
				mu.Unlock()
			}
		case 4:
			e.TriggerPod(key(n))
		case 5:
			mu.Lock()
			failDestroy = !failDestroy
			mu.Unlock()
		case 6:
			bg.Go(func() { e.Sweep(sctx) })
		case 7:
			if rng.Intn(2) == 0 {
				w.failGet(n, errors.New("down"))
			} else {
				w.failGet(n, nil)
			}
		}
		if rng.Intn(2) == 0 {
			advance(time.Duration(rng.Intn(1500)) * time.Millisecond)
		}
	}
	for _, n := range names {
		w.failGet(n, nil)
	}
	advance(10 * time.Second)
	scancel()
	bg.Wait()
	stop()
}
