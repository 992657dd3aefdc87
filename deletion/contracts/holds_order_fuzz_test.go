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

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// observer.go:11-16: "The events of one PU reach it one at a time, in the order of the moves that made them ... no
// check of a PU begins before its EventTracked has been told." Random concurrent Tracks, Untracks, Sweeps, triggers,
// failures, a slow Observer: per PUID, no two Observe calls overlap, and nothing but the leftovers of a check in flight
// (EventChecked, EventGetFailed, EventVetoed, EventDestroyFailed) is told of a PU between its end and its next
// EventTracked.
func TestHoldsEventOrderPerPU(t *testing.T) {
	for seed := int64(1); seed <= 300; seed++ {
		if !t.Run(fmt.Sprint(seed), func(t *testing.T) { synctest.Test(t, func(t *testing.T) { orderOnce(t, seed) }) }) {
			return
		}
	}
}

func orderOnce(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	w := newWorld()
	var mu sync.Mutex
	inFlight := map[string]int{}
	alive := map[string]bool{}
	failDestroy := false
	w.destroyErr = func(ports.DestroyEvent) error {
		mu.Lock()
		defer mu.Unlock()
		if failDestroy {
			return errors.New("busy")
		}
		return nil
	}
	obs := deletion.ObserverFunc(func(ev deletion.Event) {
		id := ev.PU.PUID
		if id == "" {
			return
		}
		mu.Lock()
		inFlight[id]++
		if inFlight[id] > 1 {
			t.Errorf("seed %d: two events of %s at once", seed, id)
		}
		switch ev.Kind {
		case deletion.EventTracked:
			if alive[id] {
				t.Errorf("seed %d: EventTracked of %s, tracked already", seed, id)
			}
			alive[id] = true
		case deletion.EventDestroyed, deletion.EventAbandoned, deletion.EventUntracked:
			if !alive[id] {
				t.Errorf("seed %d: %v of %s, not tracked", seed, ev.Kind, id)
			}
			alive[id] = false
		case deletion.EventWouldDestroy:
			if ev.Dropped {
				alive[id] = false
			}
		case deletion.EventChecked, deletion.EventGetFailed, deletion.EventVetoed, deletion.EventDestroyFailed:
		default:
			if !alive[id] {
				t.Errorf("seed %d: %v of %s, not tracked", seed, ev.Kind, id)
			}
		}
		mu.Unlock()
		if len(id)%3 == 0 {
			time.Sleep(200 * time.Millisecond)
		}
		mu.Lock()
		inFlight[id]--
		mu.Unlock()
		if (uidNum(id)+int(ev.Kind))%5 == 0 {
			panic(fmt.Sprintf("observer: %v of %s", ev.Kind, id)) // recovered by the engine
		}
	})
	rq := ports.RequeuerFunc(func(context.Context, *corev1.Pod) error { return nil })
	opts := deletion.Options{SandboxExtractor: w.extractor(), Confirmer: w.getter(), Requeuer: rq, Observer: obs,
		Workers: 3, SweepInterval: time.Second, DryRun: rng.Intn(4) == 0}
	if rng.Intn(2) == 0 {
		opts.DestroyRate = 2
	}
	e := newEngine(t, w, opts)
	stop := deletiontest.Start(t, e)
	var bg sync.WaitGroup
	sctx, scancel := context.WithCancel(context.Background())
	names := []string{"a", "b", "c", "d"}
	uid, sb := 0, 0
	for step := 0; step < 60; step++ {
		n := names[rng.Intn(len(names))]
		switch rng.Intn(9) {
		case 0, 1:
			uid++
			sb++
			pu := w.add(n, fmt.Sprintf("u%d", uid), fmt.Sprintf("s%d", sb))
			if rng.Intn(2) == 0 {
				pu.SandboxID = ""
			}
			bg.Go(func() { _ = e.Track(pu) })
		case 2:
			w.del(n)
		case 3:
			sb++
			w.setSandbox(n, fmt.Sprintf("s%d", sb))
		case 4:
			if st := e.Status(); len(st) > 0 {
				id := st[rng.Intn(len(st))].PUID
				bg.Go(func() { e.Untrack(id) })
			}
		case 5:
			e.TriggerPod(key(n))
		case 6:
			mu.Lock()
			failDestroy = !failDestroy
			mu.Unlock()
		case 7:
			bg.Go(func() { e.Sweep(sctx) })
		case 8:
			if st := e.Status(); len(st) > 0 {
				pu := st[rng.Intn(len(st))].PU
				bg.Go(func() { _ = e.Track(pu) })
			}
		}
		if rng.Intn(3) == 0 {
			advance(time.Duration(rng.Intn(1500)) * time.Millisecond)
		}
	}
	mu.Lock()
	failDestroy = false
	mu.Unlock()
	advance(10 * time.Second)
	scancel()
	bg.Wait()
	advance(10 * time.Second)
	stop()
	synctest.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, s := range e.Status() {
		if !alive[s.PUID] {
			t.Errorf("seed %d: the engine holds %s, the Observer was told it ended", seed, s.PUID)
		}
	}
}

func uidNum(id string) int {
	n := 0
	for _, c := range id {
		if c >= '0' && c <= '9' {
			n = n*10 + int(c-'0')
		}
	}
	return n
}
