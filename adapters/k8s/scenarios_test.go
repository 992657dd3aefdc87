package k8s_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

const sandboxAnnotation = "test.podsweeper.io/sandbox"

// annotationExtractor stands for a container runtime: it reads the sandbox from an annotation.
var annotationExtractor = ports.SandboxExtractorFunc(func(_ context.Context, pod *corev1.Pod) (string, error) {
	return pod.Annotations[sandboxAnnotation], nil
})

// docs:begin testing-wiring-2
// Scenario 1: a deleted pod's PU is destroyed at once, without a sweep.
func TestEnvtestDeletedPodIsDestroyedAtOnce(t *testing.T) {
	n := startNode(t, "s1-delete", nodeOptions{}) // sweeps an hour apart: only the delete can cause the check
	p := n.createPod("web", n.name, nil)
	n.waitTracked(p.UID)

	start := time.Now()
	n.deletePod(p)
	ev := n.waitDestroyed(p.UID, 2*time.Second)
	t.Logf("PU destroyed %v after the delete call", time.Since(start))

	assert.Equal(t, ports.DestroyEvent{PUID: string(p.UID), Pod: client.ObjectKeyFromObject(p), Reason: ports.ReasonPodGone}, ev)
	assert.Len(t, n.policy.events(), 1)
	assert.Zero(t, n.engine.Len())
}

// docs:end testing-wiring-2

// Scenario 2: a pod deleted and recreated under the same name. The old PU
// goes for UIDChanged, the new pod is tracked.
func TestEnvtestRecreatedPodReplacesItsPU(t *testing.T) {
	// The delete triggers a check at once; had it run before the new pod
	// arrived, the pod would simply read as gone (PodGone). Holding the
	// checks until the new pod is tracked reproduces an agent that learns of
	// the delete late, and shows the check telling the new pod from the old.
	gate := make(chan struct{})
	n := startNode(t, "s2-recreate", nodeOptions{
		wrapGetter: func(next ports.PodGetter) ports.PodGetter {
			return ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
				select {
				case <-gate:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return next.GetPod(ctx, key)
			})
		},
	})
	old := n.createPod("db-0", n.name, nil)
	n.waitTracked(old.UID)

	n.deletePod(old)
	recreated := n.createPod("db-0", n.name, nil)
	require.NotEqual(t, old.UID, recreated.UID)
	n.waitTracked(recreated.UID)
	close(gate)

	ev := n.waitDestroyed(old.UID, 5*time.Second)
	assert.Equal(t, ports.ReasonUIDChanged, ev.Reason)
	assert.Equal(t, client.ObjectKeyFromObject(old), ev.Pod)
	// The check of the new PU (triggered along with the old one) keeps it.
	n.engine.Sweep(t.Context())
	assert.Empty(t, n.policy.of(recreated.UID))
	assert.Len(t, n.policy.events(), 1)
	_, tracked := n.entry(recreated.UID)
	assert.True(t, tracked)
}

// Scenario 3: the pod's sandbox changes. The old PU goes for
// SandboxChanged, and the main controller, watching the requeue channel
// through source.Channel, reconciles the pod and tracks the new PU.
func TestEnvtestSandboxChangeRequeuesThePod(t *testing.T) {
	requeue := make(chan event.GenericEvent)
	reconciled := make(chan reconcile.Request, 16)
	n := startNode(t, "s3-sandbox", nodeOptions{
		extractor: annotationExtractor,
		requeuer:  k8s.NewChannelRequeuer(requeue),
		setup: func(n *node) error {
			// The node agent's main controller: it creates the PU of the
			// pod's current sandbox and tracks it.
			main := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				pod := &corev1.Pod{}
				if err := n.mgr.GetClient().Get(ctx, req.NamespacedName, pod); err != nil {
					return reconcile.Result{}, client.IgnoreNotFound(err)
				}
				err := n.engine.Track(ports.PU{PUID: string(pod.UID), Pod: req.NamespacedName, SandboxID: pod.Annotations[sandboxAnnotation]})
				reconciled <- req
				return reconcile.Result{}, err
			})
			return builder.ControllerManagedBy(n.mgr).
				Named("main-" + n.ns).
				WatchesRawSource(source.Channel(requeue, &handler.EnqueueRequestForObject{})).
				Complete(main)
		},
	})
	p := n.createPod("web", n.name, map[string]string{sandboxAnnotation: "sb-1"})
	// Tracked without a sandbox, then the check the add triggers records
	// it (row 7): the sweep is an hour away.
	n.waitTracked(p.UID)
	require.Eventually(t, func() bool {
		e, ok := n.entry(p.UID)
		return ok && e.SandboxID == "sb-1"
	}, 10*time.Second, 5*time.Millisecond, "the first sandbox is never recorded")

	patch := client.MergeFrom(p.DeepCopy())
	p.Annotations[sandboxAnnotation] = "sb-2"
	require.NoError(t, suite.client.Patch(t.Context(), p, patch))

	ev := n.waitDestroyed(p.UID, 5*time.Second)
	assert.Equal(t, ports.DestroyEvent{PUID: string(p.UID), Pod: client.ObjectKeyFromObject(p), SandboxID: "sb-1", Reason: ports.ReasonSandboxChanged}, ev)
	select {
	case req := <-reconciled:
		assert.Equal(t, client.ObjectKeyFromObject(p), req.NamespacedName)
	case <-time.After(5 * time.Second):
		t.Fatal("the main controller never reconciled the requeued pod")
	}
	require.Eventually(t, func() bool {
		e, ok := n.entry(p.UID)
		return ok && e.SandboxID == "sb-2"
	}, 5*time.Second, 5*time.Millisecond, "the new sandbox's PU is not tracked")
	assert.Len(t, n.policy.events(), 1)
}

