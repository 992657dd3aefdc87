package trireme

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// An adapter never imports another adapter, so the drop-in carries its own
// small PodGetter and Requeuer over controller-runtime; adapters/k8s has the
// full-featured ones for new code.

// readerGetter reads pods through a controller-runtime client.Reader.
type readerGetter struct{ r client.Reader }

var _ ports.PodGetter = readerGetter{}

// GetPod returns the pod; a missing pod gives an error matching both
// ports.ErrPodNotFound and apierrors.IsNotFound.
func (g readerGetter) GetPod(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	if err := g.r.Get(ctx, key, pod); err != nil {
		// Read once (ports.Snapshot, a bounded walk: an error whose Unwrap returns itself ends too), and answered as
		// that reading said, whatever the client's error says when read again.
		snap := ports.Snapshot(err)
		switch {
		case snap == nil: // the engine takes it as a failure, and never reads it: neither does its wrapping here
			return nil, err
		case deletion.IsNotFound(snap):
			return nil, fmt.Errorf("%w: %w", ports.ErrPodNotFound, snap)
		}
		return nil, fmt.Errorf("get pod %s: %w", key, snap)
	}
	return pod, nil
}

// chanRequeuer asks the main pod controller to reconcile a pod again by
// sending a GenericEvent on its channel, as trireme-lib's DeleteController
// did, but gives up when ctx ends instead of blocking forever.
type chanRequeuer struct{ ch chan<- event.GenericEvent }

var _ ports.Requeuer = chanRequeuer{}

// Requeue sends a copy of pod on the channel, or fails once ctx is done.
func (r chanRequeuer) Requeue(ctx context.Context, pod *corev1.Pod) error {
	if pod == nil {
		return fmt.Errorf("requeue: nil pod")
	}
	select {
	case r.ch <- event.GenericEvent{Object: pod.DeepCopy()}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("requeue pod %s/%s: nobody received the event: %w", pod.Namespace, pod.Name, ctx.Err())
	}
}
