package trireme_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/trireme"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
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
