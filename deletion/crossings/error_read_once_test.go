package crossings_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// nilIs is an error type whose Is, on a nil receiver too, claims ports.ErrPodNotFound: held as a typed nil it is
// nonsense.
type nilIs struct{ msg string }

func (e *nilIs) Error() string        { return e.msg }
func (e *nilIs) Is(target error) bool { return target == ports.ErrPodNotFound }

// lateNil is a port's error whose cause is a field the port's own code clears once the call has returned: its first
// reads of the cause see it, later ones a typed nil whose Is says not found.
type lateNil struct{ reads atomic.Int32 }

func (e *lateNil) Error() string { return "apiserver: connection reset" }
func (e *lateNil) Unwrap() error {
	if e.reads.Add(1) <= 2 {
		return errors.New("connection reset")
	}
	return (*nilIs)(nil)
}

// ports.md: the engine "treats a port that hangs, fails or answers nonsense (a nil pod, another pod, a typed-nil error)
// as a failure that keeps the PU"; deletion.IsNotFound: an error that cannot be read is not a not-found. An error read
// more than once may say two things: the engine reads what it means once (ports.Match), and a GetPod failure whose
// cause turns into a typed nil keeps the PU.
func TestAuditAnErrorWhoseChainChangesIsReadOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pol := &deletiontest.Policy{}
		getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, &lateNil{} })
		e := deletiontest.NewEngine(t, getter, pol, deletion.Options{NodeName: "n"})
		p := pu("a")
		if err := e.Track(p); err != nil {
			t.Fatal(err)
		}
		e.Sweep(context.Background())
		if n := pol.Count(p.PUID); n != 0 || e.Len() != 1 {
			t.Fatalf("GetPod failed with an error whose cause became a typed nil: want the PU kept (row 2), got %d DestroyPU calls, %d tracked", n, e.Len())
		}
	})
}

// The same answer from the Confirmer, for a live pod a lagging cache says is gone: options.go (Confirmer) keeps the PU
// "when it disagrees or fails".
func TestAuditAConfirmerErrorWhoseChainChangesVetoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		pol := &deletiontest.Policy{}
		confirmer := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, &lateNil{} })
		e := deletiontest.NewEngine(t, cl, pol, deletion.Options{NodeName: "n", Confirmer: confirmer})
		p := cl.CreatePod(key("a"), "n", "")
		if err := e.Track(p); err != nil {
			t.Fatal(err)
		}
		cl.FailReads(p.Pod, ports.ErrPodNotFound) // the cache lags: the pod lives
		e.Sweep(context.Background())
		if n := pol.Count(p.PUID); n != 0 || e.Len() != 1 {
			t.Fatalf("the Confirmer failed with an error whose cause became a typed nil: want a veto, got %d DestroyPU calls of a live pod's PU", n)
		}
	})
}

// ports.IsPermanent reads once too: a DestroyPU error whose cause turns into a typed nil that unwraps to a
// ports.Permanent error is retried, not given up on.
func TestAuditADestroyErrorWhoseChainChangesIsRetried(t *testing.T) {
	var reads atomic.Int32
	err := &flipping{first: errors.New("timeout"), then: func() error { return (*nilUnwrap)(nil) }, reads: &reads}
	for range 3 {
		if ports.IsPermanent(err) {
			t.Fatalf("IsPermanent of an error whose cause became a typed nil (read %d times): true", reads.Load())
		}
	}
}

// flipping unwraps to first once, then to what then gives.
type flipping struct {
	first error
	then  func() error
	reads *atomic.Int32
}

func (e *flipping) Error() string { return "destroy failed" }
func (e *flipping) Unwrap() error {
	if e.reads.Add(1) == 1 {
		return e.first
	}
	return e.then()
}

// nilUnwrap is an error type whose Unwrap, on a nil receiver too, gives a ports.Permanent error.
type nilUnwrap struct{}

func (*nilUnwrap) Error() string { return "nil" }
func (*nilUnwrap) Unwrap() error { return ports.Permanent(errors.New("permanent")) }

// The same for an error met twice in one answer's tree (errors.Join(e, e)): ports.Match reads it once, so the second
// reading of its cause, a not-found, does not destroy a live pod's PU.
func TestAuditAnErrorMetTwiceInItsTreeIsReadOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pol := &deletiontest.Policy{}
		getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			var reads atomic.Int32
			e := &flipping{first: errors.New("connection reset"), then: func() error { return ports.ErrPodNotFound }, reads: &reads}
			return nil, errors.Join(e, e)
		})
		e := deletiontest.NewEngine(t, getter, pol, deletion.Options{NodeName: "n"})
		p := pu("a")
		if err := e.Track(p); err != nil {
			t.Fatal(err)
		}
		e.Sweep(context.Background())
		if n := pol.Count(p.PUID); n != 0 || e.Len() != 1 {
			t.Fatalf("GetPod failed with errors.Join(e, e) whose e unwraps to a not-found only when read again: want the PU kept (row 2), got %d DestroyPU calls, %d tracked", n, e.Len())
		}
	})
}
