package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/internal/testcontainerd"
	"github.com/podsweeper/podsweeper/internal/testdeploy"
	"github.com/podsweeper/podsweeper/ports"
)

// The agent as an operator installs it, on a real containerd node: its
// image (`make images`) imported into the node's containerd, its chart
// rendered by helm and applied through the API server, and the pod of its
// DaemonSet run by the kubelet, with its ServiceAccount's token (the
// projected volume the ServiceAccount admission plugin adds and the
// kubelet fills through the TokenRequest API), its RBAC, its hostPath
// mounts (the journal's directory, which its init container, run from the
// node's shell image, gives to the agent's user; the runtime's socket
// directory) and its probes. The node has no kube-proxy: the chart's
// kubeAPI.host and kubeAPI.port set KUBERNETES_SERVICE_HOST and
// KUBERNETES_SERVICE_PORT to the node's address, which the node relays to
// the API server, and the API server's certificate names it (see
// internal/testdeploy). Only the image's name and the init container's
// image differ from the chart's defaults.
//
// The pod becomes Ready; its /metrics answers a client without a token
// 401, a ServiceAccount's token that may not get the URL 403, and one
// bound to the chart's metrics-reader ClusterRole (as
// deploy/metrics-reader.yaml sets up) the metrics; and a pod deleted from
// the node has its PU destroyed once, as the agent records a destroy: a
// PUDestroyed Event, a "destroying PU" line in the container's log,
// podsweeper_destroys_total.
func TestPodFromTheChartOnContainerd(t *testing.T) {
	e := testdeploy.Start(t, "node-pod", testcontainerd.Options{})
	img := e.ImportImage(t, "node-agent")
	e.Node.ImportImage(t, testcontainerd.ShellImageArchive(t), "")
	values := e.Values(t, img)
	values["stateDirInitImage"] = testcontainerd.ShellImage
	const ns = "podsweeper"
	objs := testdeploy.Render(t, "chart", "podsweeper-node-agent", ns, values)
	e.Apply(t, ns, objs)

	created := time.Now()
	agent := e.WaitReady(t, e.RunDaemonSet(t, ns, testdeploy.Named(t, objs, "DaemonSet")))
	t.Logf("the agent's pod %s Ready %v after it was created", agent.Name, time.Since(created).Round(time.Millisecond))
	require.Equal(t, img.Ref(), agent.Spec.Containers[0].Image, "the pod runs the imported image")
	require.Len(t, agent.Status.ContainerStatuses, 1)
	assert.Equal(t, "docker.io/library/"+img.Ref(), agent.Status.ContainerStatuses[0].ImageID, "containerd runs the image of that digest")
	assert.Zero(t, agent.Status.ContainerStatuses[0].RestartCount, "the agent started once: its first run reached the API server")
	assert.Contains(t, volumeKinds(agent), "token", "the pod mounts its ServiceAccount's token")
	// The journal's directory on the node (its /var/lib), given to the agent's user by the init container.
	state, err := os.Stat(filepath.Join(e.Node.Dir, "var-lib", "podsweeper"))
	require.NoError(t, err)
	assert.Equal(t, os.ModeDir|0o700, state.Mode(), "the state directory's mode")
	assert.Equal(t, uint32(65532), state.Sys().(*syscall.Stat_t).Uid, "the state directory's owner")
	_, err = os.Stat(filepath.Join(e.Node.Dir, "var-lib", "podsweeper", "journal.db"))
	assert.NoError(t, err, "the agent keeps its journal there")

	// Prometheus's ServiceAccount, bound to the chart's metrics reader (metricsClient), and one that is not.
	ctx := context.Background()
	read := metricsClient(t, e, agent, "podsweeper-node-agent")
	denied := saToken(t, e, "monitoring", "nosy")
	fetch := func(path, token string) (int, string) {
		t.Helper()
		return fetchAs(t, e, agent, path, token)
	}
	code, body := read("/metrics")
	require.Equal(t, http.StatusOK, code, "a ServiceAccount bound to the metrics reader reads /metrics: %s", body)
	assert.Contains(t, body, k8s.MetricTrackedPUs+" ")
	code, _ = fetch("/metrics", "")
	assert.Equal(t, http.StatusUnauthorized, code, "no token")
	code, _ = fetch("/metrics", denied)
	assert.Equal(t, http.StatusForbidden, code, "a ServiceAccount without the metrics reader")
	code, _ = fetch(k8s.StatusPath, denied)
	assert.Equal(t, http.StatusForbidden, code, "the status page is behind the same filter")

	// A pod of the node, tracked, then deleted.
	e.Cluster.CreateNamespace(t, "apps")
	web := e.Node.RunPod(t, e.Node.NewPod("apps", "web"))
	sandbox, err := e.Node.ReadySandbox(ctx, string(web.UID))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		code, body := read(k8s.StatusPath)
		var status []k8s.PUStatus
		return code == http.StatusOK && json.Unmarshal([]byte(body), &status) == nil && hasPU(status, web.UID, sandbox)
	}, 60*time.Second, 100*time.Millisecond, "the agent tracks the pod's PU with its sandbox %s", sandbox)
	deleted := time.Now()
	require.NoError(t, e.Cluster.Client.Delete(ctx, web))

	var destroy logLine
	if !assert.Eventually(t, func() bool {
		ds := destroysLogged(t, e, agent, web.UID)
		if len(ds) > 0 {
			destroy = ds[0]
		}
		return len(ds) > 0
	}, 60*time.Second, 100*time.Millisecond, "the agent's log records the destroy") {
		t.Fatalf("the agent's pod:\n%s", e.Describe(t, agent))
	}
	// A graceful delete: the kubelet stops the pod's sandbox while the pod
	// object waits for it; the chart's default (cri.destroyDeadSandboxes
	// false) keeps the PU until the pod is gone.
	assert.Equal(t, ports.ReasonPodGone, destroy.Reason)
	assert.Equal(t, sandbox, destroy.SandboxID)
	assert.Equal(t, "apps/web", destroy.Pod)
	t.Logf("the PU destroyed for %s %v after the pod's delete", destroy.Reason, destroy.At.Sub(deleted).Round(time.Millisecond))
	require.Eventually(t, func() bool { return destroyEvent(t, e, web.UID) != nil }, 30*time.Second, 100*time.Millisecond,
		"a %s Event of the destroy", k8s.EventReasonDestroyed)
	ev := destroyEvent(t, e, web.UID)
	assert.Equal(t, corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: e.Node.Name, UID: types.UID(e.Node.Name)},
		ev.Regarding, "a pod gone: the Event regards the node")
	require.NotNil(t, ev.Related)
	assert.Equal(t, web.UID, ev.Related.UID, "and names the pod")
	assert.True(t, strings.HasPrefix(ev.Note, string(destroy.Reason)+": destroyed PU "+string(web.UID)), ev.Note)
	_, body = read("/metrics")
	assert.Equal(t, 1.0, sample(t, body, k8s.MetricDestroys+`{reason="`+string(destroy.Reason)+`"}`), "podsweeper_destroys_total counts it")
	assert.Len(t, destroysLogged(t, e, agent, web.UID), 1, "one destroy")

	again := &corev1.Pod{}
	require.NoError(t, e.Cluster.Client.Get(ctx, client.ObjectKeyFromObject(agent), again))
	assert.True(t, testdeploy.Ready(again), "the agent's pod is still Ready")
	assert.Zero(t, again.Status.ContainerStatuses[0].RestartCount, "and never restarted")
}

