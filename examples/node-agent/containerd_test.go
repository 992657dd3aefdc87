package main

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/internal/testcontainerd"
	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/internal/testnode"
	"github.com/podsweeper/podsweeper/ports"
)

// The node agent as deployed (its CRI extractor and cri.SandboxCache on
// the runtime's socket) on a real containerd node: the pause process of a
// pod's sandbox is killed, containerd reports the sandbox NotReady, the
// kubelet makes the next one, and the agent destroys the old sandbox's PU
// for SandboxChanged exactly once, then tracks and keeps the new one.
func TestAgentSeesARealSandboxRestartOnContainerd(t *testing.T) {
	c := testnode.StartCluster(t)
	testkube.ApplyKustomization(t, c.Client, "deploy")
	n := testcontainerd.Start(t, c, "node-cd", testcontainerd.Options{})
	c.CreateNamespace(t, "cd")
	a := runAgent(t, c.KubeConfig, "--node="+n.Name, "--cri-endpoint="+n.CRIEndpoint,
		"--state-file="+filepath.Join(t.TempDir(), "journal.db"), "--sweep-interval="+kubeletSweep.String(),
		"--cri-cache-max-age="+kubeletSweep.String(), "--workers=4")
	require.Eventually(t, func() bool {
		code, _ := probe(t, "http://"+a.probeAddr+"/readyz")
		return code == http.StatusOK
	}, waitLong, 20*time.Millisecond, "the agent is ready; its log:\n%s", a.log)

	pod := n.RunPod(t, n.NewPod("cd", "web"))
	ctx := context.Background()
	old, err := n.ReadySandbox(ctx, string(pod.UID))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return a.trackedWith(t, pod.UID, old) }, waitLong, 20*time.Millisecond,
		"the agent tracks the pod's PU with its sandbox %s", old)

	killed := time.Now()
	require.Equal(t, old, n.KillSandbox(t, pod))
	current := n.WaitNewSandbox(t, pod, old)
	replaced := time.Since(killed)
	require.Eventually(t, func() bool { return a.trackedWith(t, pod.UID, current) }, waitLong, 10*time.Millisecond,
		"the PU of the new sandbox %s is tracked", current)
	ds := a.destroys(t, pod.UID)
	require.Len(t, ds, 1, "one destroy from the kill until the new sandbox's PU is tracked")
	assert.Equal(t, ports.ReasonSandboxChanged, ds[0].Reason)
	assert.Equal(t, old, ds[0].SandboxID, "the destroy names the killed sandbox")

	a.checkedAfter(t, pod.UID, time.Now())
	assert.Len(t, a.destroys(t, pod.UID), 1, "the new sandbox's PU is kept")
	assert.True(t, a.trackedWith(t, pod.UID, current))
	t.Logf("new sandbox ready %v after the kill; destroyed %v after the kill", replaced.Round(time.Millisecond),
		ds[0].At.Sub(killed).Round(time.Millisecond))
}
