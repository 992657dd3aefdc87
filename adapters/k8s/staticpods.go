package k8s

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/ports"
)

// StaticPodUIDs returns a PodGetter that reads pods through g and answers
// a mirror pod (annotation kubernetes.io/config.mirror) as the static pod
// it stands for: a copy whose UID is the one the kubelet runs the static
// pod under, the annotation's value. The API's mirror pod has a UID of its
// own, but the kubelet and the runtime know a static pod by the other
// (its sandboxes' io.kubernetes.pod.uid label, the K8S_POD_UID the runtime
// passes to CNI plugins). An engine whose PUs come from the runtime's side
// (adapters/cni's cache) needs this getter, or row 4 of the decision table
// would read every live static pod as recreated under its name and destroy
// its PU. Any other pod, and every error, is g's answer as it is; g's pod
// is never modified.
func StaticPodUIDs(g ports.PodGetter) ports.PodGetter {
	return staticPodUIDs{g: g}
}

type staticPodUIDs struct{ g ports.PodGetter }

// GetPod reads the pod key through the wrapped getter.
func (s staticPodUIDs) GetPod(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	if s.g == nil {
		return nil, errors.New("k8s: StaticPodUIDs has a nil PodGetter")
	}
	pod, err := s.g.GetPod(ctx, key)
	if err != nil || pod == nil {
		return pod, err
	}
	uid := pod.Annotations[corev1.MirrorPodAnnotationKey]
	if uid == "" || types.UID(uid) == pod.UID {
		return pod, nil
	}
	static := pod.DeepCopy()
	static.UID = types.UID(uid)
	return static, nil
}
