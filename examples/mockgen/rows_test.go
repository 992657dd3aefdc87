package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/golang/mock/gomock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/mocks"
	"github.com/podsweeper/podsweeper/ports"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const node = "node-a"

var key = types.NamespacedName{Namespace: "shop", Name: "cart-0"}

// The PU under test: created for pod shop/cart-0 with UID uid-1, in sandbox sb-1.
var tracked = ports.PU{PUID: "uid-1", Pod: key, SandboxID: "sb-1"}

func livePod(uid, nodeName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: types.UID(uid)},
		Spec:       corev1.PodSpec{NodeName: nodeName},
	}
}

// mockPorts holds the mocks of one test.
type mockPorts struct {
	getter    *mocks.MockPodGetter
	policy    *mocks.MockPolicyHandler
	extractor *mocks.MockSandboxExtractor
	requeuer  *mocks.MockRequeuer
}

func newMocks(t *testing.T) mockPorts {
	// Fails the test on a missing or unexpected call, from any goroutine.
	ctrl := gomock.NewController(deletiontest.NewMockReporter(t))
	return mockPorts{
		getter:    mocks.NewMockPodGetter(ctrl),
		policy:    mocks.NewMockPolicyHandler(ctrl),
		extractor: mocks.NewMockSandboxExtractor(ctrl),
		requeuer:  mocks.NewMockRequeuer(ctrl),
	}
}

// engine builds an engine on the mocks, tracks e and returns it. Without
// withExtractor the engine has no SandboxExtractor.
func (m mockPorts) engine(t *testing.T, withExtractor bool, e ports.PU) *deletion.Engine {
	t.Helper()
	opts := deletion.Options{NodeName: node, Requeuer: m.requeuer}
	if withExtractor {
		opts.SandboxExtractor = m.extractor
	}
	c, err := deletion.New(m.getter, m.policy, opts)
	require.NoError(t, err)
	require.NoError(t, c.Track(e))
	return c
}

func destroyOf(e ports.PU, r ports.Reason) ports.DestroyEvent {
	return ports.DestroyEvent{PUID: e.PUID, Pod: e.Pod, SandboxID: e.SandboxID, Reason: r}
}

func sweep(c *deletion.Engine) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.Sweep(ctx)
}

// docs:begin testing-mocks-2
// Row 1: the pod is not found: destroy, PodGone.
func TestRow1PodNotFoundDestroys(t *testing.T) {
	m := newMocks(t)
	m.getter.EXPECT().GetPod(gomock.Any(), key).
		Return(nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, key.Name))
	m.policy.EXPECT().DestroyPU(gomock.Any(), destroyOf(tracked, ports.ReasonPodGone)).Return(nil)
	c := m.engine(t, true, tracked)

	sweep(c)

	assert.Zero(t, c.Len())
}

// docs:end testing-mocks-2

// Row 2: the pod cannot be read: keep. No DestroyPU expected, so any call fails the test.
func TestRow2LookupFailsKeeps(t *testing.T) {
	m := newMocks(t)
	m.getter.EXPECT().GetPod(gomock.Any(), key).Return(nil, errors.New("connection refused"))
	c := m.engine(t, true, tracked)

	sweep(c)

	assert.Equal(t, []ports.PU{tracked}, deletiontest.PUs(c))
}

// Row 3: the pod is bound to another node: destroy, NodeChanged.
func TestRow3OtherNodeDestroys(t *testing.T) {
	m := newMocks(t)
	m.getter.EXPECT().GetPod(gomock.Any(), key).Return(livePod("uid-1", "node-b"), nil)
	m.policy.EXPECT().DestroyPU(gomock.Any(), destroyOf(tracked, ports.ReasonNodeChanged)).Return(nil)
	c := m.engine(t, true, tracked)

	sweep(c)

	assert.Zero(t, c.Len())
}

// Row 4: a pod of the same name with another UID: destroy, UIDChanged. The
// extractor is not asked.
func TestRow4RecreatedPodDestroys(t *testing.T) {
	m := newMocks(t)
	m.getter.EXPECT().GetPod(gomock.Any(), key).Return(livePod("uid-2", node), nil)
	m.policy.EXPECT().DestroyPU(gomock.Any(), destroyOf(tracked, ports.ReasonUIDChanged)).Return(nil)
	c := m.engine(t, true, tracked)

	sweep(c)

	assert.Zero(t, c.Len())
}

