package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	fakeremote "k8s.io/cri-client/pkg/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/cri"
	"github.com/podsweeper/podsweeper/ports"
)

// criNode is the node of the CRI scenarios; no other scenario uses it.
const criNode = "node-cri"

// criSweep is the agent's --sweep-interval in the CRI scenarios: sandbox
// changes show up in no pod event, only in the checks of the sweeps.
const criSweep = 200 * time.Millisecond

// criRuntime is cri-client's fake container runtime serving the CRI on a
// unix socket, and a CRI client that drives it as the kubelet would.
type criRuntime struct {
	endpoint string
	fake     *fakeremote.RemoteRuntime
	kubelet  internalapi.RuntimeService
}

func startCRI(t *testing.T) *criRuntime {
	t.Helper()
	endpoint := "unix://" + filepath.Join(t.TempDir(), "cri.sock")
	f := fakeremote.NewFakeRemoteRuntime()
	require.NoError(t, f.Start(endpoint))
	t.Cleanup(f.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	svc, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(endpoint).
		WithConnectionTimeout(10 * time.Second).WithTracerProvider(nil).Build(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, svc.Close(context.Background())) })
	return &criRuntime{endpoint: endpoint, fake: f, kubelet: svc}
}

// runSandbox starts a sandbox of pod as the kubelet does, with the pod's
// labels, and returns its ID.
func (r *criRuntime) runSandbox(t *testing.T, pod *corev1.Pod, attempt uint32) string {
	t.Helper()
	id, err := r.kubelet.RunPodSandbox(context.Background(), &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt},
		Labels: map[string]string{
			cri.PodUIDLabel:               string(pod.UID),
			"io.kubernetes.pod.name":      pod.Name,
			"io.kubernetes.pod.namespace": pod.Namespace,
		},
	}, "")
	require.NoError(t, err)
	return id
}

func (r *criRuntime) stopSandbox(t *testing.T, id string) {
	t.Helper()
	require.NoError(t, r.kubelet.StopPodSandbox(context.Background(), id))
}

// startCRIAgent runs the agent for criNode on the runtime at endpoint, in
// a process of its own, until the test ends.
func startCRIAgent(t *testing.T, kubeconfig []byte, endpoint string, extra ...string) *nodeAgent {
	t.Helper()
	return runAgent(t, kubeconfig, append([]string{"--node=" + criNode, "--cri-endpoint=" + endpoint, "--sweep-interval=" + criSweep.String(),
		"--workers=2", "--state-file=" + filepath.Join(t.TempDir(), "journal.db")}, extra...)...)
}

// A running pod's sandbox restarts, as the kubelet restarts it: attempt 0
// stopped, attempt 1 started. The agent destroys the PU of the old sandbox
// for SandboxChanged, requeues the pod and tracks its PU again, with the
// new sandbox.
func testSandboxRestart(t *testing.T, admin client.Client, kubeconfig []byte) {
	ctx := context.Background()
	rt := startCRI(t)
	pod := testPod("restarts", criNode)
	require.NoError(t, admin.Create(ctx, pod))
	t.Cleanup(func() { _ = admin.Delete(ctx, pod, client.GracePeriodSeconds(0)) })
	old := rt.runSandbox(t, pod, 0)
	a := startCRIAgent(t, kubeconfig, rt.endpoint)

	require.Eventually(t, func() bool { return a.trackedWith(t, pod.UID, old) }, waitLong, 10*time.Millisecond,
		"the pod's PU is tracked with the sandbox the runtime reports")

	rt.stopSandbox(t, old)
	current := rt.runSandbox(t, pod, 1)
	require.NotEqual(t, old, current)

	ds := destroyed(t, a, pod.UID, 1)
	require.Len(t, ds, 1, "the sandbox restart destroys the PU of the old sandbox, once")
	assert.Equal(t, ports.ReasonSandboxChanged, ds[0].Reason)
	assert.Equal(t, old, ds[0].SandboxID, "the destroy names the old sandbox")
	assert.Equal(t, "default/restarts", ds[0].Pod)
	require.Eventually(t, func() bool { return a.trackedWith(t, pod.UID, current) }, waitLong, 10*time.Millisecond,
		"the pod is requeued, and its PU tracked again with the new sandbox")
	assert.Len(t, a.logged(t, "pod requeued: its sandbox changed", pod.UID), 1)
}

