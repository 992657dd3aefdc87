package deletion

// What an operator sets to roll the engine out: a dry run, and a destroy rate for when upstream goes wrong (a cache emptied).

import (
	"time"

	"github.com/podsweeper/podsweeper/ports"
)

// wouldDestroy is a destroy in a dry run (Options.DryRun): reported once per reason and kept, or dropped when its pod
// can never come back; a PU of a live pod (SandboxChanged, SandboxDead, PodTerminated) stays tracked.
func (c *Engine) wouldDestroy(e *record, v Verdict, ev ports.DestroyEvent) {
	c.q.mu.Lock()
	if e.state == removed {
		c.q.mu.Unlock()
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
	c.q.mu.Unlock()
	if report {
		c.log.Info("dry run: PU would be destroyed", "puID", ev.PUID, "pod", ev.Pod.String(), "reason", string(ev.Reason),
			"sandboxID", ev.SandboxID, "row", v.Row, "dropped", gone)
		c.tell(e, t, Event{Kind: EventWouldDestroy, PU: ev.PU(), Verdict: v, Reason: ev.Reason, Dropped: gone})
	}
	if gone {
		c.told(e.PUID)
	}
}

// takeTurn reports whether e's destroy may start now under the destroy rate (rateline.go); otherwise r.turnAt is
// about when its turn comes, and e keeps its place in line until then (releaseLocked). A turn taken is used at once:
// nothing is reserved ahead, so a turn no destroy uses goes to the next in line. Nothing is taken for a record Untrack
// removed.
func (c *Engine) takeTurn(e *record, r *outcome) bool {
	if !c.q.rate.limited() {
		return true
	}
	c.q.mu.Lock()
	defer c.q.mu.Unlock()
	if e.state == removed {
		return false
	}
	now := c.now()
	ok, at := c.q.rate.take(e.PUID, now)
	if ok {
		c.nudgeLineLocked(now, now)
		return true
	}
	r.turnAt = at
	if log := c.log.V(1); log.Enabled() {
		log.Info("destroy waits for its turn under the destroy rate", "puID", e.PUID, "pod", e.Pod.String(),
			"in", time.Duration(at-now).String(), "waiting", c.q.rate.waiting())
	}
	return false
}

// leaveLineLocked gives back r's place in the destroy rate's line, if it has one; the turn goes to the next in line.
func (c *Engine) leaveLineLocked(r *record) {
	if _, ok := c.q.rate.leave(r.PUID); ok {
		now := c.now()
		c.nudgeLineLocked(now, now)
	}
}

// nudgeLineLocked has the PU at the head of the line checked when its turn comes, and not before floor, if that is
// sooner than it waits for: after the one before it took its turn or left the line, or its own check failed.
func (c *Engine) nudgeLineLocked(now, floor int64) {
	puid, ok := c.q.rate.front()
	if !ok {
		return
	}
	r := c.q.records[puid]
	if r == nil || r.state != turnWaiting {
		return // being checked, or queued: its check asks for its turn, or its release nudges it
	}
	if at := max(c.q.rate.turnAt(0, now), floor); at < r.waitUntil {
		r.waitUntil = at
		c.scheduleLocked(r, now)
		c.nudgeSweepLocked() // a Sweep without Start queues the turns it waits for
	}
}
