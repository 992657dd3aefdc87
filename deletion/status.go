package deletion

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/podsweeper/podsweeper/ports"
)

// PUStatus is what the engine knows of one tracked PU, for status pages and debugging: why it is kept, and how its
// destroy is going.
type PUStatus struct {
	ports.PU
	// State: "tracking" (Track is telling the Observer), "idle", "queued", "checking", "waiting for a retry",
	// "waiting for its turn", or StateLeaving.
	State string
	// TrackedAt is when Track took the entry.
	TrackedAt time.Time
	// LastChecked is when its last check ended; zero before the first. A PU leaving (StateLeaving) whose check ended
	// it tells that check, when it decided.
	LastChecked time.Time
	// LastVerdict is the verdict that check carried out; its Row and Why say why the PU is kept. Zero before the first
	// check.
	LastVerdict Verdict
	// Vetoed reports that LastVerdict is a Confirmer's or SandboxConfirmer's that overrode a destroy or a sandbox change.
	Vetoed bool
	// Attempts is the number of failed DestroyPU calls in a row, as MaxDestroyAttempts counts them (a dry run's
	// "would destroy" ends the row; Event.DestroyCalls counts every call).
	Attempts int
	// NextAttempt is when the PU waiting to be destroyed is checked again: its retry's check once its backoff is over
	// (under the destroy rate, the destroy then waits for a turn, which may come later), or about its turn in the
	// destroy rate's line; zero unless the PU waits for either.
	NextAttempt time.Time
	// WouldDestroy is the reason a dry run reported last; "" when none did.
	WouldDestroy ports.Reason
	// ReportedRows are the rows of the destroys a dry run reported of the PU since it was tracked: it reports each row
	// once (Options.DryRun).
	ReportedRows RowSet
	// LastErr is the error of the last check, if it failed.
	LastErr error
}

// StateLeaving is the PUStatus.State of a PU whose tracking has ended (destroyed, given up on, dropped by a dry run,
// untracked) while the Observer is not told yet (a journal commits, an Observer before it in a chain is slow): it
// leaves Status once the Observer has heard of its end, so that a PU is never missing both from Status and from what
// the Observer keeps (a dry run's report). Len does not count it.
const StateLeaving = "leaving"

// RowSet is a set of rows of the decision table (Verdict.Row); it reads and writes as a JSON array of its rows.
type RowSet uint32

// Has reports whether row is in s.
func (s RowSet) Has(row int) bool { return row >= 0 && row < 32 && s&(1<<row) != 0 }

// Rows returns the rows of s in ascending order; nil when none.
func (s RowSet) Rows() []int {
	var rows []int
	for row := range 32 {
		if s.Has(row) {
			rows = append(rows, row)
		}
	}
	return rows
}

// String writes s as its rows, as fmt writes a slice of them: "[10 12]", "[]" when none; so that a PUStatus printed
// with %v or %+v tells rows, not a bit mask.
func (s RowSet) String() string { return fmt.Sprint(append([]int{}, s.Rows()...)) }

// MarshalJSON writes s as a JSON array of its rows.
func (s RowSet) MarshalJSON() ([]byte, error) { return json.Marshal(append([]int{}, s.Rows()...)) }

// UnmarshalJSON reads a JSON array of rows, each from 0 to 31.
func (s *RowSet) UnmarshalJSON(b []byte) error {
	var rows []int
	if err := json.Unmarshal(b, &rows); err != nil {
		return err
	}
	*s = 0
	for _, row := range rows {
		if row < 0 || row >= 32 {
			return fmt.Errorf("deletion: row %d out of a RowSet's range (0 to 31)", row)
		}
		*s |= 1 << row
	}
	return nil
}

// Errors LivenessCheck and ReadinessCheck return, wrapped with details. Match them with errors.Is.
var (
	// ErrNotRunning: Start has not been called, or is stopping (its context is done) or has returned; Track once
	// Start's context is done wraps it.
	ErrNotRunning = errors.New("deletion: engine not running")
	// ErrBehind: a queued check has waited more than three SweepIntervals (ReadinessCheck), or (both) a check due as
	// long ago is not queued yet, no PU of the first list's answer has gone in for as long, or the Observer has not
	// returned for as long from an event of the Inventory's lists or from a Track's EventTracked: these are a
	// scheduler or an Observer (a journal) that no longer moves, not load.
	ErrBehind = errors.New("deletion: checks fall behind")
	// ErrWorkersStuck: every one of the Workers slots is held by a check stuck in a port past its deadline, whoever ran
	// it.
	ErrWorkersStuck = errors.New("deletion: every worker is stuck in a port")
)

// HealthCheck is ReadinessCheck.
//
// Deprecated: serve LivenessCheck on /healthz and ReadinessCheck on /readyz: HealthCheck fails while the engine is
// behind.
func (c *Engine) HealthCheck(req *http.Request) error { return c.ReadinessCheck(req) }

