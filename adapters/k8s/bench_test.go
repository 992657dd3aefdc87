package k8s_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// BenchmarkCacheGet measures one read of a typical pod (two containers,
// labels, annotations, env, resources, owner, managed fields) from a real
// manager cache, with and without the deep copy, to decide whether
// NewPodGetter should offer client.UnsafeDisableDeepCopy. It needs the
// envtest binaries: KUBEBUILDER_ASSETS=bin/envtest go test -run '^$' -bench CacheGet ./adapters/k8s/
func BenchmarkCacheGet(b *testing.B) {
	n := startNode(b, "bench-get", nodeOptions{})
	p := typicalPod(n.ns, "web", n.name)
	require.NoError(b, suite.client.Create(b.Context(), p))
	key := client.ObjectKeyFromObject(p)
	c := n.mgr.GetCache()
	require.Eventually(b, func() bool { return c.Get(b.Context(), key, &corev1.Pod{}) == nil }, 10*time.Second, time.Millisecond)

	b.Run("DeepCopy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var pod corev1.Pod
			if err := c.Get(b.Context(), key, &pod); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("UnsafeDisableDeepCopy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var pod corev1.Pod
			if err := c.Get(b.Context(), key, &pod, client.UnsafeDisableDeepCopy); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PodGetter", func(b *testing.B) {
		g := k8s.NewPodGetter(c)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := g.GetPod(b.Context(), key); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func typicalPod(ns, name, node string) *corev1.Pod {
	env := make([]corev1.EnvVar, 10)
	for i := range env {
		env[i] = corev1.EnvVar{Name: fmt.Sprintf("VAR_%d", i), Value: "some-value"}
	}
	ctr := func(name string) corev1.Container {
		return corev1.Container{
			Name: name, Image: "registry.example/" + name + ":1.2.3", Env: env,
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name,
			Labels:      map[string]string{"app": "web", "tier": "frontend", "pod-template-hash": "5d8f9c7b6"},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "8080"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8f9c7b6", UID: "6f1c2d3e-0000-4000-8000-000000000001",
			}},
		},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{ctr("app"), ctr("sidecar")},
			Volumes:    []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
}
