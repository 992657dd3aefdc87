package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	fakeremote "k8s.io/cri-client/pkg/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/cri"
	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/internal/testkube"
)

// TestCollectorFreesWhatIsGoneAndKeepsTheCurrentSandbox runs the
// collector's whole wiring (run, with its flags, in a child process) against a real API
// server and cri-client's fake runtime, on a libcni cache written by the
// test whose plugin only logs its DELs (adapters/cni's tests run the real
// plugins): the attachment of a pod that is gone and the leaked sandbox of
// a live pod are freed, the live pod's current sandbox is kept. Every
// metric that the chart's alerts and dashboard use is on its /metrics.
func TestCollectorFreesWhatIsGoneAndKeepsTheCurrentSandbox(t *testing.T) {
	c, dir, kubeconfigPath := apiServer(t)

	// The runtime: the live pod's current sandbox is ready in it.
	endpoint, live, current := liveSandbox(t, c, dir, "web")

	// libcni's cache: the live pod's leaked first sandbox and its current
	// one, and a pod the API server no longer has.
	cache, bin, conf, calls := cniDirs(t, dir, "")
	// A network that runs host-local (no reservation in its data dir): the
	// reservations' metrics of its name show at 0.
	require.NoError(t, os.WriteFile(filepath.Join(conf, "20-hostlocal.conflist"), fmt.Appendf(nil,
		`{"cniVersion":"1.1.0","name":"hlnet","plugins":[{"type":"logger","ipam":{"type":"host-local","subnet":"10.9.0.0/24","dataDir":%q}}]}`,
		filepath.Join(dir, "networks")), 0o644))
	writeEntry(t, cache, "leaked", live.Namespace, live.Name, string(live.UID), time.Hour)
	currentFile := writeEntry(t, cache, current, live.Namespace, live.Name, string(live.UID), time.Minute)
	writeEntry(t, cache, "gone-sandbox", "default", "deleted", "0b5e7a55-0000-4000-8000-000000000001", time.Hour)

	metricsAddr, probeAddr := testkube.FreeAddr(t), testkube.FreeAddr(t)
	args := []string{"--kubeconfig=" + kubeconfigPath, "--node=node-a", "--cri-endpoint=" + endpoint,
		"--cni-cache-dir=" + cache, "--cni-bin-dir=" + bin, "--cni-conf-dir=" + conf,
		"--metrics-bind-address=" + metricsAddr, "--health-probe-bind-address=" + probeAddr, "--status-bind-address=0",
		"--sweep-interval=200ms", "--resync-interval=300ms"}
	agent := startCollector(t, args) // in a process of its own: run registers its metrics once a process
	defer agent.terminate(t)
	logs := agent.logs

	dels := func() []string {
		b, _ := os.ReadFile(calls)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	require.Eventually(t, func() bool { return len(dels()) == 2 }, 30*time.Second, 20*time.Millisecond, "two DELs; logs:\n%s", logs)
	assert.ElementsMatch(t, []string{"DEL leaked", "DEL gone-sandbox"}, dels())

	// The live pod's PU now holds its current sandbox, kept by row 9.
	kept := func() bool {
		var status []k8s.PUStatus
		if json.Unmarshal([]byte(testkube.Get(t, "http://"+metricsAddr+k8s.StatusPath)), &status) != nil {
			return false
		}
		return len(status) == 1 && status[0].PUID == string(live.UID) && status[0].SandboxID == current && status[0].LastRow == 9
	}
	require.Eventually(t, kept, 30*time.Second, 20*time.Millisecond, "the current sandbox's PU kept; logs:\n%s", logs)
	require.Eventually(t, func() bool { return testkube.Get(t, "http://"+probeAddr+"/readyz") != "" }, 30*time.Second, 20*time.Millisecond)
	_, err := os.Stat(filepath.Join(cache, "results", currentFile))
	require.NoError(t, err, "the current sandbox's attachment is there")
	assert.Len(t, dels(), 2, "nothing else was DELed")
	t.Run("the chart's alerts and dashboard use metrics the collector exports", func(t *testing.T) {
		testkube.AssertExported(t, renderAlerts(t), testkube.Get(t, "http://"+metricsAddr+"/metrics"))
	})
}

// writeEntry writes a libcni cache entry of the logger plugin's network
// for the sandbox of a pod, written age ago, and returns its file name.
func writeEntry(t *testing.T, cache, sandbox, namespace, name, uid string, age time.Duration) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"kind": "cniCacheV1", "containerId": sandbox, "ifName": "eth0", "networkName": "podnet",
		"config":  []byte(`{"cniVersion":"1.1.0","name":"podnet","plugins":[{"type":"logger"}]}`),
		"cniArgs": [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", namespace}, {"K8S_POD_NAME", name}, {"K8S_POD_UID", uid}},
		"result":  map[string]any{"cniVersion": "1.1.0"},
	})
	require.NoError(t, err)
	file := "podnet-" + sandbox + "-eth0"
	path := filepath.Join(cache, "results", file)
	require.NoError(t, os.WriteFile(path, b, 0o600))
	when := time.Now().Add(-age)
	require.NoError(t, os.Chtimes(path, when, when))
	return file
}

