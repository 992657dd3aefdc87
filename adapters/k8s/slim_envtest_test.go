package k8s_test

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/ports"
)

// fixturePod is testdata/realistic-pod.json as a new pod to create: named
// name, in ns, bound to node, without what the API server sets.
func fixturePod(t testing.TB, ns, name, node string) *corev1.Pod {
	t.Helper()
	data, err := os.ReadFile("testdata/realistic-pod.json")
	require.NoError(t, err)
	var p corev1.Pod
	require.NoError(t, json.Unmarshal(data, &p))
	p.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: name, Labels: p.Labels, Annotations: p.Annotations}
	p.Spec.NodeName = node
	p.Status = corev1.PodStatus{}
	return &p
}

// runtimeByUID stands for a container runtime: it knows each pod's sandbox
// by the pod's UID, the one field of a pod adapters/cri's extractor reads.
type runtimeByUID struct {
	mu        sync.Mutex
	sandboxes map[types.UID]string
}

func (r *runtimeByUID) set(uid types.UID, sandbox string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sandboxes == nil {
		r.sandboxes = map[types.UID]string{}
	}
	r.sandboxes[uid] = sandbox
}

func (r *runtimeByUID) SandboxID(_ context.Context, pod *corev1.Pod) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sandboxes[pod.UID], nil
}

// A node agent whose manager's pod cache is slim tracks, confirms and
// destroys as with full pods: it skips the pods PodsWithOwnNetwork
// rejects, records the sandbox the runtime reports, destroys a replaced
// sandbox's PU and requeues a pod of its own to the main controller, and
// destroys a deleted pod's PU once the API server confirms it gone. Every
// reader of that cache sees slim pods.
func TestEnvtestSlimPodCacheTracksAndDestroys(t *testing.T) {
	rt := &runtimeByUID{}
	requeued := make(chan *corev1.Pod, 4)
	n := startNode(t, "slim-cache", nodeOptions{
		slim:      true,
		confirm:   true,
		filter:    k8s.PodsWithOwnNetwork,
		extractor: rt,
		requeuer: ports.RequeuerFunc(func(_ context.Context, pod *corev1.Pod) error {
			requeued <- pod
			return nil
		}),
	})
	hostNet := fixturePod(t, n.ns, "node-exporter", n.name)
	hostNet.Spec.HostNetwork = true
	require.NoError(t, suite.client.Create(t.Context(), hostNet))
	web := fixturePod(t, n.ns, "web", n.name)
	require.NoError(t, suite.client.Create(t.Context(), web))
	rt.set(web.UID, "sb1")
	n.engine.TriggerPod(client.ObjectKeyFromObject(web)) // its add's check may have come first

	require.Eventually(t, func() bool { e, ok := n.entry(web.UID); return ok && e.SandboxID == "sb1" }, 10*time.Second, 5*time.Millisecond,
		"the PU is tracked and its sandbox recorded")
	_, tracked := n.entry(hostNet.UID)
	assert.False(t, tracked, "the filter reads hostNetwork on the slim pod")

	// What every reader of the manager's cache now gets.
	var cached corev1.Pod
	require.NoError(t, n.mgr.GetCache().Get(t.Context(), client.ObjectKeyFromObject(web), &cached))
	assert.Equal(t, web.UID, cached.UID)
	assert.Equal(t, n.name, cached.Spec.NodeName)
	assert.Empty(t, cached.Labels, "another reader of the cache sees no labels")
	assert.Empty(t, cached.Spec.Containers)
	assert.Empty(t, cached.ManagedFields)

	// The sandbox is replaced: the PU goes, and the pod is requeued.
	rt.set(web.UID, "sb2")
	n.engine.TriggerPod(client.ObjectKeyFromObject(web))
	ev := n.waitDestroyed(web.UID, 5*time.Second)
	assert.Equal(t, ports.DestroyEvent{PUID: string(web.UID), Pod: client.ObjectKeyFromObject(web), SandboxID: "sb1", Reason: ports.ReasonSandboxChanged}, ev)
	var got *corev1.Pod
	select {
	case got = <-requeued:
	case <-time.After(5 * time.Second):
		t.Fatal("the pod was not requeued")
	}
	assert.Equal(t, web.UID, got.UID)
	got.Spec.NodeName = "changed by the main controller"
	require.NoError(t, n.mgr.GetCache().Get(t.Context(), client.ObjectKeyFromObject(web), &cached))
	assert.Equal(t, n.name, cached.Spec.NodeName, "the requeued pod is a copy: the cache's is unchanged")

	// The main controller tracks the new sandbox's PU; the pod is deleted:
	// the cache says gone, the API server confirms, the PU goes.
	require.NoError(t, n.engine.Track(ports.PU{PUID: string(web.UID), Pod: client.ObjectKeyFromObject(web), SandboxID: "sb2"}))
	n.deletePod(web)
	require.Eventually(t, func() bool { return len(n.policy.of(web.UID)) == 2 }, 5*time.Second, 5*time.Millisecond, "the deleted pod's PU is destroyed")
	assert.Equal(t, ports.ReasonPodGone, n.policy.of(web.UID)[1].Reason)
	assert.Zero(t, n.engine.Len())
	assert.Len(t, n.policy.events(), 2, "each PU destroyed once, the host-network pod's never")
}

// The pattern for an agent whose other readers need full pods: the
// manager's cache stays full, podsweeper reads a slim cache of its own
// (SetupOptions.Cache, NewPodGetter over it), and both work.
func TestEnvtestOwnSlimPodCacheBesideAFullOne(t *testing.T) {
	n := startNode(t, "own-cache", nodeOptions{ownCache: true, confirm: true})
	web := fixturePod(t, n.ns, "web", n.name)
	require.NoError(t, suite.client.Create(t.Context(), web))
	n.waitTracked(web.UID)

	key := client.ObjectKeyFromObject(web)
	var full, slim corev1.Pod
	require.NoError(t, n.mgr.GetCache().Get(t.Context(), key, &full))
	assert.Equal(t, "web", full.Labels["app.kubernetes.io/name"], "the manager's readers still see labels")
	assert.Len(t, full.Spec.Containers, 2)
	require.NoError(t, n.podCache.Get(t.Context(), key, &slim))
	assert.Empty(t, slim.Labels, "podsweeper's cache is slim")
	assert.Equal(t, web.UID, slim.UID)

	n.deletePod(web)
	ev := n.waitDestroyed(web.UID, 5*time.Second)
	assert.Equal(t, ports.ReasonPodGone, ev.Reason)
	assert.Len(t, n.policy.events(), 1)
}
