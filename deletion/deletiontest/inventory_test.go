package deletiontest_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// TestInventoryForgetsAPUDestroyedBeforeTheListCameIn: after a restart the
// informer tracks web-0 without a sandbox while the Inventory holds sb-1 for
// it, the lists fail, and the pod goes: the check destroys the PU (sandbox
// "", never known to this engine). The Inventory forgets it (ports.PU.SameAs:
// an empty sandbox is no other), and the list retried later does not bring
// it back to be destroyed a second time.
func TestInventoryForgetsAPUDestroyedBeforeTheListCameIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		web := cluster.CreatePod(types.NamespacedName{Namespace: "shop", Name: "web-0"}, "node-a", "sb-1")
		inv := deletiontest.NewInventory(web) // what the first engine recorded

		inv.FailLists(errors.New("disk busy"))
		policy := &deletiontest.Policy{}
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{
			NodeName: "node-a", SandboxExtractor: cluster, Inventory: inv, Observer: inv,
		})
		// The informer's add, as k8s.SetupWithManager tracks: no sandbox.
		if err := engine.Track(ports.PU{PUID: web.PUID, Pod: web.Pod}); err != nil {
			t.Fatal(err)
		}
		cluster.DeletePod(web.Pod)
		deletiontest.Start(t, engine)
		deletiontest.Advance(time.Minute) // past the first list's deadline: checks go on

		if n := policy.Count(web.PUID); n != 1 {
			t.Fatalf("%d destroys of web-0's PU so far, want 1", n)
		}
		if got := inv.PUs(); len(got) != 0 {
			t.Errorf("after EventDestroyed the Inventory still holds %v", got)
		}

		inv.FailLists(nil)
		deletiontest.Advance(time.Hour) // the list is retried, and answers
		if n := policy.Count(web.PUID); n != 1 {
			t.Errorf("web-0's PU was destroyed %d times: the Inventory brought back a destroyed PU (calls %v)", n, policy.Calls())
		}
	})
}