// Row 5: same pod, no SandboxExtractor: keep.
func TestRow5NoExtractorKeeps(t *testing.T) {
	m := newMocks(t)
	m.getter.EXPECT().GetPod(gomock.Any(), key).Return(livePod("uid-1", node), nil)
	c := m.engine(t, false, tracked)

	sweep(c)

	assert.Equal(t, []ports.PU{tracked}, deletiontest.PUs(c))
}

// Row 6: same pod, the extractor fails: keep.
func TestRow6ExtractorFailsKeeps(t *testing.T) {
	m := newMocks(t)
	pod := livePod("uid-1", node)
	m.getter.EXPECT().GetPod(gomock.Any(), key).Return(pod, nil)
	m.extractor.EXPECT().SandboxID(gomock.Any(), pod).Return("", errors.New("CRI unavailable"))
	c := m.engine(t, true, tracked)

	sweep(c)

	assert.Equal(t, []ports.PU{tracked}, deletiontest.PUs(c))
}

// Row 7: same pod, no sandbox recorded yet: adopt the current one.
func TestRow7FirstSandboxIsRecorded(t *testing.T) {
	m := newMocks(t)
	pod := livePod("uid-1", node)
	m.getter.EXPECT().GetPod(gomock.Any(), key).Return(pod, nil)
	m.extractor.EXPECT().SandboxID(gomock.Any(), pod).Return("sb-7", nil)
	unknown := ports.PU{PUID: "uid-1", Pod: key}
	c := m.engine(t, true, unknown)

	sweep(c)

	assert.Equal(t, []ports.PU{{PUID: "uid-1", Pod: key, SandboxID: "sb-7"}}, deletiontest.PUs(c))
}

// Row 8: same pod, the runtime does not know the sandbox yet (""): keep,
// record nothing.
func TestRow8SandboxNotKnownYetKeeps(t *testing.T) {
	m := newMocks(t)
	pod := livePod("uid-1", node)
	m.getter.EXPECT().GetPod(gomock.Any(), key).Return(pod, nil)
	m.extractor.EXPECT().SandboxID(gomock.Any(), pod).Return("", nil)
	c := m.engine(t, true, tracked)

	sweep(c)

	assert.Equal(t, []ports.PU{tracked}, deletiontest.PUs(c))
}

// Row 9: same pod, same sandbox: keep.
func TestRow9SameSandboxKeeps(t *testing.T) {
	m := newMocks(t)
	pod := livePod("uid-1", node)
	m.getter.EXPECT().GetPod(gomock.Any(), key).Return(pod, nil)
	m.extractor.EXPECT().SandboxID(gomock.Any(), pod).Return("sb-1", nil)
	c := m.engine(t, true, tracked)

	sweep(c)

	assert.Equal(t, []ports.PU{tracked}, deletiontest.PUs(c))
}

// Row 10: same pod, another sandbox: destroy the PU of the recorded sandbox,
// then requeue the live pod, in that order.
func TestRow10SandboxReplacedDestroysThenRequeues(t *testing.T) {
	m := newMocks(t)
	pod := livePod("uid-1", node)
	m.getter.EXPECT().GetPod(gomock.Any(), key).Return(pod, nil)
	m.extractor.EXPECT().SandboxID(gomock.Any(), pod).Return("sb-2", nil)
	gomock.InOrder(
		m.policy.EXPECT().DestroyPU(gomock.Any(), destroyOf(tracked, ports.ReasonSandboxChanged)).Return(nil),
		m.requeuer.EXPECT().Requeue(gomock.Any(), pod).Return(nil),
	)
	c := m.engine(t, true, tracked)

	sweep(c)

	assert.Zero(t, c.Len())
}

