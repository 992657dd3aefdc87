package k8s

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

const sandboxAnnotation = "test.podsweeper.io/sandbox"

// fakeEngine records what the handler asks of the engine.
type fakeEngine struct {
	mu       sync.Mutex
	tracked  []deletion.Entry
	triggers []types.NamespacedName
}

func (f *fakeEngine) Track(e deletion.Entry) error {
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

func (f *fakeEngine) calls() ([]deletion.Entry, []types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]deletion.Entry(nil), f.tracked...), append([]types.NamespacedName(nil), f.triggers...)
}

var annotationExtractor = ports.SandboxExtractorFunc(func(_ context.Context, pod *corev1.Pod) (string, error) {
	return pod.Annotations[sandboxAnnotation], nil
})

func newHandler(t *testing.T, ex ports.SandboxExtractor) (*podHandler, *fakeEngine) {
	t.Helper()
	f := &fakeEngine{}
	return &podHandler{ctx: t.Context(), engine: f, node: "node-a", extractor: ex, timeout: time.Second}, f
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
	h, f := newHandler(t, annotationExtractor)
	done := pod("done", "u-done", "node-a", "sb-done", "1")
	done.Status.Phase = corev1.PodSucceeded

	h.OnAdd(pod("web", "u-web", "node-a", "sb-1", "1"), true)
	h.OnAdd(pod("unbound", "u-unbound", "", "", "1"), false)
	h.OnAdd(pod("elsewhere", "u-elsewhere", "node-b", "sb-2", "1"), false)
	h.OnAdd(done, false)
	h.OnAdd(&corev1.Node{}, false) // not a pod: ignored, no panic

	tracked, triggers := f.calls()
	assert.Equal(t, []deletion.Entry{
		{PUID: "u-web", Pod: key("web"), SandboxID: "sb-1"},
		{PUID: "u-done", Pod: key("done"), SandboxID: "sb-done"},
	}, tracked)
	assert.Empty(t, triggers)
}

func TestHandlerTracksAPodOnceItIsBound(t *testing.T) {
	h, f := newHandler(t, nil)
	h.OnUpdate(pod("web", "u-web", "", "", "1"), pod("web", "u-web", "node-a", "", "2"))
	tracked, triggers := f.calls()
	assert.Equal(t, []deletion.Entry{{PUID: "u-web", Pod: key("web")}}, tracked)
	assert.Empty(t, triggers)
}

func TestHandlerTriggersOnSandboxChangeOnly(t *testing.T) {
	h, f := newHandler(t, annotationExtractor)
	h.OnUpdate(pod("web", "u-web", "node-a", "sb-1", "1"), pod("web", "u-web", "node-a", "sb-1", "2")) // status change
	h.OnUpdate(pod("web", "u-web", "node-a", "sb-1", "2"), pod("web", "u-web", "node-a", "sb-1", "2")) // resync
	_, triggers := f.calls()
	assert.Empty(t, triggers)

	h.OnUpdate(pod("web", "u-web", "node-a", "sb-1", "2"), pod("web", "u-web", "node-a", "sb-2", "3"))
	tracked, triggers := f.calls()
	assert.Equal(t, []types.NamespacedName{key("web")}, triggers)
	// Track is insert-only in the engine: the handler reports what it sees.
	assert.Equal(t, "sb-2", tracked[len(tracked)-1].SandboxID)
}

func TestHandlerTriggersWhenThePodWasReplaced(t *testing.T) {
	// After a relist the informer reports a pod recreated under the same
	// name as an update from the old pod to the new one.
	h, f := newHandler(t, nil)
	h.OnUpdate(pod("web", "u-old", "node-a", "", "1"), pod("web", "u-new", "node-a", "", "5"))
	tracked, triggers := f.calls()
	assert.Equal(t, []deletion.Entry{{PUID: "u-new", Pod: key("web")}}, tracked)
	assert.Equal(t, []types.NamespacedName{key("web")}, triggers)
}

