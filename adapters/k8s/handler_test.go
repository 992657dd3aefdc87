package k8s

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
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
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

const sandboxAnnotation = "test.podsweeper.io/sandbox"

// fakeEngine records what the handler asks of the engine. It classifies
// pods as a real engine for its node does ("": a cluster-wide engine).
type fakeEngine struct {
	classifier *deletion.Engine
	mu         sync.Mutex
	tracked    []ports.PU
	triggers   []types.NamespacedName
}

func (f *fakeEngine) Track(e ports.PU) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tracked = append(f.tracked, e)
	return nil
}

func (f *fakeEngine) TriggerPod(key types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.triggers = append(f.triggers, key)
}

func (f *fakeEngine) Classify(pod *corev1.Pod) deletion.PodClass { return f.classifier.Classify(pod) }

// newFakeEngine returns a fakeEngine for node ("": every pod).
func newFakeEngine(t *testing.T, node string) *fakeEngine {
	t.Helper()
	c, err := deletion.New(ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound }),
		ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil }), deletion.Options{NodeName: node})
	require.NoError(t, err)
	return &fakeEngine{classifier: c}
}

func (f *fakeEngine) calls() ([]ports.PU, []types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ports.PU(nil), f.tracked...), append([]types.NamespacedName(nil), f.triggers...)
}

var annotationExtractor = ports.SandboxExtractorFunc(func(_ context.Context, pod *corev1.Pod) (string, error) {
	return pod.Annotations[sandboxAnnotation], nil
})

func newHandler(t *testing.T) (*podHandler, *fakeEngine) {
	t.Helper()
	f := newFakeEngine(t, "node-a")
	return &podHandler{engine: f}, f
}

func pod(name, uid, node, sandbox, rv string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, UID: types.UID(uid), ResourceVersion: rv,
			Annotations: map[string]string{sandboxAnnotation: sandbox},
		},
		Spec: corev1.PodSpec{NodeName: node},
	}
}

