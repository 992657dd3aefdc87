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

// Options.DestroyRate (options.go:118-119): "in any window of w seconds, at most DestroyRate*w + DestroyBurst start",
// whatever brings the destroys: periodic checks, triggers, Sweeps with and without Start, retries, revivals.
func TestHoldsRateWindowBound(t *testing.T) {
	for seed := int64(1); seed <= 200; seed++ {
		if !t.Run(fmt.Sprint(seed), func(t *testing.T) { synctest.Test(t, func(t *testing.T) { rateBoundOnce(t, seed) }) }) {
			return
		}
	}
}

func rateBoundOnce(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	w := newWorld()
	var mu sync.Mutex
	fail := false
	w.destroyErr = func(ports.DestroyEvent) error {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return errors.New("busy")
		}
		return nil
	}
	r, burst := 0.5+rng.Float64()*3, 1+rng.Intn(4)
	e := newEngine(t, w, deletion.Options{DestroyRate: rateLimit(r), DestroyBurst: burst, Workers: 1 + rng.Intn(4),
		SweepInterval: time.Second, RetryMinDelay: 100 * time.Millisecond})
	stop := deletiontest.Start(t, e)
	var bg sync.WaitGroup
	sctx, scancel := context.WithCancel(context.Background())
	id := 0
	for step := 0; step < 80; step++ {
		switch rng.Intn(7) {
		case 0, 1, 2:
			id++
			n := fmt.Sprint("p", id)
			_ = e.Track(w.add(n, "uid-"+n, ""))
			w.del(n)
		case 3:
			e.TriggerAll()
		case 4:
			bg.Go(func() { e.Sweep(sctx) })
		case 5:
			mu.Lock()
			fail = !fail
			mu.Unlock()
		case 6:
			if rng.Intn(4) == 0 {
				stop()
			}
		}
		if rng.Intn(2) == 0 {
			advance(time.Duration(rng.Intn(800)) * time.Millisecond)
		}
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	advance(time.Minute)
	scancel()
	bg.Wait()
	stop()
	at := w.times()
	for i := range at {
		for _, win := range []time.Duration{0, 500 * time.Millisecond, time.Second, 3 * time.Second, 10 * time.Second} {
			n := 0
			for j := i; j < len(at) && at[j].Sub(at[i]) <= win; j++ {
				n++
			}
			if float64(n) > r*win.Seconds()+float64(burst)+1e-9 {
				t.Fatalf("seed %d: %d destroys within %v from %v (rate %.2f, burst %d)", seed, n, win, at[i], r, burst)
			}
		}
	}
}
