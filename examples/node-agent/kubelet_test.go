package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/internal/testnode"
	"github.com/podsweeper/podsweeper/ports"
)

// kubeletSweep is the agent's --sweep-interval on the real nodes: short, so
// that the scenarios take seconds.
const kubeletSweep = 500 * time.Millisecond

// The node agent on real nodes: a kubelet built from source runs the pods,
// with the CRI fake as its runtime, and the agent runs as in its DaemonSet
// (its command line in a process of its own, the CRI extractor on the node's
// socket, the journal on a state file, confirmed destroys, metrics, health).
// Each scenario has a node, a namespace and an agent of its own; they share
// the API server. Each asserts what the agent asked the policy engine (its
// "destroying PU" log lines) and when.
func TestAgentOnKubelet(t *testing.T) {
	c := testnode.StartCluster(t)
	testkube.ApplyKustomization(t, c.Client, "deploy")
	for _, s := range []struct {
		name string
		run  func(*testing.T, *testnode.Cluster)
	}{
		{"1 a graceful delete keeps the PU until the kubelet removed the pod", testGracefulDelete},
		{"2 a sandbox restart destroys the old sandbox's PU and tracks the new one", testKubeletSandboxRestart},
		{"3 a pod recreated under its name destroys the old PU and keeps the new", testRecreate},
		{"4 a drain of 100 pods destroys every PU once, each within a second of its delete", testDrain},
		{"5 a finished pod's PU is destroyed with DestroyTerminated only", testTerminated},
		{"6 an agent killed and started again destroys what went away meanwhile", testKilledAgent},
		{"7 the runtime's socket goes away and comes back", testRuntimeOutage},
	} {
		t.Run(s.name, func(t *testing.T) {
			start := time.Now()
			s.run(t, c)
			t.Logf("scenario ran in %v", time.Since(start).Round(100*time.Millisecond))
		})
	}
}

// startNodeAgent runs the agent for the node n, with its journal in state
// and the extra flags, and waits for it to be ready.
// The agent's ports are picked free before it starts, and another process
// may take one meanwhile: an agent that exits before it is ready, for one of
// its ports is in use, is started again on others.
func startNodeAgent(t *testing.T, c *testnode.Cluster, n *testnode.Node, state string, extra ...string) *nodeAgent {
	t.Helper()
	for attempt := 1; ; attempt++ {
		a := runAgent(t, c.KubeConfig, append([]string{"--node=" + n.Name, "--cri-endpoint=" + n.CRIEndpoint, "--state-file=" + state,
			"--sweep-interval=" + kubeletSweep.String(), "--cri-cache-max-age=" + kubeletSweep.String(), "--workers=4"}, extra...)...)
		var exited bool
		var exitErr error
		require.Eventually(t, func() bool {
			if exited, exitErr = a.ended(); exited {
				return true
			}
			code, _ := probe(t, "http://"+a.probeAddr+"/readyz")
			return code == http.StatusOK
		}, waitLong, 20*time.Millisecond, "the agent is ready; its log:\n%s", a.log)
		if !exited {
			return a
		}
		a.exited = true // seen: its exit is no failure of the test's stop
		if attempt < 3 && strings.Contains(a.log.String(), "address already in use") {
			t.Logf("the agent's port was taken before it listened (%v); started again on others", exitErr)
			continue
		}
		require.FailNow(t, "the agent exited before it was ready", "%v; its log:\n%s", exitErr, a.log)
	}
}

// running creates the pods and waits for the kubelet to run them.
func running(t *testing.T, c *testnode.Cluster, pods ...*corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	for _, p := range pods {
		require.NoError(t, c.Client.Create(ctx, p))
	}
	for _, p := range pods {
		require.Eventually(t, func() bool {
			got := &corev1.Pod{}
			return c.Client.Get(ctx, client.ObjectKeyFromObject(p), got) == nil && got.Status.Phase == corev1.PodRunning
		}, waitLong, 50*time.Millisecond, "the kubelet runs pod %s", p.Name)
	}
}

