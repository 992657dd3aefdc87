package deletion_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// Options.Requeuer: "Requeuer is told about a pod whose PU went for a sandbox change (rows 10 and 12): destroyed, or
// given up on (ports.Permanent, MaxDestroyAttempts), for the pod needs the PU of its new sandbox either way." (The
// audit found the docs saying "destroyed" alone; the engine requeued after a give-up too, which the pod needs.)
func TestAuditHoldsRequeueOnceTheOldSandboxsPUWentDestroyedOrGivenUpOn(t *testing.T) {
	for name, opts := range map[string]deletion.Options{
		"permanent error":        {},
		"MaxDestroyAttempts = 1": {MaxDestroyAttempts: 1},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cluster := deletiontest.NewCluster()
				policy := &deletiontest.Policy{}
				if opts.MaxDestroyAttempts == 0 {
					policy.Fail(ports.Permanent(errors.New("policy engine refuses")))
				} else {
					policy.Fail(errors.New("policy engine busy"))
				}
				var requeued atomic.Int32
				opts.SandboxExtractor = cluster
				opts.Requeuer = ports.RequeuerFunc(func(context.Context, *corev1.Pod) error { requeued.Add(1); return nil })
				engine := deletiontest.NewEngine(t, cluster, policy, opts)
				pu := cluster.CreatePod(nsKey("web"), "node-a", "sb-1")
				if err := engine.Track(pu); err != nil {
					t.Fatal(err)
				}
				if err := cluster.SetSandbox(pu.Pod, "sb-2"); err != nil {
					t.Fatal(err)
				}
				engine.Sweep(t.Context())
				if len(policy.Destroyed()) != 0 || policy.CallCount() != 1 {
					t.Fatalf("calls %v", policy.Calls())
				}
				if n := requeued.Load(); n != 1 {
					t.Errorf("the pod was requeued %d time(s) once its PU's destroy failed for good, want once: its new sandbox needs a PU", n)
				}
			})
		})
	}
}
