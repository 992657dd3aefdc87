package k8s

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/podsweeper/podsweeper/ports"
)

// Errors returned by the Requeuer of NewChannelRequeuer. Match them with errors.Is.
var (
	// ErrNilChannel: the Requeuer was built on a nil channel.
	ErrNilChannel = errors.New("k8s: requeue channel is nil")
	// ErrNilPod: Requeue was given a nil pod.
	ErrNilPod = errors.New("k8s: nil pod")
)

// NewChannelRequeuer returns a Requeuer that sends event.GenericEvent{Object:
// pod} on ch. The main pod controller watches ch with
// source.Channel(ch, &handler.EnqueueRequestForObject{}) and so reconciles
// the pod again. Requeue waits for ch to accept the event as long as its
// context allows, and returns an error wrapping ctx.Err() once it ends: it
// never blocks past the context's deadline. The pod is sent as Requeue got
// it: the engine's calls hand it a copy of its own (ports.Requeuer), which
// the receivers may keep.
func NewChannelRequeuer(ch chan<- event.GenericEvent) ports.Requeuer {
	return &channelRequeuer{ch: ch}
}

type channelRequeuer struct{ ch chan<- event.GenericEvent }

var _ ports.Requeuer = (*channelRequeuer)(nil)

// Requeue sends pod on the channel, or gives up when ctx ends.
func (r *channelRequeuer) Requeue(ctx context.Context, pod *corev1.Pod) error {
	if pod == nil {
		return ErrNilPod
	}
	if r.ch == nil {
		return ErrNilChannel
	}
	// A context already done wins over a channel that happens to be ready.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("requeueing pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	select {
	case r.ch <- event.GenericEvent{Object: pod}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("requeueing pod %s/%s: %w", pod.Namespace, pod.Name, ctx.Err())
	}
}
