package trireme

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/ports"
)

// Resolver is the part of trireme-lib's policy.Resolver that the SDK calls.
// E is trireme's common.Event, R its policy.RuntimeReader.
type Resolver[E ~string, R any] interface {
	HandlePUEvent(ctx context.Context, puID string, event E, runtime R) error
}

// policyHandler sends every destroy to a trireme Resolver.
type policyHandler[E ~string, R any] struct {
	resolver Resolver[E, R]
	destroy  E
	runtime  func() R
}

var _ ports.PolicyHandler = (*policyHandler[string, any])(nil)

// NewPolicyHandler sends every destroy as HandlePUEvent(ctx, ev.PUID, destroy, runtime()).
// With trireme-lib it reads:
//
//	trireme.NewPolicyHandler(resolver, common.EventDestroy, func() policy.RuntimeReader {
//		return policy.NewPURuntimeWithDefaults()
//	})
//
// A nil runtime func passes the zero value of R. The resolver's error is
// returned wrapped, so errors.Is and ports.IsPermanent still see it; the
// engine retries it, for as long as the PU is tracked, unless it is marked
// with ports.Permanent. A destroy of a PU the policy engine does not know
// (destroyed already, or never created) must therefore not fail with a
// plain error: wrap the handler with TreatAsDestroyed and a test of the
// resolver's answer for an unknown PU. A nil r (a typed nil too) gives a nil PolicyHandler,
// which deletion.New and NewDeleteController reject with
// deletion.ErrNilPort.
func NewPolicyHandler[E ~string, R any](r Resolver[E, R], destroy E, runtime func() R) ports.PolicyHandler {
	if ports.IsNil(r) {
		return nil
	}
	return &policyHandler[E, R]{resolver: r, destroy: destroy, runtime: runtime}
}

// DestroyPU calls HandlePUEvent with the destroy event for ev.PUID.
func (h *policyHandler[E, R]) DestroyPU(ctx context.Context, ev ports.DestroyEvent) error {
	var rt R
	if h.runtime != nil {
		rt = h.runtime()
	}
	if err := h.resolver.HandlePUEvent(ctx, ev.PUID, h.destroy, rt); err != nil {
		if !ports.Readable(err) { // the engine takes it as a failure, and never reads it: neither does its wrapping here
			return err
		}
		return fmt.Errorf("trireme: HandlePUEvent(%s, %s) for pod %s: %w", ev.PUID, string(h.destroy), ev.Pod, err)
	}
	return nil
}

// NewSandboxExtractor turns trireme-lib's extractors.PodSandboxExtractor into
// a ports.SandboxExtractor. A nil f gives a nil SandboxExtractor: no sandbox
// check, as with trireme-lib's DeleteController.
func NewSandboxExtractor(f func(context.Context, *corev1.Pod) (string, error)) ports.SandboxExtractor {
	if f == nil {
		return nil
	}
	return ports.SandboxExtractorFunc(f)
}

// TreatAsDestroyed makes h idempotent, as the engine requires of a
// PolicyHandler: an error of h for which unknown reports true, the policy
// engine's answer for a PU it does not know, counts as a successful destroy,
// since there is nothing left to destroy. With trireme-lib, unknown tests
// the resolver's error for a PU missing from its cache, for example:
//
//	policy := trireme.TreatAsDestroyed(trireme.NewPolicyHandler(resolver, common.EventDestroy, nil),
//		func(err error) bool { return strings.Contains(err.Error(), "unable to find context") })
//
// unknown is given a copy of the error as it was read once (ports.Snapshot):
// what it decides is what that one reading said, whatever the error answers
// the next time. An error that cannot be read (ports.Readable is false: a
// typed nil anywhere in its chain, whatever errors.Is and errors.As say of
// it) is never given to unknown: it says nothing, and is returned as it is,
// a failure the engine retries; nor is an error for which unknown panics
// counted a destroy.
// A nil h (a typed nil too) gives a nil PolicyHandler; a nil unknown returns
// h unchanged.
func TreatAsDestroyed(h ports.PolicyHandler, unknown func(error) bool) ports.PolicyHandler {
	if ports.IsNil(h) {
		return nil
	}
	if unknown == nil {
		return h
	}
	return ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
		err := h.DestroyPU(ctx, ev)
		// unknown decides on one reading of err: a copy of it, which answers as it did when read, whatever its
		// errors answer the next time.
		if snap := ports.Snapshot(err); snap != nil && isUnknown(unknown, snap) {
			return nil
		}
		return err
	})
}

// isUnknown is unknown(err), false when it panics.
func isUnknown(unknown func(error) bool, err error) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return unknown(err)
}