// Scenario 4: a pod bound to another node is never tracked; a pod not bound
// yet is tracked once it is bound to this node.
func TestEnvtestOtherNodesPodsAreNotTracked(t *testing.T) {
	// The cache holds every pod of the namespace, so that the wiring's own
	// node filter is what keeps the other node's pod out.
	n := startNode(t, "s4-othernode", nodeOptions{unscoped: true})
	other := n.createPod("elsewhere", "node-other", nil)
	unbound := n.createPod("pending", "", nil)
	mine := n.createPod("mine", n.name, nil)
	n.waitTracked(mine.UID) // one informer delivers in order: the first two were seen before

	bind := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: n.ns, Name: unbound.Name},
		Target:     corev1.ObjectReference{Kind: "Node", Name: n.name},
	}
	require.NoError(t, suite.client.SubResource("binding").Create(t.Context(), unbound, bind))
	n.waitTracked(unbound.UID)

	n.deletePod(other)
	marker := n.createPod("marker", n.name, nil)
	n.waitTracked(marker.UID) // the delete of the other pod was handled before this add
	_, tracked := n.entry(other.UID)
	assert.False(t, tracked)
	n.engine.Sweep(t.Context())
	assert.Empty(t, n.policy.events())
	assert.Equal(t, 3, n.engine.Len())
}