// metricsClient binds Prometheus's ServiceAccount (monitoring/prometheus,
// created) to the metrics reader of the chart's release and returns a GET
// of a path of the agent's metrics endpoint as that ServiceAccount.
func metricsClient(t *testing.T, e *testdeploy.Env, agent *corev1.Pod, release string) func(path string) (int, string) {
	t.Helper()
	e.Cluster.CreateNamespace(t, "monitoring")
	token := saToken(t, e, "monitoring", "prometheus")
	require.NoError(t, e.Cluster.Client.Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-reads-podsweeper"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: release + "-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "monitoring", Name: "prometheus"}},
	}))
	return func(path string) (int, string) {
		t.Helper()
		return fetchAs(t, e, agent, path, token)
	}
}

// fetchAs GETs path of the agent's metrics endpoint, over HTTPS from inside
// the node (the pod's address is routed there), with token as the bearer
// ("": none); it returns the status and the body.
func fetchAs(t *testing.T, e *testdeploy.Env, agent *corev1.Pod, path, token string) (int, string) {
	t.Helper()
	https := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext:     e.Node.DialContext,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the agent's self-signed certificate
	}}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "https://"+net.JoinHostPort(agent.Status.PodIP, "8443")+path, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := https.Do(req)
	require.NoError(t, err, "GET %s", req.URL)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// saToken creates the ServiceAccount namespace/name and returns a token of
