package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/podsweeper/podsweeper/internal/procbench"
	"github.com/podsweeper/podsweeper/internal/testcontainerd"
	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/internal/testnode"
)

// containerdPods is how many pods BenchmarkProcessContainerd runs on its
// containerd node: real sandboxes and containers on 2 cores.
const containerdPods = 20

// BenchmarkProcessContainerd measures the node agent's whole process as
// BenchmarkProcess does, on a real containerd node (internal/testcontainerd:
// containerd v2.4.2, runc, the CNI plugins and the kubelet, in private
// namespaces) instead of the CRI fake: 20 pods made from the realistic
// fixture by server-side apply, their two containers running the node's
// pause image, each in a real sandbox with its address. Two processes run
// side by side over the same window, after each tracks the 20 PUs and one
// more interval has passed: the agent with its defaults (a slim pod cache,
// a list of the runtime's sandboxes at most 5 s old, the runtime itself
// asked for any answer that would record a sandbox or destroy a PU), and
// the seed's loop (a ListPodSandbox call per PU every 5 s), both on
// containerd's socket. For each: the CPU of the whole process over 60 s
// idle, its RSS and its live heap after a GC. It needs root and the node's
// binaries (make bench-process builds them as root); without them it is
// skipped, and it fails under CI=true:
//
//	make bench-process
//	KUBEBUILDER_ASSETS=$PWD/bin/envtest CNI_PLUGINS_DIR=$PWD/bin/cni CONTAINERD_BIN_DIR=$PWD/bin/containerd \
//	  go test -run '^$' -bench '^BenchmarkProcessContainerd$' -benchtime=1x -v ./examples/node-agent/
//
// With PODSWEEPER_PROFILE_DIR set, it then takes a 30 s CPU profile of each.
func BenchmarkProcessContainerd(b *testing.B) {
	c := testnode.StartCluster(b)
	testkube.ApplyKustomization(b, c.Client, "deploy")
	// A /24: the default /29 holds 5 pods.
	n := testcontainerd.Start(b, c, "bench-cd", testcontainerd.Options{Subnet: "10.88.0.0/24"})
	c.CreateNamespace(b, "bench")
	start := time.Now()
	fixture := procbench.Fixture(b)
	pods := make([]*corev1.Pod, 0, containerdPods)
	for i := range containerdPods {
		pods = append(pods, applyPausePod(b, c, fixture, "bench", fmt.Sprintf("web-%05d", i), n.Name))
	}
	for _, p := range pods {
		n.WaitRunning(b, p)
	}
	b.Logf("%d pods running on containerd in %v", containerdPods, time.Since(start).Round(time.Second))

	bin := b.TempDir()
	procbench.Build(b, filepath.Join(bin, "node-agent"), ".")
	procbench.Build(b, filepath.Join(bin, "seedagent"), "../../internal/seedref/seedagent")
	kubeconfig := agentKubeconfig(b, c.KubeConfig)
	procs := []*benchProcess{
		startBenchAgent(b, filepath.Join(bin, "node-agent"), "defaults", kubeconfig, n.Name, n.CRIEndpoint),
		startSeedAgent(b, filepath.Join(bin, "seedagent"), kubeconfig, n.Name, n.CRIEndpoint),
	}
	measureIdle(b, procs, containerdPods)
	for _, p := range pods {
		n.WaitRunning(b, p) // every pod still runs
	}
	profileAll(b, procs)
}

// applyPausePod makes the pod name in ns, bound to node, from the fixture
// as procbench.Apply does for a kubelet (server-side apply as its owner,
// the kubelet reporting its status), with its containers running the
// containerd node's pause image, never pulled: the fixture's images are in
// no registry the node can reach. It returns the pod as the API server
// made it.
func applyPausePod(b *testing.B, c *testnode.Cluster, fixture *corev1.Pod, ns, name, node string) *corev1.Pod {
	b.Helper()
	p := procbench.PodSpec(fixture, ns, name, node, true)
	for i := range p.Spec.Containers {
		ctr := &p.Spec.Containers[i]
		ctr.Image, ctr.ImagePullPolicy, ctr.Command = testcontainerd.PauseImage, corev1.PullNever, []string{"/pause"}
	}
	spec, err := json.Marshal(p)
	require.NoError(b, err)
	got, err := c.Clientset.CoreV1().Pods(ns).Patch(b.Context(), name, types.ApplyPatchType, spec,
		metav1.PatchOptions{FieldManager: "kube-controller-manager", Force: ptr.To(true)})
	require.NoError(b, err)
	return got
}
