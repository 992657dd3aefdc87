package deletion_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// Observer: "A panic in it is recovered and logged." Observers: "A panic in one does not keep the others from being
// told". docs/sdk/engine.md:12-13: "Ports that fail or panic cannot lose a PU". An Observer panics on every event.
func TestAuditHoldsPanickingObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		inv := deletiontest.NewInventory()
		boom := deletion.ObserverFunc(func(deletion.Event) { panic("metrics exploded") })
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Observer: deletion.Observers(boom, inv), Inventory: inv})
		pu := cluster.CreatePod(key("a"), "node-a", "")
		if err := engine.Track(pu); err != nil {
			t.Fatal(err)
		}
		if len(inv.PUs()) != 1 {
			t.Errorf("journal after Track: %v", inv.PUs())
		}
		deletiontest.Start(t, engine)
		cluster.DeletePod(pu.Pod)
		deletiontest.Advance(time.Minute)
		if policy.CallCount() != 1 || engine.Len() != 0 || len(inv.PUs()) != 0 {
			t.Errorf("%d destroys, %d tracked, journal %v", policy.CallCount(), engine.Len(), inv.PUs())
		}
	})
}
