package crossings_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// flakyDryRunner is a PolicyHandler and a ports.DryRunner whose DryRunDestroyPU fails on the calls listed in fail
// (1-based), as a runtime briefly out of reach does, and answers "would destroy" on the others.
type flakyDryRunner struct {
	mu    sync.Mutex
	calls int
	real  int
	fail  map[int]bool
}

func (p *flakyDryRunner) DestroyPU(context.Context, ports.DestroyEvent) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.real++
	return nil
}

func (p *flakyDryRunner) DryRunDestroyPU(context.Context, ports.DestroyEvent) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if p.fail[p.calls] {
		return errors.New("runtime briefly out of reach")
	}
	return nil
}

// Options.DryRun (deletion/options.go:96-100, go doc deletion): "a PolicyHandler that is a ports.DryRunner is asked
// DryRunDestroyPU in its place, and its failures are DestroyPU's, retried with backoff): a PU that would go is
// reported once per reason (EventWouldDestroy, ...) and kept, or, when its pod is gone for good (PodGone, UIDChanged,
// NodeChanged), dropped from memory". A PU whose sandbox was replaced (its pod lives) is to be reported and kept.
//
// With MaxDestroyAttempts 2, the DryRunner answers: would destroy, fail, would destroy, fail. A real run would have
// destroyed the PU at the first call; the dry run reports it at the first call, keeps asking at every check, counts
// the failures across the successes, and gives up on the PU at the second failure: EventAbandoned, an error line
// "destroying PU failed for the last time; dropping it", and the live pod's PU is no longer tracked.
func TestDryRunFailuresCountFromTheLastWouldDestroy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := deletiontest.NewCluster()
		pol := &flakyDryRunner{fail: map[int]bool{2: true, 4: true}}
		ev := &deletiontest.Events{}
		e := deletiontest.NewEngine(t, c, pol, deletion.Options{
			DryRun: true, MaxDestroyAttempts: 2, SandboxExtractor: c, Observer: ev, SweepInterval: 5 * time.Second,
		})
		k := types.NamespacedName{Namespace: "shop", Name: "web-0"}
		pu := c.CreatePod(k, "node-a", "sb-1")
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		deletiontest.Start(t, e)
		deletiontest.Advance(time.Second)
		if err := c.SetSandbox(k, "sb-2"); err != nil { // the runtime replaced the sandbox; the pod lives on
			t.Fatal(err)
		}
		deletiontest.Advance(time.Minute) // a dozen checks

		if n := ev.Count(deletion.EventWouldDestroy); n != 1 {
			t.Errorf("%d EventWouldDestroy, want the one report of SandboxChanged", n)
		}
		if pol.real != 0 {
			t.Errorf("a dry run called DestroyPU %d times", pol.real)
		}
		if e.Len() != 1 {
			t.Errorf("the reported PU of a live pod is no longer tracked (%d DryRunDestroyPU calls, %d of them failed): "+
				"abandoned %v", pol.calls, len(pol.fail), ev.Of(deletion.EventAbandoned))
		}
	})
}

// What the dry run's give-up costs after it: docs/operating/rollout.md has an operator run a dry run first, then turn
// destroys on. restarts.md: the journal "holds every tracked PU and the sandbox adopted for it", so that "a sandbox
// replaced while the agent was down is thus destroyed as changed (row 10, with the old sandbox)". The dry run of the
// test above gives up on the PU of the replaced sandbox: the journal (deletiontest.Inventory, which forgets a PU on
// EventAbandoned) forgets it, and the real run that follows, tracking the pod's PU without a sandbox as adapters/k8s
// does, adopts the new sandbox and never destroys the PU of the old one. A real run from the start destroys it.
func TestDryRunFailuresCountFromTheLastWouldDestroyAndTheJournalKeepsThePU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := deletiontest.NewCluster()
		inv := deletiontest.NewInventory()
		k := types.NamespacedName{Namespace: "shop", Name: "web-0"}
		pu := c.CreatePod(k, "node-a", "sb-1")

		// The dry run.
		dry := &flakyDryRunner{fail: map[int]bool{2: true, 4: true}}
		e := deletiontest.NewEngine(t, c, dry, deletion.Options{
			DryRun: true, MaxDestroyAttempts: 2, SandboxExtractor: c, Inventory: inv, Observer: inv, SweepInterval: 5 * time.Second,
		})
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		stop := deletiontest.Start(t, e)
		deletiontest.Advance(time.Second)
		if err := c.SetSandbox(k, "sb-2"); err != nil {
			t.Fatal(err)
		}
		deletiontest.Advance(time.Minute)
		stop()
		journal := inv.PUs()

		// Destroys turned on: the agent restarts on the journal and tracks the pod's PU without a sandbox.
		real := &deletiontest.Policy{}
		e2 := deletiontest.NewEngine(t, c, real, deletion.Options{
			MaxDestroyAttempts: 2, SandboxExtractor: c, Inventory: inv, Observer: inv, SweepInterval: 5 * time.Second,
		})
		live, _ := c.PU(k)
		live.SandboxID = ""
		if err := e2.Track(live); err != nil {
			t.Fatal(err)
		}
		deletiontest.Start(t, e2)
		deletiontest.Advance(time.Minute)
		if got := real.Destroyed(); len(got) != 1 || got[0].SandboxID != "sb-1" || got[0].Reason != ports.ReasonSandboxChanged {
			t.Errorf("after the dry run, the journal held %v; the real run destroyed %v, want the PU of sb-1 (SandboxChanged)",
				journal, got)
		}
	})
}
