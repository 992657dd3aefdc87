package deletion

// The port boundary: every call of a port goes through call, which makes its answer safe (safeError) before the engine
// reads it; what an answer means (not found, permanent) is read here, once. No other file reads a port's raw answer.

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/ports"
)

// errNoPod: a pod port answered neither a pod nor an error.
var errNoPod = errors.New("GetPod returned a nil pod and a nil error")

// ask runs Decide on what the ports say of pu's pod (GetPod, then the sandbox port and the SandboxProber as Decide asks
// for them), and returns the verdict to carry out and the pod. A destroy is asked again of the Confirmer (not rows 10
// and 12), and a sandbox change (rows 7 and 10) of the SandboxConfirmer unless a fresh check asked it already; a
// confirmer's verdict overrides the destroy it does not confirm (EventVetoed). It notes in o the error that kept the
// PU and the ports' failures; EventGetFailed and EventVetoed are told as they happen.
func (c *Engine) ask(ctx context.Context, o *outcome, pu ports.PU, fresh bool) (v Verdict, pod *corev1.Pod) {
	port, sb, step := portGetPod, portSandboxID, Keep // Keep: the pod port's answer is next
	if fresh && c.opts.SandboxConfirmer != nil {
		sb = portSandboxConfirmer
	}
	var ob Observation
	for {
		switch step {
		case Keep:
			ob = Observation{NodeName: c.opts.NodeName, DestroyTerminated: c.opts.DestroyTerminated,
				HasExtractor: c.opts.SandboxExtractor != nil, HasProber: c.opts.SandboxProber != nil, Pod: pod}
			if getter := c.getter; port != portSandboxConfirmer { // its step reads the pod read already
				if port == portConfirmer {
					getter = c.opts.Confirmer
				}
				ob.Pod, ob.Err = callBy(ctx, portNames[port], func() (*corev1.Pod, error) { return getter.GetPod(ctx, pu.Pod) })
				if ob.Err != nil {
					ob.Pod = nil
				} else if ob.Pod == nil {
					ob.Err = fmt.Errorf("%s: %w", portNames[port], errNoPod)
				}
			}
			o.err = nil
		case AskSandbox:
			x := c.opts.SandboxExtractor
			if sb == portSandboxConfirmer {
				x = c.opts.SandboxConfirmer
			}
			ob.SandboxID, ob.SandboxErr = callBy(ctx, portNames[sb], func() (string, error) { return x.SandboxID(ctx, ob.Pod) })
			ob.SandboxAsked = true
			o.failed(sb, ob.SandboxErr, "getting sandbox failed; keeping PU")
		case AskProber:
			ob.SandboxDead, ob.ProberErr = callBy(ctx, "SandboxDead", func() (bool, error) {
				return c.opts.SandboxProber.SandboxDead(ctx, ob.Pod, pu.SandboxID)
			})
			ob.ProberAsked = true
			o.failed(portSandboxProber, ob.ProberErr, "probing sandbox failed; keeping PU")
		}
		cv := Decide(pu, ob)
		if step = cv.Action; step == AskSandbox || step == AskProber {
			continue
		}
		var now Event // told as it happens
		if cv.Row == 2 {
			if ob.Err == nil {
				ob.Err = fmt.Errorf("%s returned another pod than asked for: %s/%s, UID %q", portNames[port],
					ob.Pod.Namespace, ob.Pod.Name, ob.Pod.UID)
			}
			o.failed(port, ob.Err, "getting pod failed; keeping PU")
			if port == portGetPod {
				now = Event{Kind: EventGetFailed, Err: ob.Err}
			}
		}
		var ticket uint32
		taken := false
		if port != portGetPod && v.Action == Destroy && cv.Action != Destroy { // a confirmer's veto
			o.vetoed = true
			ticket, taken = o.line.take(), true // its place in the PU's line is the veto's moment, not the log line's end
			c.logging(o.slot, func() {
				if log := c.log.V(1); log.Enabled() && !(o.quiet && o.err != nil) { // a failing confirmer: logged once
					msg := "destroy not confirmed; keeping PU"
					if port == portSandboxConfirmer {
						msg = "sandbox change not confirmed; keeping PU"
					}
					log.Info(msg, "puID", pu.PUID, "pod", pu.Pod.String(), "sandboxID", pu.SandboxID,
						"row", v.Row, "reason", string(v.Reason), "confirmerRow", cv.Row, "confirmerWhy", cv.Why())
				}
			})
			now = Event{Kind: EventVetoed, Verdict: cv, Reason: v.Reason, Err: o.err}
		}
		v, pod = cv, ob.Pod
		if now.Kind != 0 { // in its place in the PU's line: an Untrack meanwhile waits for it only
			now.PU = pu
			if !taken {
				ticket = o.line.take()
			}
			start := c.realNow()
			c.tell(o.line, ticket, now)
			o.observing += time.Duration(c.realNow() - start)
		}
		switch {
		case port == portGetPod && v.Action == Destroy && c.opts.Confirmer != nil && v.Row != 10 && v.Row != 12:
			port, pod = portConfirmer, nil
		case sb != portSandboxConfirmer && (v.Row == 7 || v.Row == 10) && c.opts.SandboxConfirmer != nil:
			port, sb = portSandboxConfirmer, portSandboxConfirmer
		default:
			return v, pod
		}
		step = Keep
	}
}

