package deletion

// One check of a claimed record, from what the ports say to what the queue does with it: ask gathers the ports'
// answers through the boundary and runs Decide until it decides; a Confirmer, and the SandboxConfirmer, confirm a
// destroy or a sandbox change; the queue carries the verdict out (settle, then destroyed after a DestroyPU);
// tellEvents tells the Observer the check's moves before the Requeuer hears of the pod, and finish tells its
// EventChecked and releases the record. The check reads the PU as it was claimed: no other move changes it while
// the check holds the record (queue.go).

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
	quiet           bool       // the last check failed too: its failures are not logged again (failed)
	removed         bool       // the check removed the record: once told, a list may bring its PUID back (listWindow.told)
	done            bool       // its destroy is over: it succeeded, or it is given up on
	cut             bool       // the context of the goroutine that ran it ended: Start stopped, or the Sweep's ctx
	pu              ports.PU   // the PU checked, as claimed
	line            *eventLine // its PUID's line to the Observer (nil: none)
}

// note tells the Observer ev, an event of the check that no move makes (EventGetFailed, EventVetoed), as it happens,
// in its place in the PU's line: an Untrack meanwhile waits for it, not for the rest of the check.
func (c *Engine) note(o *outcome, ev Event) {
	ev.PU = o.pu
	c.tellLine(o.pu.PUID, o.line, o.line.take(), ev)
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
	o := outcome{pu: r.PU, line: r.line} // r.line is set once, when it is tracked
	pu, sb := r.PU, portSandboxID
	if r.checkFresh && c.opts.SandboxConfirmer != nil {
		sb = portSandboxConfirmer
	}
	v, pod := c.ask(ctx, &o, portGetPod, pu, sb, nil)
	if v.Action == Destroy && c.opts.Confirmer != nil && v.Row != 10 && v.Row != 12 { // the pod's rows
		cv, cpod := c.ask(ctx, &o, portConfirmer, pu, sb, nil)
		v, pod = c.confirmed(&o, v, cv, "destroy not confirmed; keeping PU"), cpod
	}
	if c.opts.SandboxConfirmer != nil && sb != portSandboxConfirmer && (v.Row == 7 || v.Row == 10) {
		// The runtime's own answer decides in place of the list's.
		cv, _ := c.ask(ctx, &o, portSandboxConfirmer, pu, portSandboxConfirmer, pod)
		v = c.confirmed(&o, v, cv, "sandbox change not confirmed; keeping PU")
	}
	o.verdict, o.quiet = v, r.lastErr != nil
	if v.Action != Adopt && v.Action != Destroy {
		// A keep moves nothing: the release carries it.
	} else if ev, destroy := c.settle(r, &o); destroy {
		err, permanent := c.destroyPU(ctx, ev)
		c.destroyed(r, &o, ev, err, permanent)
	}
	if v.Requeue && o.done {
		o.requeue = pod
	}
	c.logOutcome(pu, &o)
	return o
}

// confirmed returns the verdict to carry out: a confirmer's verdict cv, which overrides v's destroy when it disagrees
// (an EventVetoed, logged as msg).
func (c *Engine) confirmed(o *outcome, v, cv Verdict, msg string) Verdict {
	if v.Action != Destroy || cv.Action == Destroy {
		return cv
	}
	o.vetoed = true
	if log := c.log.V(1); log.Enabled() {
		log.Info(msg, "puID", o.pu.PUID, "pod", o.pu.Pod.String(), "sandboxID", o.pu.SandboxID,
			"row", v.Row, "reason", string(v.Reason), "confirmerRow", cv.Row, "confirmerWhy", cv.Why())
	}
	c.note(o, Event{Kind: EventVetoed, Verdict: cv, Reason: v.Reason, Err: o.err})
	return cv
}

// failed notes a failure of port, if err is one: it keeps the PU.
func (o *outcome) failed(port int, err error, msg string) {
	if err != nil {
		o.err = err
		o.fails = append(o.fails, portFailure{port, err, msg})
	}
}

// logOutcome logs what the check of pu did. A PU's failures since its last good check are logged at V(1) once (quiet);
// every port's failures are summed up once an interval (failures.go).
func (c *Engine) logOutcome(pu ports.PU, o *outcome) {
	v := o.verdict
	if log := c.log.V(1); log.Enabled() {
		for _, f := range o.fails {
			if f.msg != "" && !o.quiet {
				log.Info(f.msg, "port", portNames[f.port], "puID", pu.PUID, "pod", pu.Pod.String(), "error", f.err.Error())
			}
		}
	}
	for _, it := range o.events {
		ev := it.ev
		switch ev.Kind {
		case EventAdopted:
			c.log.V(1).Info("sandbox recorded", "puID", pu.PUID, "pod", pu.Pod.String(), "sandboxID", ev.PU.SandboxID)
		case EventWouldDestroy:
			c.log.Info("dry run: PU would be destroyed", "puID", pu.PUID, "pod", pu.Pod.String(), "reason", string(ev.Reason),
				"sandboxID", pu.SandboxID, "row", v.Row, "dropped", ev.Dropped)
		case EventDestroyed:
			c.log.Info("PU destroyed", "puID", pu.PUID, "pod", pu.Pod.String(), "reason", string(ev.Reason), "sandboxID", pu.SandboxID, "row", v.Row)
		case EventDestroyFailed:
			if log := c.log.V(1); log.Enabled() && !o.done {
				log.Info("destroying PU failed; will retry, unless it was untracked", "puID", pu.PUID,
					"pod", pu.Pod.String(), "error", ev.Err.Error())
			}
		case EventAbandoned:
			c.log.Error(ev.Err, "destroying PU failed for the last time; dropping it, the policy engine may still hold it",
				"puID", pu.PUID, "pod", pu.Pod.String(), "reason", string(ev.Reason), "sandboxID", pu.SandboxID,
				"attempts", ev.DestroyCalls)
		}
	}
	if log := c.log.V(1); log.Enabled() && v.Action == Keep && !o.vetoed {
		log.Info("PU kept", "puID", pu.PUID, "pod", pu.Pod.String(), "sandboxID", pu.SandboxID, "row", v.Row, "why", v.Why())
	}
}

// backoff returns the wait after the attempts-th failure (retry.go).
func (c *Engine) backoff(attempts int) time.Duration {
	return backoff{c.opts.RetryMinDelay, c.opts.RetryMaxDelay}.When(attempts)
}

// requeue hands a copy of o's pod to the Requeuer under a deadline of its own: the PodGetter's pod may be its cache's
// own object, and the Requeuer's receivers may keep or modify it.
func (c *Engine) requeue(parent context.Context, o *outcome) {
	if c.opts.Requeuer == nil {
		return
	}
	pod := o.requeue.DeepCopy()
	ctx, cancel := context.WithTimeout(parent, c.opts.CheckTimeout)
	defer cancel()
	if err := c.requeuePod(ctx, pod); err != nil {
		o.fails = append(o.fails, portFailure{port: portRequeue, err: err})
		if log := c.log.V(1); log.Enabled() {
			log.Info("requeueing pod failed; the main controller will see it at its next resync", "pod", pod.Namespace+"/"+pod.Name, "error", err.Error())
		}
	}
}