func key(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

func TestHandlerTracksPodsBoundToTheNode(t *testing.T) {
	h, f := newHandler(t)
	done := pod("done", "u-done", "node-a", "sb-done", "1")
	done.Status.Phase = corev1.PodSucceeded

	h.OnAdd(pod("web", "u-web", "node-a", "sb-1", "1"), true)
	h.OnAdd(pod("unbound", "u-unbound", "", "", "1"), false)
	h.OnAdd(pod("elsewhere", "u-elsewhere", "node-b", "sb-2", "1"), false)
	h.OnAdd(done, false)
	h.OnAdd(&corev1.Node{}, false) // not a pod: ignored, no panic

	tracked, triggers := f.calls()
	// Without a sandbox: the engine records it at the check each add triggers.
	assert.Equal(t, []ports.PU{
		{PUID: "u-web", Pod: key("web")},
		{PUID: "u-done", Pod: key("done")},
	}, tracked)
	assert.Equal(t, []types.NamespacedName{key("web"), key("done")}, triggers)
}

// TestClusterHandlerTracksEveryPod: without a node (SetupClusterWithManager)
// the handler tracks every pod the filter accepts, bound to a node or not.
func TestClusterHandlerTracksEveryPod(t *testing.T) {
	f := newFakeEngine(t, "")
	h := &podHandler{engine: f, filter: func(p *corev1.Pod) bool { return p.Name != "skipped" }}
	h.OnAdd(pod("web", "u-web", "node-a", "", "1"), true)
	h.OnAdd(pod("unbound", "u-unbound", "", "", "1"), false)
	h.OnAdd(pod("elsewhere", "u-elsewhere", "node-b", "", "1"), false)
	h.OnAdd(pod("skipped", "u-skipped", "node-b", "", "1"), false)
	tracked, triggers := f.calls()
	assert.Equal(t, []ports.PU{
		{PUID: "u-web", Pod: key("web")},
		{PUID: "u-unbound", Pod: key("unbound")},
		{PUID: "u-elsewhere", Pod: key("elsewhere")},
	}, tracked)
	assert.Equal(t, []types.NamespacedName{key("web"), key("unbound"), key("elsewhere")}, triggers)
}

func TestHandlerTracksAPodOnceItIsBound(t *testing.T) {
	h, f := newHandler(t)
	h.OnUpdate(pod("web", "u-web", "", "", "1"), pod("web", "u-web", "node-a", "", "2"))
	tracked, triggers := f.calls()
	assert.Equal(t, []ports.PU{{PUID: "u-web", Pod: key("web")}}, tracked)
	assert.Equal(t, []types.NamespacedName{key("web")}, triggers)
}

func TestHandlerTriggersOnChangesNotOnResyncs(t *testing.T) {
	h, f := newHandler(t)
	h.OnUpdate(pod("web", "u-web", "node-a", "sb-1", "2"), pod("web", "u-web", "node-a", "sb-1", "2")) // resync
	_, triggers := f.calls()
	assert.Empty(t, triggers)

	// A change, a sandbox replaced say: the engine's check asks the
	// extractor and compares.
	h.OnUpdate(pod("web", "u-web", "node-a", "sb-1", "2"), pod("web", "u-web", "node-a", "sb-2", "3"))
	tracked, triggers := f.calls()
	assert.Equal(t, []types.NamespacedName{key("web")}, triggers)
	assert.Equal(t, []ports.PU{{PUID: "u-web", Pod: key("web")}, {PUID: "u-web", Pod: key("web")}}, tracked)
}

func TestHandlerTriggersWhenThePodWasReplaced(t *testing.T) {
	// After a relist the informer reports a pod recreated under the same
	// name as an update from the old pod to the new one.
	h, f := newHandler(t)
	h.OnUpdate(pod("web", "u-old", "node-a", "", "1"), pod("web", "u-new", "node-a", "", "5"))
	tracked, triggers := f.calls()
	assert.Equal(t, []ports.PU{{PUID: "u-new", Pod: key("web")}}, tracked)
	assert.Equal(t, []types.NamespacedName{key("web")}, triggers)
}

func TestHandlerTriggersOnDeleteAndTombstones(t *testing.T) {
	h, f := newHandler(t)
	h.OnDelete(pod("a", "u-a", "node-a", "", "1"))
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/b", Obj: pod("b", "u-b", "node-a", "", "1")})
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/c", Obj: nil}) // last state unknown: the key is enough
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "a/b/c"})          // unusable key: ignored
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: ""})               // unusable key: ignored
	h.OnDelete("not a pod")                                                // ignored

	tracked, triggers := f.calls()
	assert.Empty(t, tracked)
	assert.Equal(t, []types.NamespacedName{key("a"), key("b"), key("c")}, triggers)
}

// newEngine returns a started engine for node-a that reads pods from pods
// and asks ex for sandboxes; it stops when the test ends.
func newEngine(t *testing.T, pods *podStore, ex ports.SandboxExtractor, opts deletion.Options) *deletion.Engine {
	t.Helper()
	opts.NodeName, opts.SandboxExtractor = "node-a", ex
	c, err := deletion.New(ports.PodGetterFunc(pods.get), ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil }), opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("the engine did not stop")
		}
	})
	return c
}

// podStore is the API the engine reads pods from.
type podStore struct {
	mu   sync.Mutex
	pods map[types.NamespacedName]*corev1.Pod
}

