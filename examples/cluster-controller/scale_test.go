package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/internal/procbench"
	"github.com/podsweeper/podsweeper/internal/testkube"
)

// The environment of the scale tests.
const (
	// scaleEnv names the sizes of TestScaleBench, nodes x pods, comma
	// separated ("100x3000,300x9000,1000x30000"); unset, it is skipped.
	scaleEnv = "PODSWEEPER_SCALE"
	// scaleAgentsEnv names the fleet sizes of TestScaleBench's node
	// agents, run on the last size's cluster ("10,25,50"); unset or "0",
	// no fleet.
	scaleAgentsEnv = "PODSWEEPER_SCALE_AGENTS"
	// countRequestsEnv, set, makes TestControllerHelper count the
	// controller's requests by verb and resource (countRequests).
	countRequestsEnv = "PODSWEEPER_CLUSTER_CONTROLLER_COUNT_REQUESTS"
)

const (
	scaleNS = "scale"
	// kwokAnnotation marks the nodes the kwok controller manages
	// (--manage-nodes-with-annotation-selector): every node of the tests.
	kwokAnnotation = "kwok.x-k8s.io/node"
	// scaleRequestsMetric is what countRequests counts on the
	// controller's /metrics.
	scaleRequestsMetric = "scale_client_requests_total"
	// scaleWorkers goroutines send the harness's creates and deletes, as a
	// StatefulSet's or ReplicaSet's controller sends them in a burst.
	scaleWorkers = 32
	// nodeAgentUser is the node agent's ServiceAccount (its deploy/).
	nodeAgentUser = "system:serviceaccount:podsweeper:node-agent"
)

// TestScale is the small version of TestScaleBench that `make test` runs:
// 50 KWOK nodes, 1,000 pods, the cluster controller as deployed; a pool of
// 5 nodes drained (100 pods deleted), then 200 pods deleted and created
// again under the same names, as a StatefulSet does; every PU of a deleted
// pod destroyed exactly once and no live pod's PU touched, checked against
// the API at the end, and the controller's watch of every pod kept open for
// the whole run. It needs $KWOK (bin/tools/kwok, which `make test`
// builds) besides the envtest binaries.
func TestScale(t *testing.T) {
	c := startScaleCluster(t, 50, 20)
	ctl := c.startController(t, false)
	c.scenario(t, ctl, "drain", c.drain(5))
	c.scenario(t, ctl, "statefulset", c.sameNames(200))
	c.checkExactlyOnce(t, ctl)
	// Its watch of every pod lasts the run (client-go ends it after 5 to
	// 10 minutes): a timeout on the manager's client, as NewLeaseFence
	// once set, ended it every few seconds, and at 30,000 pods its first
	// list never finished.
	// A watch the API server itself closed (a client slow to take its events, under load: its
	// apiserver_terminated_watchers_total) is watched again, and counts besides.
	pods := map[string]string{"resource": "pods"}
	closed := sumOf(c.apiMetrics(t), "apiserver_terminated_watchers_total", pods) - sumOf(ctl.apiBefore, "apiserver_terminated_watchers_total", pods)
	watches := ctl.metrics(t).requests["WATCH"]
	assert.LessOrEqual(t, watches, 1+time.Since(ctl.started).Seconds()/30+closed, "the controller's watch calls in %v (%.0f watchers of pods closed by the API server)", time.Since(ctl.started), closed)
	ctl.terminate(t)
}

// TestScaleBench is `make bench-scale`: for each size of $PODSWEEPER_SCALE
// (nodes x pods), a fresh API server (envtest's kube-apiserver and etcd)
// with that many KWOK nodes Ready and pods Running (created bound to their
// nodes by spec.nodeName: no scheduler, no kube-controller-manager), then
// the cluster controller as deployed, and the churns of scenarios; on the
// last size, a fleet of node agents ($PODSWEEPER_SCALE_AGENTS) and
// restarts of the API server under it. Every figure is logged on a line of
// its own, "scale: key=value ...", and BENCHMARKS.md ("A thousand nodes on
// a real API server") says what each is.
func TestScaleBench(t *testing.T) {
	sizes := os.Getenv(scaleEnv)
	if sizes == "" {
		t.Skipf("%s is not set: run `make bench-scale`", scaleEnv)
	}
	logf.SetLogger(logr.Discard()) // envtest's, in this process: the raw output is the figures
	list := strings.Split(sizes, ",")
	for i, size := range list {
		var nodes, pods int
		_, err := fmt.Sscanf(size, "%dx%d", &nodes, &pods)
		require.NoError(t, err, "%s: %q", scaleEnv, size)
		require.Zero(t, pods%nodes, "%s: %q: pods a multiple of nodes", scaleEnv, size)
		last := i == len(list)-1
		t.Run(fmt.Sprintf("nodes=%d/pods=%d", nodes, pods), func(t *testing.T) {
			benchSize(t, nodes, pods/nodes, last)
		})
	}
}

