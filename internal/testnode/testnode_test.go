package testnode

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A node runs a pod, restarts its sandbox, survives its runtime's socket
// going away, and deletes the pod gracefully; once it has stopped, the
// host's kernel settings, directories and mounts are as they were.
func TestNodeLeavesTheHostUntouched(t *testing.T) {
	before := ReadHost(t)
	ran := t.Run("node", func(t *testing.T) {
		c := StartCluster(t)
		n := c.StartNode(t, "node-a")
		c.CreateNamespace(t, "tn")
		ctx := context.Background()
		pod := n.NewPod("tn", "web")
		require.NoError(t, c.Client.Create(ctx, pod))
		running := func() bool {
			p := &corev1.Pod{}
			return c.Client.Get(ctx, client.ObjectKeyFromObject(pod), p) == nil && p.Status.Phase == corev1.PodRunning
		}
		require.Eventually(t, running, 60*time.Second, 50*time.Millisecond, "the kubelet runs the pod")
		first, err := n.ReadySandbox(ctx, string(pod.UID))
		require.NoError(t, err)
		require.NotEmpty(t, first)

		old, current := n.RestartSandbox(t, pod)
		assert.Equal(t, first, old)
		assert.True(t, strings.HasSuffix(current, "_1"), "the next attempt: %s", current)

		n.StopRuntime(t)
		_, err = os.Stat(strings.TrimPrefix(n.CRIEndpoint, "unix://"))
		assert.ErrorIs(t, err, os.ErrNotExist, "the socket is gone")
		n.StartRuntime(t)
		again, err := n.ReadySandbox(ctx, string(pod.UID))
		require.NoError(t, err)
		assert.Equal(t, current, again, "the runtime kept its state")

		// The container takes the grace period to stop: the pod is seen
		// terminating that long. A pod of its own, whose container runs for
		// sure: the outage above may have failed the first pod's container
		// (re-created only after the kubelet's back-off).
		grace := n.NewPod("tn", "grace")
		require.NoError(t, c.Client.Create(ctx, grace))
		require.Eventually(t, func() bool {
			p := &corev1.Pod{}
			return c.Client.Get(ctx, client.ObjectKeyFromObject(grace), p) == nil && p.Status.Phase == corev1.PodRunning
		}, 60*time.Second, 50*time.Millisecond, "the kubelet runs the second pod")
		n.StopTakesGracePeriod(true)
		deleted := time.Now()
		require.NoError(t, c.Client.Delete(ctx, grace, client.GracePeriodSeconds(3)))
		require.Eventually(t, func() bool {
			return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKeyFromObject(grace), &corev1.Pod{}))
		}, 60*time.Second, 50*time.Millisecond, "the kubelet completes the graceful delete")
		took := time.Since(deleted)
		// The kubelet gives the container the pod's 3 s, or at times its
		// minimum of 2 s (it computes the remaining grace itself); the fake,
		// which would stop it at once, waits for what it is given.
		given := n.LastGracePeriod()
		assert.GreaterOrEqual(t, given, 2*time.Second, "the container was stopped at the end of a grace period")
		assert.LessOrEqual(t, given, 3*time.Second)
		assert.Greater(t, took, given, "the pod was seen terminating for its container's grace period")
		t.Logf("deleted in %v, the container's grace period %v", took, given)
	})
	if !ran {
		return
	}
	assert.Empty(t, ReadHost(t).Diff(before), "the host is as it was before the node ran")
	for path, v := range before.Settings {
		t.Logf("host %s = %s", path, v)
	}
}
