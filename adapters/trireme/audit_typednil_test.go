package trireme_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/trireme"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

type ptrReader struct{ s *runtime.Scheme }

func (r *ptrReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	_ = r.s
	return nil
}
func (r *ptrReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	_ = r.s
	return nil
}

// adapters/trireme NewDeleteController: "It returns an error wrapping deletion.ErrNilPort when c or policy is nil."
func TestAuditATypedNilReaderIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r *ptrReader
		_, err := trireme.NewDeleteController(r, "node-a", &deletiontest.Policy{}, nil, nil)
		if !errors.Is(err, deletion.ErrNilPort) {
			t.Fatalf("a nil *ptrReader as client.Reader: err %v, want ErrNilPort", err)
		}
	})
}

func TestAuditHoldsATypedNilPolicyIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p *deletiontest.Policy
		_, err := trireme.NewDeleteController(&ptrReader{}, "node-a", p, nil, nil)
		if !errors.Is(err, deletion.ErrNilPort) {
			t.Fatalf("a nil *Policy: err %v", err)
		}
	})
}

type ptrResolver struct{ n int }

func (r *ptrResolver) HandlePUEvent(ctx context.Context, puID string, ev string, rt int) error {
	r.n++
	return nil
}

// adapters/trireme NewPolicyHandler: "A nil r gives a nil PolicyHandler, which deletion.New and NewDeleteController
// reject with deletion.ErrNilPort." deletion.New counts a typed nil pointer as nil; a nil *ptrResolver is not rejected.
func TestAuditATypedNilResolverGivesNoHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r *ptrResolver
		h := trireme.NewPolicyHandler[string, int](r, "destroy", nil)
		_, err := deletion.New(deletiontestCluster(), h, deletion.Options{Logger: deletiontest.Discard()})
		if !errors.Is(err, deletion.ErrNilPort) {
			t.Fatalf("NewPolicyHandler(nil *ptrResolver) = %#v; deletion.New: %v, want ErrNilPort", h, err)
		}
	})
}

// adapters/trireme TreatAsDestroyed: "A nil h gives a nil PolicyHandler"; a nil *deletiontest.Policy, which
// deletion.New rejects as nil, is wrapped into a handler deletion.New takes.
func TestAuditTreatAsDestroyedOfATypedNilGivesNoHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p *deletiontest.Policy
		if _, err := deletion.New(deletiontestCluster(), p, deletion.Options{Logger: deletiontest.Discard()}); !errors.Is(err, deletion.ErrNilPort) {
			t.Fatalf("deletion.New(nil *Policy): %v", err)
		}
		h := trireme.TreatAsDestroyed(p, func(error) bool { return false })
		_, err := deletion.New(deletiontestCluster(), h, deletion.Options{Logger: deletiontest.Discard()})
		if !errors.Is(err, deletion.ErrNilPort) {
			t.Fatalf("TreatAsDestroyed(nil *Policy, f) = non-nil handler; deletion.New: %v, want ErrNilPort", err)
		}
	})
}

func deletiontestCluster() *deletiontest.Cluster { return deletiontest.NewCluster() }

// notKnown is the policy engine's error for a PU it does not know, as a type the user's test finds with errors.As.
type notKnown struct{ puid string }

func (e *notKnown) Error() string { return "unable to find context for " + e.puid }

// TreatAsDestroyed: "An error that cannot be read (...) is never given to unknown": a DestroyPU that fails with a
// typed-nil *notKnown, which the user's errors.As test matches, is a failure the engine retries, not a destroy; and
// an unknown that panics counts nothing destroyed.
func TestTreatAsDestroyedTakesNoUnreadableErrorForDestroyed(t *testing.T) {
	unknown := func(err error) bool {
		var nk *notKnown
		return errors.As(err, &nk)
	}
	var nilErr *notKnown
	failing := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nilErr })
	h := trireme.TreatAsDestroyed(failing, unknown)
	if err := h.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "u1"}); err == nil {
		t.Fatalf("DestroyPU failed with a typed-nil *notKnown: TreatAsDestroyed answered success, and the PU would be dropped undestroyed")
	}
	known := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return &notKnown{"u1"} })
	if err := trireme.TreatAsDestroyed(known, unknown).DestroyPU(context.Background(), ports.DestroyEvent{PUID: "u1"}); err != nil {
		t.Fatalf("a readable *notKnown: %v, want nil (nothing left to destroy)", err)
	}
	panicky := trireme.TreatAsDestroyed(known, func(error) bool { panic("boom") })
	if err := panicky.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "u1"}); err == nil {
		t.Fatalf("an unknown that panics: DestroyPU answered success")
	}
}

// unknownOnSecondReading is a policy engine's error whose cause is a plain failure when first read, and the
// "unable to find context" error after: a cause its own code replaces once the call has returned.
type unknownOnSecondReading struct{ reads atomic.Int32 }

func (e *unknownOnSecondReading) Error() string { return "destroy failed" }
func (e *unknownOnSecondReading) Unwrap() error {
	if e.reads.Add(1) == 1 {
		return errors.New("connection reset")
	}
	return &notKnown{"u1"}
}

// TreatAsDestroyed: unknown decides on one reading of the error ("what it decides is what that one reading said,
// whatever the error answers the next time"): a DestroyPU that failed, whose error says "unable to find context"
// only when read a second time, is a failure the engine retries, never a destroy.
func TestTreatAsDestroyedDecidesOnOneReadingOfTheError(t *testing.T) {
	unknown := func(err error) bool {
		var nk *notKnown
		return errors.As(err, &nk)
	}
	failing := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return &unknownOnSecondReading{} })
	if err := trireme.TreatAsDestroyed(failing, unknown).DestroyPU(context.Background(), ports.DestroyEvent{PUID: "u1"}); err == nil {
		t.Fatal("DestroyPU failed (connection reset, as first read): TreatAsDestroyed answered success, and the PU would be dropped undestroyed")
	}
}
