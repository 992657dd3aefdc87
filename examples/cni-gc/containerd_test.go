package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/internal/testcontainerd"
	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/internal/testnode"
)

// The collector as deployed, on a real containerd node: its command line
// runs inside the node (the plugins' DELs must run in the node's network
// namespace, as the DaemonSet runs in the host's), with the CRI extractor
// on containerd's socket and confirmed destroys; only the intervals are
// shorter, so that the scenarios take seconds.

// gcInterval is the collector's --sweep-interval and --resync-interval here.
const gcInterval = 500 * time.Millisecond

// startNodeCollector runs the collector's command line (TestCollectorHelper)
// inside the node n, with its deployed flags pointing at the node's
// directories. It is stopped (SIGTERM to its process group) when the test
// ends, its log printed if the test failed.
func startNodeCollector(t *testing.T, n *testcontainerd.Node) *testkube.SyncBuffer {
	t.Helper()
	args := []string{"--kubeconfig=" + n.KubeConfig, "--node=" + n.Name,
		"--cri-endpoint=unix:///run/containerd/containerd.sock", "--cni-cache-dir=/var/lib/cni",
		"--cni-bin-dir=" + strings.Join(n.CNIPluginDirs, ","), "--cni-conf-dir=" + n.CNIConfDir,
		"--metrics-bind-address=127.0.0.1:9812", "--health-probe-bind-address=:9811",
		"--sweep-interval=" + gcInterval.String(), "--resync-interval=" + gcInterval.String(), "--workers=4"}
	logs := &testkube.SyncBuffer{}
	cmd := n.Command(context.Background(), os.Args[0], "-test.run=^TestCollectorHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), collectorArgsEnv+"="+strings.Join(args, "\n"))
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("the collector's log:\n%s", logs)
		}
	})
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "Starting workers") || strings.Contains(logs.String(), "starting the CNI collector")
	},
		60*time.Second, 20*time.Millisecond, "the collector starts; its log:\n%s", logs)
	return logs
}

// intact fails unless the sandbox id still holds its address ip in
// host-local, its cache entry, and an eth0 with that address in its
// network namespace.
func intact(t *testing.T, n *testcontainerd.Node, id, ip, netns string) {
	t.Helper()
	require.Equal(t, id, n.Addresses(t)[ip], "host-local still holds %s for sandbox %s", ip, id)
	require.Equal(t, netns, n.NetNS(t, id), "the cache entry of sandbox %s", id)
	eth0, err := n.PodInterface(netns)
	require.NoError(t, err, "eth0 of sandbox %s", id)
	require.Contains(t, eth0, ip+"/", "eth0 of sandbox %s keeps its address", id)
}