// Scenario 5: the API server goes away while pods are deleted. Nothing is
// destroyed while it is down, no live PU ever is, and once it is back every
// deleted pod's PU is destroyed exactly once.
func TestEnvtestAPIServerOutage(t *testing.T) {
	// Two engines watch the node: the usual one reads pods from the cache,
	// which keeps serving the last state it saw; the other reads the API
	// server itself, and gets errors while it is down.
	var direct *deletion.Engine
	directPolicy := &recorder{}
	n := startNode(t, "s5-outage", nodeOptions{
		sweep: 200 * time.Millisecond, // sweeps run all through the outage
		setup: func(n *node) error {
			var err error
			direct, err = deletion.New(countingGetter{next: k8s.NewPodGetter(n.mgr.GetAPIReader())}, directPolicy, deletion.Options{
				NodeName: n.name, SweepInterval: 200 * time.Millisecond, Observer: suite.metrics,
			})
			if err != nil {
				return err
			}
			t.Cleanup(func() { // runs once the manager has stopped
				left := direct.Len()
				suite.tally.add(func(t *tally) { t.left += left })
			})
			return k8s.SetupWithManager(n.mgr, direct, k8s.SetupOptions{})
		},
	})
	var deleted, live []*corev1.Pod
	for i := range 3 {
		deleted = append(deleted, n.createPod(fmt.Sprintf("gone-%d", i), n.name, nil))
		live = append(live, n.createPod(fmt.Sprintf("live-%d", i), n.name, nil))
	}
	for _, p := range append(append([]*corev1.Pod(nil), deleted...), live...) {
		n.waitTracked(p.UID)
	}
	require.Eventually(t, func() bool { return direct.Len() == 6 }, 10*time.Second, 5*time.Millisecond)

	apiServer := suite.env.ControlPlane.GetAPIServer()
	require.NoError(t, apiServer.Stop())
	restarted := false
	defer func() {
		if !restarted { // leave a working API server to the scenarios after this one
			require.NoError(t, apiServer.Start())
		}
	}()
	// With the API server down, the pods are deleted in etcd directly.
	for _, p := range deleted {
		etcdDelete(t, "/registry/pods/"+p.Namespace+"/"+p.Name)
	}
	destroyed := func() int { return len(n.policy.events()) + len(directPolicy.events()) }
	getErrors := func() int {
		suite.tally.mu.Lock()
		defer suite.tally.mu.Unlock()
		return suite.tally.getErrors
	}
	errorsBefore := getErrors()
	assert.Never(t, func() bool { return destroyed() > 0 }, 1500*time.Millisecond, 20*time.Millisecond,
		"a PU was destroyed while the API server was down")
	assert.Greater(t, getErrors(), errorsBefore, "the live reads never failed: was the API server down?")

	outage := time.Now()
	require.NoError(t, apiServer.Start())
	restarted = true
	for _, p := range deleted {
		ev := n.waitDestroyed(p.UID, 60*time.Second)
		assert.Equal(t, ports.ReasonPodGone, ev.Reason)
	}
	t.Logf("deleted pods' PUs destroyed %v after the API server restart began", time.Since(outage))
	require.Eventually(t, func() bool { return len(directPolicy.events()) >= len(deleted) }, 10*time.Second, 5*time.Millisecond)

	// A few more sweeps: no second destroy, no live PU destroyed.
	assert.Never(t, func() bool { return destroyed() != 2*len(deleted) }, time.Second, 20*time.Millisecond)
	for _, p := range deleted {
		assert.Len(t, n.policy.of(p.UID), 1, "PU of %s", p.Name)
		assert.Len(t, directPolicy.of(p.UID), 1, "PU of %s (live reads)", p.Name)
	}
	for _, p := range live {
		assert.Empty(t, n.policy.of(p.UID), "PU of live pod %s", p.Name)
		assert.Empty(t, directPolicy.of(p.UID), "PU of live pod %s (live reads)", p.Name)
		_, tracked := n.entry(p.UID)
		assert.True(t, tracked, "PU of live pod %s", p.Name)
	}
	assert.Equal(t, len(live), direct.Len())
}

// etcdDelete deletes key through etcd's JSON gateway, behind the API server's back.
func etcdDelete(t *testing.T, key string) {
	t.Helper()
	body, err := json.Marshal(map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(key))})
	require.NoError(t, err)
	u := suite.env.ControlPlane.Etcd.URL.String() + "/v3/kv/deleterange"
	resp, err := http.Post(u, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var out struct {
		Deleted string `json:"deleted"`
	}
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	require.Equal(t, "1", out.Deleted, "etcd deleted no key %s: %s", key, raw)
}

// Scenario 6: a node drain deletes 200 pods at once; every PU is destroyed exactly once.
func TestEnvtestNodeDrain(t *testing.T) {
	const pods = 200
	n := startNode(t, "s6-drain", nodeOptions{})
	created := make([]*corev1.Pod, pods)
	var wg sync.WaitGroup
	work := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				p := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Namespace: n.ns, Name: fmt.Sprintf("pod-%03d", i)},
					Spec:       corev1.PodSpec{NodeName: n.name, Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
				}
				if assert.NoError(t, suite.client.Create(t.Context(), p)) {
					created[i] = p
				}
			}
		})
	}
	for i := range pods {
		work <- i
	}
	close(work)
	wg.Wait()
	require.False(t, t.Failed())
	require.Eventually(t, func() bool { return n.engine.Len() == pods }, 30*time.Second, 10*time.Millisecond)

	start := time.Now()
	require.NoError(t, suite.client.DeleteAllOf(t.Context(), &corev1.Pod{}, client.InNamespace(n.ns), client.GracePeriodSeconds(0)))
	deleteCall := time.Since(start)
	require.Eventually(t, func() bool { return len(n.policy.events()) >= pods }, 30*time.Second, 5*time.Millisecond)
	t.Logf("drain: %d PUs destroyed %v after the delete call began (the call itself took %v)", pods, time.Since(start), deleteCall)

	n.engine.Sweep(t.Context()) // nothing left to destroy twice
	seen := map[string]int{}
	for _, ev := range n.policy.events() {
		seen[ev.PUID]++
		assert.Equal(t, ports.ReasonPodGone, ev.Reason)
	}
	for _, p := range created {
		assert.Equal(t, 1, seen[string(p.UID)], "destroys of the PU of %s", p.Name)
	}
	assert.Len(t, seen, pods)
	assert.Zero(t, n.engine.Len())
}