// LivenessCheck reports whether restarting the process could help the engine: it fails once Start has returned, when
// a check due three SweepIntervals ago (and since Start began, and its first list's deadline) is not queued yet, when
// the first list answered and no PU of its answer has gone in for three SweepIntervals (the Observer blocks: no check
// begins before they are in), when the Observer has not returned for three SweepIntervals from an event of the
// Inventory's lists (EventListFailed, EventRestored: no list is retried until it does) or from a Track's
// EventTracked (the Track waits for it: a journal whose commit hangs), and when every Workers slot is held by a check stuck in a port past its deadline. A queue that is long but moves does not
// fail it (a restart would only add a relist to the load: see ReadinessCheck), nor being before Start. Its errors wrap
// ErrNotRunning, ErrBehind (a scheduler, a list's answer or the Observer that no longer moves) or ErrWorkersStuck. Serve it on /healthz:
// mgr.AddHealthzCheck("podsweeper", engine.LivenessCheck). It reads a few fields, whatever the number of PUs.
func (c *Engine) LivenessCheck(_ *http.Request) error { return c.healthErr(false) }

// ReadinessCheck reports whether the engine keeps up: it fails before Start, where LivenessCheck does, and when the
// oldest queued check has waited more than three SweepIntervals (ErrBehind). Serve it on /readyz:
// mgr.AddReadyzCheck("podsweeper", engine.ReadinessCheck).
func (c *Engine) ReadinessCheck(_ *http.Request) error { return c.healthErr(true) }

// healthErr is the error of a health check; being before Start or behind fails it only when behindFails.
func (c *Engine) healthErr(behindFails bool) error {
	if !c.started.Load() {
		if behindFails {
			return fmt.Errorf("%w: not started", ErrNotRunning)
		}
		return nil
	}
	limit := 3 * c.opts.SweepInterval
	stopped, stopping, restoring, waited, overdue, telling := c.waits()
	switch stuck := c.stuck(c.realNow()); {
	case stopped:
		return fmt.Errorf("%w: Start has returned", ErrNotRunning)
	case stopping && behindFails:
		return fmt.Errorf("%w: Start is stopping (its context is done)", ErrNotRunning)
	case stopping:
		return nil // it returns within ShutdownTimeout: a restart cannot help, and nothing is behind
	case behindFails && waited > limit:
		return fmt.Errorf("%w: the oldest queued check has waited %v, over 3 intervals of %v: the workers cannot keep up",
			ErrBehind, waited.Round(time.Millisecond), c.opts.SweepInterval)
	case restoring && overdue > limit:
		return fmt.Errorf("%w: no PU of the first list's answer has gone in for %v, over 3 intervals of %v: the Observer blocks, "+
			"and no check begins before they are in", ErrBehind, overdue.Round(time.Millisecond), c.opts.SweepInterval)
	case telling.lasted > limit && telling.puid != "":
		return fmt.Errorf("%w: the Observer has not returned from EventTracked of PU %q for %v, over 3 intervals of %v: its Track "+
			"waits for it", ErrBehind, telling.puid, telling.lasted.Round(time.Millisecond), c.opts.SweepInterval)
	case telling.lasted > limit:
		return fmt.Errorf("%w: the Observer has not returned from Event%v for %v, over 3 intervals of %v: the Inventory's lists "+
			"wait for it", ErrBehind, telling.kind, telling.lasted.Round(time.Millisecond), c.opts.SweepInterval)
	case overdue > limit:
		return fmt.Errorf("%w: a check due %v ago is not queued yet, over 3 intervals of %v: the scheduler is wedged",
			ErrBehind, overdue.Round(time.Millisecond), c.opts.SweepInterval)
	case stuck == len(c.q.ready.slots):
		return fmt.Errorf("%w: all %d workers are in ports past their deadline of %v", ErrWorkersStuck, stuck, c.opts.CheckTimeout)
	}
	return nil
}

// Backlog says how far behind an engine's destroys are (Engine.Backlog).
type Backlog struct {
	// Retrying is how many PUs wait for the retry of a failed destroy.
	Retrying int
	// RateLimited is how many PUs wait for their turn under DestroyRate.
	RateLimited int
	// OldestGoneSince is since when the oldest PU found to go has waited for its destroy; zero when none waits. A
	// check that learns nothing (its pod's read fails) does not end the wait: the PU was not seen alive; nor one whose
	// context ended before DestroyPU was called (its verdict, a destroy, not carried out).
	OldestGoneSince time.Time
	// OldestQueuedSince is since when the oldest queued check has waited for a worker; zero when none waits. A slow
	// drain shows here first.
	OldestQueuedSince time.Time
}
