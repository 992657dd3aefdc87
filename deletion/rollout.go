package deletion

// What an operator sets before rolling the engine out: a dry run, which
// decides and reports every destroy without calling DestroyPU, and a
// destroy rate, which bounds how fast DestroyPU is called if something
// upstream goes wrong (a cache emptied, an API server answering NotFound
// for everything past the Confirmer).

import (
	"context"
	"slices"
	"time"

	"github.com/podsweeper/podsweeper/ports"
)

// wouldDestroy is a destroy in a dry run: the PU is reported once per
// reason (EventWouldDestroy, a log line at info level), and kept. When its
// pod is gone for good (PodGone, UIDChanged, NodeChanged: that pod can
// never come back) the record is dropped from memory once reported, so that
// a dry run on a busy node holds no more records than it would without the
// dry run; a PU of a live pod (SandboxChanged, PodTerminated) stays
// tracked, and is reported again only if its reason changes.
func (c *Engine) wouldDestroy(e *record, v Verdict, ev ports.DestroyEvent) {
	c.mu.Lock()
	if e.state == removed {
		c.mu.Unlock()
		return
	}
	report := e.reportedRow != int8(v.Row)
	e.reportedRow = int8(v.Row)
	gone := v.Reason == ports.ReasonPodGone || v.Reason == ports.ReasonUIDChanged || v.Reason == ports.ReasonNodeChanged
	if gone {
		c.removeLocked(e)
	}
	c.mu.Unlock()
	if !report {
		return
	}
	c.log.Info("dry run: PU would be destroyed", "puID", ev.PUID, "pod", ev.Pod.String(), "reason", string(ev.Reason),
		"sandboxID", ev.SandboxID, "row", v.Row, "dropped", gone)
	c.observe(Event{Kind: EventWouldDestroy, PU: ev.PU(), Verdict: v, Reason: ev.Reason, Dropped: gone})
}

// destroyBudget reports whether e's destroy may go on now under the
// destroy rate (Options.DestroyRate). Its turn is reserved with the
// limiter once; a turn a moment away (within spreadAfter, and half of the
// check's time left) is waited for, a later one is not: the record keeps
// its turn (record.paidAt), joins Engine.turns, and waits for it outside any
// worker, as a retry does but without counting as a failed attempt. The
// scheduler queues it again when its turn comes (queueTurns).
func (c *Engine) destroyBudget(ctx context.Context, e *record, r *result) bool {
	if c.limiter == nil {
		return true
	}
	c.mu.Lock()
	due := e.paidAt
	c.mu.Unlock()
	now := c.now()
	if due == 0 {
		at := c.opts.Clock.Now()
		due = now + int64(c.limiter.ReserveN(at, 1).DelayFrom(at)) // burst >= 1: always OK
	}
	if wait := time.Duration(due - now); wait > 0 {
		left := c.opts.CheckTimeout
		if d, ok := ctx.Deadline(); ok {
			left = time.Until(d)
		}
		if wait > min(c.spreadAfter(), left/2) || !c.sleep(ctx, wait) {
			c.deferTurn(e, due)
			r.deferred = true
			if log := c.log.V(1); log.Enabled() {
				log.Info("destroy waits for its turn under the destroy rate", "puID", e.PUID, "pod", e.Pod.String(), "in", wait.String())
			}
			return false
		}
	}
	c.mu.Lock()
	e.paidAt = 0
	c.mu.Unlock()
	return true
}

// deferTurn files e under its turn due, in Engine.turns, which is kept in
// the order of the turns: the limiter hands them out in that order, so an
// insertion is at or near the end. The scheduler is woken when e is first.
func (c *Engine) deferTurn(e *record, due int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.paidAt != 0 { // filed already (a Sweep's check of it)
		return
	}
	e.paidAt = due
	i := len(c.turns)
	for i > 0 && c.turns[i-1].paidAt > due {
		i--
	}
	c.turns = slices.Insert(c.turns, i, e)
	if i == 0 {
		select {
		case c.turnKick <- struct{}{}:
		default:
		}
	}
}

// nextTurn returns when the first destroy waiting for its turn is due; 0
// when none waits.
func (c *Engine) nextTurn() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.turns) == 0 {
		return 0
	}
	return c.turns[0].paidAt
}

// queueTurns queues the records whose turn has come, and wakes workers for
// them. A record removed meanwhile, or being checked, leaves the list.
func (c *Engine) queueTurns() {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for len(c.turns) > 0 && c.turns[0].paidAt <= now {
		r := c.turns[0]
		c.turns[0] = nil
		c.turns = c.turns[1:]
		if r.state == waiting {
			c.enqueueLocked(r, now)
			n++
		}
	}
	if len(c.turns) == 0 {
		c.turns = nil
	}
	c.wakeLocked(n)
}

// sleep waits d on Options.Clock, and reports whether ctx was not done first.
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
