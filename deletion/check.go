package deletion

// One check of a claimed record: ask (boundary.go) gathers the ports' answers, each made safe, and runs Decide and the
// confirmers; settle, then destroyed after a DestroyPU, carry the verdict out under the queue's lock; run tells the
// Observer the check's moves before the Requeuer hears of the pod, and finish tells its EventChecked and releases the
// record. The check reads the PU as it was claimed: no other move changes it while the check holds the record.

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/ports"
)

// outcome is what a check hands to the queue: the verdict it carried out, its events with their places in the PU's
// line, its ports' failures, and what the record waits for next (the retry of a failed destroy at retryAt, or its
// turn until turnAt; at most one is set).
type outcome struct {
	verdict         Verdict
	vetoed          bool
	err             error // the failure that kept the PU, if any
	retryAt, turnAt int64
	requeue         *corev1.Pod // the pod to requeue, its PU destroyed or dropped (rows 10, 12)
	end             int64
	events          []tellItem
	fails           []portFailure
	quiet           bool          // a check failed since the last good one: its failures are not logged again at V(1) (logs.go)
	removed         bool          // the check removed the record: once told, a list may bring its PUID back (listWindow.told)
	done            bool          // its destroy is over: it succeeded, or it is given up on
	cut             bool          // the context of the goroutine that ran it ended: Start stopped, or the Sweep's ctx
	observing       time.Duration // how long the Observer took to hear the events told during the check (EventVetoed, EventGetFailed)
	pu              ports.PU      // the PU checked, as claimed
	line            *eventLine    // its PUID's line to the Observer (nil: none)
	// untrackedDestroy: its DestroyPU succeeded after Untrack removed it: no event tells it, its log line does.
	untrackedDestroy bool
}

// tellItem is an event of a check and its place in its PU's line, taken with the move that made it.
type tellItem struct {
	ticket uint32
	ev     Event
}

// portFailure is a failure of one of the ports, for the logs, and what it means for the PU (msg).
type portFailure struct {
	port int
	err  error
	msg  string
}

// check runs one check of the claimed r under ctx and carries out the verdict, but the requeue of rows 10 and 12,
// which it leaves to run. A first check and a triggered one ask the SandboxConfirmer, if any.
func (c *Engine) check(ctx context.Context, r *record) outcome {
	o := outcome{pu: r.PU, line: r.line, quiet: r.failing} // r.line is set once, when it is tracked
	v, pod := c.ask(ctx, &o, r.PU, r.checkFresh)
	o.verdict = v
	c.takeListed(r, &o, pod)
	if v = o.verdict; v.Action != Adopt && v.Action != Destroy {
		// A keep moves nothing: the release carries it.
	} else if ev, destroy := c.settle(r, &o); destroy {
		err, permanent := c.destroyPU(ctx, ev)
		c.destroyed(r, &o, ev, err, permanent)
	}
	if v.Requeue && o.done {
		o.requeue = pod
	}
	c.logOutcome(&o)
	return o
}

// backoff is the retry policy of failed destroys and lists: it returns the wait after the attempts-th failure
// (attempts >= 1), RetryMinDelay doubling at each failure up to RetryMaxDelay.
func (c *Engine) backoff(attempts int) time.Duration {
	d := c.opts.RetryMinDelay
	for i := 1; i < attempts && d < c.opts.RetryMaxDelay; i++ {
		d *= 2
	}
	return min(d, c.opts.RetryMaxDelay)
}
