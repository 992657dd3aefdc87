package trireme_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/podsweeper/podsweeper/adapters/trireme"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

const (
	sandboxAnnotation = "example.com/sandbox"
	thisNode          = "node-a"
	waitFor           = 5 * time.Second
	tick              = time.Millisecond
)

var webKey = types.NamespacedName{Namespace: "ns", Name: "web"}

func metav1ObjectMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: "ns", Name: name}
}

func pod(key types.NamespacedName, uid, node, sandbox string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: types.UID(uid)},
		Spec:       corev1.PodSpec{NodeName: node},
	}
	if sandbox != "" {
		p.Annotations = map[string]string{sandboxAnnotation: sandbox}
	}
	return p
}

// annotationSandbox has the shape of trireme-lib's extractors.PodSandboxExtractor.
func annotationSandbox(_ context.Context, p *corev1.Pod) (string, error) {
	if p.Annotations["broken"] == "true" {
		return "", errors.New("container runtime unavailable")
	}
	return p.Annotations[sandboxAnnotation], nil
}

// chanResolver mirrors trireme's policy.Resolver and reports every call.
type chanResolver struct {
	calls chan call
	fail  func(n int) error // error of the n-th call (1-based); nil: none
	n     atomic.Int32
}

func (r *chanResolver) HandlePUEvent(ctx context.Context, puID string, event Event, runtime RuntimeReader) error {
	r.calls <- call{puID: puID, event: event, runtime: runtime}
	if r.fail != nil {
		return r.fail(int(r.n.Add(1)))
	}
	return nil
}

type setup struct {
	objects   []client.Object
	funcs     *interceptor.Funcs
	nodeName  string
	extractor ports.SandboxExtractor
	noEvents  bool                    // nil eventsCh
	events    chan event.GenericEvent // eventsCh; nil: a buffered one
	fail      func(n int) error
	opts      deletion.Options
}

type harness struct {
	t        *testing.T
	client   client.WithWatch
	resolver *chanResolver
	events   chan event.GenericEvent
	checked  chan deletion.Event
	dc       *trireme.DeleteController
	cancel   context.CancelFunc
	done     chan error
}

func newHarness(t *testing.T, s setup) *harness {
	t.Helper()
	b := fake.NewClientBuilder().WithObjects(s.objects...)
	if s.funcs != nil {
		b = b.WithInterceptorFuncs(*s.funcs)
	}
	h := &harness{
		t:        t,
		client:   b.Build(),
		resolver: &chanResolver{calls: make(chan call, 10000), fail: s.fail},
		checked:  make(chan deletion.Event, 10000),
	}
	switch {
	case s.events != nil:
		h.events = s.events
	case !s.noEvents:
		h.events = make(chan event.GenericEvent, 10)
	}
	opts := s.opts
	if opts.SweepInterval == 0 {
		opts.SweepInterval = time.Hour // only reconcile requests check entries
	}
	opts.Logger = testr.New(t)
	opts.Observer = deletion.ObserverFunc(func(ev deletion.Event) {
		if ev.Kind == deletion.EventChecked {
			select {
			case h.checked <- ev:
			default:
			}
		}
	})
	policy := trireme.NewPolicyHandler(h.resolver, EventDestroy, func() RuntimeReader { return &puRuntime{} })
	dc, err := trireme.NewDeleteControllerWithOptions(h.client, s.nodeName, policy, s.extractor, h.events, opts)
	require.NoError(t, err)
	h.dc = dc
	return h
}

func (h *harness) start() {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- h.dc.Start(ctx) }()
	h.t.Cleanup(h.stop)
}

func (h *harness) stop() {
	h.cancel()
	select {
	case err := <-h.done:
		assert.NoError(h.t, err)
	case <-time.After(waitFor):
		h.t.Error("Start did not return after its context was cancelled")
	}
}

func (h *harness) track(puid, sandbox string, key types.NamespacedName) {
	h.t.Helper()
	select {
	case h.dc.GetDeleteCh() <- trireme.DeleteEvent{PodUID: puid, SandboxID: sandbox, NamespaceName: key}:
	case <-time.After(waitFor):
		h.t.Fatal("send on the delete channel blocked")
	}
}

func (h *harness) reconcile() {
	h.t.Helper()
	select {
	case h.dc.GetReconcileCh() <- struct{}{}:
	case <-time.After(waitFor):
		h.t.Fatal("send on the reconcile channel blocked")
	}
}

