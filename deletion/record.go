package deletion

import "github.com/podsweeper/podsweeper/ports"

// state is where a record is in its life. Every move between states happens
// under Engine.mu, and a check runs only on a record it moved to checking:
// that is the one claim.
type state uint8

const (
	// idle: tracked; its next check comes from its wheel slot, a trigger or
	// a Sweep.
	idle state = iota
	// queued: in the ready queue, waiting for a worker.
	queued
	// checking: a check holds it. Triggers meanwhile set record.again.
	checking
	// waiting: a destroy failed; only Sweep checks it before retryAt.
	waiting
	// removed: no longer tracked.
	removed
)

var stateNames = [...]string{idle: "idle", queued: "queued", checking: "checking", waiting: "waiting for a retry", removed: "removed"}

func (s state) String() string { return stateNames[s] }

// sweepMark is where a record is in the running Sweep (see Engine.Sweep).
type sweepMark uint8

const (
	// notSwept: the running Sweep, if any, waits for no check of it.
	notSwept sweepMark = iota
	// sweepNext: the Sweep waits for its next check to begin and end.
	sweepNext
	// sweepThis: the Sweep waits for the check that holds it now.
	sweepThis
)

// record is the engine's record of one tracked PU. Its fields are guarded
// by Engine.mu. Times are nanoseconds on Options.Clock since the Engine's
// epoch: an int64 is a third of a time.Time, and the record is kept for
// every PU.
type record struct {
	ports.PU

	// nextOfPod is the next record of the same pod in Engine.byPod.
	nextOfPod *record
	// lastErr is the error of the last failed check or destroy; nil after
	// a check that failed nothing.
	lastErr error

	trackedAt   int64
	lastChecked int64 // when the last check ended; 0: never
	retryAt     int64 // while waiting: when the retry is due
	goneSince   int64 // when a check first decided to destroy; 0: never
	// paidAt is when the destroy rate lets the record's destroy go, a turn
	// it holds (see destroyBudget); 0: none.
	paidAt int64

	attempts int32 // failed DestroyPU calls
	// slot is the record's slot in Engine.wheel, slotIndex its index there.
	slot, slotIndex int32

	state state
	// again: a trigger came while the record was being checked; check it
	// once more when the check ends.
	again bool
	// fresh: TriggerPod asked for the next check, which then asks the
	// SandboxConfirmer, if any, in place of the SandboxExtractor.
	// checkFresh is fresh, or true for the record's first check, as the
	// check that holds the record claimed it, read by that check alone.
	fresh, checkFresh bool
	// lastRow is the row of the last verdict carried out (see verdictOfRow);
	// -1 before the first check. vetoed: that verdict was the Confirmer's,
	// overriding a destroy.
	lastRow int8
	vetoed  bool
	swept   sweepMark
	// reportedRow is the row of the last destroy a dry run reported; 0: none.
	reportedRow int8
}
