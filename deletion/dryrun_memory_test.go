package deletion_test

// The dry run's memory of dropped PUs while the Inventory's first list is not
// in: as large as it says (Options.DryRun), so that the list, when it
// answers, does not bring them back to be reported again.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// TestADryRunRemembersAsManyDroppedPUsAsItEverTrackedAtOnce: a dry run
// tracks 50 PUs at once, untracks 45, then drops 40 short-lived PUs of gone
// pods one at a time while the Inventory fails; the Inventory, a journal that
// still holds the 40, then answers: it remembers at least 50, so none of the 40 is
// reported again.
func TestADryRunRemembersAsManyDroppedPUsAsItEverTrackedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := deletiontest.NewCluster()
		inv := deletiontest.NewInventory()
		inv.FailLists(errors.New("journal unavailable"))
		events := &deletiontest.Events{}
		c := deletiontest.NewEngine(t, w, &deletiontest.Policy{}, deletion.Options{DryRun: true, NodeName: testNode,
			Inventory: inv, Observer: deletion.Observers(inv, events)})
		for i, p := range trackLive(t, c, w, "live", 50) {
			if i >= 5 {
				require.True(t, c.Untrack(p.PUID))
			}
		}
		deletiontest.Start(t, c)
		synctest.Wait()
		for i := range 40 {
			p := ports.PU{PUID: fmt.Sprintf("short%d", i), Pod: types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("short%d", i)}}
			require.NoError(t, c.Track(p))
			c.TriggerPod(p.Pod)
			synctest.Wait()
			require.Equal(t, 5, c.Len(), "the PU of a gone pod is dropped")
		}
		require.Len(t, inv.PUs(), 45, "the journal still holds the 40 dropped")

		inv.FailLists(nil)
		time.Sleep(5 * time.Minute) // the list answers, and what it brings is checked
		synctest.Wait()
		require.Equal(t, 1, events.Count(deletion.EventRestored), "the list answered")
		reports := map[string]int{}
		for _, ev := range events.Of(deletion.EventWouldDestroy) {
			reports[ev.PU.PUID]++
		}
		again := 0
		for _, n := range reports {
			if n > 1 {
				again++
			}
		}
		assert.Len(t, reports, 40)
		assert.Zero(t, again, "%d of the 40 dropped PUs were reported again", again)
	})
}

// DryRun: "reported once per reason ... and kept, or, when its pod is gone for good ..., dropped from memory ... Until
// the Inventory's first list is in, it remembers the latest dropped PUs ... so that the list does not report them
// again." The policy engine (the Inventory) still holds every PU: a dry run destroys nothing; its first lists fail.
func TestAuditHoldsDryRunReportsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		events := &deletiontest.Events{}
		var pus []ports.PU
		for i := range 20 {
			pus = append(pus, cluster.CreatePod(key(fmt.Sprint("p", i)), "node-a", ""))
		}
		var lists atomic.Int32
		inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
			if lists.Add(1) <= 3 {
				return nil, errors.New("policy engine down")
			}
			return pus, nil
		})
		engine := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{DryRun: true, Inventory: inv, Observer: events})
		for _, pu := range pus {
			_ = engine.Track(pu)
			cluster.DeletePod(pu.Pod)
		}
		deletiontest.Start(t, engine)
		deletiontest.Advance(10 * time.Minute)
		if n := events.Count(deletion.EventWouldDestroy); n != 20 || engine.Len() != 0 {
			t.Errorf("%d reports for 20 PUs, %d tracked, after %d lists", n, engine.Len(), lists.Load())
		}
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
