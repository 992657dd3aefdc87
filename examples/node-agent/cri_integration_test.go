package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	fakeremote "k8s.io/cri-client/pkg/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/cri"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/internal/inspect"
	"github.com/podsweeper/podsweeper/internal/testkube"
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

// criAgent is the agent's setup running against the API server and the
// fake runtime, with its policy, requeuer and observer recording.
type criAgent struct {
	engine    *deletion.Engine
	destroyed chan ports.DestroyEvent

	mu       sync.Mutex
	requeued []types.UID
	checks   map[string]int              // EventChecked per PUID
	verdicts map[string]deletion.Verdict // the last one per PUID
}

// startCRIAgent runs the agent's setup for criNode on the runtime at
// endpoint, serving its probes on probeAddr ("0": none), until the test ends.
func startCRIAgent(t *testing.T, agentCfg *rest.Config, endpoint, probeAddr string) *criAgent {
	t.Helper()
	a := &criAgent{destroyed: make(chan ports.DestroyEvent, 10), checks: map[string]int{}, verdicts: map[string]deletion.Verdict{}}
	// Not testr: the manager's stop procedure may log from a goroutine of
	// its own after the test has ended, which testr's logger races with.
	log := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	conf := config{node: criNode, metricsAddr: "0", probeAddr: probeAddr, criEndpoint: endpoint, sweepInterval: criSweep, workers: 2}
	mgr, engine, err := setup(agentCfg, conf, deps{
		policy: ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
			a.destroyed <- ev
			return destroyer(log).DestroyPU(ctx, ev)
		}),
		requeuer: ports.RequeuerFunc(func(ctx context.Context, pod *corev1.Pod) error {
			a.mu.Lock()
			a.requeued = append(a.requeued, pod.UID)
			a.mu.Unlock()
			return requeuer(log, nil).Requeue(ctx, pod)
		}),
		observer: deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind != deletion.EventChecked {
				return
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			a.checks[ev.PU.PUID]++
			a.verdicts[ev.PU.PUID] = ev.Verdict
		}),
		registry: prometheus.NewRegistry(),
		log:      log,
	})
	require.NoError(t, err)
	a.engine = engine

	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Error("the manager did not stop")
		}
	})
	return a
}

// entry returns the engine's entry for the pod's PU, if it tracks one.
func (a *criAgent) entry(uid types.UID) (ports.PU, bool) {
	pending := inspect.PUs(a.engine)
	i := slices.IndexFunc(pending, func(e ports.PU) bool { return e.PUID == string(uid) })
	if i < 0 {
		return ports.PU{}, false
	}
	return pending[i], true
}

// trackedWith reports whether the pod's PU is tracked with that sandbox.
func (a *criAgent) trackedWith(uid types.UID, sandbox string) bool {
	e, ok := a.entry(uid)
	return ok && e.SandboxID == sandbox
}

func (a *criAgent) checkCount(uid types.UID) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.checks[string(uid)]
}

func (a *criAgent) lastVerdict(uid types.UID) deletion.Verdict {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.verdicts[string(uid)]
}

func (a *criAgent) wasRequeued(uid types.UID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Contains(a.requeued, uid)
}

// nextDestroy waits for the next destroy.
func (a *criAgent) nextDestroy(t *testing.T, why string) ports.DestroyEvent {
	t.Helper()
	select {
	case ev := <-a.destroyed:
		return ev
	case <-time.After(30 * time.Second):
		t.Fatalf("no destroy: %s", why)
		return ports.DestroyEvent{}
	}
}

