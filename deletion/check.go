package deletion

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/ports"
)

// outcome is what a check hands to run and releaseLocked: the verdict it carried out and what the record waits for
// next (the retry of a failed destroy at retryAt, or its turn until turnAt; at most one is set).
type outcome struct {
	verdict         Verdict
	vetoed          bool
	err             error
	retryAt, turnAt int64
	requeue         *corev1.Pod // the pod to requeue, its PU destroyed or dropped (row 10)
	end             int64
}

// check runs one check of the claimed record e under ctx and carries out the verdict, but the requeue of row 10, which
// it leaves to run. A first check and a triggered one ask the SandboxConfirmer, if any.
func (c *Engine) check(ctx context.Context, e *record) outcome {
	sb := portSandboxID
	if e.checkFresh && c.opts.SandboxConfirmer != nil {
		sb = portSandboxConfirmer
	}
	v, pod, err := c.decide(ctx, portGetPod, e, sb)
	var r outcome
	if v.Action == Destroy && c.opts.Confirmer != nil && v.Row != 10 && v.Row != 12 { // the pod's rows
		cv, cpod, cerr := c.decide(ctx, portConfirmer, e, sb)
		r.vetoed = c.vetoed(e, v, cv, cerr, "destroy not confirmed; keeping PU")
		v, pod, err = cv, cpod, cerr
	}
	if c.opts.SandboxConfirmer != nil && sb != portSandboxConfirmer && (v.Row == 7 || v.Row == 10) {
		// The runtime's own answer decides in place of the list's.
		o := Observation{NodeName: c.opts.NodeName, DestroyTerminated: c.opts.DestroyTerminated, HasExtractor: true,
			HasProber: c.opts.SandboxProber != nil, Pod: pod}
		cv, cerr := c.askSandbox(ctx, e, o, portSandboxConfirmer)
		r.vetoed = c.vetoed(e, v, cv, cerr, "sandbox change not confirmed; keeping PU") || r.vetoed
		v, err = cv, cerr
	}
	r.verdict, r.err = v, err
	switch v.Action {
	case Adopt:
		c.q.mu.Lock()
		if e.state == removed { // untracked meanwhile: nothing to record
			c.q.mu.Unlock()
			break
		}
		e.SandboxID = v.SandboxID
		snapshot, t := e.PU, c.ticketLocked(e)
		c.q.mu.Unlock()
		c.log.V(1).Info("sandbox recorded", "puID", e.PUID, "pod", e.Pod.String(), "sandboxID", v.SandboxID)
		c.tell(e, t, Event{Kind: EventAdopted, PU: snapshot, Verdict: v})
	case Destroy:
		c.destroy(ctx, e, v, pod, &r)
	default:
		if log := c.log.V(1); log.Enabled() && !r.vetoed {
			log.Info("PU kept", "puID", e.PUID, "pod", e.Pod.String(), "sandboxID", e.SandboxID, "row", v.Row, "why", v.Why())
		}
	}
	return r
}

// vetoed reports whether a confirmer's verdict cv overrides v's destroy.
func (c *Engine) vetoed(e *record, v, cv Verdict, err error, msg string) bool {
	if v.Action != Destroy || cv.Action == Destroy {
		return false
	}
	if log := c.log.V(1); log.Enabled() {
		log.Info(msg, "puID", e.PUID, "pod", e.Pod.String(), "sandboxID", e.SandboxID,
			"row", v.Row, "reason", string(v.Reason), "confirmerRow", cv.Row, "confirmerWhy", cv.Why())
	}
	c.tellNow(e, Event{Kind: EventVetoed, PU: e.PU, Verdict: cv, Reason: v.Reason, Err: err})
	return true
}

// decide asks the pod port (portGetPod or portConfirmer) and, if the table needs it, the sandbox port sb about e's
// pod, and runs Decide. It returns the verdict, the pod, and the error that kept the PU, if any. An answer after the
// check's deadline counts as a failure.
func (c *Engine) decide(ctx context.Context, port int, e *record, sb int) (Verdict, *corev1.Pod, error) {
	name := portNames[port]
	o := Observation{NodeName: c.opts.NodeName, DestroyTerminated: c.opts.DestroyTerminated,
		HasExtractor: c.opts.SandboxExtractor != nil, HasProber: c.opts.SandboxProber != nil}
	o.Pod, o.Err = c.getPod(ctx, port, e.Pod)
	var err error
	if o.Err != nil && !IsNotFound(o.Err) {
		err = o.Err
	}
	v := Decide(e.PU, o)
	if v.Row == 2 && o.Err == nil {
		err = fmt.Errorf("%s returned another pod than asked for: %s/%s, UID %q", name, o.Pod.Namespace, o.Pod.Name, o.Pod.UID)
	}
	if err != nil {
		c.portFailed(port, e, err, "getting pod failed; keeping PU")
		if port == portGetPod {
			c.tellNow(e, Event{Kind: EventGetFailed, PU: e.PU, Err: err})
		}
	}
	if v.Action != AskSandbox {
		return v, o.Pod, err
	}
	// Rows 1 to 5 have passed: no error so far keeps the PU.
	v, err = c.askSandbox(ctx, e, o, sb)
	return v, o.Pod, err
}

