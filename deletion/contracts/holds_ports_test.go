package contracts_test

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

type loopErr struct{}

func (e *loopErr) Error() string { return "loop" }
func (e *loopErr) Unwrap() error { return e }

type panicUnwrap struct{}

func (panicUnwrap) Error() string { return "p" }
func (panicUnwrap) Unwrap() error { panic("unwrap") }

// ports.Readable (ports/values.go): "err is nil, or it and every error it wraps (... at most 256 errors in all) are
// neither a nil pointer, map, slice, func or chan held in the interface (a typed nil) nor panic when asked Error or
// Unwrap"; IsNotFound and IsPermanent answer false on what cannot be read.
func TestHoldsReadableBounds(t *testing.T) {
	chain := func(n int, base error) error {
		err := base
		for i := 1; i < n; i++ {
			err = fmt.Errorf("w%d: %w", i, err)
		}
		return err
	}
	if !ports.Readable(chain(256, ports.ErrPodNotFound)) || !deletion.IsNotFound(chain(256, ports.ErrPodNotFound)) {
		t.Errorf("a chain of 256 errors is readable")
	}
	if ports.Readable(chain(257, ports.ErrPodNotFound)) || deletion.IsNotFound(chain(257, ports.ErrPodNotFound)) {
		t.Errorf("a chain of 257 errors is not")
	}
	for name, err := range map[string]error{
		"loop":                   &loopErr{},
		"panic":                  panicUnwrap{},
		"typed nil k8s":          (*apierrors.StatusError)(nil),
		"joined nil":             errors.Join(errors.New("x"), (*apierrors.StatusError)(nil)),
		"permanent of typed nil": ports.Permanent((*apierrors.StatusError)(nil)),
	} {
		if ports.Readable(err) || deletion.IsNotFound(err) || ports.IsPermanent(err) {
			t.Errorf("%s: read", name)
		}
	}
	nf := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "web-0")
	if !deletion.IsNotFound(fmt.Errorf("get: %w", nf)) {
		t.Errorf("a wrapped Kubernetes NotFound is not found")
	}
	if ports.Permanent(nil) != nil || !ports.IsPermanent(fmt.Errorf("x: %w", ports.Permanent(errors.New("gone")))) {
		t.Errorf("Permanent")
	}
}
