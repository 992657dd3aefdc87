package deletiontest

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

var (
	_ ports.Inventory   = (*Inventory)(nil)
	_ deletion.Observer = (*Inventory)(nil)
)

// Inventory is an in-memory journal of the PUs an engine tracks: a
// ports.Inventory for deletion.Options.Inventory and a deletion.Observer
// for Options.Observer (with deletion.Observers beside others), as
// adapters/bolt's Journal is on disk. Hooked as both, it holds what the
// engine recorded, the sandbox included, so that a second engine started
// on it after a "restart" tracks again what the first left and destroys
// the PUs of pods that went away meanwhile. Its methods are safe from any
// goroutine. Create it with NewInventory.
//
// It records as the Journal does:
//
//   - EventTracked keeps the PU; a PU tracked without a sandbox keeps the
//     sandbox recorded for the same PU (ports.PU.WithRecordedSandbox), as
//     a pod informer's add after a restart tracks it;
//   - EventAdopted records the sandbox the engine recorded for a PU it
//     holds, one told IfNone only where it holds none, and never brings
//     back a PU it forgot;
//   - EventDestroyed, EventAbandoned and EventUntracked forget the PU,
//     unless it was tracked again meanwhile for another pod or sandbox
//     (ports.PU.SameAs: an empty sandbox is no other);
//   - every other kind is ignored (a dry run's EventWouldDestroy too: the
//     PU still exists).
type Inventory struct {
	mu       sync.Mutex
	pus      map[string]ports.PU
	lists    int
	failNext int
	nextErr  error
	failErr  error
}

// NewInventory returns an Inventory that holds pus, as if an engine had
// tracked them.
func NewInventory(pus ...ports.PU) *Inventory {
	inv := &Inventory{pus: make(map[string]ports.PU, len(pus))}
	inv.Add(pus...)
	return inv
}

// Add records pus as they are, replacing what is recorded under their
// PUIDs: PUs the policy engine holds that no engine told the Inventory of.
func (inv *Inventory) Add(pus ...ports.PU) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	for _, pu := range pus {
		inv.pus[pu.PUID] = pu
	}
}

// ListPUs returns every PU recorded, sorted by PUID, or the error of
// FailNextLists or FailLists.
func (inv *Inventory) ListPUs(context.Context) ([]ports.PU, error) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.lists++
	switch {
	case inv.failNext > 0:
		inv.failNext--
		return nil, inv.nextErr
	case inv.failErr != nil:
		return nil, inv.failErr
	}
	return inv.sortedLocked(), nil
}

// Observe records what ev says about a PU (see Inventory).
func (inv *Inventory) Observe(ev deletion.Event) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	id := ev.PU.PUID
	old, held := inv.pus[id]
	switch ev.Kind {
	case deletion.EventTracked:
		inv.pus[id] = ev.PU.WithRecordedSandbox(old)
	case deletion.EventAdopted:
		if held && (!ev.IfNone || old.SandboxID == "") {
			inv.pus[id] = ev.PU
		}
	case deletion.EventDestroyed, deletion.EventAbandoned, deletion.EventUntracked:
		if held && ev.PU.SameAs(old) {
			delete(inv.pus, id)
		}
	}
}

// PUs returns every PU recorded, sorted by PUID.
func (inv *Inventory) PUs() []ports.PU {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.sortedLocked()
}

// Lists returns how many times ListPUs was called, failed calls included.
func (inv *Inventory) Lists() int {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.lists
}

// FailNextLists makes the next n ListPUs calls answer err.
func (inv *Inventory) FailNextLists(n int, err error) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.failNext, inv.nextErr = n, err
}

// FailLists makes every ListPUs call answer err, until FailLists(nil);
// FailNextLists comes first.
func (inv *Inventory) FailLists(err error) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.failErr = err
}

func (inv *Inventory) sortedLocked() []ports.PU {
	out := make([]ports.PU, 0, len(inv.pus))
	for _, pu := range inv.pus {
		out = append(out, pu)
	}
	slices.SortFunc(out, func(a, b ports.PU) int { return cmp.Compare(a.PUID, b.PUID) })
	return out
}
