package deletion

import (
	"sync/atomic"

	"github.com/podsweeper/podsweeper/ports"
)

// Entry is what the engine remembers about one PU: its PUID, its pod and its
// sandbox. It is ports.PU, the value an Inventory lists, under the name the
// engine's API has always used.
type Entry = ports.PU

// state is where an entry is in its life. Every move between states happens
// under Controller.mu, and a check runs only on an entry it moved to
// checking: that is the one claim.
type state uint8

const (
	// idle: tracked; its next check comes from its wheel slot or a trigger.
	idle state = iota
	// queued: in the ready queue, waiting for a worker.
	queued
	// checking: a check holds it. Triggers meanwhile set entry.again.
	checking
	// waiting: a destroy failed; only Sweep checks it before retryAt.
	waiting
	// removed: no longer tracked.
	removed
)

var stateNames = [...]string{idle: "idle", queued: "queued", checking: "checking", waiting: "waiting for a retry", removed: "removed"}

func (s state) String() string { return stateNames[s] }

// entry is the engine's record of one tracked PU. Its fields are guarded by
// Controller.mu, but checkEnd. Times are nanoseconds on Options.Clock since the
// Controller's epoch: an int64 is a third of a time.Time, and the record
// is kept for every PU.
type entry struct {
	Entry

	// nextOfPod is the next entry of the same pod in Controller.byPod.
	nextOfPod *entry
	// lastErr is the error of the last failed check or destroy; nil after
	// a check that failed nothing.
	lastErr error

	trackedAt   int64
	lastChecked int64 // when the last check ended; 0: never
	retryAt     int64 // while waiting: when the retry is due
	goneSince   int64 // when a check first decided to destroy; 0: never
	// checkEnd is the deadline of the running check, on Controller.realNow;
	// 0 while none runs. Atomic: set outside the lock when the check starts.
	checkEnd atomic.Int64

	attempts int32 // failed DestroyPU calls
	// slot is the entry's slot in Controller.wheel, slotIndex its index there.
	slot, slotIndex int32

	state state
	// again: a trigger came while the entry was being checked; check it
	// once more when the check ends.
	again bool
	// lastRow is the row of the last verdict carried out (see verdictOfRow);
	// -1 before the first check. vetoed: that verdict was the Confirmer's,
	// overriding a destroy.
	lastRow int8
	vetoed  bool
}
