package trireme_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/trireme"
	"github.com/podsweeper/podsweeper/ports"
)

// Local mirrors of trireme-lib's types, with the same shapes:
// common.Event, common.EventDestroy, policy.RuntimeReader and a
// policy.Resolver implementation.
type Event string

const (
	EventStart   Event = "Start"
	EventDestroy Event = "Destroy"
)

type RuntimeReader interface {
	Pid() int
}

type puRuntime struct{ pid int }

func (r *puRuntime) Pid() int { return r.pid }

type call struct {
	puID    string
	event   Event
	runtime RuntimeReader
}

type resolver struct {
	calls []call
	err   error
}

func (r *resolver) HandlePUEvent(ctx context.Context, puID string, event Event, runtime RuntimeReader) error {
	r.calls = append(r.calls, call{puID: puID, event: event, runtime: runtime})
	return r.err
}

// The mirror of trireme's method binds to Resolver with E and R inferred.
var _ trireme.Resolver[Event, RuntimeReader] = (*resolver)(nil)

func destroyEvent() ports.DestroyEvent {
	return ports.DestroyEvent{
		PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "web"},
		SandboxID: "sb-1", Reason: ports.ReasonPodGone,
	}
}

func TestPolicyHandlerSendsDestroyWithRuntime(t *testing.T) {
	r := &resolver{}
	rt := &puRuntime{pid: 42}
	h := trireme.NewPolicyHandler(r, EventDestroy, func() RuntimeReader { return rt })

	require.NoError(t, h.DestroyPU(context.Background(), destroyEvent()))

	require.Len(t, r.calls, 1)
	assert.Equal(t, "uid-1", r.calls[0].puID)
	assert.Equal(t, EventDestroy, r.calls[0].event)
	assert.Same(t, rt, r.calls[0].runtime)
}

func TestPolicyHandlerCallsRuntimeOncePerDestroy(t *testing.T) {
	r := &resolver{}
	n := 0
	h := trireme.NewPolicyHandler(r, EventDestroy, func() RuntimeReader { n++; return &puRuntime{pid: n} })

	require.NoError(t, h.DestroyPU(context.Background(), destroyEvent()))
	require.NoError(t, h.DestroyPU(context.Background(), destroyEvent()))

	require.Len(t, r.calls, 2)
	assert.Equal(t, 1, r.calls[0].runtime.Pid())
	assert.Equal(t, 2, r.calls[1].runtime.Pid())
}

func TestPolicyHandlerNilRuntimePassesZeroValue(t *testing.T) {
	r := &resolver{}
	h := trireme.NewPolicyHandler[Event, RuntimeReader](r, EventDestroy, nil)

	require.NoError(t, h.DestroyPU(context.Background(), destroyEvent()))

	require.Len(t, r.calls, 1)
	assert.Nil(t, r.calls[0].runtime)
}

// A resolver with a struct runtime type gets the struct's zero value.
type valueResolver struct{ got *puRuntime }

func (r *valueResolver) HandlePUEvent(ctx context.Context, puID string, event Event, runtime puRuntime) error {
	r.got = &runtime
	return nil
}

func TestPolicyHandlerNilRuntimePassesZeroStruct(t *testing.T) {
	r := &valueResolver{}
	h := trireme.NewPolicyHandler[Event, puRuntime](r, EventDestroy, nil)
	require.NoError(t, h.DestroyPU(context.Background(), destroyEvent()))
	require.NotNil(t, r.got)
	assert.Equal(t, puRuntime{}, *r.got)
}

func TestPolicyHandlerPassesErrorsBack(t *testing.T) {
	errEngine := errors.New("policy engine unavailable")
	h := trireme.NewPolicyHandler(&resolver{err: errEngine}, EventDestroy, func() RuntimeReader { return nil })

	err := h.DestroyPU(context.Background(), destroyEvent())

	require.ErrorIs(t, err, errEngine)
	assert.Contains(t, err.Error(), "uid-1")
	assert.False(t, ports.IsPermanent(err), "a plain error must stay retryable")
}

func TestPolicyHandlerKeepsPermanentMark(t *testing.T) {
	errUnknown := errors.New("unknown PU")
	h := trireme.NewPolicyHandler(&resolver{err: ports.Permanent(errUnknown)}, EventDestroy, func() RuntimeReader { return nil })

	err := h.DestroyPU(context.Background(), destroyEvent())

	require.ErrorIs(t, err, errUnknown)
	assert.True(t, ports.IsPermanent(err))
}

func TestPolicyHandlerPassesContext(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "v")
	var got context.Context
	r := resolverFunc(func(ctx context.Context, puID string, event Event, runtime RuntimeReader) error {
		got = ctx
		return nil
	})
	require.NoError(t, trireme.NewPolicyHandler(r, EventDestroy, nil).DestroyPU(ctx, destroyEvent()))
	require.NotNil(t, got)
	assert.Equal(t, "v", got.Value(key{}))
}

type resolverFunc func(ctx context.Context, puID string, event Event, runtime RuntimeReader) error

func (f resolverFunc) HandlePUEvent(ctx context.Context, puID string, event Event, runtime RuntimeReader) error {
	return f(ctx, puID, event, runtime)
}

func TestPolicyHandlerNilResolverIsNil(t *testing.T) {
	assert.Nil(t, trireme.NewPolicyHandler[Event, RuntimeReader](nil, EventDestroy, nil))
}

func TestSandboxExtractor(t *testing.T) {
	errRuntime := errors.New("runtime down")
	// The shape of trireme-lib's extractors.PodSandboxExtractor.
	var f func(context.Context, *corev1.Pod) (string, error) = func(_ context.Context, pod *corev1.Pod) (string, error) {
		if pod.Name == "broken" {
			return "", errRuntime
		}
		return "sb-" + pod.Name, nil
	}
	x := trireme.NewSandboxExtractor(f)
	require.NotNil(t, x)

	id, err := x.SandboxID(context.Background(), &corev1.Pod{ObjectMeta: metav1ObjectMeta("web")})
	require.NoError(t, err)
	assert.Equal(t, "sb-web", id)

	_, err = x.SandboxID(context.Background(), &corev1.Pod{ObjectMeta: metav1ObjectMeta("broken")})
	require.ErrorIs(t, err, errRuntime)

	assert.Nil(t, trireme.NewSandboxExtractor(nil), "nil extractor must mean no sandbox check")
}

// TestTreatAsDestroyed: the policy engine's answer for a PU it does not know
// counts as destroyed; any other error still fails, and stays retryable.
func TestTreatAsDestroyed(t *testing.T) {
	errUnknown := errors.New("unable to find context for uid-1")
	errDown := errors.New("policy engine unavailable")
	unknown := func(err error) bool { return errors.Is(err, errUnknown) }
	r := &resolver{err: errUnknown}
	h := trireme.TreatAsDestroyed(trireme.NewPolicyHandler(r, EventDestroy, func() RuntimeReader { return nil }), unknown)

	require.NoError(t, h.DestroyPU(context.Background(), destroyEvent()), "nothing left to destroy")
	require.Len(t, r.calls, 1, "the resolver is still asked")

	r.err = errDown
	err := h.DestroyPU(context.Background(), destroyEvent())
	require.ErrorIs(t, err, errDown)
	assert.False(t, ports.IsPermanent(err))

	assert.Nil(t, trireme.TreatAsDestroyed(nil, unknown))
	plain := trireme.NewPolicyHandler(r, EventDestroy, nil)
	assert.Equal(t, plain, trireme.TreatAsDestroyed(plain, nil))
}
