package deletion_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// fanErr is a readable error (no typed nil, nothing panics) whose Unwrap() []error answers the same child twice, 60
// levels deep: 60 values that a walk of the error tree visits 2^60 times. off cuts every Unwrap short, so that the
// test leaves no goroutine spinning behind it.
type fanErr struct {
	off   *atomic.Bool
	child *fanErr
}

func (e *fanErr) Error() string { return "fan-out error" }
func (e *fanErr) Unwrap() []error {
	if e.child == nil || e.off.Load() {
		return nil
	}
	return []error{e.child, e.child}
}

func newFanErr(depth int, off *atomic.Bool) error {
	var e *fanErr
	for range depth {
		e = &fanErr{off: off, child: e}
	}
	return e
}

// docs/sdk/ports.md:16-18: "The engine calls every port under a deadline (`Options.CheckTimeout`), recovers its
// panics, and treats a port that hangs, fails or answers nonsense (a nil pod, another pod, a typed-nil error) as a
// failure that keeps the PU: a check that learned nothing destroys nothing." docs/sdk/engine.md:17-18: "Ports that
// fail or panic cannot lose a PU". ports/values.go:135-140 (go doc ports.Readable): "through Unwrap() error and
// Unwrap() []error, at most 64 deep".
//
// GetPod answers once, at once, with an error whose Unwrap() []error forms a DAG (errors.Join(e, e), nested): the
// engine's reading of it (ports.Readable, then errors.Is) walks it as a tree, 2^60 nodes, past every deadline and
// forever. The check never ends: its worker spins on a core, the PU stays "checking", and when GetPod later answers
// that the pod is gone, no Sweep checks it again: the PU is never destroyed.
//
// Not under testing/synctest: a goroutine that spins is never durably blocked, so a bubble's fake clock would never
// move; the test runs on real time, about 2.5 s.
func TestAuditNonsenseErrorIsAFailureThatKeepsThePU(t *testing.T) {
	off := &atomic.Bool{}
	t.Cleanup(func() { off.Store(true) }) // lets the stuck check end once the test is over
	cluster := deletiontest.NewCluster()
	pol := &deletiontest.Policy{}
	var nonsense atomic.Bool
	nonsense.Store(true)
	getter := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
		if nonsense.Load() {
			return nil, newFanErr(60, off)
		}
		return cluster.GetPod(ctx, k)
	})
	e := deletiontest.NewEngine(t, getter, pol, deletion.Options{CheckTimeout: 100 * time.Millisecond})
	pu := cluster.CreatePod(nsKey("a"), "", "")
	if err := e.Track(pu); err != nil {
		t.Fatal(err)
	}
	sweep := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		e.Sweep(ctx)
	}
	sweep() // the nonsense answer: returns once the check is a second past its deadline

	nonsense.Store(false)
	cluster.DeletePod(pu.Pod) // GetPod now answers: not found
	sweep()

	if e.Len() != 0 || pol.CallCount() != 1 {
		t.Errorf("after a nonsense answer and then the pod's deletion: %d PU(s) tracked (state %q), %d DestroyPU call(s); "+
			"want the nonsense answer taken as a failure, then the PU destroyed", e.Len(), e.Status()[0].State, pol.CallCount())
	}
}
