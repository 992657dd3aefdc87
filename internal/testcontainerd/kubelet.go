package testcontainerd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubeletConfig is the node's KubeletConfiguration: internal/testnode's
// (see there and ../../../shared notes for why each line), with containerd's
// socket as the runtime, the static pod path, and fixed ports: the node's
// network namespace is its own.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
protectKernelDefaults: false
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
address: 127.0.0.1
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
staticPodPath: %[1]s
fileCheckFrequency: 1s
volumePluginDir: %[2]s
registerNode: true
nodeStatusUpdateFrequency: 2s
syncFrequency: 10s
imageGCHighThresholdPercent: 100
evictionHard:
  memory.available: "1Mi"
`

// startKubelet starts the kubelet inside the node, on containerd's socket,
// and waits for the node to be Ready.
func (n *Node) startKubelet(t testing.TB) {
	t.Helper()
	config := filepath.Join(n.Dir, "kubelet.yaml")
	require.NoError(t, os.WriteFile(config, fmt.Appendf(nil, kubeletConfig, n.StaticPodDir,
		filepath.Join(n.Dir, "volume-plugins")), 0o644))
	kc := filepath.Join(n.Dir, "kubelet.kubeconfig")
	if _, err := os.Stat(kc); err != nil { // started again after a Reboot: the same credentials
		require.NoError(t, os.WriteFile(kc, n.cluster.AdminKubeConfig(t, "kubelet-"+n.Name), 0o600))
	}
	start := time.Now()
	cmd := n.Command(context.Background(), n.bins.kubelet,
		"--config="+config, "--kubeconfig="+kc, "--hostname-override="+n.Name, "--node-ip="+NodeIP,
		"--root-dir=/var/lib/kubelet", "--cert-dir="+filepath.Join(n.Dir, "pki"), "--v=2")
	p := startProcess(t, cmd, filepath.Join(n.Dir, "kubelet.log"))
	n.mu.Lock()
	n.kubelet = p
	n.mu.Unlock()
	n.WaitReady(t, start)
	t.Logf("node %s Ready %v after the kubelet started", n.Name, time.Since(start).Round(time.Millisecond))
}

// WaitReady waits for the node's Ready condition to be true, reported by
// a kubelet's heartbeat at since or later (a kubelet started again must
// report it anew: the node object keeps what the last one said).
func (n *Node) WaitReady(t testing.TB, since time.Time) {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for {
		node, err := n.cluster.Clientset.CoreV1().Nodes().Get(context.Background(), n.Name, metav1.GetOptions{})
		if err == nil {
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue &&
					!c.LastHeartbeatTime.Time.Before(since.Truncate(time.Second)) {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s not Ready after %v (%v):\n%s", n.Name, readyTimeout, err, tail(filepath.Join(n.Dir, "kubelet.log"), 60))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// StopKubelet SIGKILLs the kubelet; the pods run on.
func (n *Node) StopKubelet() {
	n.mu.Lock()
	p := n.kubelet
	n.kubelet = nil
	n.mu.Unlock()
	p.kill()
}
