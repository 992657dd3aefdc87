package cri_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cri"
)

// On a real CRI server, a SandboxCache answers what the SandboxExtractor
// answers for every pod of the node (ready sandboxes only, the newest
// attempt), from one ListPodSandbox call; after MaxAge it lists again and
// sees a restart.
func TestSandboxCacheOnTheRuntime(t *testing.T) {
	rt := startFake(t)
	x := newExtractor(t, rt.endpoint, 0)
	uids := []types.UID{"pod-a", "pod-b", "pod-c"}
	runSandbox(t, rt.cri, "pod-a", "a", 0)
	old := runSandbox(t, rt.cri, "pod-b", "b", 0)
	stopSandbox(t, rt.cri, old)
	runSandbox(t, rt.cri, "pod-b", "b", 1)
	stopSandbox(t, rt.cri, runSandbox(t, rt.cri, "pod-c", "c", 0))

	want := map[types.UID]string{}
	for _, uid := range uids {
		id, err := sandboxID(t, x, podOf(uid))
		require.NoError(t, err)
		want[uid] = id
	}
	c, err := cri.NewSandboxCache(x, cri.CacheOptions{MaxAge: time.Hour})
	require.NoError(t, err)
	calls := len(rt.RuntimeService.GetCalls())
	for range 10 {
		for _, uid := range uids {
			got, err := c.SandboxID(context.Background(), podOf(uid))
			require.NoError(t, err)
			assert.Equal(t, want[uid], got, "pod %s", uid)
		}
	}
	assert.Equal(t, []string{"ListPodSandbox"}, rt.RuntimeService.GetCalls()[calls:], "30 answers, one list")

	// A restart of pod-a: the cache shows it once a list made after it has run.
	const maxAge = 100 * time.Millisecond
	c, err = cri.NewSandboxCache(x, cri.CacheOptions{MaxAge: maxAge})
	require.NoError(t, err)
	before, err := c.SandboxID(context.Background(), podOf("pod-a"))
	require.NoError(t, err)
	stopSandbox(t, rt.cri, before)
	restarted := runSandbox(t, rt.cri, "pod-a", "a", 1)
	require.Eventually(t, func() bool {
		id, err := c.SandboxID(context.Background(), podOf("pod-a"))
		return err == nil && id == restarted
	}, 10*time.Second, maxAge/4, "the restart is seen once a list made after it answers")
}
