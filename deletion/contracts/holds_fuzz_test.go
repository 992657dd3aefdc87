package contracts_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

func TestHoldsJournalMatchesEngineAndRestart(t *testing.T) {
	for seed := int64(1); seed <= 300; seed++ {
		ok := t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { fuzzOnce(t, seed) })
		})
		if !ok {
			return
		}
	}
}

func fuzzOnce(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	w := newWorld()
	inv := deletiontest.NewInventory()
	var e *deletion.Engine
	var mu sync.Mutex
	failDestroy := false
	w.destroyErr = func(ev ports.DestroyEvent) error {
		mu.Lock()
		defer mu.Unlock()
		if failDestroy {
			return errors.New("busy")
		}
		return nil
	}
	rq := ports.RequeuerFunc(func(ctx context.Context, p *corev1.Pod) error {
		sb, _ := w.extractor().SandboxID(ctx, p)
		if sb == "" {
			return nil
		}
		_ = e.Track(ports.PU{PUID: string(p.UID), Pod: key(p.Name), SandboxID: sb})
		return nil
	})
	opts := deletion.Options{NodeName: node, SandboxExtractor: w.extractor(), Requeuer: rq, Observer: deletion.ObserverFunc(func(ev deletion.Event) {
		if len(ev.PU.PUID)%2 == 0 && ev.Kind != deletion.EventChecked {
			time.Sleep(300 * time.Millisecond)
		}
		inv.Observe(ev)
	}),
		Inventory: inv, Workers: 2, SweepInterval: time.Second}
	if rng.Intn(2) == 0 {
		opts.DestroyRate = 2
	}
	if rng.Intn(3) == 0 {
		opts.DryRun = true
	}
	e = newEngine(t, w, opts)
	stop := deletiontest.Start(t, e)
	var sweeps sync.WaitGroup
	sctx, scancel := context.WithCancel(context.Background())
	defer scancel()
	names := []string{"a", "b", "c", "d"}
	uid := 0
	sb := 0
	for step := 0; step < 60; step++ {
		n := names[rng.Intn(len(names))]
		switch rng.Intn(10) {
		case 0, 1:
			uid++
			sb++
			pu := w.add(n, fmt.Sprintf("u%d", uid), fmt.Sprintf("s%d", sb))
			if rng.Intn(2) == 0 {
				pu.SandboxID = ""
			}
			if rng.Intn(2) == 0 {
				sweeps.Go(func() { _ = e.Track(pu) })
			} else {
				_ = e.Track(pu)
			}
		case 2:
			w.del(n)
		case 3:
			sb++
			w.setSandbox(n, fmt.Sprintf("s%d", sb))
		case 4:
			st := e.Status()
			if len(st) > 0 {
				id := st[rng.Intn(len(st))].PUID
				sweeps.Go(func() { e.Untrack(id) })
			}
		case 5:
			e.TriggerPod(key(n))
		case 6:
			mu.Lock()
			failDestroy = !failDestroy
			mu.Unlock()
		case 7:
			sweeps.Go(func() { e.Sweep(sctx) })
		case 8:
			if rng.Intn(2) == 0 {
				w.failGet(n, errors.New("down"))
			} else {
				w.failGet(n, nil)
			}
		}
		if rng.Intn(3) == 0 {
			advance(time.Duration(rng.Intn(1500)) * time.Millisecond)
		}
	}
	mu.Lock()
	failDestroy = false
	mu.Unlock()
	for _, n := range names {
		w.failGet(n, nil)
	}
	advance(10 * time.Second)
	scancel()
	sweeps.Wait()
	advance(10 * time.Second)
	stop()
	synctest.Wait()
	got, want := inv.PUs(), deletiontest.PUs(e)
	if !opts.DryRun && !slices.Equal(got, want) {
		t.Fatalf("seed %d: journal %v, engine %v", seed, got, want)
	}
	if !opts.DryRun {
		opts2 := deletion.Options{NodeName: node, SandboxExtractor: w.extractor(), Observer: inv, Inventory: inv, SweepInterval: time.Second}
		e2 := newEngine(t, w, opts2)
		_ = deletiontest.Start(t, e2)
		advance(5 * time.Second)
		for _, s := range e2.Status() {
			w.mu.Lock()
			p, ok := w.pods[s.Pod]
			cur := w.sandbox[s.Pod]
			w.mu.Unlock()
			if !ok || string(p.UID) != s.PUID || (s.SandboxID != "" && cur != "" && cur != s.SandboxID) {
				t.Fatalf("seed %d: after restart, engine keeps %+v (pod there %v, sandbox now %q)", seed, s.PU, ok, cur)
			}
		}
	}
	if opts.DryRun {
		for _, pu := range want {
			if !slices.Contains(got, pu) {
				t.Fatalf("seed %d (dry run): engine holds %v, journal %v", seed, pu, got)
			}
		}
	}
}
