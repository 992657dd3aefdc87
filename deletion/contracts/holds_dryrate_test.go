package contracts_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// docs/operating/rollout.md:9-11: in a dry run "every check runs ... but nothing is destroyed and no turn of the destroy
// rate is taken": a Sweep under a rate of one a minute reports all at once, with or without a DryRunner.
func TestHoldsDryRunTakesNoTurn(t *testing.T) {
	for _, runner := range []bool{false, true} {
		t.Run(fmt.Sprint("dryrunner=", runner), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld()
				ev := &deletiontest.Events{}
				opts := deletion.Options{NodeName: node, DryRun: true, DestroyRate: 1.0 / 60, Observer: ev}
				var e *deletion.Engine
				if runner {
					e = deletiontest.NewEngine(t, w.getter(), dry{w, nil}, opts)
				} else {
					e = deletiontest.NewEngine(t, w.getter(), w.policy(), opts)
				}
				for i := range 5 {
					n := fmt.Sprint("p", i)
					_ = e.Track(w.add(n, "uid-"+n, ""))
					w.del(n)
				}
				t0 := time.Now()
				e.Sweep(context.Background())
				if d := time.Since(t0); d > time.Second || ev.Count(deletion.EventWouldDestroy) != 5 || len(w.destroyed()) != 0 ||
					e.Backlog().RateLimited != 0 {
					t.Fatalf("took %v, reported %d, destroyed %v", d, ev.Count(deletion.EventWouldDestroy), w.destroyed())
				}
			})
		})
	}
}
