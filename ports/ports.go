package ports

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

//go:generate go run github.com/golang/mock/mockgen@v1.6.0 -source=ports.go -destination=../mocks/ports.go -package=mocks

// PodGetter reads the live state of a pod.
type PodGetter interface {
	// GetPod returns the live pod. When it does not exist, the error satisfies
	// errors.Is(err, ErrPodNotFound); the core also accepts a Kubernetes NotFound status error.
	GetPod(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error)
}

// SandboxExtractor reports the ID of the sandbox (the pause container and its
// network namespace) a pod currently runs in. An empty ID with a nil error
// means the sandbox is not known yet, for example because the runtime has not
// reported it.
type SandboxExtractor interface {
	SandboxID(ctx context.Context, pod *corev1.Pod) (string, error)
}

// PolicyHandler destroys processing units in the policy engine.
type PolicyHandler interface {
	// DestroyPU destroys the PU described by ev. An error wrapped with
	// Permanent is not retried; any other error is retried with backoff.
	DestroyPU(ctx context.Context, ev DestroyEvent) error
}

// Requeuer asks the main pod controller to reconcile a pod again.
type Requeuer interface {
	// Requeue asks the main pod controller to reconcile this pod again.
	Requeue(ctx context.Context, pod *corev1.Pod) error
}
