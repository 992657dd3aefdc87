package testcontainerd

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/internal/testnode"
)

// A node starts and is Ready; a pod runs in a real sandbox, with an
// address of the bridge's range, its eth0 in its own network namespace
// and libcni's cache entry; deleted, it leaves no address, cache entry or
// namespace behind; once the node is torn down, the host is as it was.
func TestNodeRunsAPodOnTheBridgeAndLeavesTheHostUntouched(t *testing.T) {
	before := testnode.ReadHost(t)
	ran := t.Run("node", func(t *testing.T) {
		c := testnode.StartCluster(t)
		n := Start(t, c, "node-c", Options{})
		c.CreateNamespace(t, "tc")
		ctx := context.Background()

		created := time.Now()
		pod := n.RunPod(t, n.NewPod("tc", "web"))
		t.Logf("pod create→Running: %v", time.Since(created).Round(time.Millisecond))
		ip, err := netip.ParseAddr(pod.Status.PodIP)
		require.NoError(t, err)
		assert.True(t, netip.MustParsePrefix(DefaultSubnet).Contains(ip), "the pod's address %s is the bridge's", ip)

		id, err := n.ReadySandbox(ctx, string(pod.UID))
		require.NoError(t, err)
		require.NotEmpty(t, id)
		assert.Equal(t, id, n.Addresses(t)[ip.String()], "host-local holds the address for the sandbox")
		netns := n.NetNS(t, id)
		require.True(t, strings.HasPrefix(netns, "/var/run/netns/cni-"), "containerd's netns path: %q", netns)
		eth0, err := n.PodInterface(netns)
		require.NoError(t, err)
		assert.Contains(t, eth0, ip.String()+"/29", "eth0 in the pod's namespace")
		entry := n.CacheEntries(t)[NetworkName+"-"+id+"-eth0"]
		assert.Equal(t, string(pod.UID), entry.Arg("K8S_POD_UID"), "the cache entry names the pod")

		deleted := time.Now()
		require.NoError(t, c.Client.Delete(ctx, pod))
		require.Eventually(t, func() bool {
			return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}))
		}, RunTimeout, 50*time.Millisecond, "the kubelet deletes the pod")
		t.Logf("pod delete→gone: %v", time.Since(deleted).Round(time.Millisecond))
		assert.Empty(t, n.Addresses(t), "no address left")
		assert.Empty(t, n.CacheEntries(t), "no cache entry left")
		_, err = n.PodInterface(netns)
		assert.Error(t, err, "the pod's network namespace is gone")
	})
	if !ran {
		return
	}
	assert.Empty(t, testnode.ReadHost(t).Diff(before), "the host is as it was before the node ran")
}
