package main

import (
	"testing"

	"github.com/golang/mock/gomock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/mocks"
	"github.com/podsweeper/podsweeper/ports"
)

// docs:begin first-agent-gomock
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
	web, cart := pod("web-0", "uid-1"), pod("cart-0", "uid-2")
	require.NoError(t, agent.PodStarted(web))
	require.NoError(t, agent.PodStarted(cart))

	pods.EXPECT().GetPod(gomock.Any(), key(web)).Return(nil, ports.ErrPodNotFound)
	pods.EXPECT().GetPod(gomock.Any(), key(cart)).Return(cart, nil)
	agent.engine.Sweep(t.Context())

	assert.Nil(t, firewall.Rules("uid-1"), "web-0 is gone: its rules go")
	assert.NotNil(t, firewall.Rules("uid-2"), "cart-0 lives: its rules stay")
}

// docs:end first-agent-gomock

// pod returns a running pod of namespace shop named name, with uid, on node-a.
func pod(name, uid string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID(uid)},
		Spec:       corev1.PodSpec{NodeName: "node-a"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// key returns the namespace and name of p.
func key(p *corev1.Pod) types.NamespacedName {
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
}