// verdict waits for the next finished check of puid and returns its verdict.
func (h *harness) verdict(puid string) deletion.Verdict {
	h.t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case ev := <-h.checked:
			if ev.PU.PUID == puid {
				return ev.Verdict
			}
		case <-deadline:
			h.t.Fatalf("no check of PU %s", puid)
			return deletion.Verdict{}
		}
	}
}

func (h *harness) destroyed() call {
	h.t.Helper()
	select {
	case c := <-h.resolver.calls:
		return c
	case <-time.After(waitFor):
		h.t.Fatal("HandlePUEvent was not called")
		return call{}
	}
}

func (h *harness) noDestroy() {
	h.t.Helper()
	select {
	case c := <-h.resolver.calls:
		h.t.Fatalf("unexpected HandlePUEvent(%s, %s)", c.puID, c.event)
	default:
	}
}

func (h *harness) noRequeue() {
	h.t.Helper()
	select {
	case ev := <-h.events:
		h.t.Fatalf("unexpected requeue of %s", client.ObjectKeyFromObject(ev.Object))
	default:
	}
}

// Seed: "this is the normal case: a pod is gone, so just send a destroy event".
func TestDeleteControllerPodGoneDestroys(t *testing.T) {
	h := newHarness(t, setup{extractor: trireme.NewSandboxExtractor(annotationSandbox)})
	h.start()
	h.track("uid-1", "sb-1", webKey)
	h.reconcile()

	v := h.verdict("uid-1")
	assert.Equal(t, deletion.Destroy, v.Action)
	assert.Equal(t, ports.ReasonPodGone, v.Reason)
	c := h.destroyed()
	assert.Equal(t, "uid-1", c.puID)
	assert.Equal(t, EventDestroy, c.event)
	assert.NotNil(t, c.runtime)
	assert.Zero(t, h.dc.Engine().Len(), "a destroyed PU is forgotten")
	h.noRequeue()
}

// Seed: "a pod with the same namespaced name came up and we have missed a
// delete event: this pod belongs to a different PU and must live".
func TestDeleteControllerRecreatedPodDestroysOldPU(t *testing.T) {
	h := newHarness(t, setup{
		objects:   []client.Object{pod(webKey, "uid-2", thisNode, "sb-9")},
		extractor: trireme.NewSandboxExtractor(annotationSandbox),
	})
	h.start()
	h.track("uid-1", "sb-1", webKey)
	h.reconcile()

	v := h.verdict("uid-1")
	assert.Equal(t, ports.ReasonUIDChanged, v.Reason)
	assert.Equal(t, "uid-1", h.destroyed().puID)
	h.noRequeue()
}

// Seed 2c: same pod, other sandbox: destroy the old PU and send the pod on
// eventsCh so the main controller creates the PU of the new sandbox.
func TestDeleteControllerSandboxChangedDestroysAndRequeues(t *testing.T) {
	h := newHarness(t, setup{
		objects:   []client.Object{pod(webKey, "uid-1", thisNode, "sb-2")},
		extractor: trireme.NewSandboxExtractor(annotationSandbox),
	})
	h.start()
	h.track("uid-1", "sb-1", webKey)
	h.reconcile()

	v := h.verdict("uid-1")
	assert.Equal(t, ports.ReasonSandboxChanged, v.Reason)
	assert.Equal(t, "uid-1", h.destroyed().puID)
	select {
	case ev := <-h.events:
		require.NotNil(t, ev.Object)
		assert.Equal(t, webKey, client.ObjectKeyFromObject(ev.Object))
		assert.Equal(t, types.UID("uid-1"), ev.Object.GetUID())
	case <-time.After(waitFor):
		t.Fatal("no GenericEvent on eventsCh")
	}
}

func TestDeleteControllerSameSandboxKeeps(t *testing.T) {
	h := newHarness(t, setup{
		objects:   []client.Object{pod(webKey, "uid-1", thisNode, "sb-1")},
		extractor: trireme.NewSandboxExtractor(annotationSandbox),
	})
	h.start()
	h.track("uid-1", "sb-1", webKey)
	h.reconcile()

	v := h.verdict("uid-1")
	assert.Equal(t, deletion.Keep, v.Action)
	assert.Equal(t, 9, v.Row)
	h.noDestroy()
	assert.Equal(t, 1, h.dc.Engine().Len())
}

