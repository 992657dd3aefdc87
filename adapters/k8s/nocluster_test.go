package k8s_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// The wiring tested without an API server: a manager whose RESTMapper
// knows Pod without asking discovery, and whose cache is controller-runtime's
// fake informers (the test sends the pod events) over a fake client (the
// engine's reads). docs/sdk/testing-wiring.md quotes this file.

// noAPIServer is the config of a manager that has no API server: nothing
// listens on port 1.
func noAPIServer() *rest.Config { return &rest.Config{Host: "https://127.0.0.1:1"} }

// docs:begin testing-wiring-3
// staticMapper is a manager.Options.MapperProvider that needs no API
// server: a RESTMapper that knows the one kind the wiring watches, Pod.
func staticMapper(*rest.Config, *http.Client) (meta.RESTMapper, error) {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	return m, nil
}

// docs:end testing-wiring-3

// TestNewManagerWithNodeCacheOptionsNeedsAStaticRESTMapper: against no
// API server, a manager whose cache has NodeCacheOptions' pod selector is
// not even created: the cache asks the RESTMapper whether pods are
// namespaced, and the default one asks the API server's discovery. A
// static RESTMapper answers without it.
func TestNewManagerWithNodeCacheOptionsNeedsAStaticRESTMapper(t *testing.T) {
	cacheOpts, err := k8s.NodeCacheOptions("node-a", cache.Options{})
	require.NoError(t, err)

	_, err = manager.New(noAPIServer(), manager.Options{
		Cache:   cacheOpts,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Logger:  logr.Discard(),
	})
	require.EqualError(t, err, `failed to determine if *v1.Pod is namespaced: failed to get restmapping: failed to get server groups: Get "https://127.0.0.1:1/api": dial tcp 127.0.0.1:1: connect: connection refused`)

	_, err = manager.New(noAPIServer(), manager.Options{
		Cache:          cacheOpts,
		MapperProvider: staticMapper,
		Metrics:        metricsserver.Options{BindAddress: "0"},
		Logger:         logr.Discard(),
	})
	require.NoError(t, err)
}

// TestSetupWithManagerNeedsAStaticRESTMapper: against no API server, a
// manager without a pod selector is created, but SetupWithManager fails:
// the pod informer it asks the cache for needs the RESTMapper, whose
// default asks discovery. With a static RESTMapper it succeeds, but the
// manager's real cache would list the pods from the API server once
// started: only a fake cache (TestSetupWithManagerWithoutAnAPIServer)
// lets the wiring run.
func TestSetupWithManagerNeedsAStaticRESTMapper(t *testing.T) {
	for name, tc := range map[string]struct {
		mapper func(*rest.Config, *http.Client) (meta.RESTMapper, error)
		want   string // "": no error
	}{
		"discovery":     {want: `k8s: getting the pod informer: failed to get server groups: Get "https://127.0.0.1:1/api": dial tcp 127.0.0.1:1: connect: connection refused`},
		"static mapper": {mapper: staticMapper},
	} {
		t.Run(name, func(t *testing.T) {
			mgr, err := manager.New(noAPIServer(), manager.Options{
				MapperProvider: tc.mapper,
				Metrics:        metricsserver.Options{BindAddress: "0"},
				Logger:         logr.Discard(),
			})
			require.NoError(t, err, "creating the manager contacts no API server")
			engine, err := deletion.New(k8s.NewPodGetter(mgr.GetCache()), &destroyed{}, deletion.Options{NodeName: "node-a"})
			require.NoError(t, err)

			err = k8s.SetupWithManager(mgr, engine, k8s.SetupOptions{})

			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.want)
		})
	}
}

// docs:begin testing-wiring-4
// fakeCache is a cache.Cache without an API server: controller-runtime's
// fake informers, whose events the test sends (FakeInformerFor), and the
// objects of a fake client, which Get and List read. The fake informers'
// own Get answers an empty pod for every key, and List nothing: an engine
// reading pods from the manager's cache would find none of them.
type fakeCache struct {
	*informertest.FakeInformers
	objects client.Client
}

// Get reads the fake client's object.
func (c fakeCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.objects.Get(ctx, key, obj, opts...)
}

// List lists the fake client's objects.
func (c fakeCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.objects.List(ctx, list, opts...)
}

// fakeManager returns a manager that needs no API server, and its cache.
func fakeManager(t *testing.T) (manager.Manager, fakeCache) {
	t.Helper()
	pods := fakeCache{FakeInformers: &informertest.FakeInformers{}, objects: fake.NewClientBuilder().Build()}
	mgr, err := manager.New(noAPIServer(), manager.Options{
		MapperProvider: staticMapper,
		NewCache:       func(*rest.Config, cache.Options) (cache.Cache, error) { return pods, nil },
		Metrics:        metricsserver.Options{BindAddress: "0"},
		Logger:         logr.Discard(),
	})
	require.NoError(t, err)
	return mgr, pods
}

// docs:end testing-wiring-4

// startManager starts mgr until the test ends, and waits until engine
// runs: the wiring then watches the pod informer.
func startManager(t *testing.T, mgr manager.Manager, engine *deletion.Engine) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("manager: %v", err)
		}
	})
	require.Eventually(t, func() bool { return engine.ReadinessCheck(nil) == nil }, 10*time.Second, 5*time.Millisecond,
		"the engine starts once the wiring's handler is registered")
}

// destroyed is a PolicyHandler that records what it destroys.
type destroyed struct {
	mu     sync.Mutex
	events []ports.DestroyEvent
}

// DestroyPU records ev.
func (d *destroyed) DestroyPU(_ context.Context, ev ports.DestroyEvent) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.events = append(d.events, ev)
	return nil
}

// list returns what was destroyed.
func (d *destroyed) list() []ports.DestroyEvent {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]ports.DestroyEvent(nil), d.events...)
}

