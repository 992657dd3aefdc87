package deletion_test

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// Options.DestroyRate (doc: "a check that sees the pod alive, or Untrack, takes it out of the line, and the turn it
// did not use goes to the next in line"). B joined the line on a lagging cache (PodGone); its next check reads its
// pod alive, same UID, while the runtime cannot be reached (the SandboxExtractor fails, row 6). That check saw the pod
// alive: B must leave the line, and C, whose pod is really gone, take the turn B did not use, 10s after A's, not wait
// behind B for as long as the runtime is down.
func TestAuditPodSeenAliveLeavesTheLineWhileTheRuntimeIsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{
			DestroyRate: 0.1, SandboxExtractor: cluster, SweepInterval: time.Second,
		})
		var pus []ports.PU
		for _, n := range []string{"a", "b", "c"} {
			pu := cluster.CreatePod(nsKey(n), "node-a", "sb-"+n)
			pus = append(pus, pu)
			if err := engine.Track(pu); err != nil {
				t.Fatal(err)
			}
		}
		a, b, c := pus[0], pus[1], pus[2]
		deletiontest.Start(t, engine)
		deletiontest.Advance(2 * time.Second) // every PU checked: alive
		cluster.DeletePod(a.Pod)
		engine.TriggerPod(a.Pod)
		synctest.Wait() // a destroyed: the next turn in 10s
		began := time.Now()
		cluster.FailReads(b.Pod, fmt.Errorf("cache: %w", ports.ErrPodNotFound)) // a lagging cache
		engine.TriggerPod(b.Pod)
		synctest.Wait()
		cluster.DeletePod(c.Pod)
		engine.TriggerPod(c.Pod)
		synctest.Wait()
		if n := engine.Backlog().RateLimited; n != 2 {
			t.Fatalf("%d PUs in line, want b and c", n)
		}
		cluster.FailReads(b.Pod, nil)                              // the cache has b's pod again
		cluster.FailSandboxIDs(errors.New("runtime: unavailable")) // and the runtime is down
		deletiontest.Advance(2 * time.Minute)
		calls := policy.CallsOf(c.PUID)
		if len(calls) != 1 || calls[0].At.Sub(began) > 10*time.Second+time.Second {
			var st []string
			for _, s := range engine.Status() {
				st = append(st, fmt.Sprintf("%s %s row %d next %v", s.Pod.Name, s.State, s.LastVerdict.Row, s.NextAttempt.Sub(began)))
			}
			t.Errorf("c's DestroyPU calls %v two minutes after its pod went (want one, at b's unused turn 10s in); status %v", calls, st)
		}
	})
}
