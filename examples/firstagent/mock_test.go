// docs:begin first-agent-gomock

package main

import (
	"testing"

	"github.com/golang/mock/gomock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/mocks"
	"github.com/podsweeper/podsweeper/ports"
)

// TestOnlyTheGonePodsRulesGo states each read the engine makes, with the
// gomock mock of the PodGetter: web-0 is not found, so its rules go; cart-0
// is found with the same UID on this node, so its rules stay. A Sweep is
// one pass of checks over every PU, without Start.
func TestOnlyTheGonePodsRulesGo(t *testing.T) {
	ctrl := gomock.NewController(deletiontest.NewMockReporter(t))
	pods := mocks.NewMockPodGetter(ctrl)
	firewall := NewFirewall()
	agent, err := NewAgent(pods, firewall, "node-a", deletion.Options{Logger: deletiontest.Discard()})
	require.NoError(t, err)
	webKey := types.NamespacedName{Namespace: "shop", Name: "web-0"}
	cartKey := types.NamespacedName{Namespace: "shop", Name: "cart-0"}
	cart := deletiontest.Pod(cartKey, "uid-2", "node-a") // a running pod of that name, UID and node
	require.NoError(t, agent.PodStarted(deletiontest.Pod(webKey, "uid-1", "node-a")))
	require.NoError(t, agent.PodStarted(cart))

	pods.EXPECT().GetPod(gomock.Any(), webKey).Return(nil, ports.ErrPodNotFound)
	pods.EXPECT().GetPod(gomock.Any(), cartKey).Return(cart, nil)
	agent.engine.Sweep(t.Context())

	assert.Nil(t, firewall.Rules("uid-1"), "web-0 is gone: its rules go")
	assert.NotNil(t, firewall.Rules("uid-2"), "cart-0 lives: its rules stay")
}

// docs:end first-agent-gomock