// Seed: "here we update the map only if the sandboxID has not been
// extracted": an empty recorded sandbox adopts the current one, and a later
// change of sandbox destroys the PU.
func TestDeleteControllerEmptySandboxAdoptsThenDetectsChange(t *testing.T) {
	p := pod(webKey, "uid-1", thisNode, "sb-1")
	h := newHarness(t, setup{objects: []client.Object{p}, extractor: trireme.NewSandboxExtractor(annotationSandbox)})
	h.start()
	h.track("uid-1", "", webKey)
	h.reconcile()

	v := h.verdict("uid-1")
	assert.Equal(t, deletion.Adopt, v.Action)
	h.noDestroy()
	require.Equal(t, []ports.PU{{PUID: "uid-1", Pod: webKey, SandboxID: "sb-1"}}, deletiontest.PUs(h.dc.Engine()))

	p.Annotations[sandboxAnnotation] = "sb-2"
	require.NoError(t, h.client.Update(context.Background(), p))
	h.reconcile()
	assert.Equal(t, ports.ReasonSandboxChanged, h.verdict("uid-1").Reason)
	assert.Equal(t, "uid-1", h.destroyed().puID)
}

// Seed: "if sandboxExtractor == nil { return }".
func TestDeleteControllerNilExtractorKeeps(t *testing.T) {
	h := newHarness(t, setup{objects: []client.Object{pod(webKey, "uid-1", thisNode, "sb-2")}})
	h.start()
	h.track("uid-1", "sb-1", webKey)
	h.reconcile()

	v := h.verdict("uid-1")
	assert.Equal(t, deletion.Keep, v.Action)
	assert.Equal(t, 5, v.Row)
	h.noDestroy()
}

// Seed: "cannot extract the SandboxID, return".
func TestDeleteControllerExtractorErrorKeeps(t *testing.T) {
	p := pod(webKey, "uid-1", thisNode, "sb-2")
	p.Annotations["broken"] = "true"
	h := newHarness(t, setup{objects: []client.Object{p}, extractor: trireme.NewSandboxExtractor(annotationSandbox)})
	h.start()
	h.track("uid-1", "sb-1", webKey)
	h.reconcile()

	assert.Equal(t, 6, h.verdict("uid-1").Row)
	h.noDestroy()
}

// Seed: "Failed to get pod from Kubernetes API": never destroy on an error;
// once the API answers again, the PU of a gone pod is destroyed.
func TestDeleteControllerGetErrorKeeps(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	h := newHarness(t, setup{funcs: &interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if down.Load() {
				return errors.New("connection refused")
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}})
	h.start()
	h.track("uid-1", "sb-1", webKey)
	h.reconcile()

	v := h.verdict("uid-1")
	assert.Equal(t, deletion.Keep, v.Action)
	assert.Equal(t, 2, v.Row)
	h.noDestroy()

	down.Store(false)
	h.reconcile()
	assert.Equal(t, ports.ReasonPodGone, h.verdict("uid-1").Reason)
	assert.Equal(t, "uid-1", h.destroyed().puID)
}

func TestDeleteControllerNodeCheck(t *testing.T) {
	moved := pod(webKey, "uid-1", "node-b", "")

	h := newHarness(t, setup{objects: []client.Object{moved}, nodeName: thisNode})
	h.start()
	h.track("uid-1", "", webKey)
	h.reconcile()
	assert.Equal(t, ports.ReasonNodeChanged, h.verdict("uid-1").Reason)
	assert.Equal(t, "uid-1", h.destroyed().puID)

	off := newHarness(t, setup{objects: []client.Object{moved.DeepCopy()}})
	off.start()
	off.track("uid-1", "", webKey)
	off.reconcile()
	assert.Equal(t, 5, off.verdict("uid-1").Row, "an empty node name turns the node check off")
	off.noDestroy()
}

// Seed: "here don't update the map, insert only if not present".
func TestDeleteControllerTrackIsInsertOnly(t *testing.T) {
	h := newHarness(t, setup{
		objects:   []client.Object{pod(webKey, "uid-1", thisNode, "sb-2")},
		extractor: trireme.NewSandboxExtractor(annotationSandbox),
	})
	h.start()
	h.track("uid-1", "sb-1", webKey)
	h.track("uid-1", "sb-2", webKey)
	h.reconcile()

	assert.Equal(t, ports.ReasonSandboxChanged, h.verdict("uid-1").Reason, "the first sandbox seen is the PU's")
	h.destroyed()
}

