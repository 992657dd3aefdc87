package procbench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podsweeper/podsweeper/internal/testkube"
)

// The pods that ApplyPods makes on a real API server are the fixture's:
// its containers, volumes and status, with the managedFields of their two
// managers written by the API server itself.
func TestApplyPodsMakesTheFixturesPod(t *testing.T) {
	cfg, _ := testkube.StartAPIServer(t)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	uids := ApplyPods(t, cs, "bench", "web", 0, 3, func(i int) string { return []string{"a", "b", "c"}[i] }, false)
	require.Len(t, uids, 3)

	fixture := Fixture(t)
	p, err := cs.CoreV1().Pods("bench").Get(t.Context(), "web-00002", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, uids["web-00002"], p.UID)
	assert.Equal(t, "c", p.Spec.NodeName)
	assert.Equal(t, corev1.PodRunning, p.Status.Phase)
	assert.Len(t, p.Spec.Containers, len(fixture.Spec.Containers))
	assert.Len(t, p.Spec.Volumes, len(fixture.Spec.Volumes))
	assert.Len(t, p.Status.ContainerStatuses, len(fixture.Status.ContainerStatuses))
	assert.Equal(t, fixture.Labels, p.Labels)
	var managers []string
	for _, f := range p.ManagedFields {
		assert.Equal(t, metav1.ManagedFieldsOperationApply, f.Operation)
		managers = append(managers, f.Manager)
	}
	assert.ElementsMatch(t, []string{"kube-controller-manager", "kubelet"}, managers)

	// For a real kubelet: no probes, no volumes, no token; the status is the kubelet's to write.
	spec := PodSpec(fixture, "bench", "run", "a", true)
	assert.Empty(t, spec.Spec.Volumes)
	for _, c := range spec.Spec.Containers {
		assert.Nil(t, c.LivenessProbe)
		assert.Nil(t, c.ReadinessProbe)
		assert.Empty(t, c.VolumeMounts)
		assert.NotEmpty(t, c.Env, "the rest of the container stays")
	}
}