// Scenario 6b: the pod cache scoped to another node than the engine's, a
// mismatch SetupWithManager cannot see (a manager does not expose its
// cache's selector). The wiring tracks nothing, and a PU the agent tracks
// itself reads as gone from the cache: the Confirmer, reading the API
// server, vetoes that destroy. Once the pod is really gone, its PU goes.
func TestEnvtestCacheScopedToAnotherNode(t *testing.T) {
	n := startNode(t, "s6b-wrongcache", nodeOptions{cacheNode: "node-somewhere-else", confirm: true})
	p := n.createPod("web", n.name, nil)
	// The agent's main controller tracks the PU it created.
	require.NoError(t, n.engine.Track(ports.PU{PUID: string(p.UID), Pod: client.ObjectKeyFromObject(p)}))

	n.engine.Sweep(t.Context())
	assert.Empty(t, n.policy.events(), "a live pod's PU is not destroyed")
	st := n.engine.Status()
	require.Len(t, st, 1)
	assert.True(t, st[0].Vetoed, "the cache's NotFound was vetoed by the API server")

	n.deletePod(p)
	require.Eventually(t, func() bool {
		n.engine.Sweep(t.Context())
		return len(n.policy.of(p.UID)) == 1
	}, 10*time.Second, 50*time.Millisecond, "the PU of the deleted pod is destroyed")
	assert.Equal(t, ports.ReasonPodGone, n.policy.of(p.UID)[0].Reason)
}

// Scenario 7: the manager's /metrics shows what every scenario so far did.
// It is the last test of the file, so it sees the others' counts as well as its own.
func TestEnvtestMetricsEndpoint(t *testing.T) {
	addr := freeAddr(t)
	var failRead atomic.Bool // fail the next read of the pod "kept"
	n := startNode(t, "s7-metrics", nodeOptions{
		metricsAddr: addr,
		fail: func(ev ports.DestroyEvent) error {
			if ev.Pod.Name == "refused" {
				return ports.Permanent(fmt.Errorf("policy engine refuses %s", ev.PUID))
			}
			return nil
		},
		wrapGetter: func(next ports.PodGetter) ports.PodGetter {
			return ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
				if key.Name == "kept" && failRead.CompareAndSwap(true, false) {
					return nil, fmt.Errorf("injected read failure")
				}
				return next.GetPod(ctx, key)
			})
		},
	})
	ok := n.createPod("ok", n.name, nil)
	refused := n.createPod("refused", n.name, nil)
	kept := n.createPod("kept", n.name, nil)
	for _, p := range []*corev1.Pod{ok, refused, kept} {
		n.waitTracked(p.UID)
	}
	n.deletePod(ok)
	n.deletePod(refused)
	n.waitDestroyed(ok.UID, 5*time.Second)
	failRead.Store(true)
	n.engine.Sweep(t.Context()) // checks "kept": its read fails once
	require.False(t, failRead.Load())
	require.Eventually(t, func() bool { return n.engine.Len() == 1 }, 5*time.Second, 5*time.Millisecond)

	var last map[string]float64
	require.Eventually(t, func() bool {
		got, err := scrape("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		last = withPrefix(got, "podsweeper_")
		return metricsMatch(last, n.engine.Len())
	}, 10*time.Second, 50*time.Millisecond, "metrics never matched the scenarios' counts")
	t.Logf("metrics: %v", last)
}

