package deletion_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// Promise (go doc Engine.Untrack): "Once it returns, no DestroyPU of that PU starts, though the Inventory's list under
// way holds it ... the Inventory must no longer list it (a journal that observes EventUntracked does not)";
// docs/sdk/engine.md:31-34 says the same.
//
// After a restart, the journal (deletiontest.Inventory, as Inventory and Observer, as bolt.Journal is) holds P from the
// last run. Before Start, the agent tears P down itself and calls Untrack(P). P is not tracked yet, so Untrack tells
// the Observer nothing and the journal keeps P; Start's list brings P back and the engine destroys it: a DestroyPU of P
// starts after Untrack(P) returned. (That a journal is not told of such an Untrack, for a later run, is documented.)
func TestAuditUntrackBeforeStartKeepsJournalFromListing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		p := cluster.CreatePod(nsKey("web"), "node-a", "sb1")
		journal := deletiontest.NewInventory(p) // left by the last run
		cluster.DeletePod(p.Pod)                // the pod went while the agent was down

		policy := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Inventory: journal, Observer: journal})
		e.Untrack(p.PUID) // the agent tore P down itself
		deletiontest.Start(t, e)
		deletiontest.Advance(time.Minute)
		if n := policy.Count(p.PUID); n != 0 {
			t.Errorf("DestroyPU of %s called %d times after Untrack(%s) returned (the journal still listed it: %v)", p.PUID, n, p.PUID, journal.PUs())
		}
	})
}