// sandboxOf returns the pod's ready sandbox, as the runtime reports it.
func sandboxOf(t *testing.T, n *testnode.Node, pod *corev1.Pod) string {
	t.Helper()
	id, err := n.ReadySandbox(context.Background(), string(pod.UID))
	require.NoError(t, err)
	require.NotEmpty(t, id, "pod %s has a ready sandbox", pod.Name)
	return id
}

// tracked waits for the agent to track each pod's PU with its current
// sandbox and returns the sandboxes by pod UID.
func tracked(t *testing.T, a *nodeAgent, n *testnode.Node, pods ...*corev1.Pod) map[types.UID]string {
	t.Helper()
	out := map[types.UID]string{}
	for _, p := range pods {
		sb := sandboxOf(t, n, p)
		require.Eventually(t, func() bool { return a.trackedWith(t, p.UID, sb) }, waitLong, 20*time.Millisecond,
			"the agent tracks the PU of %s with sandbox %s", p.Name, sb)
		out[p.UID] = sb
	}
	return out
}

// gone waits for the pod to be removed from the API.
func gone(t *testing.T, c *testnode.Cluster, pod *corev1.Pod) {
	t.Helper()
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(c.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), &corev1.Pod{}))
	}, waitLong, 20*time.Millisecond, "the kubelet removes pod %s", pod.Name)
}

// 1. A pod deleted with its own grace period: while the kubelet terminates
// it, the pod is still in the API with its deletionTimestamp, and the agent
// keeps its PU (it checks it and asks for nothing); once the kubelet has
// removed the pod, the agent destroys the PU (PodGone) with its sandbox.
// The fake stops a container at once, so that the grace period is never
// waited on; StopTakesGracePeriod makes the container take it, as a process
// ignoring SIGTERM does, which keeps the pod terminating for 4 s.
func testGracefulDelete(t *testing.T, c *testnode.Cluster) {
	ctx := context.Background()
	n := c.StartNode(t, "node-1")
	n.StopTakesGracePeriod(true)
	c.CreateNamespace(t, "s1")
	a := startNodeAgent(t, c, n, filepath.Join(t.TempDir(), "journal.db"))
	pod := n.NewPod("s1", "web")
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](4)
	running(t, c, pod)
	sandbox := tracked(t, a, n, pod)[pod.UID]

	require.NoError(t, c.Client.Delete(ctx, pod)) // the pod's own grace period
	deleted := time.Now()
	var lastSeen time.Time // the start of the last read that found the pod
	terminating, checked := false, false
	for {
		require.Less(t, time.Since(deleted), waitLong, "the kubelet removes the pod")
		readAt := time.Now()
		asked := a.destroys(t, pod.UID)
		st, tracking := a.status(t)[string(pod.UID)]
		got := &corev1.Pod{}
		err := c.Client.Get(ctx, client.ObjectKeyFromObject(pod), got)
		if apierrors.IsNotFound(err) {
			break
		}
		require.NoError(t, err)
		lastSeen = readAt
		require.Empty(t, asked, "nothing is destroyed while the pod is still there")
		if got.DeletionTimestamp != nil {
			terminating = true
		}
		if tracking && st.LastChecked != nil && st.LastChecked.After(deleted) {
			checked = true // a check after the delete, the pod still there: kept
		}
		time.Sleep(20 * time.Millisecond)
	}
	assert.True(t, terminating, "the pod was seen terminating (deletionTimestamp set, still present)")
	assert.True(t, checked, "the agent checked the PU while the pod terminated, and kept it")

	ds := destroyed(t, a, pod.UID, 1)
	require.Len(t, ds, 1, "one destroy")
	assert.Equal(t, ports.ReasonPodGone, ds[0].Reason)
	assert.Equal(t, sandbox, ds[0].SandboxID, "the destroy names the pod's sandbox")
	assert.Equal(t, "s1/web", ds[0].Pod)
	assert.True(t, ds[0].At.After(lastSeen), "destroyed (%v) after the pod was last seen (%v)", ds[0].At, lastSeen)
	require.Eventually(t, func() bool {
		_, ok := a.status(t)[string(pod.UID)]
		return !ok
	}, waitLong, 20*time.Millisecond, "the PU is no longer tracked")
	assert.Len(t, a.destroys(t, pod.UID), 1, "destroyed once")
	t.Logf("terminating for %v (deleted → gone); destroyed %v after the pod was last seen",
		lastSeen.Sub(deleted).Round(time.Millisecond), ds[0].At.Sub(lastSeen).Round(time.Millisecond))
}