func (s *podStore) put(p *corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pods == nil {
		s.pods = map[types.NamespacedName]*corev1.Pod{}
	}
	s.pods[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
}

func (s *podStore) get(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.pods[key]; ok {
		return p, nil
	}
	return nil, ports.ErrPodNotFound
}

// The handler feeds a real engine: the PU is tracked at once without a
// sandbox, the check the add triggers records the sandbox (row 7), and the
// check a sandbox change triggers destroys the old sandbox's PU.
func TestHandlerFeedsARealEngine(t *testing.T) {
	pods := &podStore{}
	c := newEngine(t, pods, annotationExtractor, deletion.Options{SweepInterval: time.Hour})
	h := &podHandler{engine: c}

	web := pod("web", "u-web", "node-a", "sb-1", "1")
	pods.put(web)
	h.OnAdd(web, false)
	h.OnAdd(pod("bad", "", "node-a", "", "1"), false) // no UID: the engine refuses it, the handler logs and goes on
	require.Eventually(t, func() bool {
		return slices.Equal(deletiontest.PUs(c), []ports.PU{{PUID: "u-web", Pod: key("web"), SandboxID: "sb-1"}})
	}, 10*time.Second, time.Millisecond, "the first check (an hour before the sweep) records the sandbox")

	replaced := pod("web", "u-web", "node-a", "sb-2", "2")
	pods.put(replaced)
	h.OnUpdate(web, replaced)
	require.Eventually(t, func() bool { return c.Len() == 0 }, 10*time.Second, time.Millisecond,
		"the check the update triggers destroys the PU of the replaced sandbox")
}

// A container runtime that hangs while 200 pod events arrive: the handler
// never waits for it (it never calls it), each event is handled within the
// bound, and the runtime is asked by the engine's workers only, never by
// more goroutines at once than Workers.
func TestHandlerDoesNotWaitForAHungRuntime(t *testing.T) {
	const events, workers, bound = 200, 4, 250 * time.Millisecond
	release := make(chan struct{})
	var inside, most, asked atomic.Int32
	hung := ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) {
		n := inside.Add(1)
		defer inside.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		asked.Add(1)
		<-release // ignores its context, as a wedged runtime client can
		return "sb-late", nil
	})
	before := runtime.NumGoroutine()
	pods := &podStore{}
	c := newEngine(t, pods, hung, deletion.Options{Workers: workers, SweepInterval: time.Hour, CheckTimeout: 50 * time.Millisecond})
	h := &podHandler{engine: c}
	t.Cleanup(func() { close(release) }) // runs before the engine stops
	slowest := make(chan time.Duration, 1)
	go func() {
		var worst time.Duration
		for i := range events {
			p := pod(fmt.Sprintf("p-%03d", i/2), fmt.Sprintf("u-%03d", i/2), "node-a", "", "1")
			pods.put(p)
			start := time.Now()
			if i%2 == 0 {
				h.OnAdd(p, false)
			} else {
				changed := p.DeepCopy()
				changed.ResourceVersion = "2"
				h.OnUpdate(p, changed)
			}
			worst = max(worst, time.Since(start))
		}
		slowest <- worst
	}()
	select {
	case worst := <-slowest:
		assert.Less(t, worst, bound, "the slowest of %d events", events)
	case <-time.After(30 * time.Second):
		t.Fatal("the pod events are stuck behind the hung runtime")
	}
	assert.Equal(t, events/2, c.Len(), "every pod is tracked, without a sandbox")
	require.Eventually(t, func() bool { return inside.Load() >= workers }, 10*time.Second, time.Millisecond,
		"the engine's workers ask the runtime")
	// Past the checks' deadline the workers stay stuck in the runtime, and
	// no second call is made while they are, over ten of those deadlines.
	for end := time.Now().Add(10 * 50 * time.Millisecond); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		require.LessOrEqual(t, asked.Load(), int32(workers), "calls to the runtime while it hangs")
	}
	// Nor does any goroutine pile up: the engine's own (Start, its
	// scheduler, its workers) are all there is, once the short-lived ones
	// (a deadline's timer, the event sender on its way out) are gone. A
	// goroutine left per event would stay, blocked in the runtime.
	const engineGoroutines = 2 + workers
	extra := runtime.NumGoroutine() - before
	for end := time.Now().Add(5 * time.Second); extra > engineGoroutines && time.Now().Before(end); extra = runtime.NumGoroutine() - before {
		time.Sleep(5 * time.Millisecond)
	}
	assert.LessOrEqual(t, extra, engineGoroutines, "goroutines started while the runtime hung")
	assert.LessOrEqual(t, most.Load(), int32(workers), "calls to the runtime at once")
}

