package deletion_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// Retries: "tried again after RetryMinDelay ..., and not before, whatever brings the PU up (its periodic check, a
// trigger)".
func TestAuditHoldsRetryNotBeforeItsDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{RetryMinDelay: 10 * time.Second, RetryMaxDelay: time.Minute})
		pu := cluster.CreatePod(key("a"), "node-a", "")
		_ = engine.Track(pu)
		deletiontest.Start(t, engine)
		policy.FailNext(1, errors.New("busy"))
		cluster.DeletePod(pu.Pod)
		engine.TriggerPod(pu.Pod)
		deletiontest.Advance(0)
		first := policy.Calls()[0].At
		for range 9 {
			engine.TriggerPod(pu.Pod)
			engine.TriggerAll()
			deletiontest.Advance(time.Second)
		}
		calls := policy.Calls()
		if len(calls) > 1 && calls[1].At.Sub(first) < 10*time.Second {
			t.Errorf("retry %v after the failure, want >= 10s", calls[1].At.Sub(first))
		}
		deletiontest.Advance(10 * time.Second)
		if engine.Len() != 0 {
			t.Errorf("not retried")
		}
	})
}