// 2. The kubelet restarts a pod's sandbox (its sandbox stopped through the
// CRI, as when it dies): the agent destroys the PU of the old sandbox with
// SandboxChanged and the old sandbox's ID, requeues the pod and tracks the
// PU of the new sandbox. Between the stop and the new sandbox nothing is
// destroyed: the only destroy of the pod comes after the new sandbox was
// created, and is the only one until the new sandbox's PU is tracked.
func testKubeletSandboxRestart(t *testing.T, c *testnode.Cluster) {
	n := c.StartNode(t, "node-2")
	c.CreateNamespace(t, "s2")
	a := startNodeAgent(t, c, n, filepath.Join(t.TempDir(), "journal.db"))
	pod := n.NewPod("s2", "web")
	running(t, c, pod)
	old := tracked(t, a, n, pod)[pod.UID]

	stopped := time.Now()
	require.Equal(t, old, n.StopSandbox(t, pod))
	current := n.WaitNewSandbox(t, pod, old)
	created := n.SandboxCreatedAt(t, current)

	require.Eventually(t, func() bool { return a.trackedWith(t, pod.UID, current) }, waitLong, 10*time.Millisecond,
		"the PU of the new sandbox %s is tracked", current)
	ds := a.destroys(t, pod.UID)
	require.Len(t, ds, 1, "one destroy from the stop until the new sandbox's PU is tracked")
	assert.Equal(t, ports.ReasonSandboxChanged, ds[0].Reason)
	assert.Equal(t, old, ds[0].SandboxID, "the destroy names the old sandbox")
	assert.False(t, ds[0].At.Before(created), "destroyed (%v) once the new sandbox existed (%v), not in between", ds[0].At, created)
	rq := a.logged(t, "pod requeued: its sandbox changed", pod.UID)
	require.Len(t, rq, 1, "the pod is requeued")
	assert.False(t, rq[0].At.Before(ds[0].At), "requeued after the destroy")

	a.checkedAfter(t, pod.UID, time.Now())
	assert.Len(t, a.destroys(t, pod.UID), 1, "the new sandbox's PU is kept")
	assert.True(t, a.trackedWith(t, pod.UID, current))
	t.Logf("new sandbox %v after the stop; destroyed %v after it was created",
		created.Sub(stopped).Round(time.Millisecond), ds[0].At.Sub(created).Round(time.Millisecond))
}

// 3. A StatefulSet-style recreate: the pod deleted and created again under
// the same name on the same node. The old PU is destroyed once, UIDChanged
// (the new pod seen under the name) or PodGone (the name seen empty); the
// new pod's PU is tracked with its sandbox and kept.
func testRecreate(t *testing.T, c *testnode.Cluster) {
	ctx := context.Background()
	n := c.StartNode(t, "node-3")
	c.CreateNamespace(t, "s3")
	a := startNodeAgent(t, c, n, filepath.Join(t.TempDir(), "journal.db"))
	first := n.NewPod("s3", "web-0")
	running(t, c, first)
	oldSandbox := tracked(t, a, n, first)[first.UID]

	require.NoError(t, c.Client.Delete(ctx, first))
	gone(t, c, first)
	second := n.NewPod("s3", "web-0") // as the StatefulSet controller recreates it
	running(t, c, second)
	require.NotEqual(t, first.UID, second.UID)
	newSandbox := tracked(t, a, n, second)[second.UID]

	ds := destroyed(t, a, first.UID, 1)
	require.Len(t, ds, 1)
	assert.Contains(t, []ports.Reason{ports.ReasonUIDChanged, ports.ReasonPodGone}, ds[0].Reason)
	assert.Equal(t, oldSandbox, ds[0].SandboxID)
	a.checkedAfter(t, second.UID, time.Now())
	assert.Empty(t, a.destroys(t, second.UID), "the new pod's PU is kept")
	assert.True(t, a.trackedWith(t, second.UID, newSandbox))
	assert.Len(t, a.destroys(t, first.UID), 1, "the old PU is destroyed once")
	t.Logf("the old PU destroyed with %s", ds[0].Reason)
}

