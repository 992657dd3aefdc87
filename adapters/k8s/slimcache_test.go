package k8s_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// labelled is a pod with what SlimPod drops (a label, managed fields) and
// keeps (its name).
func labelled() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: "web", UID: "u", Labels: map[string]string{"app": "web"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
	}}
}

func transformed(t *testing.T, f toolscache.TransformFunc, in *corev1.Pod) *corev1.Pod {
	t.Helper()
	require.NotNil(t, f)
	out, err := f(in)
	require.NoError(t, err)
	return out.(*corev1.Pod)
}

func TestSlimPodCacheOptionsSlimsPodsAndSkipsTheCopy(t *testing.T) {
	opts := k8s.SlimPodCacheOptions(cache.Options{})
	cfg := podSelector(t, opts)
	require.NotNil(t, cfg.UnsafeDisableDeepCopy)
	assert.True(t, *cfg.UnsafeDisableDeepCopy)
	got := transformed(t, cfg.Transform, labelled())
	assert.Equal(t, "web", got.Name)
	assert.Nil(t, got.Labels)
	assert.Nil(t, got.ManagedFields)
	assert.Nil(t, opts.DefaultTransform, "other objects keep their settings")
	assert.Nil(t, opts.DefaultUnsafeDisableDeepCopy)
}

// A node agent applies both: the node's selector and the slim pods, in
// either order.
func TestSlimPodCacheOptionsWithNodeCacheOptions(t *testing.T) {
	node, err := k8s.NodeCacheOptions("node-a", cache.Options{})
	require.NoError(t, err)
	first := k8s.SlimPodCacheOptions(node)
	second, err := k8s.NodeCacheOptions("node-a", k8s.SlimPodCacheOptions(cache.Options{}))
	require.NoError(t, err)
	for name, opts := range map[string]cache.Options{"node first": first, "slim first": second} {
		t.Run(name, func(t *testing.T) {
			require.Len(t, opts.ByObject, 1)
			cfg := podSelector(t, opts)
			assert.Equal(t, "spec.nodeName=node-a", cfg.Field.String())
			assert.True(t, *cfg.UnsafeDisableDeepCopy)
			assert.Nil(t, transformed(t, cfg.Transform, labelled()).Labels)
		})
	}
}

// A transform already set for pods runs first, on the full pod; SlimPod
// runs on its result. The caller's options are not changed.
func TestSlimPodCacheOptionsKeepsTheTransformsAlreadySet(t *testing.T) {
	var saw []string
	seeing := func(tag string) toolscache.TransformFunc {
		return func(obj any) (any, error) {
			if p, ok := obj.(*corev1.Pod); ok {
				saw = append(saw, tag+":"+p.Labels["app"])
				p.Spec.NodeName = tag
			}
			return obj, nil
		}
	}
	pods := &corev1.Pod{}
	no := false
	in := cache.Options{
		DefaultTransform: seeing("default"),
		ByObject: map[client.Object]cache.ByObject{
			pods: {Field: fields.OneTermEqualSelector("spec.nodeName", "node-a"), Namespaces: map[string]cache.Config{
				"team-a": {Transform: seeing("team-a"), UnsafeDisableDeepCopy: &no},
				"team-b": {},
			}},
			&corev1.Node{}: {},
		},
	}
	out := k8s.SlimPodCacheOptions(in)

	cfg := out.ByObject[pods]
	assert.Equal(t, "spec.nodeName=node-a", cfg.Field.String(), "the selector is kept")
	assert.Equal(t, "default", transformed(t, cfg.Transform, labelled()).Spec.NodeName, "DefaultTransform, then SlimPod")
	assert.Equal(t, "team-a", transformed(t, cfg.Namespaces["team-a"].Transform, labelled()).Spec.NodeName, "the namespace's own, then SlimPod")
	assert.True(t, *cfg.Namespaces["team-a"].UnsafeDisableDeepCopy)
	assert.Equal(t, "default", transformed(t, cfg.Namespaces["team-b"].Transform, labelled()).Spec.NodeName,
		"a namespace with no transform of its own runs the one it would have (the type's: DefaultTransform), then SlimPod")
	assert.True(t, *cfg.Namespaces["team-b"].UnsafeDisableDeepCopy)
	assert.Equal(t, []string{"default:web", "team-a:web", "default:web"}, saw, "each saw the full pod")
	assert.Len(t, out.ByObject, 2)

	// The caller's maps are not changed.
	assert.Nil(t, in.ByObject[pods].Transform)
	assert.False(t, *in.ByObject[pods].Namespaces["team-a"].UnsafeDisableDeepCopy)

	// DefaultNamespaces with a transform of their own get SlimPod after it too.
	out = k8s.SlimPodCacheOptions(cache.Options{DefaultNamespaces: map[string]cache.Config{"team-c": {Transform: seeing("team-c")}, "team-d": {}}})
	cfg = podSelector(t, out)
	assert.Equal(t, "team-c", transformed(t, cfg.Namespaces["team-c"].Transform, labelled()).Spec.NodeName)
	assert.Nil(t, transformed(t, cfg.Namespaces["team-c"].Transform, labelled()).Labels)
	slim := transformed(t, cfg.Namespaces["team-d"].Transform, labelled())
	assert.Nil(t, slim.Labels, "SlimPod alone")
	assert.Empty(t, slim.Spec.NodeName)

	// A namespace of the type's own with no transform runs DefaultNamespaces'
	// for it when the type has none, as controller-runtime's defaulting does:
	// the type's SlimPod does not hide it.
	out = k8s.SlimPodCacheOptions(cache.Options{
		DefaultNamespaces: map[string]cache.Config{"team-e": {Transform: seeing("team-e")}},
		ByObject:          map[client.Object]cache.ByObject{&corev1.Pod{}: {Namespaces: map[string]cache.Config{"team-e": {}}}},
	})
	cfg = podSelector(t, out)
	require.NotNil(t, cfg.Namespaces["team-e"].Transform)
	assert.Equal(t, "team-e", transformed(t, cfg.Namespaces["team-e"].Transform, labelled()).Spec.NodeName)
}

func TestSlimPodCacheOptionsWrapsTheErrorOfTheTransformBefore(t *testing.T) {
	boom := errors.New("boom")
	out := k8s.SlimPodCacheOptions(cache.Options{DefaultTransform: func(any) (any, error) { return nil, boom }})
	_, err := podSelector(t, out).Transform(labelled())
	require.ErrorIs(t, err, boom)
}
