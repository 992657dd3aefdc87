package ports

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// docs:begin testing-mocks-1
//go:generate go run github.com/golang/mock/mockgen@v1.6.0 -source=ports.go -destination=../mocks/ports.go -package=mocks
// docs:end testing-mocks-1

// PodGetter reads the live state of a pod.
type PodGetter interface {
	// GetPod returns the live pod. When it does not exist, the error satisfies
	// errors.Is(err, ErrPodNotFound); the core also accepts a Kubernetes NotFound status error.
	// An error that cannot be read (a typed nil, such as a nil *url.Error) is a failure: the PU is kept.
	//
	// The pod may be shared, a cache's own object read without a deep
	// copy: the engine never modifies it, hands it to the SandboxExtractor
	// as read-only, and gives the Requeuer a deep copy.
	GetPod(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error)
}

// SandboxExtractor reports the ID of the sandbox (the pause container and its
// network namespace) a pod currently runs in, or, for one with a method
// MaxAge() time.Duration (adapters/cri's SandboxCache), ran in at most that
// long ago: the engine then confirms its answers (deletion.Options). An empty ID with a nil error
// means the sandbox is not known yet, for example because the runtime has not
// reported it.
//
// The pod is the PodGetter's: SandboxID must not modify it. Read from a
// slim pod cache (adapters/k8s.SlimPod), it holds only the fields that
// cache keeps: its UID, which adapters/cri's extractor reads, among them.
type SandboxExtractor interface {
	SandboxID(ctx context.Context, pod *corev1.Pod) (string, error)
}

// SandboxProber tells whether a sandbox a pod ran in is dead, so that the
// PU of a dead sandbox is destroyed while its pod waits for a new one (a
// node that lost its runtime's state, a sandbox that stopped).
type SandboxProber interface {
	// SandboxDead reports whether the sandbox of that ID, one of pod's, is
	// dead: the runtime lists it stopped (not ready), or does not list it
	// and its network namespace is gone. A sandbox being created (not
	// listed yet, its namespace there) is not dead, nor is one of which
	// the prober cannot tell. An error means the answer is not known: the
	// engine keeps the PU. The pod is the PodGetter's, as for
	// SandboxExtractor: SandboxDead must not modify it.
	SandboxDead(ctx context.Context, pod *corev1.Pod, sandboxID string) (bool, error)
}

// PolicyHandler destroys processing units in the policy engine.
//
// DestroyPU destroys the PU of ev.SandboxID when one is known: a PU
// destroyed for its sandbox (ReasonSandboxChanged, ReasonSandboxDead) is of
// a pod that lives on, whose new sandbox's PU, under the same PUID, the
// agent may have made already and must keep.
//
// DestroyPU must be idempotent: destroying a PU the policy engine does not
// know (never created, or destroyed already, say before the agent
// restarted) must succeed, or answer an error wrapped with Permanent. A
// plain error means "try again later", and the engine retries it with
// backoff for as long as it is tracked, forever by default.
type PolicyHandler interface {
	// DestroyPU destroys the PU described by ev. An error wrapped with
	// Permanent is not retried; any other error, one that cannot be read (a
	// typed nil) too, is retried with backoff.
	DestroyPU(ctx context.Context, ev DestroyEvent) error
}

// DryRunner is a PolicyHandler that can tell, without destroying
// anything, whether DestroyPU would destroy the PU: a policy engine that
// refuses some destroys itself (the CNI collector keeps the network of a
// sandbox the runtime runs, whatever the API says). In a dry run
// (deletion.Options.DryRun) the engine asks it where it would call
// DestroyPU, so that the dry run reports only what a real run would
// destroy: at every check that decides a destroy, as often as a real run
// would call DestroyPU (a PU it refuses is asked again at each retry, and
// at each check until its pod comes back or it answers nil), though each
// PU is reported once per reason. Keep it as cheap as a read.
type DryRunner interface {
	// DryRunDestroyPU answers as DestroyPU would, and changes nothing:
	// nil when DestroyPU would destroy the PU, DestroyPU's error
	// otherwise, which the engine handles as it would DestroyPU's (a
	// plain error is retried with backoff, one wrapped with Permanent is
	// given up on), reporting nothing.
	DryRunDestroyPU(ctx context.Context, ev DestroyEvent) error
}

// Inventory lists the PUs that still exist, so that an engine starting
// after a restart of the agent tracks them again and destroys those whose
// pods went away while it was down. The policy engine itself, or a journal
// the engine writes (adapters/bolt), can serve it.
type Inventory interface {
	// ListPUs returns every PU that still exists. An error means the list
	// could not be read; the engine asks again later.
	ListPUs(ctx context.Context) ([]PU, error)
}

// Requeuer asks the main pod controller to reconcile a pod again.
type Requeuer interface {
	// Requeue asks the main pod controller to reconcile this pod again. The
	// engine hands it a deep copy of the pod its PodGetter returned: the
	// Requeuer and whoever it sends the pod to may keep or modify it. With a
	// slim pod cache, it holds only the fields that cache keeps.
	Requeue(ctx context.Context, pod *corev1.Pod) error
}
