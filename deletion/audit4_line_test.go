package deletion_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// Promise (go doc deletion.Observer; docs/sdk/engine.md:6-9): "The events of one PU reach it one at a time, in the
// order of the moves that made them, whichever goroutines made them ... a PU tracked again while the EventUntracked of
// the one before is told is told after that."
//
// P's check is in DestroyPU. P is untracked, tracked again (sandbox sb2), untracked again, and tracked a third time
// (sb3), whose EventTracked the Observer takes a while to commit. The first check then returns: its EventChecked is
// told while the third Track's EventTracked is still being told: two events of PUID P at once, and the check's, a move
// of before the third Track, after it.
func TestAuditOnePUsEventsOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		inFlight := map[string]int{}
		var overlaps []string
		commit := make(chan struct{})
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			mu.Lock()
			inFlight[ev.PU.PUID]++
			if inFlight[ev.PU.PUID] > 1 {
				overlaps = append(overlaps, fmt.Sprintf("%s (%s) told while another event of %s is", ev.Kind, ev.PU.SandboxID, ev.PU.PUID))
			}
			mu.Unlock()
			if ev.Kind == deletion.EventTracked && ev.PU.SandboxID == "sb3" {
				<-commit // a slow journal commit
			}
			mu.Lock()
			inFlight[ev.PU.PUID]--
			mu.Unlock()
		})
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Observer: obs})
		p := cluster.CreatePod(nsKey("p"), "node-a", "sb1")
		if err := e.Track(p); err != nil {
			t.Fatal(err)
		}
		cluster.DeletePod(p.Pod)
		releaseDestroy := policy.Hang()
		go e.Sweep(context.Background())
		synctest.Wait() // the check of P is in DestroyPU
		if policy.CallCount() != 1 {
			t.Fatalf("setup: %d DestroyPU calls", policy.CallCount())
		}

		e.Untrack(p.PUID)
		p2 := p
		p2.SandboxID = "sb2"
		if err := e.Track(p2); err != nil {
			t.Fatal(err)
		}
		e.Untrack(p.PUID)
		p3 := p
		p3.SandboxID = "sb3"
		go func() { _ = e.Track(p3) }()
		synctest.Wait() // the third EventTracked is being committed

		releaseDestroy()
		synctest.Wait()
		close(commit)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(overlaps) > 0 {
			t.Errorf("events of one PUID told at once: %v", overlaps)
		}
	})
}
