package crossings_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// docs/sdk/engine.md:57-61: "`LivenessCheck` ... fails only when a restart could help: once `Start` has returned, when
// the scheduler is wedged (a check due three intervals ago is not queued; `Start`'s first list of the Inventory is
// allowed its deadline besides ...), and when every worker is stuck in a port."; Options.Clock: "deadlines
// (CheckTimeout, ShutdownTimeout) follow the time package".
//
// Start's first list is under way, well within its deadline of CheckTimeout (30s of the time package: none of it has
// passed). The engine's Clock, a fake one, has moved a minute. LivenessCheck says the scheduler is wedged.
func TestAuditLivenessAllowsTheFirstListItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
		listing := make(chan struct{})
		inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
			close(listing)
			<-ctx.Done()
			return nil, ctx.Err()
		})
		g := newPods()
		e := deletiontest.NewEngine(t, g, &deletiontest.Policy{}, deletion.Options{Clock: clk, Inventory: inv})
		g.add(pu("a"))
		e.Track(pu("a"))
		deletiontest.Start(t, e)
		<-listing
		synctest.Wait()
		clk.Step(time.Minute) // the engine's clock; no time of the time package passes
		synctest.Wait()
		if err := e.LivenessCheck(nil); err != nil {
			t.Errorf("the first list is 0s into its 30s deadline: LivenessCheck fails: %v", err)
		}
	})
}
