package deletion

// What an operator sets to roll the engine out: a dry run, and a destroy rate for when upstream goes wrong (a cache emptied).

import (
	"context"
	"time"

	"golang.org/x/time/rate"

	"github.com/podsweeper/podsweeper/ports"
)

// wouldDestroy is a destroy in a dry run (Options.DryRun): reported once per reason and kept, or dropped when its pod
// can never come back; a PU of a live pod (SandboxChanged, SandboxDead, PodTerminated) stays tracked.
func (c *Engine) wouldDestroy(e *record, v Verdict, ev ports.DestroyEvent) {
	c.mu.Lock()
	if e.state == removed {
		c.mu.Unlock()
		return
	}
	report := e.reported&(1<<v.Row) == 0
	if report {
		e.reported |= 1 << v.Row
		e.reportedRow = int8(v.Row)
	}
	gone := v.Reason == ports.ReasonPodGone || v.Reason == ports.ReasonUIDChanged || v.Reason == ports.ReasonNodeChanged
	if gone {
		c.removeLocked(e)
		c.unlistedLocked(e.PUID) // the list to come may still have it
	}
	var t uint32
	if report {
		t = c.ticketLocked(e)
	}
	c.mu.Unlock()
	if report {
		c.log.Info("dry run: PU would be destroyed", "puID", ev.PUID, "pod", ev.Pod.String(), "reason", string(ev.Reason),
			"sandboxID", ev.SandboxID, "row", v.Row, "dropped", gone)
		c.tell(e, t, Event{Kind: EventWouldDestroy, PU: ev.PU(), Verdict: v, Reason: ev.Reason, Dropped: gone})
	}
	if gone {
		c.told(e.PUID)
	}
}

// rateLine is the destroy rate's state (Options.DestroyRate), under Engine.mu: its limiter (nil: no limit), the time
// between two turns, and the latest time the limiter was given, for a limiter given an earlier time credits the time
// between twice.
type rateLine struct {
	limiter   *rate.Limiter
	turnEvery int64
	at        time.Time
}

// timeOf returns the time to give the limiter for at, read on Options.Clock.
func (l *rateLine) timeOf(at time.Time) time.Time {
	if at.After(l.at) {
		l.at = at
	}
	return l.at
}

// takeTurn reports whether e's destroy may start now under the destroy rate. A turn is a reservation, taken only when
// it comes within a moment (spreadAfter, and half of the check's time left): the check waits for it and destroys,
// unless Untrack removed e meanwhile, which gives it back. A turn further away is not held (it could not give its
// tokens back once others are reserved after it, and would be spent at once by a late check): e waits on the heap
// (r.turnAt) until about its turn, behind those waiting, keeping its place. A Sweep's early check of a retry joins the
// line as a PU found gone does, and the Sweep waits for its turn.
func (c *Engine) takeTurn(ctx context.Context, e *record, r *outcome) bool {
	if c.rate.limiter == nil {
		return true
	}
	short := c.spreadAfter()
	if d, ok := ctx.Deadline(); ok {
		short = min(short, time.Until(d)/2)
	}
	at := c.opts.Clock.Now()
	c.mu.Lock()
	at, now := c.rate.timeOf(at), c.now()
	ahead, due, inLine := c.waits[turnWaiting], e.waitUntil, e.waitFor == turnWaiting
	if inLine && due-now > int64(short) && c.rate.limiter.TokensAt(at) < 1 {
		// Its turn is far and no turn is at hand: the next is another's, ahead of it; it keeps its place.
		c.mu.Unlock()
		r.turnAt = due
		return false
	}
	turn := c.rate.limiter.ReserveN(at, 1) // burst >= 1: always OK
	wait := turn.DelayFrom(at)
	if wait > short {
		turn.CancelAt(at) // nothing was reserved after it: its tokens come back whole
		c.mu.Unlock()
		switch {
		case !inLine:
			r.turnAt = now + min(int64(wait), int64(MaxDuration)) + min(int64(ahead), int64(MaxDuration)/c.rate.turnEvery)*c.rate.turnEvery
		case due > now:
			r.turnAt = due // it keeps its place
		default:
			r.turnAt = now + min(int64(wait), int64(MaxDuration))
		}
		if log := c.log.V(1); log.Enabled() {
			log.Info("destroy waits for its turn under the destroy rate", "puID", e.PUID, "pod", e.Pod.String(),
				"in", time.Duration(r.turnAt-now).String(), "ahead", ahead)
		}
		return false
	}
	c.mu.Unlock()
	if wait > 0 && !c.sleep(ctx, wait) {
		c.cancelTurn(turn)
		r.turnAt = c.now()
		return false
	}
	c.mu.Lock()
	untracked := e.state == removed
	c.mu.Unlock()
	if untracked {
		c.cancelTurn(turn)
	}
	return !untracked
}

// cancelTurn gives back a turn no destroy used.
func (c *Engine) cancelTurn(turn *rate.Reservation) {
	at := c.opts.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	turn.CancelAt(c.rate.timeOf(at))
}

// sleep waits d on Options.Clock; false: ctx was done first.
func (c *Engine) sleep(ctx context.Context, d time.Duration) bool {
	t := c.opts.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}