// failed notes a failure of port, if err is one: it keeps the PU.
func (o *outcome) failed(port int, err error, msg string) {
	if err != nil {
		o.err = err
		o.fails = append(o.fails, portFailure{port, err, msg})
	}
}

// callBy is call of a port under the check's ctx: once ctx is done, whatever it answered is a failure.
func callBy[T any](ctx context.Context, port string, f func() (T, error)) (T, error) {
	v, err := call(port, f)
	if ctx.Err() != nil {
		var zero T
		return zero, fmt.Errorf("%s: check deadline passed: %w", port, ctx.Err())
	}
	return v, err
}

// errNotCalled: the check's context ended (Start stops, or the Sweep's context) before DestroyPU was called.
var errNotCalled = errors.New("DestroyPU not called: the check's context is done")

// destroyPU calls the PolicyHandler (in a dry run, a DryRunner's DryRunDestroyPU), and reports whether its error is
// permanent; once the check's context is done, it calls nothing and answers errNotCalled.
func (c *Engine) destroyPU(ctx context.Context, ev ports.DestroyEvent) (err error, permanent bool) {
	if ctx.Err() != nil {
		return errNotCalled, false
	}
	_, err = call(portNames[portDestroyPU], func() (struct{}, error) {
		if dr, ok := c.policy.(ports.DryRunner); ok && c.opts.DryRun {
			return struct{}{}, dr.DryRunDestroyPU(ctx, ev)
		}
		return struct{}{}, c.policy.DestroyPU(ctx, ev)
	})
	if err != nil && ctx.Err() != nil { // the deadline's, whatever it says: retried (a late success is a success)
		return fmt.Errorf("%s: answered after the check's deadline: %w", portNames[portDestroyPU], err), false
	}
	pe, ok := err.(*portError) // else a panic's, or one that cannot be read: never permanent
	return err, ok && pe.permanent
}

// callLeaving is call of f under a deadline d, off the workers (the Inventory, the Requeuer): a call that ignores its
// context is left behind a second past its deadline, a failure, its goroutine left until it returns.
func callLeaving[T any](ctx context.Context, d time.Duration, port string, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var v T
	var err error
	if within(d+stuckGrace, func() { v, err = call(port, func() (T, error) { return f(ctx) }) }) {
		return v, err
	}
	var zero T
	return zero, fmt.Errorf("%s ignored its deadline of %v: left behind", port, d)
}

// within runs f in a goroutine of its own and reports whether it returned within d; if not, it is left behind.
func within(d time.Duration, f func()) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// catch runs f and returns what it panicked with, whatever its value (nil too, under GODEBUG panicnil=1, where
// recover answers nil), and the stack of the panic.
func catch(f func()) (v any, stack []byte, panicked bool) {
	panicked = true
	defer func() {
		if panicked {
			v, stack = recover(), debug.Stack()
		}
	}()
	f()
	return nil, nil, false
}

// call runs f, a call of port, and turns a panic in it into an error wrapping ErrPortPanicked and no value (the value
// formatted, never wrapped, so that a panic with ports.ErrPodNotFound cannot make a pod look gone), and an error that
// cannot be read into a plain failure of the port (safeError).
func call[T any](port string, f func() (T, error)) (v T, err error) {
	if r, stack, panicked := catch(func() { v, err = f() }); panicked {
		var zero T
		return zero, fmt.Errorf("%w: %s: %s\n%s", ErrPortPanicked, port, ports.Sprint(r), stack)
	}
	if err != nil {
		err = safeError(port, err)
	}
	return v, err
}

// portError is a port's error as the engine keeps it: its message and what it means (not found, permanent) read once,
// in one reading of its tree (ports.Match), so that no later reading runs the port's code again. It unwraps to the
// port's error, for the Observer's errors.Is and errors.As.
type portError struct {
	msg                 string
	err                 error
	notFound, permanent bool
}

func (e *portError) Error() string { return e.msg }
func (e *portError) Unwrap() error { return e.err }

// safeError is err, a port's, made safe to read: a plain failure of the port when it cannot be read (a typed nil in
// its chain, ports.Readable) or its message panics; else a portError.
func safeError(port string, err error) error {
	pe := &portError{err: err}
	ok := false
	ports.Match(err, func(e error) bool { // called only when err can be read
		ok = true
		pe.notFound = pe.notFound || notFoundHere(e)
		pe.permanent = pe.permanent || ports.MarkedPermanent(e)
		return false
	})
	if ok {
		func() {
			defer func() {
				if recover() != nil {
					ok = false
				}
			}()
			pe.msg = err.Error()
		}()
	}
	if !ok {
		return fmt.Errorf("%s returned an error that cannot be read (a typed nil, or one whose reading panics): a %T", port, err)
	}
	return pe
}
