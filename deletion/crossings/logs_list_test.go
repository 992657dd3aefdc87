package crossings_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// docs/sdk/engine.md:66-68: "The engine sums up all its ports together: a failure that comes an interval or more after
// the last summary is logged at once; the failures after it, of any port, are summed up an interval after that line.
// This holds whoever drives the engine, `Start` or `Sweep`s, on its `Clock`"
//
// A GetPod failure one second after a summary line is to be summed up an interval after that line. Start's first
// failed list of the Inventory, in between, is a failure as any port's (port ListPUs): summed up with it then, not
// an error line of its own that would push the summary a whole interval past it.
func TestAFailedFirstListIsSummedUpWithTheOtherPorts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
		var logs logLines
		g := newPods()
		g.answer = func(context.Context, typesNN) (*podT, error) { return nil, errors.New("api down") }
		inv := deletiontest.NewInventory()
		inv.FailNextLists(1, errors.New("journal busy"))
		e := deletiontest.NewEngine(t, g, &deletiontest.Policy{}, deletion.Options{Clock: clk, Logger: logs.logger(0),
			Inventory: inv})
		if err := e.Track(pu("a")); err != nil {
			t.Fatal(err)
		}
		e.Sweep(context.Background()) // T0: the first failure: a summary at once
		synctest.Wait()
		if n := logs.count("port failing"); n != 1 {
			t.Fatalf("T0: %d summaries, want 1: %v", n, logs.all())
		}
		clk.Step(time.Second)
		e.Sweep(context.Background()) // T0+1s: a failure after it: summed up at T0+5s
		synctest.Wait()
		clk.Step(3 * time.Second) // T0+4s
		deletiontest.Start(t, e)  // its first list fails: summed up with the others, at T0+5s
		synctest.Wait()
		if n := logs.count("listing the Inventory failed"); n != 0 {
			t.Fatalf("T0+4s: %d list failure lines, want 0 (within an interval of the last summary): %v", n, logs.all())
		}
		clk.Step(time.Second) // T0+5s: the summary of T0+1s's failure is due
		synctest.Wait()
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		if n, l := logs.count("port failing"), logs.count("listing the Inventory failed"); n != 2 || l != 1 {
			t.Errorf("T0+5s, an interval after the summary of T0: %d GetPod summaries and %d of the list, want 2 and 1: %q",
				n, l, logs.all())
		}
		for i := 1; i <= 4; i++ {
			clk.Step(time.Second)
			synctest.Wait()
			if n := logs.count("port failing"); n >= 2 {
				t.Logf("the second summary came at T0+%ds", 5+i)
				break
			}
		}
	})
}

// The same, on the real clock with Start alone: an agent starts while its journal and the API server both fail. The
// first failed list comes with no summary before it: it is summed up at once (port ListPUs); GetPod's failures, which
// come at that instant, with it or an interval after it, and never a second line of either within the interval.
func TestAFailedFirstListIsSummedUpAtOnceWithTheFailuresBesideIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logLines
		g := newPods()
		g.answer = func(context.Context, typesNN) (*podT, error) { return nil, errors.New("api down") }
		inv := deletiontest.NewInventory()
		inv.FailLists(errors.New("journal busy"))
		e := deletiontest.NewEngine(t, g, &deletiontest.Policy{}, deletion.Options{Logger: logs.logger(0), Inventory: inv})
		if err := e.Track(pu("a")); err != nil {
			t.Fatal(err)
		}
		e.TriggerAll() // checked as soon as the checks begin
		deletiontest.Start(t, e)
		deletiontest.Advance(100 * time.Millisecond)
		if n := logs.count("listing the Inventory failed"); n != 1 {
			t.Fatalf("%d list failure lines: %q", n, logs.all())
		}
		deletiontest.Advance(deletion.DefaultSweepInterval - time.Second)
		if n, l := logs.count(`"port"="GetPod"`), logs.count("listing the Inventory failed"); n > 1 || l != 1 {
			t.Errorf("within an interval of the first summary: %d GetPod lines and %d of the list, want at most 1 and 1: %q", n, l, logs.all())
		}
		deletiontest.Advance(2 * time.Second)
		if n := logs.count(`"port"="GetPod"`); n < 1 {
			t.Errorf("an interval after the first summary: GetPod's failures are in no line: %q", logs.all())
		}
	})
}
