package ports

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodGetterFunc lets a plain function serve as a PodGetter.
type PodGetterFunc func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error)

// GetPod calls f(ctx, key).
func (f PodGetterFunc) GetPod(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	return f(ctx, key)
}

// SandboxExtractorFunc lets a plain function serve as a SandboxExtractor.
type SandboxExtractorFunc func(ctx context.Context, pod *corev1.Pod) (string, error)

// SandboxID calls f(ctx, pod).
func (f SandboxExtractorFunc) SandboxID(ctx context.Context, pod *corev1.Pod) (string, error) {
	return f(ctx, pod)
}

// SandboxProberFunc lets a plain function serve as a SandboxProber.
type SandboxProberFunc func(ctx context.Context, pod *corev1.Pod, sandboxID string) (bool, error)

// SandboxDead calls f(ctx, pod, sandboxID).
func (f SandboxProberFunc) SandboxDead(ctx context.Context, pod *corev1.Pod, sandboxID string) (bool, error) {
	return f(ctx, pod, sandboxID)
}

// PolicyHandlerFunc lets a plain function serve as a PolicyHandler.
type PolicyHandlerFunc func(ctx context.Context, ev DestroyEvent) error

// DestroyPU calls f(ctx, ev).
func (f PolicyHandlerFunc) DestroyPU(ctx context.Context, ev DestroyEvent) error {
	return f(ctx, ev)
}

// RequeuerFunc lets a plain function serve as a Requeuer.
type RequeuerFunc func(ctx context.Context, pod *corev1.Pod) error

// Requeue calls f(ctx, pod).
func (f RequeuerFunc) Requeue(ctx context.Context, pod *corev1.Pod) error {
	return f(ctx, pod)
}

// InventoryFunc lets a plain function serve as an Inventory.
type InventoryFunc func(ctx context.Context) ([]PU, error)

// ListPUs calls f(ctx).
func (f InventoryFunc) ListPUs(ctx context.Context) ([]PU, error) {
	return f(ctx)
}

var (
	_ Inventory        = InventoryFunc(nil)
	_ PodGetter        = PodGetterFunc(nil)
	_ SandboxExtractor = SandboxExtractorFunc(nil)
	_ SandboxProber    = SandboxProberFunc(nil)
	_ PolicyHandler    = PolicyHandlerFunc(nil)
	_ Requeuer         = RequeuerFunc(nil)
)
