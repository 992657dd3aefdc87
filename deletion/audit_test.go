package deletion_test

// An independent audit of the engine's documented promises, through the public API alone: each TestAudit<Promise>
// broke a promise when it was written and holds it now; each TestAuditHolds<Promise> held under the same kind of
// attack.

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// gate is an Observer that blocks on the events its block function picks, until released.
type gate struct {
	block   func(deletion.Event) bool
	release chan struct{}
	once    sync.Once
}

func newGate(block func(deletion.Event) bool) *gate {
	return &gate{block: block, release: make(chan struct{})}
}

func (g *gate) Observe(ev deletion.Event) {
	if g.block(ev) {
		<-g.release
	}
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

// PUStatus.State (go doc deletion PUStatus): "State: "tracking" (Track is telling the Observer), "idle", "queued",
// "checking", "waiting for a retry" or "waiting for its turn"." Status is read while Track tells a journal of the PU's EventTracked.
func TestAuditStatusStateIsOneOfTheDocumented(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		g := newGate(func(ev deletion.Event) bool { return ev.Kind == deletion.EventTracked })
		defer g.open()
		engine := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{Observer: g})
		pu := cluster.CreatePod(key("web-0"), "node-a", "")
		go engine.Track(pu) // a journal commits the PU: Track waits for it
		synctest.Wait()

		documented := []string{"tracking", "idle", "queued", "checking", "waiting for a retry", "waiting for its turn"}
		for _, s := range engine.Status() {
			if !slices.Contains(documented, s.State) {
				t.Errorf("Status of %s: State %q, not one of the documented %q", s.PUID, s.State, documented)
			}
		}
		g.open()
		synctest.Wait()
	})
}

// deletion.Engine.Untrack: "It reports whether the PU was tracked, once the Observer has been told (EventUntracked,
// after every earlier event of the PU)." deletion.Engine.Track: "Track returns once the Observer has been told
// (EventTracked)". docs/sdk/restarts.md:21-23: the journal "records each PU before Track returns (a kill -9 right
// after loses nothing ...)". deletiontest.Inventory: "Hooked as both, it holds what the engine recorded".
// A PU is Untracked while its EventChecked is being told, and Tracked again (a new PU) before Untrack returns: the
// engine tracks the PU, but the journal hears EventUntracked after the new EventTracked and forgets it.
func TestAuditJournalKeepsAPUTrackedAgainDuringUntrack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		inv := deletiontest.NewInventory()
		var blockChecked atomic.Bool
		g := newGate(func(ev deletion.Event) bool { return ev.Kind == deletion.EventChecked && blockChecked.Load() })
		defer g.open()
		engine := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{Observer: deletion.Observers(inv, g)})
		pu := cluster.CreatePod(key("web-0"), "node-a", "")
		if err := engine.Track(pu); err != nil {
			t.Fatal(err)
		}
		blockChecked.Store(true)
		go engine.Sweep(t.Context()) // its EventChecked is slow to be told
		synctest.Wait()
		untracked := make(chan bool, 1)
		go func() { untracked <- engine.Untrack(pu.PUID) }() // the agent tore it down
		synctest.Wait()
		tracked := make(chan error, 1)
		go func() { tracked <- engine.Track(pu) }() // and created it again: a new PU
		synctest.Wait()
		blockChecked.Store(false)
		g.open()
		<-untracked
		if err := <-tracked; err != nil {
			t.Fatal(err)
		}
		synctest.Wait()

		if engine.Len() != 1 {
			t.Fatalf("engine tracks %d PUs, want the one tracked again", engine.Len())
		}
		if got := inv.PUs(); len(got) != 1 {
			t.Errorf("the engine tracks %v, Track returned nil after its EventTracked, yet the journal holds %v: "+
				"it heard %v", deletiontest.PUs(engine), got, "Tracked(new) before Untracked(old)")
		}

		// What a restart finds: the pod goes while the agent is down, and nothing destroys its PU.
		cluster.DeletePod(pu.Pod)
		policy := &deletiontest.Policy{}
		restarted := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Inventory: inv, Observer: inv})
		deletiontest.Start(t, restarted)
		deletiontest.Advance(time.Minute)
		if len(policy.Destroyed()) != 1 {
			t.Errorf("after a restart: %d destroys of the PU whose pod went while the agent was down, want 1", len(policy.Destroyed()))
		}
	})
}

var _ = errors.New
