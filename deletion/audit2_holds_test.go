package deletion_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// An Inventory that hangs past every deadline: Start checks after the list's deadline and a second, LivenessCheck
// holds meanwhile, and Start returns within about ShutdownTimeout.
func TestAuditHoldsHungInventory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		hang := make(chan struct{})
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) { <-hang; return nil, nil })
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Inventory: inv, SweepInterval: time.Second, CheckTimeout: 5 * time.Second})
		pu := cluster.CreatePod(nsKey("web"), "node-a", "")
		if err := engine.Track(pu); err != nil {
			t.Fatal(err)
		}
		cluster.DeletePod(pu.Pod)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- engine.Start(ctx) }()
		for range 5 {
			time.Sleep(time.Second)
			if err := engine.LivenessCheck(nil); err != nil {
				t.Errorf("LivenessCheck during the first list: %v", err)
			}
		}
		if policy.CallCount() != 0 {
			t.Errorf("a check before the first list's deadline")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if policy.CallCount() != 1 {
			t.Errorf("%d destroys 7s in, want 1 (list deadline 5s and a second)", policy.CallCount())
		}
		cancel()
		began := time.Now()
		<-done
		if took := time.Since(began); took > deletion.DefaultShutdownTimeout+time.Second {
			t.Errorf("Start took %v to return", took)
		}
		close(hang)
	})
}

// Dry run: a PU dropped before the first list answers is not brought back and reported again by it.
func TestAuditHoldsDryRunListDoesNotReportAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		var pus []ports.PU
		for i := range 20 {
			pus = append(pus, cluster.CreatePod(nsKey(fmt.Sprint("p", i)), "node-a", ""))
		}
		inv := deletiontest.NewInventory(pus...) // the policy engine's own list: it observes nothing
		inv.FailNextLists(1, errors.New("unavailable"))
		events := &deletiontest.Events{}
		engine := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{DryRun: true, Inventory: inv, Observer: events})
		for _, pu := range pus {
			if err := engine.Track(pu); err != nil {
				t.Fatal(err)
			}
			cluster.DeletePod(pu.Pod)
		}
		deletiontest.Start(t, engine)
		deletiontest.Advance(5 * time.Minute)
		if inv.Lists() < 2 {
			t.Fatalf("%d lists", inv.Lists())
		}
		if n := events.Count(deletion.EventWouldDestroy); n != 20 {
			t.Errorf("%d EventWouldDestroy, want 20 (once per PU)", n)
		}
	})
}

// Start(nil) returns ErrNilContext and may be called again.
func TestAuditHoldsStartNilContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		engine := deletiontest.NewEngine(t, deletiontest.NewCluster(), &deletiontest.Policy{}, deletion.Options{})
		//lint:ignore SA1012 the promise under test
		if err := engine.Start(nil); !errors.Is(err, deletion.ErrNilContext) { //nolint:staticcheck
			t.Fatalf("Start(nil) = %v", err)
		}
		deletiontest.Start(t, engine)
		synctest.Wait()
		if err := engine.LivenessCheck(nil); err != nil {
			t.Error(err)
		}
	})
}

// Untrack during a list that holds the PU: the list does not bring it back.
func TestAuditHoldsUntrackDuringListNotBroughtBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		pu := cluster.CreatePod(nsKey("web"), "node-a", "")
		release := make(chan struct{})
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) { <-release; return []ports.PU{pu}, nil })
		policy := &deletiontest.Policy{}
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Inventory: inv})
		if err := engine.Track(pu); err != nil {
			t.Fatal(err)
		}
		deletiontest.Start(t, engine)
		synctest.Wait()
		engine.Untrack(pu.PUID)
		close(release)
		cluster.DeletePod(pu.Pod)
		deletiontest.Advance(time.Minute)
		if engine.Len() != 0 || policy.CallCount() != 0 {
			t.Errorf("%d tracked, %d destroys", engine.Len(), policy.CallCount())
		}
	})
}
