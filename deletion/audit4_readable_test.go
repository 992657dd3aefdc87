package deletion_test

import (
	"context"
	"testing"
	"testing/synctest"

	"k8s.io/apimachinery/pkg/types"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// detailErr4 is an error whose reading panics (its detail was never set) and whose Is says "not found".
type detailErr4 struct{ detail *string }

func (e detailErr4) Error() string        { return "not found: " + *e.detail }
func (e detailErr4) Is(target error) bool { return target == ports.ErrPodNotFound }

// opaqueWrap4 wraps an error without reading it.
type opaqueWrap4 struct{ inner error }

func (w opaqueWrap4) Error() string { return "get pod failed" }
func (w opaqueWrap4) Unwrap() error { return w.inner }

// Promise (go doc ports.Readable): "Readable reports whether a port's error can be read: err is nil, or it and every
// error it wraps ... are neither a nil pointer, map, slice, func or chan held in the interface (a typed nil) nor panic
// when asked Error or Unwrap. An error that cannot be read says nothing the engine may act on, whatever its Is, As and
// Unwrap answer: the engine takes it as a plain failure, so that it keeps the PU (GetPod) or retries (DestroyPU)".
// docs/sdk/ports.md:16-18: a port that "answers nonsense ... [is] a failure that keeps the PU".
//
// An error that wraps one whose Error panics is taken as readable; its wrapped Is says "not found", and the engine
// destroys the PU of a pod that GetPod never said was gone.
func TestAuditUnreadableWrappedErrorKeepsPU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bad := opaqueWrap4{inner: detailErr4{}}
		if ports.Readable(bad) {
			t.Errorf("ports.Readable(%T wrapping an error whose Error panics) = true, want false", bad)
		}
		if deletion.IsNotFound(bad) {
			t.Errorf("deletion.IsNotFound(unreadable error) = true, want false")
		}

		p := uidPU("web")
		getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			return nil, opaqueWrap4{inner: detailErr4{}}
		})
		policy := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, getter, policy, deletion.Options{})
		if err := e.Track(p); err != nil {
			t.Fatal(err)
		}
		e.Sweep(context.Background())
		if n := policy.CallCount(); n != 0 || e.Len() != 1 {
			t.Errorf("GetPod answered an unreadable error: DestroyPU called %d times (%v), tracked %d; want the PU kept", n, policy.Calls(), e.Len())
		}
	})
}

// Same root, DestroyPU's side (go doc ports.PolicyHandler.DestroyPU: "any other error, one that cannot be read (a
// typed nil) too, is retried with backoff"; ports.IsPermanent: "An error that cannot be read (Readable is false) is
// not").
func TestAuditUnreadablePermanentIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bad := ports.Permanent(opaqueWrap4{inner: detailErr4{}})
		if ports.IsPermanent(bad) {
			t.Errorf("ports.IsPermanent(Permanent(wrapping an error whose Error panics)) = true, want false")
		}
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		policy.FailNext(1, bad)
		e := deletiontest.NewEngine(t, cluster, policy, deletion.Options{})
		p := cluster.CreatePod(nsKey("web"), "node-a", "")
		if err := e.Track(p); err != nil {
			t.Fatal(err)
		}
		cluster.DeletePod(p.Pod)
		e.Sweep(context.Background())
		if e.Len() != 1 {
			t.Errorf("DestroyPU answered an unreadable error: the PU was given up on (tracked %d), want it kept for a retry", e.Len())
		}
	})
}