// 4. A drain: 100 pods evicted through the Eviction API at once. Every PU
// is destroyed exactly once (PodGone). The time from each pod's deletion,
// as a watch sees it, to its PU's destroy is measured (p50, p99, max) and
// its p99 held under a second: each destroy is confirmed with a read of the
// API server, and a client left at client-go's default of 5 requests a
// second (what --kubeconfig gave before --kube-api-qps) takes 20 s for the
// 100 reads. The time from the first eviction to the last destroy is logged.
func testDrain(t *testing.T, c *testnode.Cluster) {
	const count = 100
	ctx := context.Background()
	n := c.StartNode(t, "node-4")
	c.CreateNamespace(t, "s4")
	a := startNodeAgent(t, c, n, filepath.Join(t.TempDir(), "journal.db"))
	var pods []*corev1.Pod
	for i := range count {
		pods = append(pods, n.NewPod("s4", fmt.Sprintf("drain-%02d", i)))
	}
	start := time.Now()
	running(t, c, pods...)
	sandboxes := tracked(t, a, n, pods...)
	t.Logf("%d pods running and tracked in %v", count, time.Since(start).Round(time.Millisecond))

	// When the API server reports each pod gone, as the agent's informer sees it. The API server may close a
	// watch (one that falls behind the drain's burst of events, or one that asked for a revision its cache has
	// not reached yet); a RetryWatcher watches again from the last event it delivered, so no delete is missed.
	// A watch begun again replays at once what happened while none was open: a delete replayed is seen late by
	// the test, not by the agent, and its latency is not measured. What a watch may replay is bounded by the
	// revision the API server has right after it began (etcd's revisions, in this cluster, are numbers that
	// grow); a delete at a later revision is seen as it happens.
	list, err := c.Clientset.CoreV1().Pods("s4").List(ctx, metav1.ListOptions{Limit: 1})
	require.NoError(t, err)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var seenMu sync.Mutex
	var watches int
	var replayedUpTo uint64 // the revision the watch open now may have replayed up to
	var watchLog []string   // why each watch ended, as the RetryWatcher logs it
	deletedAt := map[types.UID]time.Time{}
	replayed := map[types.UID]bool{}
	revision := func(rv string) uint64 {
		n, err := strconv.ParseUint(rv, 10, 64)
		if err != nil {
			return math.MaxUint64 // a revision that cannot be read: nothing is known to be seen on time
		}
		return n
	}
	logCtx := klog.NewContext(watchCtx, funcr.New(func(prefix, args string) {
		seenMu.Lock()
		watchLog = append(watchLog, fmt.Sprintf("%s %s %s", time.Now().Format("15:04:05.000"), prefix, args))
		seenMu.Unlock()
	}, funcr.Options{Verbosity: 5}))
	rw, err := watchtools.NewRetryWatcherWithContext(logCtx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := c.Clientset.CoreV1().Pods("s4").Watch(ctx, opts)
			if err != nil {
				return nil, err
			}
			seenMu.Lock()
			watches++
			again := watches > 1
			seenMu.Unlock()
			if !again {
				return w, nil
			}
			now, err := c.Clientset.CoreV1().Pods("s4").List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil {
				w.Stop()
				return nil, err
			}
			seenMu.Lock()
			replayedUpTo = revision(now.ResourceVersion)
			seenMu.Unlock()
			return w, nil
		},
	})
	require.NoError(t, err)
	defer func() { rw.Stop(); <-rw.Done() }()
	go func() {
		for ev := range rw.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Deleted {
				seenMu.Lock()
				deletedAt[p.UID] = time.Now()
				replayed[p.UID] = revision(p.ResourceVersion) <= replayedUpTo
				seenMu.Unlock()
			}
		}
	}()

	evictionStart := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, count)
	for _, p := range pods {
		wg.Go(func() {
			errs <- c.Clientset.CoreV1().Pods(p.Namespace).EvictV1(ctx, &policyv1.Eviction{
				ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "eviction")
	}
	require.Eventually(t, func() bool { return len(a.log.destroys("")) >= count }, waitLong, 20*time.Millisecond,
		"the %d PUs are destroyed", count)
	for _, p := range pods {
		gone(t, c, p)
	}
	require.Eventually(t, func() bool { return a.metric(t, k8s.MetricTrackedPUs) == 0 }, waitLong, 20*time.Millisecond,
		"no PU is tracked any more")
	// The test's own watch may deliver later than the agent's informer (a loaded machine): its record of each
	// delete is waited for, not read as it stands.
	require.Eventually(t, func() bool {
		seenMu.Lock()
		defer seenMu.Unlock()
		return len(deletedAt) >= count
	}, waitLong, 20*time.Millisecond, "the test's watch saw every delete")
	var last time.Time
	var latencies []time.Duration
	for _, p := range pods {
		ds := a.destroys(t, p.UID)
		require.Len(t, ds, 1, "the PU of %s is destroyed exactly once", p.Name)
		assert.Equal(t, ports.ReasonPodGone, ds[0].Reason, p.Name)
		assert.Equal(t, sandboxes[p.UID], ds[0].SandboxID, p.Name)
		if ds[0].At.After(last) {
			last = ds[0].At
		}
		seenMu.Lock()
		seen, late := deletedAt[p.UID], replayed[p.UID]
		seenMu.Unlock()
		if !late {
			latencies = append(latencies, ds[0].At.Sub(seen))
		}
	}
	slices.Sort(latencies)
	// A re-watch may make a few deletes unmeasurable; half of the drain measured is still a drain.
	seenMu.Lock()
	started, why := watches, strings.Join(watchLog, "\n")
	seenMu.Unlock()
	if started > 1 {
		t.Logf("%d watches; the RetryWatcher's log:\n%s", started, why)
	}
	require.GreaterOrEqual(t, len(latencies), count/2, "deletes seen as they happened (%d watches)", started)
	n99 := len(latencies)
	p50, p99, maxLatency := latencies[n99/2], latencies[max(n99*99/100-1, 0)], latencies[n99-1]
	t.Logf("drain of %d pods, deletion seen by a watch to destroy (%d measured, %d replayed by a re-watch): p50 %v, p99 %v, max %v",
		count, n99, count-n99, p50.Round(time.Millisecond), p99.Round(time.Millisecond), maxLatency.Round(time.Millisecond))
	assert.Less(t, p99, time.Second, "delete to destroy, p99: a client throttled to 5 requests a second needs about 20 s for 100 confirming reads")
	assert.Len(t, a.destroys(t, ""), count, "nothing else is destroyed")
	assert.Equal(t, float64(count), a.metric(t, k8s.MetricDestroys+`{reason="PodGone"}`))
	t.Logf("drain of %d pods: %v from the first eviction to the last destroy", count, last.Sub(evictionStart).Round(time.Millisecond))
}

// 5. A pod with restartPolicy Never whose container exits (the fake reports
// it exited, code 0): the kubelet marks it Succeeded and stops its
// sandbox. With --destroy-terminated its PU is destroyed with PodTerminated
// while the pod object stays; without it, the PU is kept, check after
// check: the checks after the pod finished keep it at row 8 (no ready
// sandbox), row 11 being off.
func testTerminated(t *testing.T, c *testnode.Cluster) {
	c.CreateNamespace(t, "s5")
	type finished struct {
		a       *nodeAgent
		n       *testnode.Node
		pod     *corev1.Pod
		sandbox string
		at      time.Time // when the pod was seen Succeeded
	}
	finish := func(t *testing.T, node string, flags ...string) finished {
		n := c.StartNode(t, node)
		a := startNodeAgent(t, c, n, filepath.Join(t.TempDir(), "journal.db"), flags...)
		pod := n.NewPod("s5", "job-"+node)
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
		running(t, c, pod)
		sandbox := tracked(t, a, n, pod)[pod.UID]
		n.ExitContainer(t, pod, "app", 0)
		require.Eventually(t, func() bool {
			got := &corev1.Pod{}
			return c.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), got) == nil && got.Status.Phase == corev1.PodSucceeded
		}, waitLong, 20*time.Millisecond, "the kubelet marks the pod Succeeded")
		return finished{a: a, n: n, pod: pod, sandbox: sandbox, at: time.Now()}
	}
	t.Run("with --destroy-terminated", func(t *testing.T) {
		f := finish(t, "node-5a", "--destroy-terminated")
		ds := destroyed(t, f.a, f.pod.UID, 1)
		require.Len(t, ds, 1)
		assert.Equal(t, ports.ReasonPodTerminated, ds[0].Reason)
		assert.Equal(t, f.sandbox, ds[0].SandboxID)
		require.NoError(t, c.Client.Get(context.Background(), client.ObjectKeyFromObject(f.pod), &corev1.Pod{}),
			"the pod object is still there")
		t.Logf("destroyed %v after the pod was seen Succeeded", ds[0].At.Sub(f.at).Round(time.Millisecond))
	})
	t.Run("without", func(t *testing.T) {
		f := finish(t, "node-5b")
		require.Eventually(t, func() bool {
			id, err := f.n.ReadySandbox(context.Background(), string(f.pod.UID))
			return err == nil && id == ""
		}, waitLong, 20*time.Millisecond, "the kubelet stops the finished pod's sandbox")
		// The periodic checks read a list of the runtime's sandboxes at most
		// --cri-cache-max-age old: a check that starts that long after the
		// stop reads a list made after it.
		stopped := time.Now().Add(kubeletSweep)

		st := f.a.checkedAfter(t, f.pod.UID, stopped)
		require.NotNil(t, st.LastChecked)
		assert.True(t, st.LastChecked.After(f.at), "checked (%v) after the pod was seen Succeeded (%v)", *st.LastChecked, f.at)
		assert.Equal(t, 8, st.LastRow, "kept by row 8 (no ready sandbox), not destroyed by row 11: %s", st.Why)
		assert.Equal(t, f.sandbox, st.SandboxID, "kept with its sandbox")
		assert.Empty(t, f.a.destroys(t, f.pod.UID), "the finished pod's PU is kept")
		got := &corev1.Pod{}
		require.NoError(t, c.Client.Get(context.Background(), client.ObjectKeyFromObject(f.pod), got))
		assert.Equal(t, corev1.PodSucceeded, got.Status.Phase, "the pod is still there, finished")
		t.Logf("kept: checked %v after the pod was seen Succeeded, row %d, %s",
			st.LastChecked.Sub(f.at).Round(time.Millisecond), st.LastRow, st.Why)
	})
}

