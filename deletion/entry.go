package deletion

import (
	"time"

	"github.com/podsweeper/podsweeper/ports"
)

// Entry is what the engine remembers about one PU: its PUID, its pod and its
// sandbox. It is ports.PU, the value an Inventory lists, under the name the
// engine's API has always used.
type Entry = ports.PU

// entry is the engine's record of one tracked PU. busy, removed, again,
// idle, nextOfPod, slot, wheelIndex and Entry.SandboxID are guarded by
// Controller.mu; attempts and goneSince belong to the check that has claimed
// the entry (busy), which alone reads and writes them.
type entry struct {
	Entry

	// busy: a check has claimed the entry. At most one check holds it.
	busy bool
	// removed: the entry is no longer tracked.
	removed bool
	// again: a scheduled check found the entry busy; check it once more
	// when it is released.
	again bool
	// idle, when not nil, is closed when the entry is released, to wake
	// Sweep calls waiting for it.
	idle chan struct{}

	// nextOfPod is the next entry of the same pod in Controller.byPod.
	nextOfPod *entry
	// slot is the entry's slot in Controller.wheel, wheelIndex its index there.
	slot, wheelIndex int32

	// attempts counts the failed DestroyPU calls.
	attempts int
	// goneSince is when a check first decided the PU must be destroyed.
	goneSince time.Time
}
