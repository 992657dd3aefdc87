// docs:begin first-agent-policy

package main

import (
	"context"
	"slices"
	"sync"

	"github.com/podsweeper/podsweeper/ports"
)

// Firewall is the agent's policy engine: the rules it holds for each PU. A
// real agent programs iptables, eBPF or its enforcer here.
type Firewall struct {
	mu    sync.Mutex
	rules map[string]rules // by PUID
}

// rules are a PU's rules, and the sandbox they were made for ("": not known).
type rules struct {
	sandbox string
	rules   []string
}

// NewFirewall returns a Firewall that holds no rule.
func NewFirewall() *Firewall { return &Firewall{rules: map[string]rules{}} }

// Create installs the rules of pu, in place of those of its PUID before (a
// pod's new sandbox).
func (f *Firewall) Create(pu ports.PU, r ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules[pu.PUID] = rules{sandbox: pu.SandboxID, rules: slices.Clone(r)}
}

// Rules returns the rules of the PU of puid; nil: it holds none.
func (f *Firewall) Rules(puid string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.rules[puid].rules)
}

// DestroyPU removes the rules of ev's PU: the engine calls it once the PU's
// pod is really gone, or (ev.Reason SandboxChanged, SandboxDead) once the
// sandbox ev.SandboxID is: the pod lives on in a new sandbox, whose rules,
// made under the same PUID, stay. It is idempotent, as the port requires: a
// PU it does not hold (destroyed already, or never created) is a success.
// An error is retried with backoff; one wrapped with ports.Permanent is not.
func (f *Firewall) DestroyPU(ctx context.Context, ev ports.DestroyEvent) error {
	if err := ctx.Err(); err != nil {
		return err // the check's deadline passed: the engine tries again
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.rules[ev.PUID]; ev.SandboxID != "" && r.sandbox != "" && r.sandbox != ev.SandboxID {
		return nil // the rules of the pod's new sandbox: the old one's are gone already
	}
	delete(f.rules, ev.PUID)
	return nil
}

var _ ports.PolicyHandler = (*Firewall)(nil)

// docs:end first-agent-policy