// metricsMatch compares the scraped metrics with the tally.
func metricsMatch(got map[string]float64, running int) bool {
	suite.tally.mu.Lock()
	defer suite.tally.mu.Unlock()
	want := map[string]float64{
		k8s.MetricTrackedPUs:   float64(suite.tally.left + running),
		k8s.MetricAbandoned:    float64(suite.tally.abandoned),
		k8s.MetricPodGetErrors: float64(suite.tally.getErrors),
	}
	destroyed, failed := 0, 0
	for _, r := range ports.Reasons() {
		want[fmt.Sprintf(`%s{reason="%s"}`, k8s.MetricDestroys, r)] = float64(suite.tally.destroys[r])
		want[fmt.Sprintf(`%s{reason="%s"}`, k8s.MetricDestroyFailures, r)] = float64(suite.tally.failures[r])
		destroyed += suite.tally.destroys[r]
		failed += suite.tally.failures[r]
	}
	want[k8s.MetricDestroyDelay+"_count"] = float64(destroyed)
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	// Every destroy, failed destroy and failed read happened in a check of its own.
	return got[k8s.MetricCheckDuration+"_count"] >= float64(destroyed+failed+suite.tally.getErrors) &&
		destroyed > 0 && suite.tally.abandoned > 0 && suite.tally.getErrors > 0
}

func scrape(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	list := make([]*dto.MetricFamily, 0, len(families))
	for _, f := range families {
		list = append(list, f)
	}
	return samples(list), nil
}

// TestEnvtestABacklogKeepsTheAgentAlive: a policy engine that takes 1 s
// per destroy while 100 pods are deleted puts the engine behind: /readyz
// fails and podsweeper_oldest_queued_check_seconds grows, while
// /healthz stays at 200 throughout, so that the kubelet does not restart a
// busy agent in the middle of its work; once the backlog has drained,
// every PU is destroyed once and /readyz passes again. The checks that find
// the pods gone wait in the queue, so the backlog shows as the oldest
// queued check's wait; a PU found gone waits only for its own destroy.
func TestEnvtestABacklogKeepsTheAgentAlive(t *testing.T) {
	const pods = 100
	probeAddr := freeAddr(t)
	reg := prometheus.NewRegistry()
	n := startNode(t, "s9-backlog", nodeOptions{
		sweep: time.Second, workers: 4, probeAddr: probeAddr, confirm: true,
		fail: func(ports.DestroyEvent) error { time.Sleep(time.Second); return nil },
		setup: func(n *node) error {
			return errors.Join(
				n.mgr.AddHealthzCheck("podsweeper", n.engine.LivenessCheck),
				n.mgr.AddReadyzCheck("podsweeper", n.engine.ReadinessCheck),
				reg.Register(k8s.NewBacklogCollector(n.engine)),
			)
		},
	})
	for i := range pods {
		n.createPod(fmt.Sprintf("pod-%03d", i), n.name, nil)
	}
	require.Eventually(t, func() bool { return n.engine.Len() == pods }, 30*time.Second, 10*time.Millisecond)
	get := func(path string) int {
		resp, err := http.Get("http://" + probeAddr + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Eventually(t, func() bool { return get("/readyz") == http.StatusOK }, 30*time.Second, 20*time.Millisecond)

	require.NoError(t, suite.client.DeleteAllOf(t.Context(), &corev1.Pod{}, client.InNamespace(n.ns), client.GracePeriodSeconds(0)))
	unready, oldest, queued := false, 0.0, 0.0
	deadline := time.Now().Add(2 * time.Minute)
	for len(n.policy.events()) < pods && time.Now().Before(deadline) {
		assert.Equal(t, http.StatusOK, get("/healthz"), "a backlog does not fail liveness")
		if get("/readyz") != http.StatusOK {
			unready = true
		}
		oldest = max(oldest, gauge(t, reg, k8s.MetricOldestPendingSecond))
		queued = max(queued, gauge(t, reg, k8s.MetricOldestQueuedSecond))
		time.Sleep(200 * time.Millisecond)
	}
	require.Len(t, n.policy.events(), pods, "every PU destroyed once the backlog drained")
	assert.True(t, unready, "/readyz showed the backlog")
	assert.Greater(t, queued, 3.0, "podsweeper_oldest_queued_check_seconds showed the backlog (seconds)")
	assert.GreaterOrEqual(t, oldest, 0.9, "podsweeper_oldest_pending_destroy_seconds showed each destroy's second")
	assert.Equal(t, http.StatusOK, get("/healthz"))
	assert.Eventually(t, func() bool { return get("/readyz") == http.StatusOK }, 30*time.Second, 50*time.Millisecond,
		"ready again once the backlog has drained")
	t.Logf("backlog: the oldest queued check waited up to %.1f s, the oldest pending destroy %.1f s; /healthz stayed at 200", queued, oldest)
}

// gauge returns the value of the gauge name gathered from reg, or -1.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

// freeAddr returns a 127.0.0.1 address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