func TestDeleteControllerIgnoresInvalidEvents(t *testing.T) {
	h := newHarness(t, setup{})
	h.start()
	h.track("", "sb", webKey)
	h.track("uid-1", "sb", types.NamespacedName{Name: "no-namespace"})
	h.track("uid-2", "sb", webKey)
	h.reconcile()

	assert.Equal(t, ports.ReasonPodGone, h.verdict("uid-2").Reason)
	assert.Equal(t, "uid-2", h.destroyed().puID)
	h.noDestroy()
}

// The seed dropped a failed destroy; the engine retries it with backoff.
func TestDeleteControllerRetriesFailedDestroy(t *testing.T) {
	errBusy := errors.New("policy engine busy")
	h := newHarness(t, setup{
		fail: func(n int) error {
			if n <= 2 {
				return errBusy
			}
			return nil
		},
		opts: deletion.Options{RetryMinDelay: time.Millisecond, RetryMaxDelay: 5 * time.Millisecond},
	})
	h.start()
	h.track("uid-1", "", webKey)
	h.reconcile()

	for range 3 {
		assert.Equal(t, "uid-1", h.destroyed().puID)
	}
	require.Eventually(t, func() bool { return h.dc.Engine().Len() == 0 }, waitFor, tick)
	h.noDestroy()
}

// A permanent error (or the last attempt) drops the PU; Start keeps running.
func TestDeleteControllerDropsPermanentFailure(t *testing.T) {
	h := newHarness(t, setup{fail: func(int) error { return ports.Permanent(errors.New("no such PU")) }})
	h.start()
	h.track("uid-1", "", webKey)
	h.reconcile()

	assert.Equal(t, "uid-1", h.destroyed().puID)
	require.Eventually(t, func() bool { return h.dc.Engine().Len() == 0 }, waitFor, tick)
	h.noDestroy()
}

// The seed blocked forever when nobody read eventsCh; the requeue now gives
// up at the item deadline and the controller goes on.
func TestDeleteControllerRequeueDoesNotBlock(t *testing.T) {
	h := newHarness(t, setup{
		objects:   []client.Object{pod(webKey, "uid-1", thisNode, "sb-2")},
		extractor: trireme.NewSandboxExtractor(annotationSandbox),
		events:    make(chan event.GenericEvent), // nobody ever receives
		opts:      deletion.Options{CheckTimeout: 50 * time.Millisecond},
	})
	h.start()
	h.track("uid-1", "sb-1", webKey)
	h.track("uid-2", "", types.NamespacedName{Namespace: "ns", Name: "gone"})
	h.reconcile()

	got := map[string]bool{}
	for range 2 {
		got[h.destroyed().puID] = true
	}
	assert.Equal(t, map[string]bool{"uid-1": true, "uid-2": true}, got)
	require.Eventually(t, func() bool { return h.dc.Engine().Len() == 0 }, waitFor, tick)
}

// Sends on the delete channel complete while every worker is stuck in the
// policy engine, well beyond the channel's buffer.
func TestDeleteControllerDeleteChNeverWaitsForChecks(t *testing.T) {
	release := make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	h := newHarness(t, setup{
		fail: func(int) error { <-release; return nil },
		opts: deletion.Options{Workers: 1},
	})
	h.start()
	t.Cleanup(unblock) // runs before the harness's stop
	h.track("uid-stuck", "", webKey)
	h.reconcile()
	assert.Equal(t, "uid-stuck", h.destroyed().puID) // the only worker is now inside HandlePUEvent

	const n = 5000
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := range n {
			h.dc.GetDeleteCh() <- trireme.DeleteEvent{PodUID: fmt.Sprintf("uid-%d", i), NamespaceName: types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("p-%d", i)}}
		}
	}()
	select {
	case <-sent:
	case <-time.After(waitFor):
		t.Fatal("sends on the delete channel blocked while the engine was busy")
	}
	require.Eventually(t, func() bool { return h.dc.Engine().Len() == n+1 }, waitFor, tick)
	unblock()
}