// (a) A static pod (a manifest in the kubelet's static pod path) whose
// mirror pod is deleted, again and again, while the collector runs: the
// API has no pod of its UID, but containerd runs it in a ready sandbox,
// and its network is kept throughout.
func TestStaticPodWithItsMirrorDeletedKeepsItsNetwork(t *testing.T) {
	c := testnode.StartCluster(t)
	n := testcontainerd.Start(t, c, "node-s", testcontainerd.Options{})
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: static-web
  namespace: kube-system
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    command: ["/pause"]
`, testcontainerd.PauseImage)
	require.NoError(t, os.WriteFile(filepath.Join(n.StaticPodDir, "static-web.yaml"), []byte(manifest), 0o644))
	mirror := &corev1.Pod{}
	mirror.Namespace, mirror.Name = "kube-system", "static-web-"+n.Name
	mirror = n.WaitRunning(t, mirror)
	uid := mirror.Annotations[corev1.MirrorPodAnnotationKey]
	require.NotEmpty(t, uid, "the mirror pod names the static pod's UID")
	ctx := context.Background()
	id, err := n.ReadySandbox(ctx, uid)
	require.NoError(t, err)
	require.NotEmpty(t, id, "containerd runs the static pod")
	ip, netns := mirror.Status.PodIP, n.NetNS(t, id)
	intact(t, n, id, ip, netns)

	logs := startNodeCollector(t, n)
	deadline := time.Now().Add(60 * time.Second)
	deletes := 0
	for !strings.Contains(logs.String(), "the runtime still runs a ready sandbox of the pod") {
		require.True(t, time.Now().Before(deadline), "the collector found the static pod gone from the API within 60 s (%d deletes)", deletes)
		err := c.Client.Delete(ctx, &corev1.Pod{ObjectMeta: mirror.ObjectMeta}, client.GracePeriodSeconds(0))
		if err == nil {
			deletes++
		} else {
			require.True(t, apierrors.IsNotFound(err), "deleting the mirror pod: %v", err)
		}
		intact(t, n, id, ip, netns)
		time.Sleep(100 * time.Millisecond)
	}
	// A few more rounds of the collector, the mirror pod missing or not.
	for range 10 {
		_ = c.Client.Delete(ctx, &corev1.Pod{ObjectMeta: mirror.ObjectMeta}, client.GracePeriodSeconds(0))
		time.Sleep(gcInterval / 2)
		intact(t, n, id, ip, netns)
	}
	again, err := n.ReadySandbox(ctx, uid)
	require.NoError(t, err)
	assert.Equal(t, id, again, "the static pod still runs in the same sandbox")
	assert.NotContains(t, logs.String(), `"sandboxID":"`+id+`","ifName":"eth0"`, "no DEL of its eth0 logged")
	t.Logf("%d deletes of the mirror pod; the collector refused to free the running static pod", deletes)
}

// (b) A pod whose sandbox's ADD takes 3 s (a plugin wrapping the bridge
// sleeps first, as the tests' logging plugins wrap the real ones), created
// while the collector runs: its network is never DELed, during the ADD or
// after it, and it runs with its address and eth0.
func TestPodBeingCreatedKeepsItsNetwork(t *testing.T) {
	c := testnode.StartCluster(t)
	wrap := t.TempDir()
	calls := filepath.Join(wrap, "calls.log")
	script := fmt.Sprintf(`#!/bin/sh
echo "$CNI_COMMAND $CNI_CONTAINERID" >> %s
if [ "$CNI_COMMAND" = ADD ]; then sleep 3; fi
exec %s "$@"
`, calls, filepath.Join(os.Getenv("CNI_PLUGINS_DIR"), "bridge"))
	require.NoError(t, os.WriteFile(filepath.Join(wrap, "slow-bridge"), []byte(script), 0o755))
	conf := strings.Replace(string(testcontainerd.DefaultConfList(testcontainerd.DefaultSubnet)), `"type":"bridge"`, `"type":"slow-bridge"`, 1)
	n := testcontainerd.Start(t, c, "node-b", testcontainerd.Options{ConfList: []byte(conf), PluginDirs: []string{wrap}})
	c.CreateNamespace(t, "slow")
	logs := startNodeCollector(t, n)

	created := time.Now()
	pod := n.RunPod(t, n.NewPod("slow", "web"))
	took := time.Since(created)
	require.GreaterOrEqual(t, took, 3*time.Second, "the ADD took its 3 s")
	ctx := context.Background()
	id, err := n.ReadySandbox(ctx, string(pod.UID))
	require.NoError(t, err)
	netns := n.NetNS(t, id)
	intact(t, n, id, pod.Status.PodIP, netns)
	// Several sweeps and resyncs of the collector over the running pod.
	for range 8 {
		time.Sleep(gcInterval)
		intact(t, n, id, pod.Status.PodIP, netns)
	}
	b, err := os.ReadFile(calls)
	require.NoError(t, err)
	var adds, dels []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		switch verb, sandbox, _ := strings.Cut(line, " "); verb { // containerd asks STATUS too
		case "ADD":
			adds = append(adds, sandbox)
		case "DEL":
			dels = append(dels, sandbox)
		}
	}
	assert.Equal(t, []string{id}, adds, "one ADD")
	assert.Empty(t, dels, "no DEL")
	assert.NotContains(t, logs.String(), "attachment freed")
	t.Logf("pod create→Running %v with a 3 s ADD", took.Round(time.Millisecond))
}
