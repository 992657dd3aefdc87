package deletion_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

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
