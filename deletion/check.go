package deletion

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/ports"
)

// errNoPod stands for a GetPod answer with neither a pod nor an error.
var errNoPod = errors.New("GetPod returned a nil pod and a nil error")

// followUp is what the queue should do with an entry after its check.
type followUp uint8

const (
	stay       followUp = iota // still tracked: the wheel brings it back
	retryLater                 // destroy failed: retry after backoff
	removed                    // no longer tracked
)

// check runs one check of the claimed entry e under ctx, carries out the
// verdict and releases e. parent is the context ctx was made from; Requeue
// gets a deadline of its own under it.
func (c *Controller) check(parent, ctx context.Context, e *entry) {
	var start time.Time
	if c.opts.Observer != nil {
		start = c.opts.Clock.Now()
	}
	v, pod := c.decide(ctx, e)
	next := stay
	switch v.Action {
	case Adopt:
		c.mu.Lock()
		e.SandboxID = v.SandboxID
		c.mu.Unlock()
		c.log.V(1).Info("sandbox recorded", "puID", e.PUID, "pod", e.Pod.String(), "sandboxID", v.SandboxID)
	case Destroy:
		next = c.destroy(parent, ctx, e, v, pod)
	default:
		if log := c.log.V(1); log.Enabled() {
			log.Info("PU kept", "puID", e.PUID, "pod", e.Pod.String(), "sandboxID", e.SandboxID, "row", v.Row, "why", v.Why())
		}
	}
	snapshot := e.Entry
	q := c.release(e)
	if c.opts.Observer != nil {
		c.observe(Event{Kind: EventChecked, Entry: snapshot, Verdict: v, Duration: c.opts.Clock.Since(start)})
	}
	if q == nil {
		return
	}
	switch next {
	case retryLater:
		q.AddRateLimited(e.PUID)
	case removed:
		q.Forget(e.PUID)
	}
}

// decide asks the ports what they see of e's pod and runs Decide on it.
// A port's answer that arrives after the check's deadline counts as a failure.
func (c *Controller) decide(ctx context.Context, e *entry) (Verdict, *corev1.Pod) {
	o := Observation{NodeName: c.opts.NodeName, HasExtractor: c.extractor != nil}
	o.Pod, o.Err = c.getPod(ctx, e)
	switch {
	case ctx.Err() != nil:
		o.Pod, o.Err = nil, fmt.Errorf("GetPod: check deadline passed: %w", ctx.Err())
	case o.Err == nil && o.Pod == nil:
		o.Err = errNoPod
	}
	if o.Err != nil && !IsNotFound(o.Err) {
		c.log.Error(o.Err, "getting pod failed; keeping PU", "puID", e.PUID, "pod", e.Pod.String())
		c.observe(Event{Kind: EventGetFailed, Entry: e.Entry, Err: o.Err})
	}
	v := Decide(e.Entry, o)
	if v.Row == 2 && o.Err == nil {
		c.log.Error(nil, "GetPod returned another pod than asked for; keeping PU", "puID", e.PUID, "pod", e.Pod.String(),
			"got", o.Pod.Namespace+"/"+o.Pod.Name)
	}
	if v.Action != AskSandbox {
		return v, o.Pod
	}
	o.SandboxID, o.SandboxErr = c.sandboxID(ctx, o.Pod)
	o.SandboxAsked = true
	if ctx.Err() != nil {
		o.SandboxErr = fmt.Errorf("SandboxID: check deadline passed: %w", ctx.Err())
	}
	if o.SandboxErr != nil {
		c.log.Error(o.SandboxErr, "getting sandbox failed; keeping PU", "puID", e.PUID, "pod", e.Pod.String())
	}
	return Decide(e.Entry, o), o.Pod
}

// destroy calls DestroyPU for the verdict v and deals with its outcome.
func (c *Controller) destroy(parent, ctx context.Context, e *entry, v Verdict, pod *corev1.Pod) followUp {
	if e.goneSince.IsZero() {
		e.goneSince = c.opts.Clock.Now()
	}
	ev := ports.DestroyEvent{PUID: e.PUID, Pod: e.Pod, SandboxID: e.SandboxID, Reason: v.Reason}
	err := c.destroyPU(ctx, ev)
	if err == nil {
		c.remove(e)
		c.log.Info("PU destroyed", "puID", e.PUID, "pod", e.Pod.String(), "reason", string(v.Reason), "sandboxID", e.SandboxID)
		c.observe(Event{Kind: EventDestroyed, Entry: e.Entry, Reason: v.Reason, Duration: c.opts.Clock.Since(e.goneSince)})
		if v.Requeue {
			c.requeue(parent, e, pod)
		}
		return removed
	}
	e.attempts++
	c.observe(Event{Kind: EventDestroyFailed, Entry: e.Entry, Reason: v.Reason, Attempt: e.attempts, Err: err})
	if ports.IsPermanent(err) || (c.opts.MaxDestroyAttempts > 0 && e.attempts >= c.opts.MaxDestroyAttempts) {
		c.remove(e)
		c.log.Error(err, "destroying PU failed for the last time; dropping it, the policy engine may still hold it",
			"puID", e.PUID, "pod", e.Pod.String(), "reason", string(v.Reason), "sandboxID", e.SandboxID,
			"attempts", e.attempts, "permanent", ports.IsPermanent(err))
		c.observe(Event{Kind: EventAbandoned, Entry: e.Entry, Reason: v.Reason, Attempt: e.attempts, Err: err})
		if v.Requeue {
			c.requeue(parent, e, pod)
		}
		return removed
	}
	c.log.Error(err, "destroying PU failed; will retry", "puID", e.PUID, "pod", e.Pod.String(), "reason", string(v.Reason),
		"sandboxID", e.SandboxID, "attempt", e.attempts, "maxAttempts", c.opts.MaxDestroyAttempts)
	return retryLater
}

// requeue hands the live pod to the Requeuer under a deadline of its own.
func (c *Controller) requeue(parent context.Context, e *entry, pod *corev1.Pod) {
	if c.requeuer == nil {
		return
	}
	ctx, cancel := context.WithTimeout(parent, c.opts.ItemTimeout)
	defer cancel()
	err := func() (err error) {
		defer recovered("Requeue", &err)
		return c.requeuer.Requeue(ctx, pod)
	}()
	if err != nil {
		c.log.Error(err, "requeueing pod failed; the main controller will see it at its next resync", "puID", e.PUID, "pod", e.Pod.String())
	}
}

func (c *Controller) getPod(ctx context.Context, e *entry) (pod *corev1.Pod, err error) {
	defer recovered("GetPod", &err)
	return c.getter.GetPod(ctx, e.Pod)
}

func (c *Controller) sandboxID(ctx context.Context, pod *corev1.Pod) (id string, err error) {
	defer recovered("SandboxID", &err)
	return c.extractor.SandboxID(ctx, pod)
}

func (c *Controller) destroyPU(ctx context.Context, ev ports.DestroyEvent) (err error) {
	defer recovered("DestroyPU", &err)
	return c.policy.DestroyPU(ctx, ev)
}

// recovered turns a panic in a port into an error wrapping ErrPortPanicked.
// The panic value is formatted, never wrapped, so that a port panicking with
// ports.ErrPodNotFound cannot make a pod look gone.
func recovered(port string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: %s: %v\n%s", ErrPortPanicked, port, r, debug.Stack())
	}
}
