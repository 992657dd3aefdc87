package testcontainerd

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/internal/testnode"
)

// The leak host-local's users know by name reproduces on the real node:
// five pods fill the /29, the node loses containerd's state and keeps
// /var/lib/cni, and afterwards every pod is stuck, its new sandboxes
// refused an address, while host-local holds all five for sandboxes no
// runtime knows.
func TestRebootLeaksTheWholeRange(t *testing.T) {
	c := testnode.StartCluster(t)
	n := Start(t, c, "node-leak", Options{})
	c.CreateNamespace(t, "leak")
	pods := n.ReproduceRebootLeak(t, "leak", 5)

	ctx := context.Background()
	known := map[string]bool{}
	sbs, err := n.Sandboxes(ctx, "")
	require.NoError(t, err)
	for _, sb := range sbs {
		known[sb.GetId()] = true
	}
	held := n.Addresses(t)
	assert.Len(t, held, 5, "host-local holds the whole range")
	for ip, id := range held {
		assert.False(t, known[id], "address %s is held for sandbox %s, which the runtime does not know", ip, id)
	}
	cached := 0
	for _, e := range n.CacheEntries(t) {
		if e.NetworkName == NetworkName {
			cached++
			assert.False(t, known[e.ContainerID], "the cache entry of sandbox %s, which the runtime does not know", e.ContainerID)
		}
	}
	assert.Equal(t, 5, cached, "libcni's cache still names the five old sandboxes")
	// A while later, still stuck: nothing on the node frees the range.
	time.Sleep(5 * time.Second)
	for _, p := range pods {
		got := &corev1.Pod{}
		require.NoError(t, c.Client.Get(ctx, client.ObjectKeyFromObject(p), got))
		assert.False(t, Running(got), "pod %s is not running again", p.Name)
		assert.Equal(t, p.UID, got.UID, "pod %s is the same pod", p.Name)
		ready, err := n.ReadySandbox(ctx, string(p.UID))
		require.NoError(t, err)
		assert.Empty(t, ready, "pod %s has no ready sandbox", p.Name)
	}
}