func TestHandlerTracksOnlyThePodsTheFilterAccepts(t *testing.T) {
	h, f := newHandler(t)
	h.filter = PodsWithOwnNetwork
	hostNet := pod("cilium", "u-host", "node-a", "", "1")
	hostNet.Spec.HostNetwork = true
	mirror := pod("etcd-node-a", "u-mirror", "node-a", "", "1")
	mirror.Annotations[corev1.MirrorPodAnnotationKey] = "0123abcd"

	h.OnAdd(hostNet, true)
	h.OnAdd(mirror, true)
	h.OnAdd(pod("web", "u-web", "node-a", "", "1"), true)
	h.OnUpdate(hostNet, func() *corev1.Pod { p := hostNet.DeepCopy(); p.ResourceVersion = "2"; return p }())
	h.OnUpdate(mirror, func() *corev1.Pod { p := mirror.DeepCopy(); p.ResourceVersion = "2"; return p }())

	tracked, triggers := f.calls()
	assert.Equal(t, []ports.PU{{PUID: "u-web", Pod: key("web")}}, tracked)
	assert.Equal(t, []types.NamespacedName{key("web")}, triggers, "rejected pods' adds and updates trigger nothing")

	// Deletes trigger whatever the filter says: a PU the agent tracked
	// itself goes with its pod.
	h.OnDelete(hostNet)
	_, triggers = f.calls()
	assert.Equal(t, []types.NamespacedName{key("web"), key("cilium")}, triggers)
}

// fakeInformer records the handlers added and removed.
type fakeInformer struct {
	cache.Informer // calling anything else panics

	mu      sync.Mutex
	added   []toolscache.ResourceEventHandler
	removed int
}

type fakeRegistration struct {
	toolscache.ResourceEventHandlerRegistration
}

// HasSynced reports the initial list delivered: the fake has none.
func (fakeRegistration) HasSynced() bool { return true }

func (f *fakeInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.added = append(f.added, h)
	return fakeRegistration{}, nil
}

func (f *fakeInformer) RemoveEventHandler(toolscache.ResourceEventHandlerRegistration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed++
	return nil
}

func (f *fakeInformer) counts() (int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.added), f.removed
}

func TestRunnableRemovesItsHandlerWhenItStops(t *testing.T) {
	c, err := deletion.New(ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
		return nil, errors.New("unused")
	}), ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil }), deletion.Options{NodeName: "node-a"})
	require.NoError(t, err)
	inf := &fakeInformer{}
	r := &engineRunnable{engine: c, informer: inf}
	assert.False(t, r.NeedLeaderElection())
	assert.True(t, (&engineRunnable{leaderElected: true}).NeedLeaderElection(), "a cluster-wide engine runs on the leader only")

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	require.Eventually(t, func() bool { a, _ := inf.counts(); return a == 1 }, 5*time.Second, time.Millisecond)
	_, removed := inf.counts()
	assert.Zero(t, removed)
	// The handler tracks the pods of the engine's node, the only place the
	// node is given.
	inf.mu.Lock()
	h := inf.added[0]
	inf.mu.Unlock()
	h.OnAdd(pod("mine", "u-mine", "node-a", "", "1"), false)
	h.OnAdd(pod("other", "u-other", "node-b", "", "1"), false)
	assert.Equal(t, []ports.PU{{PUID: "u-mine", Pod: key("mine")}}, deletiontest.PUs(c))

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Start did not return after its context ended")
	}
	added, removed := inf.counts()
	assert.Equal(t, 1, added)
	assert.Equal(t, 1, removed)
}

func TestHandlerTriggersWhenAPodIsReplacedByARejectedOne(t *testing.T) {
	h, f := newHandler(t)
	h.filter = PodsWithOwnNetwork
	replaced := pod("web", "u-new", "node-a", "", "5")
	replaced.Spec.HostNetwork = true
	h.OnUpdate(pod("web", "u-old", "node-a", "", "1"), replaced)
	tracked, triggers := f.calls()
	assert.Empty(t, tracked)
	assert.Equal(t, []types.NamespacedName{key("web")}, triggers, "the old pod's PU is checked at once")
}

