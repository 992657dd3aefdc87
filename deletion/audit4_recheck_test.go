package deletion_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// Promise (docs/sdk/engine.md:10-15): "`Start` re-checks every PU once per `SweepInterval` (5 s) ... every wait (the
// next periodic check, a retry, a turn under the destroy rate) is a time on one scheduler's heap". Options.DestroyRate:
// a PU beyond the rate "waits ... until about its turn, and is checked again then".
//
// The API server goes down during a drain under a destroy rate: every PU in the rate's line whose turn has come is
// re-checked (a GetPod each) every tick, twice a second, ten times as often as a PU out of line, for as long as the API
// fails: the engine multiplies its load on a failing API server by ten for exactly the PUs it cannot destroy.
func TestAuditFailedCheckInLineRecheckedOncePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cluster, policy, deletion.Options{DestroyRate: 1.0 / 60})
		var pus []ports.PU
		for _, n := range []string{"a", "b", "c", "live"} {
			p := cluster.CreatePod(key4(n), "node-a", "")
			pus = append(pus, p)
			_ = e.Track(p)
		}
		deletiontest.Start(t, e)
		deletiontest.Advance(5 * time.Second)
		for _, p := range pus[:3] {
			cluster.DeletePod(p.Pod)
		}
		deletiontest.Advance(10 * time.Second) // one destroyed, two wait in line
		if policy.CallCount() != 1 || e.Backlog().RateLimited != 2 {
			t.Fatalf("setup: calls %d, in line %d", policy.CallCount(), e.Backlog().RateLimited)
		}
		cluster.FailAllReads(errors.New("the API server is down"))
		deletiontest.Advance(2 * time.Minute) // every turn has come by now
		before := map[string]int{}
		for _, p := range pus {
			before[p.PUID] = cluster.Reads(p.Pod)
		}
		deletiontest.Advance(time.Minute)
		live := cluster.Reads(pus[3].Pod) - before[pus[3].PUID]
		for _, p := range pus[:3] {
			if policy.Count(p.PUID) > 0 {
				continue
			}
			if n := cluster.Reads(p.Pod) - before[p.PUID]; n > 2*live {
				t.Errorf("PU %s in line: %d reads in a minute of API failure; a PU out of line: %d (12 at one per 5 s interval)", p.PUID, n, live)
			}
		}
	})
}
