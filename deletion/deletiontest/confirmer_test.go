package deletiontest_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// TestALaggingCacheIsVetoedByTheAPIServer: FailReads with
// ports.ErrPodNotFound makes the Cluster's GetPod a cache that lags; its
// APIServer, the engine's Confirmer, still holds the pod, so the destroy is
// vetoed, as Options.Confirmer promises: "a lagging cache never destroys the
// PU of a live pod".
func TestALaggingCacheIsVetoedByTheAPIServer(t *testing.T) {
	cluster := deletiontest.NewCluster()
	policy := &deletiontest.Policy{}
	engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{NodeName: "node-a", Confirmer: cluster.APIServer()})
	web := cluster.CreatePod(types.NamespacedName{Namespace: "shop", Name: "web-0"}, "node-a", "sb-1")
	if err := engine.Track(web); err != nil {
		t.Fatal(err)
	}

	cluster.FailReads(web.Pod, ports.ErrPodNotFound) // a lagging cache; the pod lives
	engine.Sweep(context.Background())

	if got := policy.Destroyed(); len(got) != 0 {
		t.Errorf("a lagging cache destroyed the PU of live pod web-0, its APIServer being the Confirmer: %v", got)
	}
}
