package procbench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// FixturePath is the realistic pod, relative to the module's root: a
// Deployment's pod with two containers (env, probes, resources, volume
// mounts), a projected token volume, five conditions and two container
// statuses, as the API server returned it.
const FixturePath = "adapters/k8s/testdata/realistic-pod.json"

// Fixture returns the realistic pod, read from the module's root.
func Fixture(tb testing.TB) *corev1.Pod {
	tb.Helper()
	_, file, _, ok := runtime.Caller(0)
	require.True(tb, ok)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", FixturePath))
	require.NoError(tb, err)
	var p corev1.Pod
	require.NoError(tb, json.Unmarshal(data, &p))
	return &p
}

// PodSpec is what a pod's owner applies: the fixture's labels, annotations
// and spec under a new name and namespace, bound to node. kubelet: the pod
// is run by a real kubelet on the CRI fake, so the parts that need more
// than a runtime (probes against the pod's address, volumes from
// ConfigMaps and a ServiceAccount token) are left out, and each
// container requests 5m of CPU and 16 MiB (so that 110 pods fit on a node
// of 2 cores) within the fixture's limits.
func PodSpec(fixture *corev1.Pod, ns, name, node string, kubelet bool) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: fixture.Labels, Annotations: fixture.Annotations},
		Spec: *fixture.Spec.DeepCopy(),
	}
	p.Spec.NodeName = node
	if kubelet {
		p.Spec.Volumes = nil
		p.Spec.AutomountServiceAccountToken = ptr.To(false)
		p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount = "", ""
		for i := range p.Spec.Containers {
			c := &p.Spec.Containers[i]
			c.VolumeMounts, c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = nil, nil, nil, nil
			c.Resources.Requests = corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("5m"),
				corev1.ResourceMemory: resource.MustParse("16Mi"),
			}
		}
	}
	return p
}

// podStatus is what a kubelet reports for the pod: the fixture's status,
// the pod's own UID in nothing (the status holds none).
func podStatus(fixture *corev1.Pod, ns, name string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Status:     *fixture.Status.DeepCopy(),
	}
}

// Apply makes the pod with server-side apply as its owner
// (kube-controller-manager, a ReplicaSet's) would, then, unless kubelet is
// set (a real kubelet reports the status), applies the fixture's status as
// the kubelet, on the status subresource. It returns the pod's UID.
func Apply(ctx context.Context, cs kubernetes.Interface, fixture *corev1.Pod, ns, name, node string, kubelet bool) (types.UID, error) {
	spec, err := json.Marshal(PodSpec(fixture, ns, name, node, kubelet))
	if err != nil {
		return "", err
	}
	pods := cs.CoreV1().Pods(ns)
	p, err := pods.Patch(ctx, name, types.ApplyPatchType, spec, metav1.PatchOptions{FieldManager: "kube-controller-manager", Force: ptr.To(true)})
	if err != nil {
		return "", fmt.Errorf("applying pod %s/%s: %w", ns, name, err)
	}
	if kubelet {
		return p.UID, nil
	}
	status, err := json.Marshal(podStatus(fixture, ns, name))
	if err != nil {
		return "", err
	}
	if _, err := pods.Patch(ctx, name, types.ApplyPatchType, status, metav1.PatchOptions{FieldManager: "kubelet", Force: ptr.To(true)}, "status"); err != nil {
		return "", fmt.Errorf("applying the status of pod %s/%s: %w", ns, name, err)
	}
	return p.UID, nil
}

// ApplyPods makes n pods named prefix-00000 onwards in ns with Apply, on
// the node nodeOf(i) gives the i-th, 32 at a time, and returns their UIDs
// by name.
func ApplyPods(tb testing.TB, cs kubernetes.Interface, ns, prefix string, first, n int, nodeOf func(i int) string, kubelet bool) map[string]types.UID {
	tb.Helper()
	fixture := Fixture(tb)
	var mu sync.Mutex
	uids := make(map[string]types.UID, n)
	next := make(chan int)
	errs := make(chan error, 32)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range next {
				name := fmt.Sprintf("%s-%05d", prefix, i)
				uid, err := Apply(tb.Context(), cs, fixture, ns, name, nodeOf(i), kubelet)
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					continue
				}
				mu.Lock()
				uids[name] = uid
				mu.Unlock()
			}
		})
	}
	for i := first; i < first+n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(tb, err)
	}
	require.Len(tb, uids, n)
	return uids
}
