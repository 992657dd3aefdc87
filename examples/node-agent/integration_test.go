package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/bolt"
	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/ports"
)

func testPod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
		},
	}
}

const agentUser = "system:serviceaccount:podsweeper:node-agent"

// The agent against a real API server, with nothing but the permissions
// deploy/ grants its ServiceAccount.
func TestAgentAgainstAPIServer(t *testing.T) {
	cfg, kubeconfig := testkube.StartAPIServer(t)
	admin, err := client.New(cfg, client.Options{})
	require.NoError(t, err)
	testkube.ApplyKustomization(t, admin, "deploy")
	agentCfg := rest.CopyConfig(cfg)
	agentCfg.Impersonate = rest.ImpersonationConfig{UserName: agentUser}

	t.Run("RBAC is read-only on pods", func(t *testing.T) { testLeastRBAC(t, agentCfg) })
	t.Run("the agent tracks the node's pods and destroys", func(t *testing.T) { testTracking(t, admin, kubeconfig) })
	t.Run("a dry run destroys nothing and reports what it would", func(t *testing.T) { testDryRun(t, admin, kubeconfig) })
	t.Run("the binary serves metrics and logs destroys", func(t *testing.T) { testBinary(t, admin, kubeconfig) })
	t.Run("a drain of 1000 pods: every destroy in the default log", func(t *testing.T) { testDrainLog(t, admin, kubeconfig) })
	t.Run("a restart destroys the PUs of pods deleted while the agent was down", func(t *testing.T) {
		testRestart(t, admin, kubeconfig)
	})
	t.Run("ready while the runtime answers", func(t *testing.T) { testReadiness(t, kubeconfig) })
	t.Run("metrics and the status page only for authorized clients", func(t *testing.T) {
		testSecureMetrics(t, cfg, admin, kubeconfig)
	})
	t.Run("a sandbox restart destroys the PU and requeues the pod", func(t *testing.T) { testSandboxRestart(t, admin, kubeconfig) })
	t.Run("a stopped sandbox keeps its PU until the pod is gone", func(t *testing.T) { testSandboxStopped(t, admin, kubeconfig) })
	t.Run("with --destroy-dead-sandboxes a stopped sandbox's PU goes at once", func(t *testing.T) { testSandboxDead(t, admin, kubeconfig) })
}

func testLeastRBAC(t *testing.T, agentCfg *rest.Config) {
	ctx := context.Background()
	asAgent, err := client.New(agentCfg, client.Options{})
	require.NoError(t, err)
	can := func(group, resource, verb string) bool {
		t.Helper()
		r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: group, Resource: resource, Verb: verb},
		}}
		require.NoError(t, asAgent.Create(ctx, r))
		return r.Status.Allowed
	}
	for _, verb := range []string{"get", "list", "watch"} {
		assert.True(t, can("", "pods", verb), "the ServiceAccount must be able to %s pods", verb)
	}
	for _, verb := range []string{"create", "update", "patch", "delete", "deletecollection"} {
		assert.False(t, can("", "pods", verb), "the ServiceAccount must not %s pods", verb)
	}
	for _, r := range []struct{ group, resource, verb string }{
		{"", "secrets", "get"}, {"", "secrets", "list"}, {"", "configmaps", "get"}, {"", "nodes", "get"},
		{"", "events", "create"}, {"coordination.k8s.io", "leases", "create"}, {"", "pods/exec", "create"},
	} {
		assert.False(t, can(r.group, r.resource, r.verb), "the ServiceAccount must not %s %s", r.verb, r.resource)
	}
	err = asAgent.List(ctx, &corev1.SecretList{})
	require.True(t, apierrors.IsForbidden(err), "RBAC is enforced: listing secrets must be forbidden, got %v", err)
}

