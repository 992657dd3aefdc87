package deletion_test

// Track and Untrack, called at once from many goroutines and during checks:
// Track returns once the Observer has been told the PU's EventTracked, a
// second Track of the PU too, and no sooner nor later (not waiting for a
// later event of the PU); a PU tracked again while its Untrack is being
// told is kept, by the engine and by a journal that observes it; and
// Status, read meanwhile, says one of its documented states.

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// gate is an Observer that blocks on the events its block function picks, until released.
type gate struct {
	block   func(deletion.Event) bool
	release chan struct{}
	once    sync.Once
}

func (g *gate) Observe(ev deletion.Event) {
	if g.block(ev) {
		<-g.release
	}
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

func newGate(block func(deletion.Event) bool) *gate {
	return &gate{block: block, release: make(chan struct{})}
}

// TestASecondTrackReturnsOnceTheObserverHasThePU: two Tracks of the same PU
// at once, the journal slow to commit: each Track, when it returns, finds
// the journal holding the PU.
func TestASecondTrackReturnsOnceTheObserverHasThePU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := newSlowJournal()
		c := deletiontest.NewEngine(t, deletiontest.NewCluster(), &deletiontest.Policy{}, deletion.Options{Observer: j})
		var held [2]bool
		var wg sync.WaitGroup
		for i := range held {
			wg.Go(func() {
				assert.NoError(t, c.Track(pu("a")))
				_, held[i] = j.holds("a")
			})
		}
		wg.Wait()
		assert.Equal(t, [2]bool{true, true}, held, "a Track returned before the journal held the PU")
	})
}

// Track: "Track returns once the Observer has been told (EventTracked), the second Track of a PU too; no check of the
// PU begins before."
func TestAuditHoldsSecondTrackWaitsForTheObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		g := newGate(func(ev deletion.Event) bool { return ev.Kind == deletion.EventTracked })
		defer g.open()
		engine := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{Observer: g})
		pu := cluster.CreatePod(key("a"), "node-a", "")
		cluster.DeletePod(pu.Pod)
		deletiontest.Start(t, engine)
		var returned atomic.Int32
		for range 2 {
			go func() { _ = engine.Track(pu); returned.Add(1) }()
		}
		engine.TriggerAll()
		go engine.Sweep(t.Context())
		deletiontest.Advance(time.Minute)
		if returned.Load() != 0 || cluster.AllReads() != 0 {
			t.Errorf("%d Tracks returned, %d reads before the Observer was told", returned.Load(), cluster.AllReads())
		}
		g.open()
		deletiontest.Advance(time.Minute)
		if returned.Load() != 2 || engine.Len() != 0 {
			t.Errorf("after: %d returned, %d tracked", returned.Load(), engine.Len())
		}
	})
}

// Promise (go doc deletion Engine.Track; docs/sdk/engine.md:3-4): "Track returns once the Observer has been told
// (EventTracked), the second Track of a PU too".
//
// A first Track of P is blocked in the Observer on P's EventTracked. A second Track of P waits. An Untrack of P
// comes (it waits its turn behind the EventTracked). Any other PU's event wakes the second Track, which sees P
// removed and returns, while P's EventTracked is still being told.
func TestAuditSecondTrackWaitsForEventTracked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, q := uidPU("p"), uidPU("q")
		release := make(chan struct{})
		var toldP atomic.Bool // Observe of P's EventTracked has returned
		var once sync.Once
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventTracked && ev.PU.PUID == p.PUID {
				blocked := false
				once.Do(func() { blocked = true })
				if blocked {
					<-release
					toldP.Store(true)
				}
			}
		})
		cluster := deletiontest.NewCluster()
		e := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{Observer: obs})

		go func() { _ = e.Track(p) }() // first Track: blocked in the Observer
		synctest.Wait()
		var secondReturned atomic.Bool
		var toldWhenReturned atomic.Bool
		go func() {
			_ = e.Track(p) // second Track: must wait until the Observer has been told P's EventTracked
			toldWhenReturned.Store(toldP.Load())
			secondReturned.Store(true)
		}()
		synctest.Wait()
		go func() { e.Untrack(p.PUID) }() // waits its turn behind the EventTracked
		synctest.Wait()
		if err := e.Track(q); err != nil { // another PU's event
			t.Fatal(err)
		}
		synctest.Wait()
		returnedEarly := secondReturned.Load()
		close(release)
		synctest.Wait()
		if returnedEarly || (secondReturned.Load() && !toldWhenReturned.Load()) {
			t.Errorf("the second Track of %s returned while the Observer was still being told its EventTracked", p.PUID)
		}
	})
}

