package deletion_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// Sweep (doc, Engine.Sweep: "Sweep checks every tracked PU once ... and returns when all are done or ctx is";
// Engine.Start: "A Sweep under way goes on, with goroutines of its own, until its own context is done").
// A Sweep's check that Start's worker runs when Start's context ends is cut short by Start's context, not the
// Sweep's: the Sweep must still check that PU (it goes on), not count it done and return with it unchecked.
func TestAuditSweepGoesOnWhenStartStopsMidCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{
			Workers: 1, SweepInterval: time.Hour, CheckTimeout: 10 * time.Second,
		})
		pu := cluster.CreatePod(nsKey("web"), "node-a", "")
		if err := engine.Track(pu); err != nil {
			t.Fatal(err)
		}
		startCtx, stopStart := context.WithCancel(t.Context())
		started := make(chan error, 1)
		go func() { started <- engine.Start(startCtx) }()
		deletiontest.Advance(time.Second) // Start's first checks are over
		cluster.DeletePod(pu.Pod)
		cluster.SetReadDelay(2 * time.Second)
		swept := make(chan struct{})
		go func() { engine.Sweep(t.Context()); close(swept) }()
		time.Sleep(time.Second) // Start's worker is in the Sweep's check of the PU
		stopStart()
		if err := <-started; err != nil {
			t.Fatal(err)
		}
		<-swept
		if policy.CallCount() != 1 || engine.Len() != 0 {
			t.Errorf("the Sweep returned with the PU of a deleted pod kept: %d DestroyPU calls, %d tracked (status %+v)",
				policy.CallCount(), engine.Len(), engine.Status())
		}
	})
}