// testTracking runs the agent, as the ServiceAccount and without a
// runtime: it tracks the PUs of the node's pods that have a network of
// their own, and destroys one once its pod is deleted.
func testTracking(t *testing.T, admin client.Client, kubeconfig []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mine, other := testPod("web", "node-a"), testPod("elsewhere", "node-b")
	hostNet := testPod("host-net", "node-a")
	hostNet.Spec.HostNetwork = true
	mirror := testPod("static-mirror", "node-a")
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "0123abcd"}
	for _, p := range []*corev1.Pod{mine, other, hostNet, mirror} {
		require.NoError(t, admin.Create(ctx, p))
	}
	a := runAgent(t, kubeconfig, "--node=node-a", "--cri-endpoint=", "--sweep-interval=1h", "--workers=2",
		"--state-file="+filepath.Join(t.TempDir(), "journal.db"))

	tracked := func(uid types.UID) bool {
		_, ok := a.status(t)[string(uid)]
		return ok
	}
	require.Eventually(t, func() bool { return tracked(mine.UID) }, waitLong, 10*time.Millisecond,
		"the pod bound to the node is tracked")
	assert.False(t, tracked(other.UID), "a pod of another node is not tracked")
	// One informer delivers in order: once a pod created now is tracked,
	// the events of the pods created before were handled.
	marker := testPod("marker", "node-a")
	require.NoError(t, admin.Create(ctx, marker))
	require.Eventually(t, func() bool { return tracked(marker.UID) }, waitLong, 10*time.Millisecond)
	assert.False(t, tracked(hostNet.UID), "a host-network pod is not tracked")
	assert.False(t, tracked(mirror.UID), "a mirror pod is not tracked")

	require.NoError(t, admin.Delete(ctx, mine, client.GracePeriodSeconds(0)))
	// The sweep interval is an hour: the delete event must trigger the check.
	ds := destroyed(t, a, mine.UID, 1)
	require.Len(t, ds, 1)
	assert.Equal(t, ports.ReasonPodGone, ds[0].Reason)
	assert.Equal(t, "default/web", ds[0].Pod)
	assert.Eventually(t, func() bool { return !tracked(mine.UID) }, waitLong, 10*time.Millisecond)
	assert.Len(t, a.destroys(t, ""), 1, "only the deleted pod's PU is destroyed")
	for _, p := range []*corev1.Pod{other, hostNet, mirror, marker} {
		require.NoError(t, admin.Delete(ctx, p, client.GracePeriodSeconds(0)))
	}
}

// testDryRun runs the agent with --dry-run: a deleted pod's PU is found
// gone and confirmed as usual, reported once (log, metric, report page)
// and never destroyed, while a live pod's PU stays tracked.
func testDryRun(t *testing.T, admin client.Client, kubeconfig []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gone, live := testPod("dry-gone", "node-a"), testPod("dry-live", "node-a")
	for _, p := range []*corev1.Pod{gone, live} {
		require.NoError(t, admin.Create(ctx, p))
	}
	a := runAgent(t, kubeconfig, "--node=node-a", "--cri-endpoint=", "--sweep-interval=1s", "--dry-run",
		"--state-file="+filepath.Join(t.TempDir(), "journal.db"))
	require.Eventually(t, func() bool {
		st := a.status(t)
		_, g := st[string(gone.UID)]
		_, l := st[string(live.UID)]
		return g && l
	}, waitLong, 10*time.Millisecond, "both pods' PUs are tracked")

	require.NoError(t, admin.Delete(ctx, gone, client.GracePeriodSeconds(0)))
	require.Eventually(t, func() bool { return len(a.logged(t, "dry run: PU would be destroyed", gone.UID)) == 1 },
		waitLong, 10*time.Millisecond, "the deleted pod's PU is reported")
	// Several checks later (1 s interval): reported once, destroyed never.
	a.checkedAfter(t, live.UID, time.Now())
	a.checkedAfter(t, live.UID, time.Now())
	assert.Len(t, a.logged(t, "dry run: PU would be destroyed", gone.UID), 1, "reported once")
	assert.Empty(t, a.destroys(t, ""), "a dry run destroys nothing")
	assert.Equal(t, 1.0, a.metric(t, k8s.MetricWouldDestroy+`{reason="PodGone"}`))
	st := a.status(t)
	assert.NotContains(t, st, string(gone.UID), "a PU whose pod is gone for good is dropped once reported")
	assert.Contains(t, st, string(live.UID), "a live pod's PU stays tracked")

	var page struct {
		Total   int                `json:"total"`
		Reports []k8s.WouldDestroy `json:"reports"`
	}
	require.NoError(t, json.Unmarshal([]byte(testkube.Get(t, "http://"+a.metricsAddr+k8s.DryRunPath)), &page))
	assert.Equal(t, 1, page.Total)
	require.Len(t, page.Reports, 1)
	assert.Equal(t, string(gone.UID), page.Reports[0].PUID)
	assert.Equal(t, string(ports.ReasonPodGone), page.Reports[0].Reason)
	require.NoError(t, admin.Delete(ctx, live, client.GracePeriodSeconds(0)))
}

