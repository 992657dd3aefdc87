package k8s_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

func testPod(ns, name, uid, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
		},
	}
}

func TestPodGetterReturnsThePod(t *testing.T) {
	want := testPod("ns", "web", "uid-1", "node-a")
	c := fake.NewClientBuilder().WithObjects(want).Build()
	g := k8s.NewPodGetter(c)

	got, err := g.GetPod(t.Context(), types.NamespacedName{Namespace: "ns", Name: "web"})
	require.NoError(t, err)
	assert.Equal(t, types.UID("uid-1"), got.UID)
	assert.Equal(t, "node-a", got.Spec.NodeName)

	// Each call returns a pod of its own: changing one leaves the next untouched.
	got.Spec.NodeName = "changed"
	again, err := g.GetPod(t.Context(), types.NamespacedName{Namespace: "ns", Name: "web"})
	require.NoError(t, err)
	assert.Equal(t, "node-a", again.Spec.NodeName)
}

func TestPodGetterNotFoundMatchesBothConventions(t *testing.T) {
	g := k8s.NewPodGetter(fake.NewClientBuilder().Build())

	pod, err := g.GetPod(t.Context(), types.NamespacedName{Namespace: "ns", Name: "gone"})
	require.Error(t, err)
	assert.Nil(t, pod)
	assert.ErrorIs(t, err, ports.ErrPodNotFound)
	assert.True(t, apierrors.IsNotFound(err), "apierrors.IsNotFound(%v)", err)
	assert.True(t, deletion.IsNotFound(err))
	assert.Contains(t, err.Error(), "ns/gone")
	// The engine reads it as row 1 of the decision table.
	v := deletion.Decide(ports.PU{PUID: "u", Pod: types.NamespacedName{Namespace: "ns", Name: "gone"}}, deletion.Observation{Err: err})
	assert.Equal(t, ports.ReasonPodGone, v.Reason)
}

func TestPodGetterWrapsOtherErrors(t *testing.T) {
	boom := errors.New("connection refused")
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return boom
		},
	}).Build()
	_, err := k8s.NewPodGetter(c).GetPod(t.Context(), types.NamespacedName{Namespace: "ns", Name: "web"})
	require.ErrorIs(t, err, boom)
	assert.NotErrorIs(t, err, ports.ErrPodNotFound)
	assert.False(t, apierrors.IsNotFound(err))

	// A server-side error other than NotFound is not mistaken for one either.
	c = fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return apierrors.NewServiceUnavailable("etcd down")
		},
	}).Build()
	_, err = k8s.NewPodGetter(c).GetPod(t.Context(), types.NamespacedName{Namespace: "ns", Name: "web"})
	require.Error(t, err)
	assert.False(t, deletion.IsNotFound(err))
}

func TestPodGetterNilReader(t *testing.T) {
	pod, err := k8s.NewPodGetter(nil).GetPod(t.Context(), types.NamespacedName{Namespace: "ns", Name: "web"})
	require.Error(t, err)
	assert.Nil(t, pod)
	assert.False(t, deletion.IsNotFound(err), "a broken getter must never make a pod look gone")
}
