package deletion_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// Start: "Start returns within about ShutdownTimeout even when a port hangs"; LivenessCheck fails "when every worker
// is stuck in a port".
func TestAuditHoldsHungPortLivenessAndStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		release := make(chan struct{})
		getter := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			<-release
			return cluster.GetPod(context.Background(), k)
		})
		engine := deletiontest.NewEngine(t, getter, &deletiontest.Policy{}, deletion.Options{Workers: 2, CheckTimeout: time.Second})
		_ = engine.Track(cluster.CreatePod(key("a"), "node-a", ""))
		_ = engine.Track(cluster.CreatePod(key("b"), "node-a", ""))
		stop := deletiontest.Start(t, engine)
		deletiontest.Advance(10 * time.Second)
		if err := engine.LivenessCheck(nil); !errors.Is(err, deletion.ErrWorkersStuck) {
			t.Errorf("LivenessCheck = %v, want ErrWorkersStuck", err)
		}
		began := time.Now()
		stop()
		if took := time.Since(began); took > 3*time.Second {
			t.Errorf("Start took %v to return", took)
		}
		close(release)
		synctest.Wait()
	})
}

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