// benchSize measures one size of TestScaleBench.
func benchSize(t *testing.T, nodes, perNode int, fleet bool) {
	size := fmt.Sprintf("%dx%d", nodes, nodes*perNode)
	logScale(t, "size=%s phase=begin load=%q", size, procbench.LoadAvg())
	c := startScaleCluster(t, nodes, perNode)
	ctl := c.startController(t, true)
	pool := max(1, nodes/10)
	sts := min(1000, c.total()/3)
	tenth := c.total() / 10
	for _, s := range []struct {
		name string
		run  func(t *testing.T) map[types.UID]time.Time
	}{
		{fmt.Sprintf("drain-%d-nodes", pool), c.drain(pool)},
		{fmt.Sprintf("statefulset-%d-pods", sts), c.sameNames(sts)},
		{"node-recreated", c.recreateNode(nodes - 1)},
		{fmt.Sprintf("delete-%d-pods", tenth), c.deleteTenth()},
	} {
		c.scenario(t, ctl, s.name, s.run)
	}
	c.checkExactlyOnce(t, ctl)
	c.logAPIServer(t, "size="+size+" window=controller", ctl.apiBefore, c.apiMetrics(t))
	c.logClientLatencies(t, size)
	// Its calls over the whole size, WATCH included: the API server's
	// counts do not say whose a watch-list was.
	logScale(t, "size=%s phase=controller-end s-run=%.0f requests=%q", size, time.Since(ctl.started).Seconds(), ctl.metrics(t).requests.String())
	ctl.terminate(t)
	if fleet {
		c.fleet(t)
	}
	logScale(t, "size=%s phase=end load=%q", size, procbench.LoadAvg())
}

// logScale logs one line of figures, "scale: " first, for the raw output.
func logScale(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Logf("scale: "+format, args...)
}

// scaleCluster is the API server, KWOK, its nodes and the pods.
type scaleCluster struct {
	env        *envtest.Environment
	cfg        *rest.Config
	kubeconfig []byte
	cs         kubernetes.Interface // admin, protobuf, no client-side limit
	nodes      int
	perNode    int
	kwok       *exec.Cmd
	kwokLog    *testkube.SyncBuffer
	// template is every pod of the tests: procbench's realistic pod, as
	// a real kubelet would run it.
	template *corev1.Pod

	mu      sync.Mutex
	uids    map[string]types.UID    // the live pods, by name
	deleted map[types.UID]time.Time // the pods deleted, by UID: when their delete call was made
	gone    map[types.UID]time.Time // when the delete that removed each from the API returned
	calls   map[string][]time.Duration
	// pods is the store of finishDeletes' informer: the harness's view
	// of the namespace's pods.
	pods cache.Store
}

func nodeName(i int) string { return fmt.Sprintf("kwok-node-%04d", i) }

func podName(i int) string { return fmt.Sprintf("pod-%05d", i) }

// podNode is the node of pod i: pods are dealt round the nodes.
func (c *scaleCluster) podNode(i int) int { return i % c.nodes }

func (c *scaleCluster) total() int { return c.nodes * c.perNode }

// podsOf returns the indexes of the pods of node n.
func (c *scaleCluster) podsOf(n int) []int {
	var out []int
	for i := n; i < c.total(); i += c.nodes {
		out = append(out, i)
	}
	return out
}

// kwokBinary returns $KWOK (bin/tools/kwok, which `make test` and `make
// bench-scale` build), and skips the test without it (fails it under CI=true).
func kwokBinary(t testing.TB) string {
	t.Helper()
	return testkube.Tool(t, "KWOK")
}

// startScaleCluster starts the API server (with a fixed CertDir, so that
// it can be restarted under its clients), KWOK, nodes Ready nodes and
// perNode pods on each, and waits until every pod is Running.
func startScaleCluster(t *testing.T, nodes, perNode int) *scaleCluster {
	kwok := kwokBinary(t)
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		testkube.StartAPIServer(t) // skips, or fails under CI=true
	}
	c := &scaleCluster{nodes: nodes, perNode: perNode, uids: map[string]types.UID{}, deleted: map[types.UID]time.Time{}, gone: map[types.UID]time.Time{},
		calls: map[string][]time.Duration{}, kwokLog: &testkube.SyncBuffer{},
		template: procbench.PodSpec(procbench.Fixture(t), scaleNS, "", "", true)}
	// Stopped under a fleet of clients, the API server ends their
	// requests first: more than envtest's 20 s on a loaded machine.
	c.env = &envtest.Environment{ControlPlaneStopTimeout: 3 * time.Minute}
	c.env.ControlPlane.GetAPIServer().CertDir = t.TempDir()
	start := time.Now()
	cfg, err := c.env.Start()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.env.Stop()) })
	c.kubeconfig = c.env.KubeConfig
	c.cfg = rest.CopyConfig(cfg)
	c.cfg.QPS = -1 // no client-side limit: the harness is many clients at once
	pb := rest.CopyConfig(c.cfg)
	pb.ContentType = "application/vnd.kubernetes.protobuf"
	c.cs, err = kubernetes.NewForConfig(pb)
	require.NoError(t, err)
	admin, err := client.New(c.cfg, client.Options{})
	require.NoError(t, err)
	testkube.ApplyKustomization(t, admin, "deploy")
	testkube.ApplyKustomization(t, admin, "../node-agent/deploy")
	_, err = c.cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scaleNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	apiUp := time.Since(start)

	// KWOK with the admin's kubeconfig and kwok v0.8.0's fast stages.
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kc, c.kubeconfig, 0o600))
	c.kwok = exec.Command(kwok, "--kubeconfig="+kc, "--config=testdata/kwok-stages.yaml",
		"--manage-nodes-with-annotation-selector="+kwokAnnotation+"=fake", "--node-lease-duration-seconds=40")
	c.kwok.Env = append(os.Environ(), "HOME="+t.TempDir()) // no ~/.kwok/kwok.yaml of the machine's
	c.kwok.Stdout, c.kwok.Stderr = c.kwokLog, c.kwokLog
	require.NoError(t, c.kwok.Start())
	kwokDone := make(chan struct{})
	go func() {
		_ = c.kwok.Wait()
		close(kwokDone)
	}()
	t.Cleanup(func() {
		_ = c.kwok.Process.Kill()
		<-kwokDone
	})

	c.finishDeletes(t)
	start = time.Now()
	c.parallel(t, nodes, func(i int) error { return c.createNode(t.Context(), i) })
	c.waitNodesReady(t, nodes, 5*time.Minute)
	nodesReady := time.Since(start)
	start = time.Now()
	c.parallel(t, c.total(), func(i int) error { return c.createPod(t.Context(), i) })
	created := time.Since(start)
	c.waitRunning(t, c.total(), 15*time.Minute)
	logScale(t, "size=%dx%d phase=cluster s-api-server-up=%.1f s-nodes-ready=%.1f s-pods-created=%.1f s-pods-running=%.1f load=%q",
		nodes, c.total(), apiUp.Seconds(), nodesReady.Seconds(), created.Seconds(), time.Since(start).Seconds(), procbench.LoadAvg())
	return c
}

