package contracts_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/adapters/bolt"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// docs/sdk/restarts.md:20-25: the journal "records each PU before Track returns ... and forgets it once destroyed";
// "What survives: every PU the Inventory lists, with its sandbox". Random Tracks, Untracks, triggers, Sweeps, pod
// deletes and sandbox changes, Requeuer tracking the new PU: once idle, the journal holds exactly what the engine holds.
func TestHoldsBoltJournalMatchesEngine(t *testing.T) {
	for seed := int64(1); seed <= 60; seed++ {
		if !t.Run(fmt.Sprint(seed), func(t *testing.T) {
			dir := t.TempDir()
			synctest.Test(t, func(t *testing.T) { boltOnce(t, seed, filepath.Join(dir, "journal.db")) })
		}) {
			return
		}
	}
}

func boltOnce(t *testing.T, seed int64, path string) {
	rng := rand.New(rand.NewSource(seed))
	j, err := bolt.Open(path, bolt.Options{Logger: deletiontest.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	w := newWorld()
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
		if sb == "" || len(p.UID)%2 == 0 {
			return nil
		}
		_ = e.Track(ports.PU{PUID: string(p.UID), Pod: key(p.Name)})
		return nil
	})
	e = newEngine(t, w, deletion.Options{SandboxExtractor: w.extractor(), Requeuer: rq, Observer: j, Inventory: j,
		Workers: 2, SweepInterval: time.Second})
	stop := deletiontest.Start(t, e)
	var bg sync.WaitGroup
	sctx, scancel := context.WithCancel(context.Background())
	names := []string{"a", "b", "c"}
	uid, sb := 0, 0
	for step := 0; step < 50; step++ {
		n := names[rng.Intn(len(names))]
		switch rng.Intn(8) {
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
	got, _ := j.ListPUs(context.Background())
	slices.SortFunc(got, func(a, b ports.PU) int {
		if a.PUID < b.PUID {
			return -1
		}
		if a.PUID > b.PUID {
			return 1
		}
		return 0
	})
	if want := deletiontest.PUs(e); !slices.Equal(got, want) {
		t.Fatalf("seed %d: journal %v, engine %v", seed, got, want)
	}
}
