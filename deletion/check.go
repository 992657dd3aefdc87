package deletion

// One check of a claimed record: ask gathers the ports' answers and decides; settle, then destroyed after a DestroyPU,
// carry the verdict out under the queue's lock; check tells the Observer its events, and finish releases the record.

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/ports"
)

// outcome is what a check hands to the queue: the verdict it carried out, its events, its ports' failures, and what
// the record waits for next (a retry at retryAt, or its turn until turnAt; at most one is set).
type outcome struct {
	verdict          Verdict
	vetoed           bool
	err              error // the failure that kept the PU, if any
	retryAt, turnAt  int64
	turn             uint64      // the ticket of the rate's turn its destroy took (0: none), given back if DestroyPU is not called
	requeue          *corev1.Pod // the pod to requeue, its PU destroyed or dropped (rows 10, 12)
	end              int64
	events           []tellItem
	fails            []portFailure
	quiet            bool          // a check failed since the last good one: its failures are not logged again
	removed          bool          // the check removed the record
	done             bool          // its destroy is over: it succeeded, or it is given up on
	cut              bool          // the context of Start's worker that ran it ended
	sweepCut         bool          // the context of the Sweep whose goroutine ran it ended
	observing        time.Duration // the Observer's time during the check (EventVetoed, EventGetFailed)
	slot             *slot         // the Workers slot the check holds
	pu               ports.PU      // the PU checked, as claimed
	line             *eventLine    // its PUID's line to the Observer (nil: none)
	untrackedDestroy bool          // its DestroyPU succeeded after Untrack: no event tells it, its log line does
}

// tellItem is an event of a check and its ticket, taken with the move that made it.
type tellItem struct {
	ticket uint32
	ev     Event
}

// portFailure is a failure of a port, for the logs, and what it means for the PU (msg).
type portFailure struct {
	port int
	err  error
	msg  string
}

// check runs one check of the claimed r in slot s, under a deadline of CheckTimeout (its lane's), carries out the
// verdict, tells the Observer, and releases both (finish).
func (c *Engine) check(ctx context.Context, l *lane, r *record, s *slot) {
	start := c.now()
	cctx, end := l.deadline(ctx, c.realNow(), c.opts.CheckTimeout)
	s.checkEnd.Store(end)
	o := outcome{pu: r.PU, line: r.line, quiet: r.failing, slot: s}
	v, pod := c.ask(cctx, &o, r.PU, r.checkFresh)
	o.verdict = v
	c.takeListed(r, &o, pod)
	if v = o.verdict; v.Action != Adopt && v.Action != Destroy {
		// A keep moves nothing: the release carries it.
	} else if ev, destroy := c.settle(r, &o); destroy {
		err, permanent := c.destroyPU(cctx, ev)
		c.destroyed(r, &o, ev, err, permanent)
	}
	if v.Requeue && o.done {
		o.requeue = pod
	}
	c.late(r, s, &o, "a port") // as its ports returned, before the Observer hears of it
	// Its events before the Requeuer hears of the pod: one that tracks the PU of the new sandbox at once waits for them.
	// Before its log lines too: what Status tells of the check (a dry run's report) is the Observer's as soon as it
	// can be, however slow the Logger.
	for _, it := range o.events {
		c.tell(r.line, it.ticket, it.ev)
	}
	c.logging(s, func() { c.logOutcome(&o) })
	if o.removed {
		c.told(r.PUID)
	}
	o.end, o.cut, o.sweepCut = c.now(), ctx.Err() != nil && !l.ofSweep, ctx.Err() != nil && l.ofSweep
	c.finish(ctx, r, s, &o, start)
}

// backoff returns the wait after the attempts-th failed destroy or list (attempts >= 1): RetryMinDelay, doubling at
// each failure up to RetryMaxDelay.
func (c *Engine) backoff(attempts int) time.Duration {
	d := c.opts.RetryMinDelay
	for i := 1; i < attempts && d < c.opts.RetryMaxDelay; i++ {
		d *= 2
	}
	return min(d, c.opts.RetryMaxDelay)
}

// logging runs f, lines the check held in s writes to the Logger (someone else's code, which may block on a full
// pipe): the slot is in no port meanwhile, so that health, a Sweep and Start's stop do not take it for one stuck there,
// and its deadline moves by the Logger's time, which is neither a port's lateness nor the Observer's.
func (c *Engine) logging(s *slot, f func()) {
	if s == nil {
		f()
		return
	}
	end := s.checkEnd.Swap(0)
	start := c.realNow()
	f()
	if end != 0 {
		s.checkEnd.Store(end + c.realNow() - start)
	}
}