// testBinary runs the agent's command line (run) with a kubeconfig that acts
// as the ServiceAccount, and watches it through its metrics and its logs.
// There is no container runtime: the agent runs without one, says so once
// and is not ready. Every metric that the chart's alerts and dashboard use
// is on its /metrics.
func testBinary(t *testing.T, admin client.Client, kubeconfig []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pod := testPod("api", "node-a")
	require.NoError(t, admin.Create(ctx, pod))

	noRuntime := "unix://" + filepath.Join(t.TempDir(), "containerd.sock")
	agent := startBinary(t, ctx, kubeconfig, "--node=node-a", "--cri-endpoint="+noRuntime)
	metricsAddr, probeAddr, logs := agent.metricsAddr, agent.probeAddr, agent.logs

	require.Eventually(t, func() bool { return testkube.Get(t, "http://"+probeAddr+"/healthz") == "ok" }, 20*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool {
		return strings.Contains(testkube.Get(t, "http://"+metricsAddr+"/metrics"), k8s.MetricTrackedPUs+" 1\n")
	}, 20*time.Second, 20*time.Millisecond, "podsweeper_tracked_pus reaches 1; logs:\n%s", logs)

	require.NoError(t, admin.Delete(ctx, pod, client.GracePeriodSeconds(0)))
	require.Eventually(t, func() bool {
		return strings.Contains(testkube.Get(t, "http://"+metricsAddr+"/metrics"), k8s.MetricDestroys+`{reason="PodGone"} 1`)
	}, 20*time.Second, 20*time.Millisecond, "logs:\n%s", logs)
	assert.Contains(t, logs.String(), "destroying PU")
	assert.Contains(t, logs.String(), string(pod.UID))
	t.Run("the chart's alerts and dashboard use metrics the agent exports", func(t *testing.T) {
		testkube.AssertExported(t, renderAlerts(t), testkube.Get(t, "http://"+metricsAddr+"/metrics"))
	})

	for range 3 {
		code, body := probe(t, "http://"+probeAddr+"/readyz")
		assert.Equal(t, http.StatusInternalServerError, code, "not ready without the runtime")
		assert.Contains(t, body, "[-]cri failed")
		assert.Contains(t, body, "[+]pod-cache ok", "the cache has synced: the pod was tracked")
		assert.Contains(t, body, "[+]podsweeper ok")
	}
	assert.Equal(t, 1, strings.Count(logs.String(), "sandbox restarts are not detected"), "said once; logs:\n%s", logs)

	// client-go logs through klog: its lines are the agent's JSON lines too.
	klog.Warning("a line of client-go's")
	assert.Len(t, logs.find("a line of client-go's", ""), 1)
}

// drainPods is how many pods testDrainLog deletes at once: ten times the
// first 100 lines a second that the sampler keeps of a message.
const drainPods = 1000

// testDrainLog runs the agent's command line with its default logger (no
// --zap-* flag but the time's encoding), deletes 1,000 pods of its node at
// once and counts the lines that record their destroys: every one is
// there, the engine's ("PU destroyed") and the agent's ("destroying PU"),
// where the sampling of zap's production logger keeps about half.
func testDrainLog(t *testing.T, admin client.Client, kubeconfig []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const ns, node = "drain", "node-drain"
	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	uids := make(chan types.UID, drainPods)
	next := make(chan int)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range next {
				p := testPod(fmt.Sprintf("pod-%04d", i), node)
				p.Namespace = ns
				if assert.NoError(t, admin.Create(ctx, p)) {
					uids <- p.UID
				}
			}
		})
	}
	for i := range drainPods {
		next <- i
	}
	close(next)
	wg.Wait()
	close(uids)
	require.Len(t, uids, drainPods)
	// No client-side rate limit: each destroy costs a confirming read and
	// an Event, and 50 a second would make the test last 40 s.
	a := runAgent(t, kubeconfig, "--node="+node, "--cri-endpoint=", "--kube-api-qps=-1",
		"--state-file="+filepath.Join(t.TempDir(), "journal.db"))
	require.Eventually(t, func() bool { return a.metric(t, k8s.MetricTrackedPUs) == drainPods }, waitLong, 50*time.Millisecond,
		"every pod tracked")
	require.NoError(t, admin.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0)))
	require.Eventually(t, func() bool { return a.metric(t, k8s.MetricDestroys+`{reason="PodGone"}`) == drainPods }, waitLong,
		50*time.Millisecond, "every PU destroyed")
	a.stop(t)
	a.log.ended()

	for _, msg := range []string{"destroying PU", k8s.LogMessageDestroyed} {
		byPU := map[string]int{}
		for _, l := range a.logged(t, msg, "") {
			byPU[l.PUID]++
		}
		var missing, twice []types.UID
		for uid := range uids {
			switch byPU[string(uid)] {
			case 1:
			case 0:
				missing = append(missing, uid)
			default:
				twice = append(twice, uid)
			}
		}
		assert.Equal(t, drainPods, len(byPU), "PUs with a %q line", msg)
		assert.Zero(t, len(missing), "PUs without a %q line, such as %v", msg, missing[:min(3, len(missing))])
		assert.Zero(t, len(twice), "PUs with more than one %q line, such as %v", msg, twice[:min(3, len(twice))])
	}
}

