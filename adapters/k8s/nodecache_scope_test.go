package k8s_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// podRequests is an API server that answers every LIST of pods with an
// empty list and every WATCH with an empty stream, and records the field
// selector of each: what a controller-runtime cache really asks for.
type podRequests struct {
	mu        sync.Mutex
	selectors []string
}

func (p *podRequests) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.selectors = append(p.selectors, r.URL.Path+"?fieldSelector="+r.URL.Query().Get("fieldSelector"))
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Query().Get("watch") == "true" {
		return // an empty stream: the watch ends
	}
	_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`))
}

func (p *podRequests) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.selectors...)
}

// requestedPodSelectors starts a cache with opts against a recording API
// server and returns the selectors of its first requests for pods.
func requestedPodSelectors(t *testing.T, opts cache.Options) []string {
	t.Helper()
	api := &podRequests{}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	cfg := &rest.Config{Host: srv.URL}
	mapper, err := staticMapper(cfg, nil)
	require.NoError(t, err)
	opts.Mapper = mapper
	c, err := cache.New(cfg, opts)
	require.NoError(t, err)
	_, err = c.GetInformer(t.Context(), &corev1.Pod{}, cache.BlockUntilSynced(false))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool { return len(api.seen()) > 0 }, 10*time.Second, 5*time.Millisecond, "the cache asks for pods")
	// Synced before it stops: a multi-namespace informer stopped unsynced
	// leaves a goroutine of controller-runtime's waiting for good.
	require.True(t, c.WaitForCacheSync(ctx), "the cache syncs on the empty lists")
	return api.seen()
}

// NodeCacheOptions promises a pod cache that holds only the pods bound to
// the node, "a pod selector already in opts.ByObject ... kept and combined
// with the node selector". A namespace's own field selector (in
// ByObject[pod].Namespaces or in DefaultNamespaces, which controller-runtime
// prefers to the type's) replaces the node's instead: every agent of a
// DaemonSet then lists and watches every pod of that namespace, on every
// node of the cluster.
func TestNodeCacheOptionsScopesEveryNamespaceToTheNode(t *testing.T) {
	notDone := fields.OneTermNotEqualSelector("status.phase", "Succeeded")
	for name, in := range map[string]cache.Options{
		"the type's selector (kept today)": {ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Field: notDone}}},
		"DefaultNamespaces":                {DefaultNamespaces: map[string]cache.Config{"team-a": {FieldSelector: notDone}}},
		"ByObject.Namespaces": {ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Namespaces: map[string]cache.Config{"team-a": {FieldSelector: notDone}}},
		}},
		"DefaultFieldSelector": {DefaultFieldSelector: notDone},
		// Set, it wins over the type's selector, though it selects everything.
		"a namespace's fields.Everything()": {DefaultNamespaces: map[string]cache.Config{"team-a": {FieldSelector: fields.Everything()}}},
		"slim, then the node":               {DefaultNamespaces: map[string]cache.Config{"team-a": {FieldSelector: notDone}}},
		// A namespace of the type's Namespaces with no selector of its own
		// takes DefaultNamespaces' for it when the type has none
		// (controller-runtime's defaultOpts, step 2, before the global
		// DefaultFieldSelector): the type's selector NodeCacheOptions sets
		// takes its place instead, and the caller's selector is dropped.
		"ByObject.Namespaces without a selector, DefaultNamespaces' own": {
			DefaultNamespaces: map[string]cache.Config{"team-a": {FieldSelector: notDone}},
			ByObject: map[client.Object]cache.ByObject{
				&corev1.Pod{}: {Namespaces: map[string]cache.Config{"team-a": {}}},
			},
		},
		"ByObject.Namespaces without a selector, DefaultNamespaces' own over DefaultFieldSelector": {
			DefaultFieldSelector: fields.OneTermNotEqualSelector("status.phase", "Failed"),
			DefaultNamespaces:    map[string]cache.Config{"team-a": {FieldSelector: notDone}},
			ByObject: map[client.Object]cache.ByObject{
				&corev1.Pod{}: {Namespaces: map[string]cache.Config{"team-a": {}}},
			},
		},
		"the node, then slim": {DefaultNamespaces: map[string]cache.Config{"team-a": {FieldSelector: notDone}}},
	} {
		t.Run(name, func(t *testing.T) {
			if name == "slim, then the node" {
				in = k8s.SlimPodCacheOptions(in)
			}
			opts, err := k8s.NodeCacheOptions("node-a", in)
			require.NoError(t, err)
			if name == "the node, then slim" {
				opts = k8s.SlimPodCacheOptions(opts)
			}
			req := requestedPodSelectors(t, opts)[0]
			assert.Contains(t, req, "spec.nodeName=node-a", "a request for the pods of every node")
			if name != "a namespace's fields.Everything()" {
				assert.Contains(t, req, "status.phase!=Succeeded", "the caller's selector is kept")
			}
		})
	}
}

// controller-runtime keys its caches of ByObject by GVK, not by Go type: a
// caller's pod entry keyed by a *metav1.PartialObjectMetadata or an
// *unstructured.Unstructured of kind Pod is the pods' entry too.
// NodeCacheOptions sees only a *corev1.Pod key and adds one beside it: two
// entries for one GVK, and which of them builds the pod informer depends on
// map order. When the caller's wins, the cache lists and watches every pod
// of the cluster. Each cache is started until one asks for pods without the
// node (about one in eight today).
func TestNodeCacheOptionsScopesAPodEntryOfAnotherGoType(t *testing.T) {
	app := labels.SelectorFromSet(labels.Set{"app": "agent"})
	unstructuredPod := &unstructured.Unstructured{}
	unstructuredPod.SetAPIVersion("v1")
	unstructuredPod.SetKind("Pod")
	for name, key := range map[string]client.Object{
		"PartialObjectMetadata": &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}},
		"Unstructured":          unstructuredPod,
	} {
		t.Run(name, func(t *testing.T) {
			for i := 0; i < 100 && !t.Failed(); i++ {
				t.Run(fmt.Sprint(i), func(t *testing.T) {
					opts, err := k8s.NodeCacheOptions("node-a", cache.Options{
						ByObject: map[client.Object]cache.ByObject{key: {Label: app}},
					})
					require.NoError(t, err)
					assert.Contains(t, requestedPodSelectors(t, opts)[0], "spec.nodeName=node-a", "a request for the pods of every node")
				})
			}
		})
	}
}
