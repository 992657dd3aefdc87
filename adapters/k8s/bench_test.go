package k8s_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// BenchmarkPodRead measures one read of a realistic pod
// (testdata/realistic-pod.json, created on a real API server with its
// status and managed fields) from a controller-runtime cache, as each
// check of the engine reads it: from a full cache with the deep copy
// NewPodGetter gets by default, and without it (client.UnsafeDisableDeepCopy),
// then from a slim cache (Transform SlimPod) with and without the deep copy
// (SlimPodCacheOptions). It needs the envtest binaries:
//
//	KUBEBUILDER_ASSETS=$PWD/bin/envtest go test -run '^$' -bench PodRead -benchmem ./adapters/k8s/
func BenchmarkPodRead(b *testing.B) {
	needEnv(b)
	ns := newNamespace(b, "bench-read")
	node := "node-" + ns // the caches hold this pod only
	p := fixturePod(b, ns, "web-5d8f9c7b6-x2x9k", node)
	full := fixtureAsDecoded(b)
	p.OwnerReferences, p.ManagedFields = full.OwnerReferences, full.ManagedFields
	require.NoError(b, suite.client.Create(b.Context(), p))
	p.Status = full.Status
	require.NoError(b, suite.client.Status().Update(b.Context(), p))
	key := client.ObjectKeyFromObject(p)

	// Scoped as a node agent's cache is: by node, not by namespace (a
	// cache of DefaultNamespaces asks the REST mapper at every read, about
	// 8 KB and 70 allocations, whatever the pod).
	onNode := func(o cache.Options) cache.Options {
		o, err := k8s.NodeCacheOptions(node, o)
		require.NoError(b, err)
		return o
	}
	pods := &corev1.Pod{}
	caches := []struct {
		name string
		opts cache.Options
		get  []client.GetOption
	}{
		{"Full/DeepCopy", onNode(cache.Options{}), nil},
		{"Full/NoCopy", onNode(cache.Options{}), []client.GetOption{client.UnsafeDisableDeepCopy}},
		{"Slim/DeepCopy", onNode(cache.Options{ByObject: map[client.Object]cache.ByObject{pods: {Transform: k8s.SlimPod}}}), nil},
		{"Slim/NoCopy", k8s.SlimPodCacheOptions(onNode(cache.Options{})), nil},
	}
	for _, tc := range caches {
		c := startCache(b, tc.opts, key)
		b.Run(tc.name, func(b *testing.B) {
			g := k8s.NewPodGetter(getWith{c, tc.get})
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.GetPod(b.Context(), key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// getWith is a client.Reader that adds opts to every Get.
type getWith struct {
	client.Reader
	opts []client.GetOption
}

func (r getWith) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return r.Reader.Get(ctx, key, obj, append(opts, r.opts...)...)
}

// startCache starts a cache built with opts until b ends, and waits until
// it holds the pod key.
func startCache(b *testing.B, opts cache.Options, key types.NamespacedName) cache.Cache {
	b.Helper()
	c, err := cache.New(suite.cfg, opts)
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Start(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
	require.Eventually(b, func() bool { return c.Get(b.Context(), key, &corev1.Pod{}) == nil }, 10*time.Second, time.Millisecond)
	return c
}

// fixtureAsDecoded is the fixture as decoded, for the status, owner and
// managed fields a create of fixturePod leaves out.
func fixtureAsDecoded(b testing.TB) *corev1.Pod {
	b.Helper()
	pod, err := decodePod(readFixture(b))
	require.NoError(b, err)
	return pod
}

func readFixture(b testing.TB) []byte {
	b.Helper()
	data, err := os.ReadFile("testdata/realistic-pod.json")
	require.NoError(b, err)
	return data
}

// decodePod decodes a pod as client-go's deserializer does.
func decodePod(data []byte) (*corev1.Pod, error) {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("decoded a %T", obj)
	}
	return pod, nil
}

// BenchmarkPodStore measures the heap a store of 10,000 realistic pods
// holds, each decoded from testdata/realistic-pod.json (under a name and
// UID of its own) and put through the cache's transform into an indexer
// like an informer's (keyed by namespace/name, indexed by namespace): full
// pods against SlimPod's. Each iteration fills a store; heap-B/pod is the
// live heap after a GC divided by the pods held. No API server needed:
//
//	go test -run '^$' -bench PodStore -benchtime 1x ./adapters/k8s/
func BenchmarkPodStore(b *testing.B) {
	const pods = 10_000
	data := readFixture(b)
	for _, tc := range []struct {
		name      string
		transform toolscache.TransformFunc
	}{
		{"Full", nil},
		{"Slim", k8s.SlimPod},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var perPod float64
			for b.Loop() {
				before := liveHeap()
				store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
				for i := range pods {
					pod, err := decodePod(data)
					if err != nil {
						b.Fatal(err)
					}
					pod.Name = fmt.Sprintf("web-5d8f9c7b6-%05d", i)
					pod.UID = types.UID(fmt.Sprintf("9a3b6c2e-4f1d-4b7a-8e2c-%012d", i))
					var obj any = pod
					if tc.transform != nil {
						if obj, err = tc.transform(obj); err != nil {
							b.Fatal(err)
						}
					}
					if err := store.Add(obj); err != nil {
						b.Fatal(err)
					}
				}
				perPod = float64(liveHeap()-before) / pods
				runtime.KeepAlive(store)
			}
			b.ReportMetric(perPod, "heap-B/pod")
		})
	}
}

// liveHeap returns the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