// TestHandlerTriggersWhenAPodIsReplacedByOneElsewhere: a pod recreated
// under the same name on another node, or not yet scheduled, is not the
// engine's, but the old pod's PU is: it is checked at once.
func TestHandlerTriggersWhenAPodIsReplacedByOneElsewhere(t *testing.T) {
	for name, node := range map[string]string{"on another node": "node-b", "not yet scheduled": ""} {
		t.Run(name, func(t *testing.T) {
			h, f := newHandler(t)
			h.OnUpdate(pod("web", "u-old", "node-a", "", "1"), pod("web", "u-new", node, "", "5"))
			tracked, triggers := f.calls()
			assert.Empty(t, tracked, "the new pod is not the engine's")
			assert.Equal(t, []types.NamespacedName{key("web")}, triggers, "the old pod's PU is checked at once")
		})
	}
}

// TestHandlerIgnoresUpdatesOfAPodElsewhere: a pod that stays elsewhere
// triggers nothing.
func TestHandlerIgnoresUpdatesOfAPodElsewhere(t *testing.T) {
	h, f := newHandler(t)
	h.OnUpdate(pod("web", "u-web", "node-b", "", "1"), pod("web", "u-web", "node-b", "", "2"))
	tracked, triggers := f.calls()
	assert.Empty(t, tracked)
	assert.Empty(t, triggers)
}

func TestHandlerSkipsAPodWhoseFilterPanics(t *testing.T) {
	h, f := newHandler(t)
	h.filter = func(p *corev1.Pod) bool {
		if p.Name == "bad" {
			panic("filter bug")
		}
		return true
	}
	h.OnAdd(pod("bad", "u-bad", "node-a", "", "1"), false)
	h.OnAdd(pod("good", "u-good", "node-a", "", "1"), false)
	tracked, _ := f.calls()
	assert.Equal(t, []ports.PU{{PUID: "u-good", Pod: key("good")}}, tracked)
}

func TestPodsWithOwnNetwork(t *testing.T) {
	plain := pod("web", "u", "node-a", "", "1")
	hostNet := plain.DeepCopy()
	hostNet.Spec.HostNetwork = true
	mirror := plain.DeepCopy()
	mirror.Annotations[corev1.MirrorPodAnnotationKey] = ""
	noAnnotations := plain.DeepCopy()
	noAnnotations.Annotations = nil

	assert.True(t, PodsWithOwnNetwork(plain))
	assert.True(t, PodsWithOwnNetwork(noAnnotations))
	assert.False(t, PodsWithOwnNetwork(hostNet), "host network")
	assert.False(t, PodsWithOwnNetwork(mirror), "mirror pod, even with an empty annotation")
	assert.False(t, PodsWithOwnNetwork(nil))
}

// With DestroyTerminated, a finished pod's PU is destroyed once: the updates
// that follow (its deletion among them) do not track it again, which would
// destroy it once more each time. Without it, the PU stays tracked.
func TestHandlerDoesNotTrackAFinishedPodAgain(t *testing.T) {
	for _, destroyTerminated := range []bool{true, false} {
		t.Run(fmt.Sprintf("DestroyTerminated=%v", destroyTerminated), func(t *testing.T) {
			pods := &podStore{}
			var destroys atomic.Int32
			c, err := deletion.New(ports.PodGetterFunc(pods.get), ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error {
				destroys.Add(1)
				return nil
			}), deletion.Options{NodeName: "node-a", SweepInterval: time.Hour, DestroyTerminated: destroyTerminated, Logger: testr.New(t)})
			require.NoError(t, err)
			h := &podHandler{engine: c}

			done := pod("job", "u-job", "node-a", "", "1")
			done.Status.Phase = corev1.PodSucceeded
			pods.put(done)
			h.OnAdd(done, false)
			c.Sweep(context.Background())
			if !destroyTerminated {
				assert.Equal(t, 1, c.Len(), "kept while its object remains")
				assert.Zero(t, destroys.Load())
				return
			}
			require.Equal(t, int32(1), destroys.Load(), "row 11")
			require.Zero(t, c.Len())

			deleting := done.DeepCopy()
			deleting.ResourceVersion = "2"
			deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			pods.put(deleting)
			h.OnUpdate(done, deleting)
			h.OnUpdate(deleting, deleting) // a resync
			assert.Zero(t, c.Len(), "not tracked again")
			c.Sweep(context.Background())
			assert.Equal(t, int32(1), destroys.Load(), "destroyed once")

			replaced := pod("job", "u-job-2", "node-a", "", "3")
			replaced.Status.Phase = corev1.PodSucceeded
			pods.put(replaced)
			h.OnUpdate(deleting, replaced)
			assert.Equal(t, 1, c.Len(), "a finished pod seen for the first time (another UID) is tracked")
		})
	}
}