// A running pod's sandbox restarts, as the kubelet restarts it: attempt 0
// stopped, attempt 1 started. The agent destroys the PU of the old sandbox
// for SandboxChanged and requeues the pod.
func testSandboxRestart(t *testing.T, admin client.Client, agentCfg *rest.Config) {
	ctx := context.Background()
	rt := startCRI(t)
	pod := testPod("restarts", criNode)
	require.NoError(t, admin.Create(ctx, pod))
	t.Cleanup(func() { _ = admin.Delete(ctx, pod, client.GracePeriodSeconds(0)) })
	old := rt.runSandbox(t, pod, 0)
	a := startCRIAgent(t, agentCfg, rt.endpoint, "0")

	require.Eventually(t, func() bool { return a.trackedWith(pod.UID, old) }, 20*time.Second, 10*time.Millisecond,
		"the pod's PU is tracked with the sandbox the runtime reports")

	rt.stopSandbox(t, old)
	current := rt.runSandbox(t, pod, 1)
	require.NotEqual(t, old, current)

	ev := a.nextDestroy(t, "the sandbox restart must destroy the PU of the old sandbox")
	assert.Equal(t, ports.DestroyEvent{
		PUID:      string(pod.UID),
		Pod:       client.ObjectKeyFromObject(pod),
		SandboxID: old,
		Reason:    ports.ReasonSandboxChanged,
	}, ev, "the destroy names the old sandbox")
	require.Eventually(t, func() bool { return a.wasRequeued(pod.UID) }, 20*time.Second, 10*time.Millisecond,
		"the pod is requeued, for its main controller to create the PU of the new sandbox")
}

// A pod whose sandbox stops and is not replaced keeps its PU (the runtime
// reports no ready sandbox: not known yet), sweep after sweep, until the
// pod is deleted.
func testSandboxStopped(t *testing.T, admin client.Client, agentCfg *rest.Config) {
	ctx := context.Background()
	rt := startCRI(t)
	pod := testPod("stops", criNode)
	require.NoError(t, admin.Create(ctx, pod))
	sandbox := rt.runSandbox(t, pod, 0)
	a := startCRIAgent(t, agentCfg, rt.endpoint, "0")
	require.Eventually(t, func() bool { return a.trackedWith(pod.UID, sandbox) }, 20*time.Second, 10*time.Millisecond)

	rt.stopSandbox(t, sandbox)
	// Checks of one PU never overlap: of three more, at least the last two
	// began after the stop, each in a sweep of its own.
	after := a.checkCount(pod.UID) + 3
	require.Eventually(t, func() bool { return a.checkCount(pod.UID) >= after }, 30*time.Second, 10*time.Millisecond,
		"the sweeps go on (every %v)", criSweep)

	select {
	case ev := <-a.destroyed:
		t.Fatalf("a stopped sandbox destroyed the PU: %s", ev)
	default:
	}
	assert.True(t, a.trackedWith(pod.UID, sandbox), "the PU is kept, with its sandbox")
	assert.Equal(t, 8, a.lastVerdict(pod.UID).Row, "row 8: no ready sandbox is not known yet, got %s", a.lastVerdict(pod.UID))

	require.NoError(t, admin.Delete(ctx, pod, client.GracePeriodSeconds(0)))
	ev := a.nextDestroy(t, "the pod is gone: its PU must go")
	assert.Equal(t, ports.DestroyEvent{
		PUID:      string(pod.UID),
		Pod:       client.ObjectKeyFromObject(pod),
		SandboxID: sandbox,
		Reason:    ports.ReasonPodGone,
	}, ev)
	assert.False(t, a.wasRequeued(pod.UID))
}

// With a runtime on --cri-endpoint, the agent is ready while the runtime
// answers and not ready once it stops. (run registers the metrics on
// controller-runtime's global registry, so only one test may call it:
// testBinary, which covers the agent without a runtime.)
func testReadiness(t *testing.T, agentCfg *rest.Config) {
	rt := startCRI(t)
	probeAddr := testkube.FreeAddr(t)
	startCRIAgent(t, agentCfg, rt.endpoint, probeAddr)
	readyz := "http://" + probeAddr + "/readyz?verbose"

	require.Eventually(t, func() bool {
		code, body := probe(t, readyz)
		return code == http.StatusOK && strings.Contains(body, "[+]cri ok")
	}, 20*time.Second, 20*time.Millisecond, "ready with the runtime answering")
	// Ready means the pod cache has synced and the engine runs.
	_, body := probe(t, readyz)
	assert.Contains(t, body, "[+]pod-cache ok")
	assert.Contains(t, body, "[+]podsweeper ok")

	rt.fake.Stop()
	require.Eventually(t, func() bool {
		code, body := probe(t, readyz)
		return code == http.StatusInternalServerError && strings.Contains(body, "[-]cri failed")
	}, 20*time.Second, 20*time.Millisecond, "not ready once the runtime stops")
}
