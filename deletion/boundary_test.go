package deletion_test

// Errors that cannot be read: a typed nil is a failure, whatever its methods
// answer (ports.PodGetter, ports.PolicyHandler).

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// lookupError's methods read no field: a nil *lookupError answers them
// without a panic, and says it is ports.ErrPodNotFound.
type lookupError struct{}

func (*lookupError) Error() string        { return "lookup failed" }
func (*lookupError) Is(target error) bool { return target == ports.ErrPodNotFound }

// Typed nils of the other kinds that may implement error, whose methods
// answer as lookupError's do.
type (
	notFoundMap   map[string]string
	notFoundSlice []string
	notFoundFunc  func()
	notFoundChan  chan struct{}
)

func (notFoundMap) Error() string          { return "lookup failed (map)" }
func (notFoundMap) Is(target error) bool   { return target == ports.ErrPodNotFound }
func (notFoundSlice) Error() string        { return "lookup failed (slice)" }
func (notFoundSlice) Is(target error) bool { return target == ports.ErrPodNotFound }
func (notFoundFunc) Error() string         { return "lookup failed (func)" }
func (notFoundFunc) Is(target error) bool  { return target == ports.ErrPodNotFound }
func (notFoundChan) Error() string         { return "lookup failed (chan)" }
func (notFoundChan) Is(target error) bool  { return target == ports.ErrPodNotFound }

// permanentWrap's methods read no field: a nil *permanentWrap unwraps to a
// permanent error.
type permanentWrap struct{}

func (*permanentWrap) Error() string { return "destroy failed" }
func (*permanentWrap) Unwrap() error { return ports.Permanent(errors.New("x")) }

// TestATypedNilErrorReadThroughItsMethodsKeepsThePU: GetPod answers a typed
// nil of each kind whose methods answer, and say NotFound; a Sweep must keep
// the PU, for an error that cannot be read is a failure.
func TestATypedNilErrorReadThroughItsMethodsKeepsThePU(t *testing.T) {
	for name, err := range map[string]error{
		"pointer": (*lookupError)(nil),
		"map":     notFoundMap(nil),
		"slice":   notFoundSlice(nil),
		"func":    notFoundFunc(nil),
		"chan":    notFoundChan(nil),
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				assert.False(t, deletion.IsNotFound(err), "IsNotFound of a typed nil %T", err)
				getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, err })
				policy := &deletiontest.Policy{}
				c := deletiontest.NewEngine(t, getter, policy, deletion.Options{})
				require.NoError(t, c.Track(pu("a")))
				c.Sweep(context.Background())
				assert.Empty(t, policy.Calls(), "DestroyPU was called on a typed nil %T from GetPod", err)
				assert.Equal(t, 1, c.Len(), "the PU is kept")
			})
		})
	}
}

// TestATypedNilDestroyErrorIsRetried: DestroyPU answers a nil
// *permanentWrap, which unwraps to a permanent error: it cannot be read, so
// it is retried (EventDestroyFailed, the PU stays tracked), not given up on.
func TestATypedNilDestroyErrorIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			return nil, ports.ErrPodNotFound
		})
		policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return (*permanentWrap)(nil) })
		events := &deletiontest.Events{}
		c := deletiontest.NewEngine(t, getter, policy, deletion.Options{Observer: events})
		require.NoError(t, c.Track(pu("a")))
		c.Sweep(context.Background())
		assert.Equal(t, 1, c.Len(), "the PU stays tracked")
		assert.Equal(t, 1, events.Count(deletion.EventDestroyFailed))
		assert.Zero(t, events.Count(deletion.EventAbandoned), "a typed nil is no permanent error")
	})
}

// TestAnErrorTreeTooLargeToReadIsAFailure: an error whose Unwrap() []error
// repeats a child, nested deep (errors.Join(e, e) 60 times: 2^60 errors to
// walk), is a failure that keeps the PU, read in bounded time.
func TestAnErrorTreeTooLargeToReadIsAFailure(t *testing.T) {
	err := errors.New("leaf")
	for range 60 {
		err = errors.Join(err, err)
	}
	assert.False(t, ports.Readable(err))
	assert.False(t, deletion.IsNotFound(errors.Join(ports.ErrPodNotFound, err)), "not read, so not NotFound")
	assert.True(t, ports.Readable(errors.Join(errors.New("a"), errors.New("b"))), "a real tree is read")
}
