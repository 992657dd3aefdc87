package k8s_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// The pod lifecycle on the real API server, as a kubelet drives it: a pod
// deleted with a grace period keeps its PU while it terminates and loses it
// once it is gone; a pod that finished loses it with DestroyTerminated.

// checkedSince waits until the PU puid has been checked after t, and
// returns its status then.
func (n *node) checkedSince(puid k8stypes.UID, t time.Time) deletion.PUStatus {
	n.t.Helper()
	var st deletion.PUStatus
	require.Eventually(n.t, func() bool {
		for _, s := range n.engine.Status() {
			if s.PUID == string(puid) && s.LastChecked.After(t) {
				st = s
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond, "PU %s not checked after %v", puid, t)
	return st
}

func TestEnvtestGracefulDeleteKeepsThePUWhileThePodTerminates(t *testing.T) {
	n := startNode(t, "lc-grace", nodeOptions{confirm: true})
	p := n.createPod("web", n.name, nil)
	n.waitTracked(p.UID)

	// The API server marks the pod terminating and keeps it for its grace
	// period; the kubelet, here the test, removes it once its containers stop.
	before := time.Now()
	require.NoError(t, suite.client.Delete(t.Context(), p, client.GracePeriodSeconds(30)))
	require.Eventually(t, func() bool {
		var got corev1.Pod
		return n.mgr.GetCache().Get(t.Context(), client.ObjectKeyFromObject(p), &got) == nil && got.DeletionTimestamp != nil
	}, 10*time.Second, 5*time.Millisecond, "the cache sees the pod terminating")
	n.engine.TriggerPod(client.ObjectKeyFromObject(p))
	st := n.checkedSince(p.UID, before)
	assert.Equal(t, deletion.Keep, st.LastVerdict.Action, "a terminating pod is alive: %v", st.LastVerdict)
	assert.Empty(t, n.policy.of(p.UID))

	require.NoError(t, suite.client.Delete(t.Context(), p, client.GracePeriodSeconds(0)))
	ev := n.waitDestroyed(p.UID, 5*time.Second)
	assert.Equal(t, ports.ReasonPodGone, ev.Reason)
}

func TestEnvtestFinishedPodWithDestroyTerminated(t *testing.T) {
	for _, on := range []bool{true, false} {
		n := startNode(t, "lc-done", nodeOptions{confirm: true, terminated: on})
		p := n.createPod("job", n.name, nil)
		n.waitTracked(p.UID)

		before := time.Now()
		p.Status.Phase = corev1.PodSucceeded // what the kubelet reports when a Job's pod ends
		require.NoError(t, suite.client.Status().Update(t.Context(), p))
		if on {
			ev := n.waitDestroyed(p.UID, 5*time.Second)
			assert.Equal(t, ports.ReasonPodTerminated, ev.Reason)
			continue
		}
		n.engine.TriggerPod(client.ObjectKeyFromObject(p))
		st := n.checkedSince(p.UID, before)
		assert.Equal(t, deletion.Keep, st.LastVerdict.Action, "without DestroyTerminated a finished pod keeps its PU")
		assert.Empty(t, n.policy.of(p.UID))
		n.deletePod(p)
		n.waitDestroyed(p.UID, 5*time.Second)
	}
}
