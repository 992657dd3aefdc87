package deletion_test

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

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
