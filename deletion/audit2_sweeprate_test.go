package deletion_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// A Sweep without Start under a destroy rate: it waits for the turns of its destroys; a turn left unused (the head's
// pod came back) goes to the next in line at once, and the Sweep returns at the last turn.
func TestAuditHoldsSweepWithoutStartTurnLeftUnused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{DestroyRate: 0.1, Workers: 1})
		var pus []ports.PU
		for _, n := range []string{"a", "b", "c"} {
			pu := cluster.CreatePod(nsKey(n), "node-a", "")
			pus = append(pus, pu)
			if err := engine.Track(pu); err != nil {
				t.Fatal(err)
			}
		}
		engine.Sweep(t.Context())
		byPUID := map[string]ports.PU{}
		for _, pu := range pus {
			byPUID[pu.PUID] = pu
			cluster.DeletePod(pu.Pod)
		}
		began := time.Now()
		done := make(chan struct{})
		go func() { engine.Sweep(t.Context()); close(done) }()
		synctest.Wait()
		first := policy.Calls()
		if len(first) != 1 {
			t.Fatalf("%d calls at once", len(first))
		}
		// The second in line: the one of the remaining two whose turn comes first.
		var second ports.PU
		for _, s := range engine.Status() {
			if s.State == "waiting for its turn" && s.NextAttempt.Sub(began) == 10*time.Second {
				second = byPUID[s.PUID]
			}
		}
		if second.PUID == "" {
			t.Fatalf("no PU waits for the turn at 10s: %+v", engine.Status())
		}
		time.Sleep(5 * time.Second)
		cluster.AddPod(deletiontest.Pod(second.Pod, "uid-x", "node-a"), "") // not its pod: still gone for its PU
		if err := engine.Untrack(second.PUID); !err {
			t.Fatal("not tracked")
		}
		<-done
		calls := policy.Calls()
		if len(calls) != 2 || calls[1].At.Sub(began) != 10*time.Second || time.Since(began) != 10*time.Second {
			t.Errorf("calls %v, Sweep took %v: want the third destroyed at the untracked one's turn, 10s in", calls, time.Since(began))
		}
	})
}
