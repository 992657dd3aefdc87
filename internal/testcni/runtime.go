package testcni

import (
	"context"
	"sync"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime is a cni.Runtime that lists Sandboxes, or fails with Err. Hook,
// when set, runs at each list before it answers, with the list's number
// (1 first); it may change what the list answers with Set.
type Runtime struct {
	mu sync.Mutex
	// Sandboxes is what a list answers (a copy of the slice).
	Sandboxes []*runtimeapi.PodSandbox
	// Err is the error a list answers with.
	Err error
	// Hook runs at each list, before it answers.
	Hook  func(n int)
	calls int
}

// ListPodSandbox counts the list, runs Hook, and answers Sandboxes and Err
// whatever the filter.
func (r *Runtime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r.mu.Lock()
	r.calls++
	n, hook := r.calls, r.Hook
	r.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*runtimeapi.PodSandbox(nil), r.Sandboxes...), r.Err
}

// Set makes the next lists answer sbs.
func (r *Runtime) Set(sbs ...*runtimeapi.PodSandbox) {
	r.mu.Lock()
	r.Sandboxes = sbs
	r.mu.Unlock()
}

// SetErr makes the next lists fail with err.
func (r *Runtime) SetErr(err error) {
	r.mu.Lock()
	r.Err = err
	r.mu.Unlock()
}

// Calls is how many lists there were.
func (r *Runtime) Calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}