// it from the TokenRequest API.
func saToken(t *testing.T, e *testdeploy.Env, namespace, name string) string {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, e.Cluster.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}))
	tr, err := e.Cluster.Clientset.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)
	return tr.Status.Token
}

// volumeKinds returns the kinds of the pod's volumes and projected sources
// ("token" for a ServiceAccount token).
func volumeKinds(p *corev1.Pod) []string {
	var kinds []string
	for _, v := range p.Spec.Volumes {
		switch {
		case v.HostPath != nil:
			kinds = append(kinds, "hostPath")
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.ServiceAccountToken != nil {
					kinds = append(kinds, "token")
				}
			}
		}
	}
	return kinds
}

// hasPU reports whether status lists the PU of the pod uid with sandbox.
func hasPU(status []k8s.PUStatus, uid types.UID, sandbox string) bool {
	for _, s := range status {
		if s.PUID == string(uid) && s.SandboxID == sandbox {
			return true
		}
	}
	return false
}

// destroysLogged returns the "destroying PU" lines of the pod uid in the
// agent container's log, as the kubelet keeps it, each at the time the
// runtime read it.
func destroysLogged(t *testing.T, e *testdeploy.Env, agent *corev1.Pod, uid types.UID) []logLine {
	t.Helper()
	var out []logLine
	for _, l := range e.Node.ContainerLog(t, agent, "node-agent") {
		line, err := parseLogLine([]byte(l.Text))
		require.NoError(t, err, "the agent logs JSON lines only: %q", l.Text)
		if line.Msg == logDestroying && line.PUID == string(uid) {
			// The log's own times are whole seconds (RFC 3339, the
			// default encoding): the runtime's are precise.
			line.At = l.Time
			out = append(out, line)
		}
	}
	return out
}

// destroyEvent returns the PUDestroyed Event of the PU of the pod uid, nil
// when there is none yet.
func destroyEvent(t *testing.T, e *testdeploy.Env, uid types.UID) *eventsv1.Event {
	t.Helper()
	list, err := e.Cluster.Clientset.EventsV1().Events("").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	for i, ev := range list.Items {
		if ev.Reason == k8s.EventReasonDestroyed && (ev.Regarding.UID == uid || (ev.Related != nil && ev.Related.UID == uid)) {
			return &list.Items[i]
		}
	}
	return nil
}

// sample returns the value of the sample series (name{labels}) in a
// Prometheus text exposition; it fails the test when there is none.
func sample(t *testing.T, exposition, series string) float64 {
	t.Helper()
	s := bufio.NewScanner(strings.NewReader(exposition))
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err, "%s", s.Text())
			return f
		}
	}
	t.Fatalf("no sample %s in:\n%s", series, exposition)
	return 0
}
