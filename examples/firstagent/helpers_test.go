// docs:begin first-agent-helper

package main

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// startPod creates the pod name on node-a of cluster, and tells the agent
// that it started; it returns the pod's PU.
func startPod(t *testing.T, cluster *deletiontest.Cluster, agent *Agent, name string) ports.PU {
	t.Helper()
	key := types.NamespacedName{Namespace: "shop", Name: name}
	pu := cluster.CreatePod(key, "node-a", "")
	pod, err := cluster.GetPod(t.Context(), key)
	require.NoError(t, err)
	require.NoError(t, agent.PodStarted(pod))
	require.NotNil(t, agent.firewall.Rules(pu.PUID))
	return pu
}

// docs:end first-agent-helper