// The informer updates its store before it hands the handler an event, so
// the engine's checks, reading that store, may find a pod gone and destroy
// its PU while the handler still holds the pod's last update (its deletion
// timestamp set, say). That late update must not track the PU again, or
// the next check destroys it a second time; nor must a late add or update
// of a pod the store holds under another UID now. The handler asks the
// informer's store, or the cache when its informer has none to give (a
// cache of several namespaces).
func TestHandlerDoesNotTrackAgainAPodTheCacheNoLongerHolds(t *testing.T) {
	for _, source := range []string{"store", "cache"} {
		t.Run(source, func(t *testing.T) { testHandlerDoesNotTrackAgain(t, source) })
	}
}

func testHandlerDoesNotTrackAgain(t *testing.T, source string) {
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	reader := fake.NewClientBuilder().Build()
	add := func(p *corev1.Pod) {
		require.NoError(t, store.Add(p))
		require.NoError(t, reader.Create(t.Context(), p.DeepCopy()))
	}
	del := func(p *corev1.Pod) {
		require.NoError(t, store.Delete(p))
		require.NoError(t, reader.Delete(t.Context(), p.DeepCopy()))
	}
	get := ports.PodGetterFunc(func(_ context.Context, k types.NamespacedName) (*corev1.Pod, error) {
		obj, ok, err := store.GetByKey(k.Namespace + "/" + k.Name)
		if err != nil || !ok {
			return nil, errors.Join(err, ports.ErrPodNotFound)
		}
		return obj.(*corev1.Pod), nil
	})
	var mu sync.Mutex
	destroyed := map[string]int{}
	c, err := deletion.New(get, ports.PolicyHandlerFunc(func(_ context.Context, ev ports.DestroyEvent) error {
		mu.Lock()
		defer mu.Unlock()
		destroyed[ev.PUID]++
		return nil
	}), deletion.Options{NodeName: "node-a", SweepInterval: time.Hour})
	require.NoError(t, err)
	h := &podHandler{engine: c, store: store}
	if source == "cache" {
		h = &podHandler{engine: c, reader: reader}
	}

	web := pod("web", "u-web", "node-a", "", "")
	add(web)
	h.OnAdd(web, false)
	require.Equal(t, 1, c.Len())

	// The pod is deleted: the store has moved on, the handler has not.
	deleting := web.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	del(web)
	c.Sweep(t.Context())
	require.Equal(t, 0, c.Len(), "the sweep destroys the PU of the pod gone from the store")

	h.OnUpdate(web, deleting) // late
	h.OnDelete(deleting)
	// Recreated under the same name: the late add of the old pod is stale.
	recreated := pod("web", "u-web-2", "node-a", "", "")
	add(recreated)
	h.OnAdd(web, false)
	c.Sweep(t.Context())
	mu.Lock()
	assert.Equal(t, map[string]int{"u-web": 1}, destroyed, "each PU destroyed once")
	mu.Unlock()
	assert.Equal(t, 0, c.Len(), "no PU tracked from a late event")

	h.OnAdd(recreated, false)
	assert.Equal(t, []ports.PU{{PUID: "u-web-2", Pod: key("web")}}, deletiontest.PUs(c), "the pod the store holds is tracked")
}
