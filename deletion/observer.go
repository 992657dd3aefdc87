package deletion

import (
	"time"

	"github.com/podsweeper/podsweeper/ports"
)

// Observer is told what the engine does, for metrics and journals. Observe is called synchronously: EventTracked and
// EventUntracked in the Track or Untrack call, EventRestored and the Inventory's EventTracked in Start, the others in
// the check they report, whose deadline it shares. The events of one PU reach it one at a time, in the order of the
// moves that made them, whichever goroutines made them: an Untrack, a check or a destroy during Track's EventTracked
// is told after it. Track (a second Track of the same PU too) and Untrack return once their own event has been told,
// and no check of a PU begins before its EventTracked has been told. Events of different PUs may come at once, from
// several goroutines. Observe must not call Track or Untrack, of any PU: the call waits for its own event, which may
// wait for the one being told (that PU's, or, when another Observe call untracks this PU at once, the other's). It must be fast; a journal may block Track until its write is committed, and one that blocks for
// good blocks Track for good, and every later event of that PU. An Observer blocked in a check holds its Workers slot
// and is seen as stuck past the check's deadline, as a port is: LivenessCheck fails once every slot is; one blocked on
// an event of the Inventory's lists (EventListFailed, EventRestored) holds the lists, and LivenessCheck fails after
// three SweepIntervals. A panic in it
// is recovered: logged at V(1), and summed up once an interval among the failing ports (one error line).
type Observer interface {
	Observe(Event)
}

// ObserverFunc lets a plain function serve as an Observer.
type ObserverFunc func(Event)

// Observe calls f(ev).
func (f ObserverFunc) Observe(ev Event) { f(ev) }

// Observers returns an Observer that tells each of obs but the nil ones (a nil ObserverFunc or pointer too), in order,
// about every event. A panic in one does not keep the others from being told: the first is raised again once all were.
func Observers(obs ...Observer) Observer {
	list := make([]Observer, 0, len(obs)) // never nil: Observers() is an Observer, not a typed nil
	for _, o := range obs {
		if !ports.IsNil(o) {
			list = append(list, o)
		}
	}
	return multiObserver(list)
}

type multiObserver []Observer

// Observe tells every Observer of m about ev.
func (m multiObserver) Observe(ev Event) {
	var first any
	panicked := false
	for _, o := range m {
		if r, _, p := catch(func() { o.Observe(ev) }); p && !panicked {
			first, panicked = r, true
		}
	}
	if panicked {
		panic(first)
	}
}

// EventKind says what an Event reports.
type EventKind uint8

const (
	// EventTracked: a new entry is tracked (by Track, or restored from the Inventory).
	EventTracked EventKind = iota + 1
	// EventChecked: a check finished; Verdict is the check's verdict and CheckDuration the check's length. The verdict
	// is carried out unless Untrack ended the PU during the check (its EventUntracked was told first, and a Destroy or
	// an Adopt then moves nothing: no EventDestroyed or EventAdopted follows), or the check's context ended before
	// DestroyPU was called (Start stopping, a Sweep's context ending): no event follows, and the PU waits as it did
	// before the check, for its retry, its turn or its next check. Err
	// holds the failures of its ports, if any (errors.Join): the one that kept the PU (GetPod, the sandbox port, the
	// SandboxProber, a confirmer), a failed DestroyPU (told by EventDestroyFailed too). The Requeuer is called after
	// the check, off the workers: its failures are logged and summed up, and told by no Event.
	EventChecked
	// EventGetFailed: GetPod failed with an error other than not found, or answered nonsense; Err is set.
	EventGetFailed
	// EventDestroyed: DestroyPU succeeded and the PU is no longer tracked; Reason, DestroyDelay and DestroyCalls are set.
	EventDestroyed
	// EventDestroyFailed: DestroyPU failed; Reason, DestroyCalls, Err and Next (zero when no retry comes: its last
	// attempt, a permanent error, or Untrack ended the PU meanwhile) are set. An EventAbandoned follows after
	// the last attempt.
	EventDestroyFailed
	// EventAbandoned: the PU is no longer tracked, without a successful destroy, after its last failed attempt or a
	// permanent error; Reason, DestroyCalls and Err are set.
	EventAbandoned
	// EventVetoed: the Confirmer did not confirm a destroy, or the SandboxConfirmer a sandbox change (row 10, routine
	// with a listing SandboxExtractor). Reason is the overridden answer's, Verdict and Err the confirmer's.
	EventVetoed
	// EventAdopted: a check recorded the PU's first sandbox (Verdict is its row 7), or Start gave it the sandbox the
	// Inventory listed (Verdict is zero); PU holds it. For a PU tracked without a sandbox while Start's list of the
	// Inventory is not in (before Start too), a sandbox its check recorded is told with IfNone: a journal that is the
	// Inventory records it only for a PU it holds without a sandbox, keeping the one from before a restart, which
	// the list then gives in its place (told again, Verdict zero).
	EventAdopted
	// EventUntracked: Untrack forgot the PU without destroying it.
	EventUntracked
	// EventRestored: Start tracked the PUs the Inventory listed; Count and ListCalls are set, and Err when some of
	// them were invalid (not tracked).
	EventRestored
	// EventWouldDestroy: in a dry run, a check decided to destroy the PU (once per PU and reason); Reason, Verdict and
	// Dropped are set.
	EventWouldDestroy
	// EventListFailed: a list of the Inventory failed, or answered after its deadline; Err and ListCalls (the lists
	// so far) are set. It is retried with backoff until one answers (EventRestored).
	EventListFailed
)