// Beyond the table: a failed destroy is tried again at the next check, and
// the PU is forgotten once it succeeds.
func TestFailedDestroyIsRetried(t *testing.T) {
	m := newMocks(t)
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, key.Name)
	m.getter.EXPECT().GetPod(gomock.Any(), key).Return(nil, notFound).Times(2)
	gomock.InOrder(
		m.policy.EXPECT().DestroyPU(gomock.Any(), destroyOf(tracked, ports.ReasonPodGone)).Return(errors.New("policy engine busy")),
		m.policy.EXPECT().DestroyPU(gomock.Any(), destroyOf(tracked, ports.ReasonPodGone)).Return(nil),
	)
	c := m.engine(t, true, tracked)

	sweep(c)
	assert.Equal(t, 1, c.Len(), "kept for a retry")
	sweep(c)
	assert.Zero(t, c.Len())
}

// Beyond the table: a permanent error drops the PU at once; a second sweep
// calls nothing (gomock would fail on any call).
func TestPermanentErrorIsNotRetried(t *testing.T) {
	m := newMocks(t)
	m.getter.EXPECT().GetPod(gomock.Any(), key).Return(nil, ports.ErrPodNotFound)
	m.policy.EXPECT().DestroyPU(gomock.Any(), destroyOf(tracked, ports.ReasonPodGone)).
		Return(ports.Permanent(errors.New("unknown PU")))
	c := m.engine(t, true, tracked)

	sweep(c)
	sweep(c)

	assert.Zero(t, c.Len())
}

// TestAnExpectedCallThatNeverCameIsReported: the reporter's Cleanup is where
// gomock checks, when the test ends, the calls it expected and never got: a
// DestroyPU expected of a live pod's PU, which the engine rightly never
// makes, fails the test.
func TestAnExpectedCallThatNeverCameIsReported(t *testing.T) {
	rec := &reported{}
	ctrl := gomock.NewController(deletiontest.NewMockReporter(rec))
	getter, policy := mocks.NewMockPodGetter(ctrl), mocks.NewMockPolicyHandler(ctrl)
	getter.EXPECT().GetPod(gomock.Any(), key).Return(livePod(tracked.PUID, node), nil)
	policy.EXPECT().DestroyPU(gomock.Any(), gomock.Any()) // wrongly expected: the pod is alive
	c, err := deletion.New(getter, policy, deletion.Options{NodeName: node})
	require.NoError(t, err)
	require.NoError(t, c.Track(tracked))

	c.Sweep(context.Background())
	require.Empty(t, rec.messages(), "nothing unexpected during the sweep")
	rec.end()
	assert.NotEmpty(t, rec.messages(), "the missing DestroyPU is reported when the test ends")
}

// TestAnUnexpectedCallFromAWorkerIsReported: an unexpected call inside one
// of the engine's goroutines is reported at once (to a recorder standing
// for the test, so that this test can pass), and the engine goes on: its
// goroutine is not ended.
func TestAnUnexpectedCallFromAWorkerIsReported(t *testing.T) {
	rec := &reported{}
	ctrl := gomock.NewController(deletiontest.NewMockReporter(rec))
	getter, policy := mocks.NewMockPodGetter(ctrl), mocks.NewMockPolicyHandler(ctrl)
	getter.EXPECT().GetPod(gomock.Any(), key).Return(nil, ports.ErrPodNotFound).Times(2)
	// No DestroyPU is expected: the first one is unexpected.
	c, err := deletion.New(getter, policy, deletion.Options{NodeName: node, MaxDestroyAttempts: 2})
	require.NoError(t, err)
	require.NoError(t, c.Track(tracked))

	c.Sweep(context.Background()) // the unexpected DestroyPU: reported, and recovered as a panic
	require.Len(t, rec.messages(), 1, "reported at once")
	assert.Contains(t, rec.messages()[0], "Unexpected call")
	c.Sweep(context.Background()) // the engine still runs its checks
	assert.Zero(t, c.Len(), "two failed attempts: given up on")
	assert.Len(t, rec.messages(), 2)
}

// reported stands for the test's T, so that a test can fail it and pass:
// it records what deletiontest.MockReporter reports.
type reported struct {
	testing.TB // nil: only the methods below are called
	mu         sync.Mutex
	msgs       []string
	cleanups   []func()
}

func (r *reported) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

func (r *reported) Helper() {}

// Cleanup keeps f, for the test to run as testing would at its end.
func (r *reported) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// end runs what Cleanup kept, as testing does when a test ends.
func (r *reported) end() {
	r.mu.Lock()
	fs := r.cleanups
	r.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

func (r *reported) messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs...)
}