// runningBinary is the agent's command line running in the test.
type runningBinary struct {
	metricsAddr, probeAddr string
	logs                   *agentLog
}

// startBinary runs the agent's command line (run) in the test's process,
// with args, a kubeconfig acting as the ServiceAccount and free metrics and
// probe addresses, until the test ends. Only one agent may run so in a
// process (run registers its metrics on controller-runtime's global
// registry): the other tests run theirs in a process of its own (runAgent).
func startBinary(t *testing.T, ctx context.Context, kubeconfig []byte, args ...string) runningBinary {
	t.Helper()
	path := agentKubeconfig(t, kubeconfig)
	b := runningBinary{metricsAddr: testkube.FreeAddr(t), probeAddr: testkube.FreeAddr(t), logs: &agentLog{}}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- run(runCtx, append([]string{"--kubeconfig=" + path, "--metrics-bind-address=" + b.metricsAddr, "--metrics-secure=false",
			"--health-probe-bind-address=" + b.probeAddr, "--sweep-interval=1h", "--workers=2", "--zap-time-encoding=rfc3339nano",
			"--state-file=" + filepath.Join(t.TempDir(), "journal.db")}, args...), os.Getenv, b.logs)
	}()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Error("the agent did not stop")
		}
		b.logs.ended()
		b.logs.unparsed(t)
	})
	return b
}

// testRestart runs the agent in a child process and kills it with SIGKILL
// once it tracks the node's four pods; two of them are deleted while it is
// down. The agent started again on the same state file destroys their PUs
// within one interval of its restore, and keeps the two live ones.
func testRestart(t *testing.T, admin client.Client, kubeconfig []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const node, interval = "node-r", 3 * time.Second
	var pods []*corev1.Pod
	for _, name := range []string{"keep-0", "keep-1", "gone-0", "gone-1"} {
		p := testPod(name, node)
		require.NoError(t, admin.Create(ctx, p))
		pods = append(pods, p)
	}
	defer func() {
		for _, p := range pods[:2] {
			assert.NoError(t, client.IgnoreNotFound(admin.Delete(context.Background(), p, client.GracePeriodSeconds(0))))
		}
	}()
	state := filepath.Join(t.TempDir(), "journal.db")
	start := func() *nodeAgent {
		return runAgent(t, kubeconfig, "--node="+node, "--cri-endpoint=", "--sweep-interval="+interval.String(), "--workers=2",
			"--state-file="+state)
	}
	tracked := func(a *nodeAgent, n int) func() bool {
		return func() bool { return a.metric(t, k8s.MetricTrackedPUs) == float64(n) }
	}

	// The first agent: killed once it tracks the four pods (the journal is
	// its first Observer: what the metrics count is on disk).
	first := start()
	require.Eventually(t, tracked(first, 4), 30*time.Second, 10*time.Millisecond, "the first agent tracks the four pods")
	first.kill(t)
	assert.Empty(t, first.destroys(t, ""), "the first agent destroyed nothing")

	// While it is down.
	for _, p := range pods[2:] {
		require.NoError(t, admin.Delete(ctx, p, client.GracePeriodSeconds(0)))
	}

	// The agent again, in a new process, on the same state file.
	second := start()
	var restoredAt time.Time
	require.Eventually(t, func() bool {
		if len(second.log.find("PUs restored from the Inventory", "")) > 0 {
			restoredAt = time.Now()
			return true
		}
		return false
	}, 30*time.Second, 5*time.Millisecond, "the second agent restores the journal's PUs")
	require.Eventually(t, func() bool {
		return len(second.log.destroys(pods[2].UID)) > 0 && len(second.log.destroys(pods[3].UID)) > 0
	}, time.Until(restoredAt.Add(interval+time.Second)), 10*time.Millisecond,
		"both PUs of the deleted pods are destroyed within one interval (%v) of the restore", interval)
	t.Logf("destroyed %v after the restore", time.Since(restoredAt))

	// Two more checks of each live PU: still there.
	checks := func() float64 { return second.metric(t, k8s.MetricCheckDuration+"_count") }
	after := checks()
	require.Eventually(t, func() bool { return checks() >= after+4 }, 4*interval, 20*time.Millisecond)
	assert.Equal(t, float64(2), second.metric(t, k8s.MetricDestroys+`{reason="PodGone"}`))
	assert.True(t, tracked(second, 2)(), "the live pods' PUs are tracked")
	for _, p := range pods {
		want := 0
		if strings.HasPrefix(p.Name, "gone-") {
			want = 1
		}
		assert.Len(t, second.destroys(t, p.UID), want, "the PU of %s", p.Name)
	}

	second.stop(t)
	journal, err := bolt.Open(state, bolt.Options{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, journal.Close()) }()
	pus, err := journal.ListPUs(ctx)
	require.NoError(t, err)
	var inJournal []string
	for _, pu := range pus {
		inJournal = append(inJournal, pu.Pod.Name)
	}
	assert.ElementsMatch(t, []string{"keep-0", "keep-1"}, inJournal, "the journal holds the live pods' PUs only")
}