// A pod whose sandbox stops and is not replaced keeps its PU (the runtime
// reports no ready sandbox: not known yet), sweep after sweep, until the
// pod is deleted.
func testSandboxStopped(t *testing.T, admin client.Client, kubeconfig []byte) {
	ctx := context.Background()
	rt := startCRI(t)
	pod := testPod("stops", criNode)
	require.NoError(t, admin.Create(ctx, pod))
	sandbox := rt.runSandbox(t, pod, 0)
	// Each periodic check reads the runtime itself: with the default
	// --cri-cache-max-age (5s) a check up to 5s after the stop may read a
	// list made before it, and rightly keep the PU for row 9.
	a := startCRIAgent(t, kubeconfig, rt.endpoint, "--cri-cache-max-age=0")
	require.Eventually(t, func() bool { return a.trackedWith(t, pod.UID, sandbox) }, waitLong, 10*time.Millisecond)

	stopped := time.Now()
	rt.stopSandbox(t, sandbox)
	st := a.checkedAfter(t, pod.UID, stopped)

	assert.Equal(t, 8, st.LastRow, "row 8: no ready sandbox is not known yet, got %s", st.Why)
	assert.Equal(t, sandbox, st.SandboxID, "the PU is kept, with its sandbox")
	assert.Empty(t, a.destroys(t, pod.UID), "a stopped sandbox destroys nothing")

	require.NoError(t, admin.Delete(ctx, pod, client.GracePeriodSeconds(0)))
	ds := destroyed(t, a, pod.UID, 1)
	require.Len(t, ds, 1, "the pod is gone: its PU goes, once")
	assert.Equal(t, ports.ReasonPodGone, ds[0].Reason)
	assert.Equal(t, sandbox, ds[0].SandboxID)
	assert.Equal(t, "default/stops", ds[0].Pod)
	assert.Empty(t, a.logged(t, "pod requeued: its sandbox changed", pod.UID))
}

// With a runtime on --cri-endpoint, the agent is ready while the runtime
// answers and not ready once it stops.
func testReadiness(t *testing.T, kubeconfig []byte) {
	rt := startCRI(t)
	a := startCRIAgent(t, kubeconfig, rt.endpoint)
	readyz := "http://" + a.probeAddr + "/readyz?verbose"

	require.Eventually(t, func() bool {
		code, body := probe(t, readyz)
		return code == http.StatusOK && strings.Contains(body, "[+]cri ok")
	}, waitLong, 20*time.Millisecond, "ready with the runtime answering")
	// Ready means the pod cache has synced and the engine runs.
	_, body := probe(t, readyz)
	assert.Contains(t, body, "[+]pod-cache ok")
	assert.Contains(t, body, "[+]podsweeper ok")

	rt.fake.Stop()
	require.Eventually(t, func() bool {
		code, body := probe(t, readyz)
		return code == http.StatusInternalServerError && strings.Contains(body, "[-]cri failed")
	}, waitLong, 20*time.Millisecond, "not ready once the runtime stops")
}

// With --destroy-dead-sandboxes, a pod whose sandbox stops and is not
// replaced loses the PU of that sandbox at once (row 12, SandboxDead), as
// the runtime reports it dead; the pod is requeued and its PU tracked
// again without a sandbox, and that PU goes when the pod does.
func testSandboxDead(t *testing.T, admin client.Client, kubeconfig []byte) {
	ctx := context.Background()
	rt := startCRI(t)
	pod := testPod("dies", criNode)
	require.NoError(t, admin.Create(ctx, pod))
	sandbox := rt.runSandbox(t, pod, 0)
	a := startCRIAgent(t, kubeconfig, rt.endpoint, "--destroy-dead-sandboxes")
	require.Eventually(t, func() bool { return a.trackedWith(t, pod.UID, sandbox) }, waitLong, 10*time.Millisecond)
	assert.Empty(t, a.destroys(t, pod.UID), "a ready sandbox's PU is kept")

	rt.stopSandbox(t, sandbox)
	ds := destroyed(t, a, pod.UID, 1)
	require.Len(t, ds, 1, "the dead sandbox's PU goes, once")
	assert.Equal(t, ports.ReasonSandboxDead, ds[0].Reason)
	assert.Equal(t, sandbox, ds[0].SandboxID, "the destroy names the dead sandbox")
	require.Eventually(t, func() bool { return a.trackedWith(t, pod.UID, "") }, waitLong, 10*time.Millisecond,
		"the pod is requeued, and its PU tracked again without a sandbox")

	require.NoError(t, admin.Delete(ctx, pod, client.GracePeriodSeconds(0)))
	ds = destroyed(t, a, pod.UID, 2)
	require.Len(t, ds, 2, "the pod is gone: the PU tracked again goes, once")
	assert.Equal(t, ports.ReasonPodGone, ds[1].Reason)
	assert.Empty(t, ds[1].SandboxID)
}
