package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/examples/ubermock/portsmock"
	"github.com/podsweeper/podsweeper/ports"
)

// docs:begin testing-mocks-4
// TestAGonePodsPUIsDestroyedOnce: the engine, driven by go.uber.org/mock
// mocks, destroys the PU of a pod the API server no longer has, once, and
// forgets it: a second sweep neither reads the pod nor destroys it again.
func TestAGonePodsPUIsDestroyedOnce(t *testing.T) {
	ctrl := gomock.NewController(deletiontest.NewMockReporter(t))
	getter := portsmock.NewMockPodGetter(ctrl)
	policy := portsmock.NewMockPolicyHandler(ctrl)
	pod := types.NamespacedName{Namespace: "shop", Name: "cart-0"}
	getter.EXPECT().GetPod(gomock.Any(), pod).Return(nil, ports.ErrPodNotFound)
	policy.EXPECT().DestroyPU(gomock.Any(), ports.DestroyEvent{
		PUID: "uid-1", Pod: pod, SandboxID: "sb-1", Reason: ports.ReasonPodGone,
	}).Return(nil)

	engine, err := deletion.New(getter, policy, deletion.Options{})
	require.NoError(t, err)
	require.NoError(t, engine.Track(ports.PU{PUID: "uid-1", Pod: pod, SandboxID: "sb-1"}))
	engine.Sweep(t.Context())
	engine.Sweep(t.Context())

	assert.Zero(t, engine.Len(), "the destroyed PU is no longer tracked")
}

// docs:end testing-mocks-4

// TestALivePodsPUIsKept: a PU whose pod lives in the sandbox it was
// created in is kept, and no DestroyPU is called (gomock fails the test on
// a call it was not told to expect).
func TestALivePodsPUIsKept(t *testing.T) {
	ctrl := gomock.NewController(deletiontest.NewMockReporter(t))
	getter := portsmock.NewMockPodGetter(ctrl)
	extractor := portsmock.NewMockSandboxExtractor(ctrl)
	policy := portsmock.NewMockPolicyHandler(ctrl)
	pod := types.NamespacedName{Namespace: "shop", Name: "cart-0"}
	live := livePod(pod, "uid-1")
	getter.EXPECT().GetPod(gomock.Any(), pod).Return(live, nil)
	extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb-1", nil)

	engine, err := deletion.New(getter, policy, deletion.Options{SandboxExtractor: extractor})
	require.NoError(t, err)
	require.NoError(t, engine.Track(ports.PU{PUID: "uid-1", Pod: pod, SandboxID: "sb-1"}))
	engine.Sweep(t.Context())

	assert.Equal(t, 1, engine.Len())
}

// livePod is the pod at key, of that UID.
func livePod(key types.NamespacedName, uid types.UID) *corev1.Pod {
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name, pod.UID = key.Namespace, key.Name, uid
	return pod
}