// testSecureMetrics runs the agent with its default, secure metrics server:
// /metrics and the status page refuse a client without a token (401) and a
// ServiceAccount not bound to podsweeper-metrics-reader (403), and serve one
// that is (200). The agent reviews the tokens with the RBAC deploy/ gives it.
func testSecureMetrics(t *testing.T, cfg *rest.Config, admin client.Client, kubeconfig []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pod := testPod("scraped", "node-a")
	require.NoError(t, admin.Create(ctx, pod))
	defer func() {
		assert.NoError(t, client.IgnoreNotFound(admin.Delete(context.Background(), pod, client.GracePeriodSeconds(0))))
	}()

	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	token := func(name string) string {
		t.Helper()
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "podsweeper", Name: name}}
		require.NoError(t, admin.Create(ctx, sa))
		tr, err := cs.CoreV1().ServiceAccounts("podsweeper").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		require.NoError(t, err)
		return tr.Status.Token
	}
	allowed, denied := token("prometheus"), token("nosy")
	require.NoError(t, admin.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-reads-podsweeper"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "podsweeper-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "podsweeper", Name: "prometheus"}},
	}))

	// A process of its own, as every agent but testBinary's: run registers
	// its metrics on controller-runtime's global registry, once a process.
	metricsAddr, logs := testkube.FreeAddr(t), &testkube.SyncBuffer{}
	cmd := startAgent(ctx, t, []string{"--kubeconfig=" + agentKubeconfig(t, kubeconfig), "--node=node-a", "--cri-endpoint=",
		"--metrics-bind-address=" + metricsAddr, "--health-probe-bind-address=0", "--sweep-interval=1h", "--workers=2",
		"--state-file=" + filepath.Join(t.TempDir(), "journal.db")}, logs) // --metrics-secure is on by default
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	https := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the agent's self-signed certificate
	}}
	fetch := func(path, token string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+metricsAddr+path, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := https.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	require.Eventually(t, func() bool {
		code, body := fetch("/metrics", allowed)
		return code == http.StatusOK && strings.Contains(body, k8s.MetricTrackedPUs+" 1\n")
	}, 30*time.Second, 50*time.Millisecond, "an authorized ServiceAccount reads /metrics; logs:\n%s", logs)

	_, body := fetch("/metrics", allowed)
	assert.Contains(t, body, k8s.MetricRetrying+" 0\n", "the backlog is served too")
	assert.Contains(t, body, k8s.MetricOldestPendingSecond+" 0\n")
	code, _ := fetch("/metrics", "")
	assert.Equal(t, http.StatusUnauthorized, code, "no token")
	code, _ = fetch("/metrics", "not-a-token")
	// controller-runtime's filter answers 500 when the API server's review of
	// a malformed token fails, 401 when it says the token is not valid.
	assert.Contains(t, []int{http.StatusUnauthorized, http.StatusInternalServerError}, code, "a token the API server does not know is refused")
	code, _ = fetch("/metrics", denied)
	assert.Equal(t, http.StatusForbidden, code, "a ServiceAccount without the metrics-reader role")
	code, _ = fetch(k8s.StatusPath, denied)
	assert.Equal(t, http.StatusForbidden, code, "the status page is behind the same filter")

	code, body = fetch(k8s.StatusPath, allowed)
	require.Equal(t, http.StatusOK, code, body)
	var status []k8s.PUStatus
	require.NoError(t, json.Unmarshal([]byte(body), &status), body)
	require.Len(t, status, 1)
	assert.Equal(t, string(pod.UID), status[0].PUID)
	assert.Equal(t, "default/scraped", status[0].Pod)
}