// 6. The agent killed (SIGKILL) while two pods are deleted and a sandbox
// restarts, then started again on the same state file: the PUs of the
// deleted pods are destroyed (PodGone), the old sandbox's PU too
// (SandboxChanged, old sandbox), and none of the live ones.
func testKilledAgent(t *testing.T, c *testnode.Cluster) {
	ctx := context.Background()
	n := c.StartNode(t, "node-6")
	c.CreateNamespace(t, "s6")
	state := filepath.Join(t.TempDir(), "journal.db")
	first := startNodeAgent(t, c, n, state)
	byName := map[string]*corev1.Pod{}
	var pods []*corev1.Pod
	for _, name := range []string{"keep-0", "keep-1", "gone-0", "gone-1", "restarts"} {
		p := n.NewPod("s6", name)
		byName[name] = p
		pods = append(pods, p)
	}
	running(t, c, pods...)
	sandboxes := tracked(t, first, n, pods...)

	first.kill(t)
	assert.Empty(t, first.destroys(t, ""), "the first agent destroyed nothing")
	for _, name := range []string{"gone-0", "gone-1"} {
		require.NoError(t, c.Client.Delete(ctx, byName[name]))
	}
	old, current := n.RestartSandbox(t, byName["restarts"])
	require.Equal(t, sandboxes[byName["restarts"].UID], old)
	for _, name := range []string{"gone-0", "gone-1"} {
		gone(t, c, byName[name])
	}

	restarted := time.Now()
	second := startNodeAgent(t, c, n, state)
	for _, name := range []string{"gone-0", "gone-1"} {
		p := byName[name]
		ds := destroyed(t, second, p.UID, 1)
		require.Len(t, ds, 1, name)
		assert.Equal(t, ports.ReasonPodGone, ds[0].Reason, name)
		assert.Equal(t, sandboxes[p.UID], ds[0].SandboxID, name)
	}
	r := byName["restarts"]
	ds := destroyed(t, second, r.UID, 1)
	require.Len(t, ds, 1)
	assert.Equal(t, ports.ReasonSandboxChanged, ds[0].Reason)
	assert.Equal(t, old, ds[0].SandboxID, "the destroy names the sandbox of before the restart")
	require.Eventually(t, func() bool { return second.trackedWith(t, r.UID, current) }, waitLong, 10*time.Millisecond,
		"the PU of the new sandbox is tracked")

	for _, name := range []string{"keep-0", "keep-1"} {
		p := byName[name]
		second.checkedAfter(t, p.UID, time.Now())
		assert.Empty(t, second.destroys(t, p.UID), "%s is live: its PU is kept", name)
		assert.True(t, second.trackedWith(t, p.UID, sandboxes[p.UID]), name)
	}
	assert.Len(t, second.destroys(t, ""), 3, "only the three PUs that went away are destroyed")
	var last time.Time
	for _, d := range second.destroys(t, "") {
		if d.At.After(last) {
			last = d.At
		}
	}
	t.Logf("the three PUs destroyed within %v of the restart", last.Sub(restarted).Round(time.Millisecond))
}