// Track (doc: "Track returns once the Observer has been told (EventTracked), the second Track of a PU too";
// Observer: "Track (a second Track of the same PU too) and Untrack return once their own event has been told").
// A second Track of a PU whose EventTracked was told long ago must return at once, not wait for a later event of the
// PU (an EventChecked) that the Observer takes a minute to take (a slow metrics push).
func TestAuditSecondTrackReturnsOnceEventTrackedWasTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		pu := cluster.CreatePod(nsKey("web"), "node-a", "")
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventChecked {
				time.Sleep(time.Minute)
			}
		})
		engine := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{
			Observer: obs, CheckTimeout: 2 * time.Minute,
		})
		if err := engine.Track(pu); err != nil { // EventTracked told here
			t.Fatal(err)
		}
		swept := make(chan struct{})
		go func() { engine.Sweep(t.Context()); close(swept) }() // its EventChecked takes the Observer a minute
		synctest.Wait()
		began := time.Now()
		if err := engine.Track(pu); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); took > 0 {
			t.Errorf("a second Track of a PU whose EventTracked was told already took %v: it waited for the PU's EventChecked", took)
		}
		<-swept
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

// A journal that commits EventUntracked after a delay; the PU is tracked again meanwhile: the Observer hears
// Untracked before the new Tracked, and a restart finds the PU in the journal.
func TestAuditHoldsTrackAgainWhileUntrackCommits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		inv := deletiontest.NewInventory()
		events := &deletiontest.Events{}
		slow := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventUntracked {
				time.Sleep(time.Second)
			}
		})
		obs := deletion.Observers(slow, inv, events)
		engine := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{Inventory: inv, Observer: obs})
		pu := cluster.CreatePod(nsKey("web"), "node-a", "sb-1")
		if err := engine.Track(pu); err != nil {
			t.Fatal(err)
		}
		untracked := make(chan bool)
		go func() { untracked <- engine.Untrack(pu.PUID) }()
		time.Sleep(100 * time.Millisecond)
		if err := engine.Track(pu); err != nil {
			t.Fatal(err)
		}
		if !<-untracked {
			t.Fatal("Untrack: not tracked")
		}
		var kinds []deletion.EventKind
		for _, ev := range events.All() {
			kinds = append(kinds, ev.Kind)
		}
		want := []deletion.EventKind{deletion.EventTracked, deletion.EventUntracked, deletion.EventTracked}
		if len(kinds) != 3 || kinds[0] != want[0] || kinds[1] != want[1] || kinds[2] != want[2] {
			t.Errorf("events %v, want %v", kinds, want)
		}
		if got := inv.PUs(); len(got) != 1 || got[0] != pu || engine.Len() != 1 {
			t.Errorf("journal %v, engine %v", got, deletiontest.PUs(engine))
		}
		// A restart finds it.
		second := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{Inventory: inv, Observer: inv})
		deletiontest.Start(t, second)
		deletiontest.Advance(time.Second)
		if got := deletiontest.PUs(second); len(got) != 1 || got[0] != pu {
			t.Errorf("restart tracks %v", got)
		}
		_ = ports.PU{}
	})
}

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