// askSandbox runs Decide on o with the sandbox port sb's answer for o.Pod, and the SandboxProber's if Decide asks for
// it. It returns the verdict and the error that kept the PU, if any.
func (c *Engine) askSandbox(ctx context.Context, e *record, o Observation, sb int) (Verdict, error) {
	o.SandboxID, o.SandboxErr = c.sandboxID(ctx, sb, o.Pod)
	o.SandboxAsked = true
	if o.SandboxErr != nil {
		c.portFailed(sb, e, o.SandboxErr, "getting sandbox failed; keeping PU")
	}
	if v := Decide(e.PU, o); v.Action != AskProber {
		return v, o.SandboxErr
	}
	o.SandboxDead, o.ProberErr = c.sandboxDead(ctx, o.Pod, e.SandboxID)
	o.ProberAsked = true
	if o.ProberErr != nil {
		c.portFailed(portSandboxProber, e, o.ProberErr, "probing sandbox failed; keeping PU")
	}
	return Decide(e.PU, o), o.ProberErr
}

// destroy calls DestroyPU for v once its turn has come: a success or the last failure removes the record (and sets
// r.requeue for rows 10 and 12), another failure sets r.retryAt, a turn not come yet r.turnAt. Nothing is called for
// a record Untrack removed, whatever the check waited for.
func (c *Engine) destroy(ctx context.Context, e *record, v Verdict, pod *corev1.Pod, r *outcome) {
	c.q.mu.Lock()
	if e.state == removed {
		c.q.mu.Unlock()
		return
	}
	ev := ports.DestroyEvent{PUID: e.PUID, Pod: e.Pod, SandboxID: e.SandboxID, Reason: v.Reason}
	if c.opts.DryRun {
		c.q.mu.Unlock()
		c.wouldDestroy(e, v, ev)
		return
	}
	if e.goneSince == 0 {
		e.goneSince = c.now()
	}
	c.q.mu.Unlock()
	if !c.takeTurn(e, r) {
		return
	}
	err, permanent := c.destroyPU(ctx, ev)

	c.q.mu.Lock()
	untracked := e.state == removed
	if err != nil {
		e.attempts++
	}
	attempts := int(e.attempts)
	done := err == nil || permanent || c.opts.MaxDestroyAttempts > 0 && attempts >= c.opts.MaxDestroyAttempts
	switch {
	case done && !untracked:
		c.removeLocked(e)
		c.unlistedLocked(e.PUID)
	case !done && !untracked:
		r.retryAt = c.onTick(c.now() + int64(c.backoff(attempts)))
	}
	goneFor := time.Duration(c.now() - e.goneSince)
	// Its events' places in its line, taken with the moves that make them.
	first := c.ticketLocked(e)
	var second uint32
	if err != nil && done && !untracked {
		second = c.ticketLocked(e)
	}
	c.q.mu.Unlock()
	if done && v.Requeue {
		r.requeue = pod
	}
	if err == nil {
		c.log.Info("PU destroyed", "puID", ev.PUID, "pod", ev.Pod.String(), "reason", string(ev.Reason), "sandboxID", ev.SandboxID, "row", v.Row)
		if untracked { // its EventUntracked ended it for the Observer
			c.tell(e, first, Event{}) // no event: its turn passes on
			return
		}
		c.tell(e, first, Event{Kind: EventDestroyed, PU: ev.PU(), Reason: ev.Reason, DestroyDelay: goneFor, DestroyCalls: attempts + 1})
		c.told(ev.PUID)
		return
	}
	r.err = err
	c.tell(e, first, Event{Kind: EventDestroyFailed, PU: ev.PU(), Reason: ev.Reason, DestroyCalls: attempts, Err: err, Next: c.timeOf(r.retryAt)})
	switch {
	case untracked:
		c.portFailed(portDestroyPU, e, err, "destroying PU failed; it was untracked meanwhile, so it is not retried")
	case done:
		c.log.Error(err, "destroying PU failed for the last time; dropping it, the policy engine may still hold it",
			"puID", ev.PUID, "pod", ev.Pod.String(), "reason", string(ev.Reason), "sandboxID", ev.SandboxID,
			"attempts", attempts, "permanent", permanent)
		c.tell(e, second, Event{Kind: EventAbandoned, PU: ev.PU(), Reason: ev.Reason, DestroyCalls: attempts, Err: err})
		c.told(ev.PUID)
	default:
		c.portFailed(portDestroyPU, e, err, "destroying PU failed; will retry")
	}
}

// backoff returns the wait after the attempts-th failure (retry.go).
func (c *Engine) backoff(attempts int) time.Duration {
	return backoff{c.opts.RetryMinDelay, c.opts.RetryMaxDelay}.When(attempts)
}

// requeue hands a copy of the live pod to the Requeuer under a deadline of its own: the PodGetter's pod may be its
// cache's own object, and the Requeuer's receivers may keep or modify it.
func (c *Engine) requeue(parent context.Context, e *record, pod *corev1.Pod) {
	if c.opts.Requeuer == nil || pod == nil {
		return
	}
	pod = pod.DeepCopy()
	ctx, cancel := context.WithTimeout(parent, c.opts.CheckTimeout)
	defer cancel()
	if err := c.requeuePod(ctx, pod); err != nil {
		c.portFailed(portRequeue, e, err, "requeueing pod failed; the main controller will see it at its next resync")
	}
}