// TestDryRunDELsNothingAndReportsWhatWouldGo runs the collector with
// --dry-run on the attachment of a pod the API server no longer has: it is
// reported on the dry run's page, and no DEL runs.
func TestDryRunDELsNothingAndReportsWhatWouldGo(t *testing.T) {
	_, kubeconfig := testkube.StartAPIServer(t)
	dir := t.TempDir()
	kubeconfigPath := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfigPath, kubeconfig, 0o600))
	endpoint := "unix://" + filepath.Join(dir, "cri.sock")
	fake := fakeremote.NewFakeRemoteRuntime()
	require.NoError(t, fake.Start(endpoint))
	t.Cleanup(fake.Stop)

	cache, bin, conf := filepath.Join(dir, "cni"), filepath.Join(dir, "bin"), filepath.Join(dir, "net.d")
	for _, d := range []string{filepath.Join(cache, "results"), bin, conf} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	calls := filepath.Join(dir, "calls")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "logger"),
		fmt.Appendf(nil, "#!/bin/sh\necho \"$CNI_COMMAND $CNI_CONTAINERID\" >> %s\n", calls), 0o755))
	const uid = "0b5e7a55-0000-4000-8000-000000000002"
	file := writeEntry(t, cache, "gone-sandbox", "default", "deleted", uid, time.Hour)

	metricsAddr := testkube.FreeAddr(t)
	agent := startCollector(t, []string{"--kubeconfig=" + kubeconfigPath, "--node=node-a", "--cri-endpoint=" + endpoint,
		"--cni-cache-dir=" + cache, "--cni-bin-dir=" + bin, "--cni-conf-dir=" + conf, "--dry-run",
		"--metrics-bind-address=" + metricsAddr, "--health-probe-bind-address=0", "--status-bind-address=0", "--sweep-interval=200ms", "--resync-interval=300ms"})
	defer agent.terminate(t)
	require.Eventually(t, func() bool {
		return strings.Contains(testkube.Get(t, "http://"+metricsAddr+k8s.DryRunPath), uid)
	}, 30*time.Second, 20*time.Millisecond, "the gone pod reported; logs:\n%s", agent.logs)
	_, err := os.Stat(filepath.Join(cache, "results", file))
	require.NoError(t, err, "the attachment is still there")
	_, err = os.Stat(calls)
	require.ErrorIs(t, err, os.ErrNotExist, "no plugin ran")
}

// liveSandbox starts the CRI fake on a socket in dir, creates a pod of
// that name bound to node-a on the API server of c, and runs its sandbox
// (attempt 1) in the fake, as the kubelet would. It returns the runtime's
// endpoint, the pod and the sandbox's ID.
func liveSandbox(t *testing.T, c client.Client, dir, name string) (string, *corev1.Pod, string) {
	t.Helper()
	ctx := context.Background()
	endpoint := "unix://" + filepath.Join(dir, "cri.sock")
	fake := fakeremote.NewFakeRemoteRuntime()
	require.NoError(t, fake.Start(endpoint))
	t.Cleanup(fake.Stop)
	kubelet, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(endpoint).
		WithConnectionTimeout(10 * time.Second).WithTracerProvider(nil).Build(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, kubelet.Close(context.Background())) })
	no := false
	live := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{NodeName: "node-a", AutomountServiceAccountToken: &no,
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
	}
	require.NoError(t, c.Create(ctx, live))
	current, err := kubelet.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: live.Name, Namespace: live.Namespace, Uid: string(live.UID), Attempt: 1},
		Labels:   map[string]string{cri.PodUIDLabel: string(live.UID)},
	}, "")
	require.NoError(t, err)
	return endpoint, live, current
}

// cniDirs makes libcni's cache, a plugin directory and a config directory
// under dir, with a plugin "logger" that appends "COMMAND CONTAINERID" to
// the returned calls file for each call, then runs then (shell, may be "").
func cniDirs(t *testing.T, dir, then string) (cache, bin, conf, calls string) {
	t.Helper()
	cache, bin, conf = filepath.Join(dir, "cni"), filepath.Join(dir, "bin"), filepath.Join(dir, "net.d")
	for _, d := range []string{filepath.Join(cache, "results"), bin, conf} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	calls = filepath.Join(dir, "calls")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "logger"),
		fmt.Appendf(nil, "#!/bin/sh\necho \"$CNI_COMMAND $CNI_CONTAINERID\" >> %s\n%s", calls, then), 0o755))
	return cache, bin, conf, calls
}

// apiServer starts a real API server for the test and returns an admin's
// client, the test's directory and the path of the admin's kubeconfig in it.
func apiServer(t *testing.T) (c client.Client, dir, kubeconfigPath string) {
	t.Helper()
	cfg, kubeconfig := testkube.StartAPIServer(t)
	c, err := client.New(cfg, client.Options{})
	require.NoError(t, err)
	dir = t.TempDir()
	kubeconfigPath = filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfigPath, kubeconfig, 0o600))
	return c, dir, kubeconfigPath
}