// docs:begin testing-wiring-5
// TestSetupWithManagerWithoutAnAPIServer: with a static RESTMapper and a
// fake cache, SetupWithManager wires the engine into a manager that has no
// API server; a pod of the node added by the fake informer is tracked, and
// once deleted its PU is destroyed as PodGone.
func TestSetupWithManagerWithoutAnAPIServer(t *testing.T) {
	mgr, pods := fakeManager(t)
	policy := &destroyed{}
	engine, err := deletion.New(k8s.NewPodGetter(mgr.GetCache()), policy, deletion.Options{NodeName: "node-a"})
	require.NoError(t, err)
	require.NoError(t, k8s.SetupWithManager(mgr, engine, k8s.SetupOptions{}))
	informer, err := pods.FakeInformerFor(t.Context(), &corev1.Pod{})
	require.NoError(t, err)
	startManager(t, mgr, engine)

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart-0", UID: "uid-1"},
		Spec:       corev1.PodSpec{NodeName: "node-a"},
	}
	require.NoError(t, pods.objects.Create(t.Context(), pod))
	informer.Add(pod)
	require.Eventually(t, func() bool { return engine.Len() == 1 }, 10*time.Second, 5*time.Millisecond, "the pod's PU is tracked")

	require.NoError(t, pods.objects.Delete(t.Context(), pod))
	informer.Delete(pod)
	require.Eventually(t, func() bool { return len(policy.list()) == 1 }, 10*time.Second, 5*time.Millisecond, "the PU is destroyed")
	assert.Equal(t, ports.DestroyEvent{PUID: "uid-1", Pod: client.ObjectKeyFromObject(pod), Reason: ports.ReasonPodGone}, policy.list()[0])
	assert.Zero(t, engine.Len())
}

// docs:end testing-wiring-5

// TestSetupClusterWithManagerWithoutAnAPIServer: the same for a
// cluster-wide engine (no node), which tracks the pods of every node; a
// manager without leader election runs it at once.
func TestSetupClusterWithManagerWithoutAnAPIServer(t *testing.T) {
	mgr, pods := fakeManager(t)
	policy := &destroyed{}
	engine, err := deletion.New(k8s.NewPodGetter(mgr.GetCache()), policy, deletion.Options{})
	require.NoError(t, err)
	require.NoError(t, k8s.SetupClusterWithManager(mgr, engine, k8s.SetupOptions{}))
	informer, err := pods.FakeInformerFor(t.Context(), &corev1.Pod{})
	require.NoError(t, err)
	startManager(t, mgr, engine)

	var created []*corev1.Pod
	for _, node := range []string{"node-a", "node-b"} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart-" + node, UID: types.UID("uid-" + node)},
			Spec:       corev1.PodSpec{NodeName: node},
		}
		require.NoError(t, pods.objects.Create(t.Context(), pod))
		informer.Add(pod)
		created = append(created, pod)
	}
	require.Eventually(t, func() bool { return engine.Len() == 2 }, 10*time.Second, 5*time.Millisecond, "the PUs of both nodes' pods are tracked")

	require.NoError(t, pods.objects.Delete(t.Context(), created[1]))
	informer.Delete(created[1])
	require.Eventually(t, func() bool { return len(policy.list()) == 1 }, 10*time.Second, 5*time.Millisecond, "the PU is destroyed")
	assert.Equal(t, "uid-node-b", policy.list()[0].PUID)
	assert.Equal(t, 1, engine.Len())
}

// docs:begin testing-wiring-6
// TestSetupWithManagerWithControllerRuntimesFakes: with controller-runtime's
// own fakes as the manager's cache (informertest.FakeInformers, whose Get
// answers an empty pod, and controllertest.FakeInformer, which has no
// store), the wiring tracks the pods the fake informer adds: an answer that
// cannot tell whether the event is stale is not taken for a stale one. The
// engine reads pods through a fake client the test keeps.
func TestSetupWithManagerWithControllerRuntimesFakes(t *testing.T) {
	fakes := &informertest.FakeInformers{}
	mgr, err := manager.New(noAPIServer(), manager.Options{
		MapperProvider: staticMapper,
		NewCache:       func(*rest.Config, cache.Options) (cache.Cache, error) { return fakes, nil },
		Metrics:        metricsserver.Options{BindAddress: "0"},
		Logger:         logr.Discard(),
	})
	require.NoError(t, err)
	pods := fake.NewClientBuilder().Build()
	policy := &destroyed{}
	engine, err := deletion.New(k8s.NewPodGetter(pods), policy, deletion.Options{NodeName: "node-a"})
	require.NoError(t, err)
	require.NoError(t, k8s.SetupWithManager(mgr, engine, k8s.SetupOptions{}))
	informer, err := fakes.FakeInformerFor(t.Context(), &corev1.Pod{})
	require.NoError(t, err)
	startManager(t, mgr, engine)

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart-0", UID: "uid-1"},
		Spec:       corev1.PodSpec{NodeName: "node-a"},
	}
	require.NoError(t, pods.Create(t.Context(), pod))
	informer.Add(pod)
	require.Eventually(t, func() bool { return engine.Len() == 1 }, 10*time.Second, 5*time.Millisecond, "the pod's PU is tracked")

	require.NoError(t, pods.Delete(t.Context(), pod))
	informer.Delete(pod)
	require.Eventually(t, func() bool { return len(policy.list()) == 1 }, 10*time.Second, 5*time.Millisecond, "the PU is destroyed")
	assert.Equal(t, ports.DestroyEvent{PUID: "uid-1", Pod: client.ObjectKeyFromObject(pod), Reason: ports.ReasonPodGone}, policy.list()[0])
}

// docs:end testing-wiring-6
