package deletion

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/podsweeper/podsweeper/ports"
)

// PUStatus is what the engine knows of one tracked PU, for status pages
// and debugging: why it is kept, and how its destroy is going.
type PUStatus struct {
	ports.PU
	// State is "idle", "queued", "checking" or "waiting for a retry".
	State string
	// TrackedAt is when Track took the entry.
	TrackedAt time.Time
	// LastChecked is when its last check ended; zero before the first.
	LastChecked time.Time
	// LastVerdict is the verdict that check carried out; its Row and Why say
	// why the PU is kept. Zero before the first check.
	LastVerdict Verdict
	// Vetoed reports that LastVerdict is the Confirmer's, which overrode a
	// destroy the PodGetter's answer decided.
	Vetoed bool
	// Attempts is the number of failed DestroyPU calls.
	Attempts int
	// NextAttempt is when the failed destroy is tried again; zero unless
	// the entry is waiting for that retry.
	NextAttempt time.Time
	// LastErr is the error of the last check or destroy that failed, if the
	// last check failed.
	LastErr error
}

// Status returns what the engine knows of every tracked PU, sorted by PUID.
func (c *Engine) Status() []PUStatus {
	c.mu.Lock()
	out := make([]PUStatus, 0, len(c.records))
	for _, e := range c.records {
		s := PUStatus{
			PU:          e.PU,
			State:       e.state.String(),
			TrackedAt:   c.timeOf(e.trackedAt),
			LastChecked: c.timeOf(e.lastChecked),
			Vetoed:      e.vetoed,
			Attempts:    int(e.attempts),
			LastErr:     e.lastErr,
		}
		if e.lastRow >= 0 {
			s.LastVerdict = verdictOfRow(int(e.lastRow), e.SandboxID)
		}
		if e.state == waiting {
			s.NextAttempt = c.timeOf(e.retryAt)
		}
		out = append(out, s)
	}
	c.mu.Unlock()
	slices.SortFunc(out, func(a, b PUStatus) int { return cmp.Compare(a.PUID, b.PUID) })
	return out
}

// Errors HealthCheck returns, wrapped with details. Match them with errors.Is.
var (
	// ErrNotRunning: Start has not been called, or has returned.
	ErrNotRunning = errors.New("deletion: engine not running")
	// ErrBehind: the periodic checks have fallen more than three
	// SweepIntervals behind.
	ErrBehind = errors.New("deletion: checks fall behind")
	// ErrWorkersStuck: every worker is stuck in a port past its deadline.
	ErrWorkersStuck = errors.New("deletion: every worker is stuck in a port")
)

// HealthCheck reports whether the engine does its job. It fails before
// Start and after Start has returned, when the periodic checks have fallen
// more than three SweepIntervals behind, and when every worker is stuck in a
// port past its deadline. It has the shape of controller-runtime's
// healthz.Checker: mgr.AddHealthzCheck("podsweeper", engine.HealthCheck).
// It reads a few fields under the engine's lock, whatever the number of
// entries.
func (c *Engine) HealthCheck(_ *http.Request) error {
	if !c.started.Load() {
		return fmt.Errorf("%w: not started", ErrNotRunning)
	}
	now := c.now()
	c.mu.Lock()
	stopped, lastTurn, tracked := c.stopped, c.lastTurn, len(c.records) > 0
	var oldest int64
	for _, it := range c.ready[c.readyHead:] {
		if it.r.state == queued {
			oldest = it.at
			break
		}
	}
	c.mu.Unlock()
	if stopped {
		return fmt.Errorf("%w: Start has returned", ErrNotRunning)
	}
	limit := 3 * c.opts.SweepInterval
	if oldest != 0 && time.Duration(now-oldest) > limit {
		return fmt.Errorf("%w: the oldest queued check has waited %v, over 3 intervals of %v: the workers cannot keep up",
			ErrBehind, time.Duration(now-oldest).Round(time.Millisecond), c.opts.SweepInterval)
	}
	if tracked && time.Duration(now-lastTurn) > limit {
		return fmt.Errorf("%w: no periodic check queued for %v, over 3 intervals of %v",
			ErrBehind, time.Duration(now-lastTurn).Round(time.Millisecond), c.opts.SweepInterval)
	}
	if n := stuckIn(c.workers, c.realNow()); n == len(c.workers) {
		return fmt.Errorf("%w: all %d workers are in ports past their deadline of %v", ErrWorkersStuck, n, c.opts.CheckTimeout)
	}
	return nil
}

// Backlog says how far behind an engine's destroys are (Engine.Backlog).
// It is a struct so that what it reports can grow without breaking its
// users.
type Backlog struct {
	// Retrying is how many PUs wait for the retry of a failed destroy.
	Retrying int
	// OldestGoneSince is since when the oldest PU that a check found must
	// go has been waiting for its destroy; zero when none waits.
	OldestGoneSince time.Time
}

// Backlog says how far behind the destroys are. It reads every PU under
// the engine's lock: call it at a scrape, not per check.
func (c *Engine) Backlog() Backlog {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b Backlog
	var oldest int64
	for _, r := range c.records {
		if r.state == waiting {
			b.Retrying++
		}
		if r.goneSince != 0 && (oldest == 0 || r.goneSince < oldest) {
			oldest = r.goneSince
		}
	}
	b.OldestGoneSince = c.timeOf(oldest)
	return b
}