var eventKindNames = [...]string{
	EventTracked: "Tracked", EventChecked: "Checked", EventGetFailed: "GetFailed",
	EventDestroyed: "Destroyed", EventDestroyFailed: "DestroyFailed", EventAbandoned: "Abandoned",
	EventVetoed: "Vetoed", EventAdopted: "Adopted", EventUntracked: "Untracked", EventRestored: "Restored",
	EventWouldDestroy: "WouldDestroy", EventListFailed: "ListFailed",
}

// String returns the kind's name.
func (k EventKind) String() string { return nameOf(eventKindNames[:], int(k), "EventKind") }

// Event is one thing the engine did, as reported to an Observer. Which fields are set depends on Kind; the others are
// zero.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// PU is the PU concerned, as the engine holds it (zero for EventRestored).
	PU ports.PU
	// Verdict is the verdict of the check (EventChecked, EventVetoed, a check's EventAdopted), or of the check that
	// decided the destroy (EventDestroyed, EventDestroyFailed, EventAbandoned: its Row is the decision table's row).
	Verdict Verdict
	// Reason is why the PU is, or was to be, destroyed (EventDestroyed, EventDestroyFailed, EventAbandoned, EventVetoed).
	Reason ports.Reason
	// CheckDuration is how long the check took (EventChecked).
	CheckDuration time.Duration
	// DestroyDelay is the time from the first check that found the PU must go to its successful destroy (EventDestroyed).
	DestroyDelay time.Duration
	// DestroyCalls is the number of DestroyPU calls so far for this PU (EventDestroyed, EventDestroyFailed,
	// EventAbandoned).
	DestroyCalls int
	// ListCalls is the number of ListPUs calls the restore took (EventRestored), or has made (EventListFailed).
	ListCalls int
	// Count is the number of PUs restored: new, or given their sandbox (EventRestored).
	Count int
	// Next is when the PU of a failed destroy is checked again, its backoff over (EventDestroyFailed). Under
	// Options.DestroyRate the destroy it then decides waits for a turn, which may come later (Options.DestroyRate).
	Next time.Time
	// Dropped: the engine no longer holds the PU in memory (EventWouldDestroy).
	Dropped bool
	// DryRun: the failed destroy was a dry run's DryRunDestroyPU, which destroys nothing (EventDestroyFailed,
	// EventAbandoned under Options.DryRun).
	DryRun bool
	// IfNone: the sandbox of an EventAdopted was recorded from the runtime while the Inventory's list was not in:
	// a journal records it only for a PU it holds without one (adapters/bolt and deletiontest.Inventory do), so
	// that a sandbox replaced while the agent was down is destroyed as changed, not taken for the PU's first.
	IfNone bool
	// Err is the error behind the event (EventGetFailed, EventDestroyFailed, EventAbandoned, EventVetoed,
	// EventListFailed), or the failures of a check (EventChecked) or of a list's PUs (EventRestored).
	Err error
}