// parallel runs f(0) to f(n-1) from scaleWorkers goroutines and fails the
// test on the first error.
func (c *scaleCluster) parallel(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	c.parallelOf(t, slices.Collect(func(yield func(int) bool) {
		for i := range n {
			if !yield(i) {
				return
			}
		}
	}), f)
}

// parallelOf runs f for each of is from scaleWorkers goroutines and fails
// the test on the first error.
func (c *scaleCluster) parallelOf(t *testing.T, is []int, f func(i int) error) {
	t.Helper()
	next := make(chan int)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range scaleWorkers {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					first = cmpOr(first, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, i := range is {
		next <- i
	}
	close(next)
	wg.Wait()
	require.NoError(t, first)
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// timed records how long call took under kind ("POST pods"), for the
// harness's own client-side latencies.
func (c *scaleCluster) timed(kind string, call func() error) error {
	start := time.Now()
	err := call()
	d := time.Since(start)
	c.mu.Lock()
	c.calls[kind] = append(c.calls[kind], d)
	c.mu.Unlock()
	return err
}

// createNode creates node i as a node pool's node would register, for
// KWOK to manage: its pods' addresses come from its podCIDR.
func (c *scaleCluster) createNode(ctx context.Context, i int) error {
	name := nodeName(i)
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{kwokAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels:      map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok"}},
		Spec: corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.%d.%d.0/24", 1+i/256, i%256)},
	}
	return c.timed("POST nodes", func() error {
		_, err := c.cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		return err
	})
}

// createPod creates pod i, bound to its node, as its owner (a
// StatefulSet's controller, after the scheduler) would.
func (c *scaleCluster) createPod(ctx context.Context, i int) error {
	p := c.template.DeepCopy()
	p.Name, p.Spec.NodeName = podName(i), nodeName(c.podNode(i))
	var got *corev1.Pod
	err := c.timed("POST pods", func() error {
		var err error
		got, err = c.cs.CoreV1().Pods(scaleNS).Create(ctx, p, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.uids[p.Name] = got.UID
	c.mu.Unlock()
	return nil
}

// deletePod deletes pod i (force: with a grace period of 0, as the pod
// garbage collector deletes the pods of a node that is gone; otherwise
// with the pod's own, which finishDeletes ends as a kubelet would) and records when
// the call was made.
func (c *scaleCluster) deletePod(ctx context.Context, i int, force bool) error {
	name := podName(i)
	c.mu.Lock()
	uid := c.uids[name]
	c.mu.Unlock()
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	if force {
		opts.GracePeriodSeconds = ptr.To[int64](0)
	}
	called := time.Now()
	err := c.timed("DELETE pods", func() error { return c.cs.CoreV1().Pods(scaleNS).Delete(ctx, name, opts) })
	if err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.uids, name)
	c.deleted[uid] = called
	if force {
		c.gone[uid] = time.Now()
	}
	c.mu.Unlock()
	return nil
}

// finishDeletes is the kubelet's part of a graceful delete on KWOK's
// nodes, and the harness's view of the namespace's pods, from an informer
// (their name, UID, deletionTimestamp and phase) until the test ends: each
// pod seen with a deletionTimestamp is deleted for good, with a grace
// period of 0 and its UID as a precondition, as the kubelet deletes a pod
// once its containers have stopped (at once here: it has none). KWOK's own
// pod-delete stage deletes by name only, which can delete the new pod
// created under the old one's name (testdata/kwok-stages.yaml). waitGone
// and waitRunning read the informer's store: the harness waits on a watch,
// as a controller does, not on LISTs of every pod that would load the API
// server it measures.
func (c *scaleCluster) finishDeletes(t *testing.T) {
	t.Helper()
	// An informer, not a single watch: it lists and watches again across
	// the restarts of the API server.
	factory := informers.NewSharedInformerFactoryWithOptions(c.cs, 0, informers.WithNamespace(scaleNS),
		informers.WithTransform(func(obj any) (any, error) {
			if p, ok := obj.(*corev1.Pod); ok {
				return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID,
					ResourceVersion: p.ResourceVersion, DeletionTimestamp: p.DeletionTimestamp},
					Status: corev1.PodStatus{Phase: p.Status.Phase}}, nil
			}
			return obj, nil
		}))
	inf := factory.Core().V1().Pods().Informer()
	c.pods = inf.GetStore()
	work := make(chan *corev1.Pod, 1024)
	done := make(chan struct{})
	ended := map[types.UID]bool{} // by the informer's handler only
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	// As many at once as the harness's deletes: the kubelets of many
	// nodes end their pods side by side.
	for range scaleWorkers {
		wg.Go(func() {
			for {
				var p *corev1.Pod
				select {
				case p = <-work:
				case <-done:
					return
				}
				err := c.cs.CoreV1().Pods(scaleNS).Delete(context.Background(), p.Name,
					metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &p.UID}})
				switch {
				case err == nil:
					c.mu.Lock()
					c.gone[p.UID] = time.Now()
					c.mu.Unlock()
				case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
					// Gone, or another pod under its name already: nothing to end.
				default:
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	handle := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && p.DeletionTimestamp != nil && !ended[p.UID] {
			ended[p.UID] = true
			select {
			case work <- p:
			case <-done:
			}
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: handle, UpdateFunc: func(_, obj any) { handle(obj) }})
	require.NoError(t, err)
	stop := make(chan struct{})
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		inf.Run(stop)
	}()
	require.True(t, cache.WaitForCacheSync(t.Context().Done(), inf.HasSynced))
	t.Cleanup(func() {
		close(stop)
		<-ran
		close(done)
		wg.Wait()
		assert.Empty(t, errs, "the deletes that end pods")
	})
}

// waitGone waits until the informer of finishDeletes no longer holds pod
// i (it ends a deleted pod as a kubelet does): the API server has removed
// it, as a watch sees the removal only after it.
func (c *scaleCluster) waitGone(ctx context.Context, i int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		_, exists, err := c.pods.GetByKey(scaleNS + "/" + podName(i))
		switch {
		case err != nil:
			return err
		case !exists:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("pod %s still there after %v", podName(i), timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitNodesReady polls until n nodes are Ready.
func (c *scaleCluster) waitNodesReady(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	var ready int
	if !assert.Eventually(t, func() bool {
		list, err := c.cs.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		ready = 0
		for _, node := range list.Items {
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == n
	}, timeout, 500*time.Millisecond) {
		require.FailNowf(t, "nodes not Ready", "%d Ready of %d; kwok's logs:\n%s", ready, n, tail(c.kwokLog.String()))
	}
}

// waitRunning waits until the informer of finishDeletes holds n pods,
// each Running and none being deleted.
func (c *scaleCluster) waitRunning(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	var running, all int
	if !assert.Eventually(t, func() bool {
		running, all = 0, 0
		for _, obj := range c.pods.List() {
			all++
			if p := obj.(*corev1.Pod); p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		return running == n && all == n
	}, timeout, 250*time.Millisecond) {
		require.FailNowf(t, "pods not Running", "%d Running, %d in all, of %d; kwok's logs:\n%s", running, all, n, tail(c.kwokLog.String()))
	}
}

func tail(s string) string {
	const tailBytes = 8 << 10
	if len(s) > tailBytes {
		return "...\n" + s[len(s)-tailBytes:]
	}
	return s
}

// scaleController is the cluster controller as deployed, in a process of
// its own, with its DestroyPU calls journaled.
type scaleController struct {
	*child
	metricsAddr, puDir, journal string
	started                     time.Time
	apiBefore                   apiMetrics // the API server's, at its start
}

// startController runs the controller as deployed: the ServiceAccount's
// RBAC (deploy/), leader election on with the default lease times, the
// slim cache and Events, the default --sweep-interval, its metrics on
// loopback in plain HTTP; each DestroyPU journaled, and its requests
// counted by verb and resource. It waits until it tracks every pod;
// idle, it then measures an idle minute's requests too.
func (c *scaleCluster) startController(t *testing.T, idle bool) *scaleController {
	t.Helper()
	ctl := &scaleController{metricsAddr: testkube.FreeAddr(t), puDir: t.TempDir(), journal: filepath.Join(t.TempDir(), "journal")}
	ctl.apiBefore = c.apiMetrics(t)
	ctl.started = time.Now()
	ctl.child = startChildWith(t, c.kubeconfig, ctl.puDir,
		[]string{journalEnv + "=" + ctl.journal, replicaEnv + "=a", latencyEnv + "=0s", countRequestsEnv + "=1"},
		"--leader-election-id=podsweeper-scale",
		// The defaults of main.go again: startChildWith shortens them for the integration tests.
		"--leader-election-lease-duration=15s", "--leader-election-renew-deadline=10s", "--leader-election-retry-period=2s",
		"--sweep-interval=1m", "--metrics-bind-address="+ctl.metricsAddr, "--metrics-secure=false")
	size := fmt.Sprintf("%dx%d", c.nodes, c.total())
	var tracked float64
	if !assert.Eventually(t, func() bool {
		tracked = procbench.Metric(testkube.Get(t, "http://"+ctl.metricsAddr+"/metrics"), k8s.MetricTrackedPUs)
		return int(tracked) == c.total() || ctl.exited()
	}, 10*time.Minute, 100*time.Millisecond) || ctl.exited() {
		require.FailNowf(t, "not every pod tracked", "%v of %d; logs:\n%s", tracked, c.total(), tail(ctl.logs.String()))
	}
	toTracked := time.Since(ctl.started)
	m := ctl.metrics(t)
	logScale(t, "size=%s phase=controller-started s-to-tracked=%.2f heap-MiB=%.1f rss-MiB=%.1f heap-B/pod=%.0f requests=%q",
		size, toTracked.Seconds(), mib(int64(m.heap)), mib(int64(m.rss)), m.heap/float64(c.total()), m.requests.String())
	c.logAPIServer(t, "size="+size+" window=controller-start", ctl.apiBefore, c.apiMetrics(t))
	if idle {
		// A minute with no churn: the Lease's renewals, the sweep (every
		// PU checked against the cache) and nothing else.
		before := ctl.metrics(t)
		start := time.Now()
		time.Sleep(time.Minute) // the window measured, not a wait for a condition
		after := ctl.metrics(t)
		perMin := after.requests.minus(before.requests).scale(float64(time.Minute) / float64(time.Since(start)))
		logScale(t, "size=%s phase=idle-minute requests-per-minute=%q heap-MiB=%.1f rss-MiB=%.1f", size, perMin.String(), mib(int64(after.heap)), mib(int64(after.rss)))
	}
	return ctl
}

// controllerMetrics is what the harness reads on the controller's /metrics.
type controllerMetrics struct {
	tracked, heap, rss float64
	requests           verbCounts
}

// verbCounts are requests by "VERB resource", WATCH included.
type verbCounts map[string]float64

func (r verbCounts) minus(o verbCounts) verbCounts {
	out := verbCounts{}
	for k, v := range r {
		if d := v - o[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func (r verbCounts) scale(f float64) verbCounts {
	out := verbCounts{}
	for k, v := range r {
		out[k] = v * f
	}
	return out
}

func (r verbCounts) total() float64 {
	var sum float64
	for _, v := range r {
		sum += v
	}
	return sum
}

// String is "VERB resource=n,..." sorted by key, the total first.
func (r verbCounts) String() string {
	parts := []string{fmt.Sprintf("total=%.2f", r.total())}
	for _, k := range slices.Sorted(maps.Keys(r)) {
		parts = append(parts, fmt.Sprintf("%s=%.2f", k, r[k]))
	}
	return strings.Join(parts, ",")
}

// metrics reads the controller's /metrics: its requests are countRequests'
// counts, and WATCH its watch calls (client-go's rest_client_requests_total
// GETs less the GETs and LISTs counted: a watch alone is not observed by
// client-go's latency hook).
func (ctl *scaleController) metrics(t *testing.T) controllerMetrics {
	t.Helper()
	text := testkube.Get(t, "http://"+ctl.metricsAddr+"/metrics")
	require.NotEmpty(t, text, "the controller's /metrics; logs:\n%s", tail(ctl.logs.String()))
	fams := parseMetrics(t, text)
	m := controllerMetrics{tracked: procbench.Metric(text, k8s.MetricTrackedPUs),
		heap: procbench.Metric(text, "go_memstats_heap_alloc_bytes"), rss: procbench.Metric(text, "process_resident_memory_bytes"),
		requests: verbCounts{}}
	var gets float64
	for _, s := range fams[scaleRequestsMetric].GetMetric() {
		l := labelsOf(s)
		m.requests[l["verb"]+" "+l["resource"]] += s.GetCounter().GetValue()
		if l["verb"] == "GET" || l["verb"] == "LIST" {
			gets += s.GetCounter().GetValue()
		}
	}
	if w := procbench.Sum(text, "rest_client_requests_total", map[string]string{"method": "GET"}) - gets; w > 0 {
		m.requests["WATCH"] = w
	}
	return m
}

func (ctl *scaleController) exited() bool {
	select {
	case err := <-ctl.done:
		ctl.done <- err
		return true
	default:
		return false
	}
}

// scenario runs a churn under the controller: run deletes pods (and may
// create some again under the same names) and returns the UIDs it deleted
// with the time of each delete call; then it waits until the controller
// has destroyed each of their PUs, logs the figures, and creates every pod
// deleted again so that the next scenario starts from the whole pod set.
func (c *scaleCluster) scenario(t *testing.T, ctl *scaleController, name string, run func(t *testing.T) map[types.UID]time.Time) {
	t.Helper()
	size := fmt.Sprintf("%dx%d", c.nodes, c.total())
	before := ctl.metrics(t)
	apiBefore := c.apiMetrics(t)
	first := time.Now()
	deleted := run(t)
	var calls []destroyCall
	if !assert.Eventually(t, func() bool {
		calls = readJournal(t, ctl.journal)
		done := 0
		for _, call := range calls {
			if _, ok := deleted[types.UID(call.puid)]; ok && !call.end.IsZero() {
				done++
			}
		}
		return done >= len(deleted) || ctl.exited()
	}, 10*time.Minute, 100*time.Millisecond) || ctl.exited() {
		require.FailNowf(t, "not every PU destroyed", "%s: %d deleted, %d calls in the journal; logs:\n%s", name, len(deleted), len(calls), tail(ctl.logs.String()))
	}
	after := ctl.metrics(t)
	var lat, fromGone []time.Duration
	var last time.Time
	c.mu.Lock()
	for _, call := range calls {
		if at, ok := deleted[types.UID(call.puid)]; ok {
			lat = append(lat, call.start.Sub(at))
			if gone, ok := c.gone[types.UID(call.puid)]; ok {
				fromGone = append(fromGone, call.start.Sub(gone))
			}
			if call.end.After(last) {
				last = call.end
			}
		}
	}
	c.mu.Unlock()
	slices.Sort(lat)
	slices.Sort(fromGone)
	reqs := after.requests.minus(before.requests)
	logScale(t, "size=%s scenario=%s deleted=%d s-last-destroy=%.2f ms-p50-delete-to-destroy=%.0f ms-p99-delete-to-destroy=%.0f ms-max-delete-to-destroy=%.0f ms-p50-gone-to-destroy=%.0f ms-p99-gone-to-destroy=%.0f heap-MiB=%.1f rss-MiB=%.1f requests-per-destroy=%q",
		size, name, len(deleted), last.Sub(first).Seconds(), ms(procbench.Percentile(lat, 50)), ms(procbench.Percentile(lat, 99)), ms(lat[len(lat)-1]),
		ms(procbench.Percentile(fromGone, 50)), ms(procbench.Percentile(fromGone, 99)),
		mib(int64(after.heap)), mib(int64(after.rss)), reqs.scale(1/float64(len(deleted))).String())
	c.logAPIServer(t, "size="+size+" window="+name, apiBefore, c.apiMetrics(t))
	c.restore(t)
	if !assert.Eventually(t, func() bool {
		return int(procbench.Metric(testkube.Get(t, "http://"+ctl.metricsAddr+"/metrics"), k8s.MetricTrackedPUs)) == c.total() || ctl.exited()
	}, 5*time.Minute, 100*time.Millisecond) || ctl.exited() {
		require.FailNow(t, "the pods created again are not all tracked", "logs:\n%s", tail(ctl.logs.String()))
	}
}

// restore creates again, under their names and on their nodes, the pods
// that are gone, once they are, and waits until every pod is Running.
func (c *scaleCluster) restore(t *testing.T) {
	t.Helper()
	var missing []int
	c.mu.Lock()
	for i := range c.total() {
		if _, ok := c.uids[podName(i)]; !ok {
			missing = append(missing, i)
		}
	}
	c.mu.Unlock()
	c.parallelOf(t, missing, func(i int) error {
		if err := c.waitGone(t.Context(), i, 2*time.Minute); err != nil {
			return err
		}
		return c.createPod(t.Context(), i)
	})
	c.waitRunning(t, c.total(), 5*time.Minute)
}

// deletedSince returns the UIDs deleted since the scenario began (those
// not in before), with their delete calls' times.
func (c *scaleCluster) deletedSince(before map[types.UID]time.Time) map[types.UID]time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[types.UID]time.Time{}
	for uid, at := range c.deleted {
		if _, ok := before[uid]; !ok {
			out[uid] = at
		}
	}
	return out
}

func (c *scaleCluster) deletedSoFar() map[types.UID]time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.deleted)
}

// drain is scenario (a): a node pool of n nodes drained, every pod of
// theirs deleted at once (with its grace period; finishDeletes ends each
// as its kubelet would). The nodes are not cordoned: no scheduler runs.
func (c *scaleCluster) drain(n int) func(t *testing.T) map[types.UID]time.Time {
	return func(t *testing.T) map[types.UID]time.Time {
		before := c.deletedSoFar()
		var pods []int
		for node := range n {
			pods = append(pods, c.podsOf(node)...)
		}
		c.parallelOf(t, pods, func(i int) error { return c.deletePod(t.Context(), i, false) })
		return c.deletedSince(before)
	}
}

// sameNames is scenario (b): n pods of a StatefulSet deleted and created
// again under the same names, as its controller does (with no
// kube-controller-manager, the harness does it: each pod is created again
// once the old one is gone), spread over every node.
func (c *scaleCluster) sameNames(n int) func(t *testing.T) map[types.UID]time.Time {
	return func(t *testing.T) map[types.UID]time.Time {
		before := c.deletedSoFar()
		step := c.total() / n
		pods := make([]int, n)
		for k := range pods {
			pods[k] = k * step
		}
		c.parallelOf(t, pods, func(i int) error {
			if err := c.deletePod(t.Context(), i, false); err != nil {
				return err
			}
			if err := c.waitGone(t.Context(), i, 2*time.Minute); err != nil {
				return err
			}
			return c.createPod(t.Context(), i)
		})
		return c.deletedSince(before)
	}
}

// recreateNode is scenario (c): node n deleted and created again under the
// same name. As the node lifecycle would: the pod garbage collector
// force-deletes the pods bound to a node that is gone (the harness does it
// with a grace period of 0, right after the node's delete), then the node
// registers again (a new UID), KWOK makes it Ready, and its pods' owners
// create them again there, under the same names (restore).
func (c *scaleCluster) recreateNode(n int) func(t *testing.T) map[types.UID]time.Time {
	return func(t *testing.T) map[types.UID]time.Time {
		before := c.deletedSoFar()
		require.NoError(t, c.timed("DELETE nodes", func() error {
			return c.cs.CoreV1().Nodes().Delete(t.Context(), nodeName(n), metav1.DeleteOptions{})
		}))
		c.parallelOf(t, c.podsOf(n), func(i int) error { return c.deletePod(t.Context(), i, true) })
		require.Eventually(t, func() bool {
			_, err := c.cs.CoreV1().Nodes().Get(t.Context(), nodeName(n), metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, time.Minute, 50*time.Millisecond)
		require.NoError(t, c.createNode(t.Context(), n))
		c.waitNodesReady(t, c.nodes, 2*time.Minute)
		return c.deletedSince(before)
	}
}

// deleteTenth is scenario (d): a tenth of every pod (each tenth by index,
// on every node) deleted at once.
func (c *scaleCluster) deleteTenth() func(t *testing.T) map[types.UID]time.Time {
	return func(t *testing.T) map[types.UID]time.Time {
		before := c.deletedSoFar()
		var pods []int
		for i := 5; i < c.total(); i += 10 {
			pods = append(pods, i)
		}
		c.parallelOf(t, pods, func(i int) error { return c.deletePod(t.Context(), i, false) })
		return c.deletedSince(before)
	}
}

// checkExactlyOnce checks the controller's whole life against the API:
// every PU of a pod deleted destroyed exactly once (one DestroyPU call,
// ended without error), no other PU destroyed, and the PU of every pod
// the API lists now registered.
func (c *scaleCluster) checkExactlyOnce(t *testing.T, ctl *scaleController) {
	t.Helper()
	calls := readJournal(t, ctl.journal)
	deleted := c.deletedSoFar()
	once := map[string]int{}
	for _, call := range calls {
		once[call.puid]++
		assert.True(t, call.ok, "DestroyPU of %s ended without error", call.puid)
		_, ok := deleted[types.UID(call.puid)]
		assert.True(t, ok, "PU %s destroyed: its pod was not deleted", call.puid)
	}
	for uid := range deleted {
		assert.Equal(t, 1, once[string(uid)], "DestroyPU calls for the PU of deleted pod %s", uid)
	}
	live := map[string]bool{}
	opts := metav1.ListOptions{Limit: 5000}
	for {
		list, err := c.cs.CoreV1().Pods(scaleNS).List(t.Context(), opts)
		require.NoError(t, err)
		for _, p := range list.Items {
			live[string(p.UID)] = true
			assert.Zero(t, once[string(p.UID)], "the PU of live pod %s touched", p.Name)
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			break
		}
	}
	des, err := os.ReadDir(ctl.puDir)
	require.NoError(t, err)
	files := map[string]bool{}
	for _, de := range des {
		files[de.Name()] = true
	}
	for uid := range live {
		assert.True(t, files[uid], "the PU of live pod %s registered", uid)
	}
	assert.Len(t, files, len(live), "one PU a live pod, no other")
	logScale(t, "size=%dx%d check=exactly-once deleted=%d destroy-calls=%d live=%d pu-files=%d ok=%t",
		c.nodes, c.total(), len(deleted), len(calls), len(live), len(files), !t.Failed())
}

// logClientLatencies logs the harness's own calls' client-side latencies, by kind.
func (c *scaleCluster) logClientLatencies(t *testing.T, size string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, kind := range slices.Sorted(maps.Keys(c.calls)) {
		lat := slices.Sorted(slices.Values(c.calls[kind]))
		logScale(t, "size=%s client=harness call=%q n=%d ms-p50=%.1f ms-p99=%.1f ms-max=%.1f slo-p99-le-1s=%t",
			size, kind, len(lat), ms(procbench.Percentile(lat, 50)), ms(procbench.Percentile(lat, 99)), ms(lat[len(lat)-1]),
			procbench.Percentile(lat, 99) <= time.Second)
	}
}

// apiMetrics are the API server's metric families at one moment.
type apiMetrics map[string]*dto.MetricFamily

// apiMetrics reads the API server's /metrics as the admin.
func (c *scaleCluster) apiMetrics(t testing.TB) apiMetrics {
	t.Helper()
	raw, err := c.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	require.NoError(t, err)
	return parseMetrics(t, string(raw))
}

func parseMetrics(t testing.TB, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	require.NoError(t, err)
	return fams
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// latencyKey is the key of apiserver_request_duration_seconds the
// figures are by.
type latencyKey struct{ verb, resource, subresource, scope string }

// histogram is a histogram's cumulative counts by upper bound, and its count.
type histogram struct {
	bounds []float64
	cum    []float64
	count  float64
}

// requestLatencies sums apiserver_request_duration_seconds by latencyKey,
// and apiserver_watch_list_duration_seconds under the verb WATCHLIST: the
// time until a watch's initial events are sent, the LIST of an informer
// that streams its list (client-go's WatchListClient, on by default).
func (m apiMetrics) requestLatencies() map[latencyKey]*histogram {
	out := map[latencyKey]*histogram{}
	samples := slices.Concat(m["apiserver_request_duration_seconds"].GetMetric(), m["apiserver_watch_list_duration_seconds"].GetMetric())
	for _, s := range samples {
		l := labelsOf(s)
		k := latencyKey{l["verb"], l["resource"], l["subresource"], l["scope"]}
		if k.verb == "" {
			k.verb = "WATCHLIST"
		}
		h := out[k]
		hs := s.GetHistogram()
		if h == nil {
			h = &histogram{}
			for _, b := range hs.GetBucket() {
				h.bounds = append(h.bounds, b.GetUpperBound())
				h.cum = append(h.cum, 0)
			}
			out[k] = h
		}
		for i, b := range hs.GetBucket() {
			h.cum[i] += float64(b.GetCumulativeCount())
		}
		h.count += float64(hs.GetSampleCount())
	}
	return out
}

// minus is h less before (nil: nothing before).
func (h *histogram) minus(before *histogram) *histogram {
	out := &histogram{bounds: h.bounds, cum: slices.Clone(h.cum), count: h.count}
	if before != nil {
		for i := range out.cum {
			out.cum[i] -= before.cum[i]
		}
		out.count -= before.count
	}
	return out
}

// quantile is the upper bound of the bucket that holds the q-quantile
// (+Inf past the last bucket): the figure clusterloader2's SLOs read.
func (h *histogram) quantile(q float64) float64 {
	for i, c := range h.cum {
		if c >= q*h.count {
			return h.bounds[i]
		}
	}
	return math.Inf(1)
}

// logAPIServer logs the API server's requests between before and after:
// for each verb and resource, the count and the p50 and p99 latency
// (bucket bounds) with clusterloader2's SLO for it: mutating calls p99 ≤ 1 s,
// a namespace's LIST ≤ 5 s, a cluster-scoped LIST ≤ 30 s (a watch's
// initial list held to the same), GET ≤ 1 s.
func (c *scaleCluster) logAPIServer(t *testing.T, what string, before, after apiMetrics) {
	t.Helper()
	terminated := func(m apiMetrics) float64 {
		return sumOf(m, "apiserver_terminated_watchers_total", map[string]string{"resource": "pods"})
	}
	// Watches of pods the API server closed because their client did not
	// take their events in time: each such client lists (streams) again.
	logScale(t, "%s client=api-server terminated-pod-watchers=%.0f", what, terminated(after)-terminated(before))
	b, a := before.requestLatencies(), after.requestLatencies()
	keys := slices.SortedFunc(maps.Keys(a), func(x, y latencyKey) int {
		return strings.Compare(fmt.Sprint(x), fmt.Sprint(y))
	})
	for _, k := range keys {
		if k.verb == "WATCH" || k.verb == "CONNECT" {
			continue // long-running: no latency SLO
		}
		h := a[k].minus(b[k])
		if h.count <= 0 {
			continue
		}
		slo := time.Second.Seconds()
		switch {
		case (k.verb == "LIST" || k.verb == "WATCHLIST") && k.scope == "cluster":
			slo = 30
		case k.verb == "LIST" || k.verb == "WATCHLIST":
			slo = 5
		}
		res := k.resource
		if k.subresource != "" {
			res += "/" + k.subresource
		}
		logScale(t, "%s client=api-server verb=%s resource=%s scope=%s n=%.0f s-p50=%g s-p99=%g slo-s=%g slo-met=%t",
			what, k.verb, res, k.scope, h.count, h.quantile(0.5), h.quantile(0.99), slo, h.quantile(0.99) <= slo)
	}
}

// countRequests makes TestControllerHelper's process count its requests,
// every client of it, by verb and resource, on controller-runtime's
// registry (its /metrics) as scale_client_requests_total: client-go hands
// each request but a watch to metrics.RequestLatency with its method and
// URL template, which it wraps. client-go's own rest_client_requests_total
// has no resource.
func countRequests() {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: scaleRequestsMetric,
		Help: "Requests to the API server by verb (LIST: a GET of a collection) and resource, watches excepted."}, []string{"verb", "resource"})
	ctrlmetrics.Registry.MustRegister(c)
	clientmetrics.RequestLatency = requestCounter{next: clientmetrics.RequestLatency, counts: c}
}

type requestCounter struct {
	next   clientmetrics.LatencyMetric
	counts *prometheus.CounterVec
}

func (r requestCounter) Observe(ctx context.Context, method string, u url.URL, latency time.Duration) {
	verb, resource := requestKind(method, u.Path)
	r.counts.WithLabelValues(verb, resource).Inc()
	r.next.Observe(ctx, method, u, latency)
}

// requestKind returns the verb (the API server's: LIST for a GET of a
// collection) and the resource (resource[/subresource][.group]) of a
// request to path.
func requestKind(method, path string) (verb, resource string) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	group := ""
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		group, segs = segs[1], segs[3:]
	default:
		return method, path
	}
	if len(segs) >= 3 && segs[0] == "namespaces" {
		segs = segs[2:]
	}
	if len(segs) == 0 {
		return method, path
	}
	resource = segs[0]
	if len(segs) >= 3 {
		resource += "/" + segs[2]
	}
	if group != "" {
		resource += "." + group
	}
	named := len(segs) >= 2
	switch {
	case method == "GET" && !named:
		verb = "LIST"
	case method == "DELETE" && !named:
		verb = "DELETECOLLECTION"
	case method == "POST":
		verb = "CREATE"
	case method == "PUT":
		verb = "UPDATE"
	default:
		verb = method
	}
	return verb, resource
}

func TestRequestKind(t *testing.T) {
	for path, want := range map[string][2]string{
		"GET /api/v1/pods": {"LIST", "pods"},
		"GET /api/v1/namespaces/{namespace}/pods/{name}":                        {"GET", "pods"},
		"PUT /apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}": {"UPDATE", "leases.coordination.k8s.io"},
		"POST /apis/events.k8s.io/v1/namespaces/{namespace}/events":             {"CREATE", "events.events.k8s.io"},
		"PATCH /apis/events.k8s.io/v1/namespaces/{namespace}/events/{name}":     {"PATCH", "events.events.k8s.io"},
		"PATCH /api/v1/namespaces/{namespace}/pods/{name}/status":               {"PATCH", "pods/status"},
		"GET /api/v1/namespaces":                                                {"LIST", "namespaces"},
		"GET /apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}": {"GET", "leases.coordination.k8s.io"},
		"GET /version": {"GET", "/version"},
	} {
		method, p, _ := strings.Cut(path, " ")
		verb, resource := requestKind(method, p)
		assert.Equal(t, want, [2]string{verb, resource}, path)
	}
}