func TestHandlerTriggersOnDeleteAndTombstones(t *testing.T) {
	h, f := newHandler(t, nil)
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

func TestHandlerTracksWithoutSandboxWhenTheExtractorFails(t *testing.T) {
	for name, ex := range map[string]ports.SandboxExtractorFunc{
		"error": func(context.Context, *corev1.Pod) (string, error) { return "sb-x", errors.New("runtime down") },
		"panic": func(context.Context, *corev1.Pod) (string, error) { panic("extractor bug") },
	} {
		t.Run(name, func(t *testing.T) {
			h, f := newHandler(t, ex)
			h.OnAdd(pod("web", "u-web", "node-a", "", "1"), false)
			tracked, _ := f.calls()
			assert.Equal(t, []deletion.Entry{{PUID: "u-web", Pod: key("web")}}, tracked)
		})
	}
}

func TestHandlerDoesNotWaitForAHungExtractor(t *testing.T) {
	release := make(chan struct{})
	returned := make(chan struct{})
	hung := ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) {
		defer close(returned)
		<-release // ignores its context
		return "sb-late", nil
	})
	h, f := newHandler(t, hung)
	h.timeout = 50 * time.Millisecond

	start := time.Now()
	h.OnAdd(pod("web", "u-web", "node-a", "", "1"), false)
	assert.Less(t, time.Since(start), time.Second)
	tracked, _ := f.calls()
	assert.Equal(t, []deletion.Entry{{PUID: "u-web", Pod: key("web")}}, tracked)

	close(release)
	<-returned
}

func TestHandlerFeedsARealEngine(t *testing.T) {
	c, err := deletion.New(ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
		return nil, ports.ErrPodNotFound
	}), ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil }), deletion.Options{})
	require.NoError(t, err)
	h := &podHandler{ctx: t.Context(), engine: c, node: "node-a", extractor: annotationExtractor, timeout: time.Second}

	h.OnAdd(pod("web", "u-web", "node-a", "sb-1", "1"), false)
	h.OnUpdate(pod("web", "u-web", "node-a", "sb-1", "1"), pod("web", "u-web", "node-a", "sb-1", "2"))
	h.OnAdd(pod("bad", "", "node-a", "", "1"), false) // no UID: the engine refuses it, the handler logs and goes on
	assert.Equal(t, []deletion.Entry{{PUID: "u-web", Pod: key("web"), SandboxID: "sb-1"}}, c.Pending())
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
	r := &nodeRunnable{engine: c, informer: inf, opts: SetupOptions{ExtractTimeout: time.Second}}
	assert.False(t, r.NeedLeaderElection())

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
	assert.Equal(t, []deletion.Entry{{PUID: "u-mine", Pod: key("mine")}}, c.Pending())

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

func TestHandlerTracksOnlyThePodsTheFilterAccepts(t *testing.T) {
	h, f := newHandler(t, nil)
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
	assert.Equal(t, []deletion.Entry{{PUID: "u-web", Pod: key("web")}}, tracked)
	assert.Empty(t, triggers, "updates of rejected pods trigger nothing")

	// Deletes trigger whatever the filter says: a PU the agent tracked
	// itself goes with its pod.
	h.OnDelete(hostNet)
	_, triggers = f.calls()
	assert.Equal(t, []types.NamespacedName{key("cilium")}, triggers)
}

func TestHandlerTriggersWhenAPodIsReplacedByARejectedOne(t *testing.T) {
	h, f := newHandler(t, nil)
	h.filter = PodsWithOwnNetwork
	replaced := pod("web", "u-new", "node-a", "", "5")
	replaced.Spec.HostNetwork = true
	h.OnUpdate(pod("web", "u-old", "node-a", "", "1"), replaced)
	tracked, triggers := f.calls()
	assert.Empty(t, tracked)
	assert.Equal(t, []types.NamespacedName{key("web")}, triggers, "the old pod's PU is checked at once")
}

func TestHandlerSkipsAPodWhoseFilterPanics(t *testing.T) {
	h, f := newHandler(t, nil)
	h.filter = func(p *corev1.Pod) bool {
		if p.Name == "bad" {
			panic("filter bug")
		}
		return true
	}
	h.OnAdd(pod("bad", "u-bad", "node-a", "", "1"), false)
	h.OnAdd(pod("good", "u-good", "node-a", "", "1"), false)
	tracked, _ := f.calls()
	assert.Equal(t, []deletion.Entry{{PUID: "u-good", Pod: key("good")}}, tracked)
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