func TestDeleteControllerBuffersEventsBeforeStart(t *testing.T) {
	h := newHarness(t, setup{})
	const n = 1000
	for i := range n {
		select {
		case h.dc.GetDeleteCh() <- trireme.DeleteEvent{PodUID: fmt.Sprintf("uid-%d", i), NamespaceName: webKey}:
		default:
			t.Fatalf("send %d before Start blocked", i)
		}
	}
	select {
	case h.dc.GetReconcileCh() <- struct{}{}:
	default:
		t.Fatal("a reconcile request before Start blocked")
	}
	assert.Zero(t, h.dc.Engine().Len(), "nothing is tracked before Start")

	h.start()
	seen := map[string]bool{}
	for range n {
		seen[h.destroyed().puID] = true
	}
	assert.Len(t, seen, n)
	require.Eventually(t, func() bool { return h.dc.Engine().Len() == 0 }, waitFor, tick)
}

func TestDeleteControllerStartStopsAndRunsOnce(t *testing.T) {
	h := newHarness(t, setup{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.dc.Start(ctx) }()

	h.track("uid-1", "", webKey)
	h.reconcile()
	h.destroyed()

	err := h.dc.Start(ctx)
	require.ErrorIs(t, err, deletion.ErrAlreadyStarted)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Start did not return after its context was cancelled")
	}
	assert.False(t, h.dc.NeedLeaderElection())
}

// TestDeleteControllerStartWithNilContextMayBeCalledAgain: as the engine's Start, a nil context is refused with
// deletion.ErrNilContext before anything starts (no goroutine of the drop-in reads it), and Start may then be called
// with a context.
func TestDeleteControllerStartWithNilContextMayBeCalledAgain(t *testing.T) {
	h := newHarness(t, setup{})
	//lint:ignore SA1012 a nil context on purpose
	require.ErrorIs(t, h.dc.Start(nil), deletion.ErrNilContext)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.dc.Start(ctx) }()
	h.track("uid-1", "", webKey)
	h.reconcile()
	h.destroyed()
	cancel()
	require.NoError(t, <-done)
}

func TestDeleteControllerStartFailsWhenEngineRunsElsewhere(t *testing.T) {
	h := newHarness(t, setup{})
	ctx, cancel := context.WithCancel(context.Background())
	engineDone := make(chan error, 1)
	go func() { engineDone <- h.dc.Engine().Start(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-engineDone)
	}()
	// A check runs only once the engine has started.
	require.NoError(t, h.dc.Engine().Track(ports.PU{PUID: "uid-1", Pod: webKey}))
	h.dc.Engine().TriggerAll()
	h.verdict("uid-1")

	done := make(chan error, 1)
	go func() { done <- h.dc.Start(ctx) }()
	select {
	case err := <-done:
		require.ErrorIs(t, err, deletion.ErrAlreadyStarted)
	case <-time.After(waitFor):
		t.Fatal("Start did not report that the engine runs already")
	}
}

func TestNewDeleteController(t *testing.T) {
	policy := trireme.NewPolicyHandler(&resolver{}, EventDestroy, nil)
	c := fake.NewClientBuilder().Build()

	_, err := trireme.NewDeleteController(nil, "", policy, nil, nil)
	require.ErrorIs(t, err, deletion.ErrNilPort)

	_, err = trireme.NewDeleteController(c, "", nil, nil, nil)
	require.ErrorIs(t, err, deletion.ErrNilPort)

	_, err = trireme.NewDeleteController(c, "", trireme.NewPolicyHandler[Event, RuntimeReader](nil, EventDestroy, nil), nil, nil)
	require.ErrorIs(t, err, deletion.ErrNilPort, "a nil resolver is rejected")

	_, err = trireme.NewDeleteControllerWithOptions(c, "", policy, nil, nil, deletion.Options{Workers: -1})
	require.ErrorIs(t, err, deletion.ErrInvalidOptions)

	dc, err := trireme.NewDeleteController(c, "", policy, nil, nil)
	require.NoError(t, err)
	require.NotNil(t, dc.GetDeleteCh())
	require.NotNil(t, dc.GetReconcileCh())
}

// A nil eventsCh requeues nothing (the seed blocked forever sending on it).
func TestDeleteControllerNilEventsChannel(t *testing.T) {
	h := newHarness(t, setup{
		objects:   []client.Object{pod(webKey, "uid-1", thisNode, "sb-2")},
		extractor: trireme.NewSandboxExtractor(annotationSandbox),
		noEvents:  true,
	})
	h.start()
	h.track("uid-1", "sb-1", webKey)
	h.reconcile()

	assert.Equal(t, ports.ReasonSandboxChanged, h.verdict("uid-1").Reason)
	assert.Equal(t, "uid-1", h.destroyed().puID)
	require.Eventually(t, func() bool { return h.dc.Engine().Len() == 0 }, waitFor, tick)
}