// 7. The runtime's socket goes away and comes back. While it is gone the
// agent is not ready (its /readyz check "cri" fails) and destroys nothing:
// it checks the PU and keeps it (the sandbox lookup fails: row 6). Once it
// is back, the agent is ready again and its checks find the same sandbox
// (row 9).
func testRuntimeOutage(t *testing.T, c *testnode.Cluster) {
	n := c.StartNode(t, "node-7")
	c.CreateNamespace(t, "s7")
	a := startNodeAgent(t, c, n, filepath.Join(t.TempDir(), "journal.db"))
	pod := n.NewPod("s7", "web")
	running(t, c, pod)
	sandbox := tracked(t, a, n, pod)[pod.UID]
	readyz := "http://" + a.probeAddr + "/readyz?verbose"
	code, body := probe(t, readyz)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "[+]cri ok")

	n.StopRuntime(t)
	down := time.Now()
	require.Eventually(t, func() bool {
		code, body := probe(t, readyz)
		return code == http.StatusInternalServerError && strings.Contains(body, "[-]cri failed")
	}, waitLong, 20*time.Millisecond, "not ready while the runtime is gone")
	require.Eventually(t, func() bool {
		st, ok := a.status(t)[string(pod.UID)]
		return ok && st.LastRow == 6
	}, waitLong, 20*time.Millisecond, "the checks go on, and fail to ask for the sandbox (row 6)")
	st := a.checkedAfter(t, pod.UID, down)
	require.NotNil(t, st.LastChecked)
	assert.True(t, st.LastChecked.After(down), "checked (%v) after the socket went away (%v)", *st.LastChecked, down)
	assert.Equal(t, 6, st.LastRow, "kept by row 6 (the sandbox lookup failed): %s", st.Why)
	assert.Equal(t, sandbox, st.SandboxID, "kept with its sandbox")
	assert.Empty(t, a.destroys(t, pod.UID), "nothing is destroyed while the runtime is gone")
	t.Logf("kept while the runtime was gone: checked %v after it went away, row %d, %s",
		st.LastChecked.Sub(down).Round(time.Millisecond), st.LastRow, st.Why)

	n.StartRuntime(t)
	require.Eventually(t, func() bool {
		code, body := probe(t, readyz)
		return code == http.StatusOK && strings.Contains(body, "[+]cri ok")
	}, waitLong, 20*time.Millisecond, "ready again once the runtime is back")
	require.Eventually(t, func() bool {
		st, ok := a.status(t)[string(pod.UID)]
		return ok && st.LastRow == 9
	}, waitLong, 20*time.Millisecond, "the sandbox checks resume: same sandbox (row 9)")
	assert.True(t, a.trackedWith(t, pod.UID, sandbox))
	assert.Empty(t, a.destroys(t, pod.UID), "nothing is destroyed")
}
