package deletiontest_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// TestCreatePodGivesAUIDOfItsOwn: CreatePod gives a UID no pod of the
// cluster has, one AddPod chose included; two pods of one UID would share a
// sandbox record, and the engine would destroy the PU of a live pod as
// SandboxChanged.
func TestCreatePodGivesAUIDOfItsOwn(t *testing.T) {
	cluster := deletiontest.NewCluster()
	a := types.NamespacedName{Namespace: "shop", Name: "a"}
	b := types.NamespacedName{Namespace: "shop", Name: "b"}
	puA := cluster.AddPod(deletiontest.Pod(a, "uid-1", "node-a"), "sb-a")
	puB := cluster.CreatePod(b, "node-a", "sb-b")
	if puB.PUID == puA.PUID {
		t.Errorf("CreatePod gave pod b the UID %s, which pod a has already", puB.PUID)
	}

	policy := &deletiontest.Policy{}
	engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{NodeName: "node-a", SandboxExtractor: cluster})
	if err := engine.Track(puA); err != nil {
		t.Fatal(err)
	}
	engine.Sweep(context.Background())
	if calls := policy.Calls(); len(calls) != 0 {
		t.Errorf("the PU of live pod a (nothing changed) was destroyed: %v", calls[0].Event)
	}
}
