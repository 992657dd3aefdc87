package k8s_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/ports"
)

func TestStaticPodUIDsAnswersAMirrorPodWithTheStaticPodsUID(t *testing.T) {
	mirror := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "etcd-node-a", UID: "mirror-uid",
		Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "static-hash"}}}
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "web-uid"}}
	boom := errors.New("boom")
	g := k8s.StaticPodUIDs(ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		switch key.Name {
		case mirror.Name:
			return mirror, nil
		case plain.Name:
			return plain, nil
		}
		return nil, boom
	}))
	ctx := context.Background()

	got, err := g.GetPod(ctx, types.NamespacedName{Namespace: "kube-system", Name: "etcd-node-a"})
	require.NoError(t, err)
	require.Equal(t, types.UID("static-hash"), got.UID)
	require.Equal(t, types.UID("mirror-uid"), mirror.UID, "the getter's pod is not modified")

	got, err = g.GetPod(ctx, types.NamespacedName{Namespace: "default", Name: "web"})
	require.NoError(t, err)
	require.Same(t, plain, got)

	_, err = g.GetPod(ctx, types.NamespacedName{Namespace: "default", Name: "other"})
	require.ErrorIs(t, err, boom)
}
