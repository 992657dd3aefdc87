package deletion_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// Promise (docs/sdk/engine.md:25-26): "`Sweep` runs one synchronous pass ...; under a destroy rate it waits for the
// turns of the destroys it decides (end it sooner with its context)". go doc Engine.Sweep: "Sweep checks every tracked
// PU once ... and returns when all are done or ctx is."
//
// B waits in the destroy rate's line (left there by a Sweep cut short). Its GetPod then fails: a check of B decides no
// destroy (row 2). A Sweep checks B, but instead of returning, it waits for B's "turn" again and again, re-checking B
// every tick until its own context ends.
func TestAuditSweepEndsWhenFailedCheckDecidesNoDestroy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cluster, policy, deletion.Options{NodeName: "node-a", DestroyRate: 1.0 / 60, DestroyBurst: 1})
		a := cluster.CreatePod(key4("a"), "node-a", "")
		b := cluster.CreatePod(key4("b"), "node-a", "")
		for _, p := range []string{"a", "b"} {
			pp, _ := cluster.PU(key4(p))
			if err := e.Track(pp); err != nil {
				t.Fatal(err)
			}
		}
		cluster.DeletePod(a.Pod)
		cluster.DeletePod(b.Pod)

		// First Sweep: one destroys, the other waits for its turn a minute away; the Sweep is cut short.
		ctx1, cancel1 := context.WithTimeout(context.Background(), 5*time.Second)
		e.Sweep(ctx1)
		cancel1()
		if policy.CallCount() != 1 || e.Backlog().RateLimited != 1 {
			t.Fatalf("setup: calls %d, rate-limited %d", policy.CallCount(), e.Backlog().RateLimited)
		}
		waiting := b
		if len(policy.CallsOf(b.PUID)) == 1 {
			waiting = a
		}
		// Its pod can no longer be read: a check of it decides no destroy.
		cluster.FailReads(waiting.Pod, errors.New("connection refused"))
		before := cluster.Reads(waiting.Pod)

		start := time.Now()
		ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel2()
		e.Sweep(ctx2)
		took := time.Since(start)
		reads := cluster.Reads(waiting.Pod) - before
		if took > 30*time.Second {
			t.Errorf("Sweep returned only after %v (its context's end), having read the pod %d times: it waited for a turn of a check that decided no destroy", took, reads)
		}
	})
}
