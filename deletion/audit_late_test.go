package deletion_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// Options.Inventory: "The first list delays the first check by at most its deadline (CheckTimeout, at least a second)
// and a second". LivenessCheck: a check due three intervals ago is not queued "(and since Start began, and its first
// list's deadline)" fails it: a slow first list does not. Start "returns within about ShutdownTimeout even when a port
// hangs, the Inventory included".
func TestAuditHoldsHungFirstListDelaysChecksByItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		release := make(chan struct{})
		inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
			<-release
			return nil, nil
		})
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Inventory: inv, CheckTimeout: 20 * time.Second, SweepInterval: time.Second})
		pu := cluster.CreatePod(key("a"), "node-a", "")
		_ = engine.Track(pu)
		cluster.DeletePod(pu.Pod)
		engine.TriggerPod(pu.Pod)
		t0 := time.Now()
		stop := deletiontest.Start(t, engine)
		for range 25 {
			deletiontest.Advance(time.Second)
			if err := engine.LivenessCheck(nil); err != nil {
				t.Errorf("at %v: LivenessCheck %v during the first list's deadline", time.Since(t0), err)
			}
		}
		calls := policy.Calls()
		if len(calls) != 1 || calls[0].At.Sub(t0) > 21*time.Second {
			t.Errorf("destroys %v; want one by 21s", calls)
		}
		began := time.Now()
		stop()
		if took := time.Since(began); took > 3*time.Second {
			t.Errorf("Start took %v to return with a hung Inventory", took)
		}
		close(release)
		synctest.Wait()
	})
}
