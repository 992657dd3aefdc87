package k8s

import (
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/podsweeper/podsweeper/deletion"
)

var _ toolscache.TransformFunc = SlimPod

// SlimPod is a cache transform (cache.ByObject.Transform) that replaces
// each pod by a new one holding only what podsweeper reads of it, and
// passes any other object, tombstones (toolscache.DeletedFinalStateUnknown)
// included, through unchanged. It keeps:
//
//   - what the decision table reads, deletion.SlimPod: type, name,
//     namespace, UID, spec.nodeName and status.phase;
//   - what the pod handler of SetupWithManager reads: metadata.resourceVersion,
//     to tell a change from a resync;
//   - what PodsWithOwnNetwork reads: spec.hostNetwork and the mirror-pod
//     annotation (kubernetes.io/config.mirror), the only annotation kept;
//   - metadata.deletionTimestamp, so that whoever is handed the pod (a
//     Filter, the Requeuer's main controller) still sees it terminating.
//
// Everything else goes: labels, the other annotations, owner references,
// managed fields, containers, volumes, conditions and container statuses.
// A Deployment's pod of about 10 KB of JSON holds about 18 KB of heap once
// decoded, and its slim copy about 1 KB (BenchmarkPodStore).
//
// A SetupOptions.Filter or SandboxExtractor that reads any other field sees
// it empty: PodsWithOwnNetwork and adapters/cri's extractor read only what
// is kept. FuzzSlimPodDecidesAlike checks that the decision table,
// Engine.Classify, PodsWithOwnNetwork and the handler answer alike on a pod
// and on its slim copy. SlimPod does not modify the pod it is given, and
// is idempotent, as client-go asks of a transform.
func SlimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod == nil {
		return obj, nil
	}
	slim := deletion.SlimPod(pod)
	slim.ResourceVersion = pod.ResourceVersion
	slim.DeletionTimestamp = pod.DeletionTimestamp.DeepCopy()
	slim.Spec.HostNetwork = pod.Spec.HostNetwork
	if v, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		slim.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: v}
	}
	return slim, nil
}
