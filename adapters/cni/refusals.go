package cni

import (
	"sync"
	"time"
)

// refusals remembers, for the sandboxes that may be ones the runtime is
// creating, when DestroyPU first refused to free each since its place was
// last known, and which it gave up on (decide's rows 7 to 10). Its
// methods are its only transitions; it is safe from any goroutine.
type refusals struct {
	// timeout is Options.NewestSandboxTimeout.
	timeout time.Duration

	mu sync.Mutex
	// since holds the first refusal of each sandbox refused.
	since map[string]time.Time
	// gaveUp holds the sandboxes given up on (ErrOrderUnknown).
	gaveUp map[string]bool
	// failing holds the sandboxes a DEL of DestroyPU failed on, while the cache holds them: ListPUs lists a pod's
	// other dead sandboxes before them, so that one that cannot be freed holds none of the later ones.
	failing map[string]bool
}

func newRefusals(timeout time.Duration) *refusals {
	return &refusals{timeout: timeout, since: make(map[string]time.Time), gaveUp: make(map[string]bool), failing: make(map[string]bool)}
}

// delFailed records that a DEL of the sandbox id failed.
func (r *refusals) delFailed(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failing[id] = true
}

// isFailing reports whether a DEL of the sandbox id failed, and the cache holds it still.
func (r *refusals) isFailing(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failing[id]
}

// expired reports whether the sandbox id has been refused for the timeout
// or longer (sandboxFacts.Expired).
func (r *refusals) expired(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	first, ok := r.since[id]
	return ok && time.Since(first) >= r.timeout
}

// givenUp reports whether the sandbox id was given up on.
func (r *refusals) givenUp(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gaveUp[id]
}

// record carries out DestroyPU's verdicts: a refusal starts the time of
// the sandbox's first one, a give-up marks it given up and keeps that time
// (its gone pod frees it at once, row 10), and a sandbox whose place is
// known (listed ready, or dead) has its time forgotten.
func (r *refusals) record(vs []verdict) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range vs {
		switch {
		case v.Action == giveUp:
			r.gaveUp[v.ID] = true
		case v.Action == refuse:
			if _, ok := r.since[v.ID]; !ok {
				r.since[v.ID] = time.Now()
			}
		case v.State == stateReady || v.State == stateDead:
			delete(r.since, v.ID)
		}
	}
}

// settle forgets the time of the sandboxes whose place vs tell (listed
// ready, or dead), and records nothing else: ListPUs' verdicts answer no
// event.
func (r *refusals) settle(vs []verdict) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range vs {
		if v.State == stateReady || v.State == stateDead {
			delete(r.since, v.ID)
		}
	}
}

// retain forgets every sandbox that held does not hold: one gone from the
// cache is nothing to refuse or give up on any more.
func (r *refusals) retain(held func(id string) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range r.since {
		if !held(id) {
			delete(r.since, id)
		}
	}
	for id := range r.gaveUp {
		if !held(id) {
			delete(r.gaveUp, id)
		}
	}
	for id := range r.failing {
		if !held(id) {
			delete(r.failing, id)
		}
	}
}
