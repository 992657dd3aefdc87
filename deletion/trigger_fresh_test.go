package deletion_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
	corev1 "k8s.io/api/core/v1"
)

// staleSandboxList is a SandboxExtractor that answers from a list that may be old (it has MaxAge, as adapters/cri's
// SandboxCache): it answers the sandbox it listed last.
type staleSandboxList struct {
	mu      sync.Mutex
	sandbox string
	calls   int
}

func (s *staleSandboxList) SandboxID(context.Context, *corev1.Pod) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return s.sandbox, nil
}

func (s *staleSandboxList) MaxAge() time.Duration { return time.Hour }

// runtime is the SandboxConfirmer: the runtime's own answer.
type freshRuntime struct {
	mu      sync.Mutex
	sandbox string
	calls   int
}

func (r *freshRuntime) SandboxID(context.Context, *corev1.Pod) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	return r.sandbox, nil
}

func (r *freshRuntime) set(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sandbox = s
}

// triggerAfterSandboxChange tracks a PU in sandbox s1, has it checked once, replaces the sandbox in the runtime while
// the list still says s1, then triggers it with trigger and reports what the policy destroyed within a second.
func triggerAfterSandboxChange(t *testing.T, trigger func(e *deletion.Engine, pu ports.PU)) []ports.DestroyEvent {
	cl := deletiontest.NewCluster()
	pu := cl.CreatePod(nsKey(fmt.Sprintf("pod-%d", 1)), "node-a", "")
	pu.SandboxID = "s1"
	list := &staleSandboxList{sandbox: "s1"}
	rt := &freshRuntime{sandbox: "s1"}
	policy := &deletiontest.Policy{}
	e := deletiontest.NewEngine(t, cl, policy, deletion.Options{NodeName: "node-a", SandboxExtractor: list,
		SandboxConfirmer: rt, SweepInterval: time.Hour})
	if err := e.Track(pu); err != nil {
		t.Fatal(err)
	}
	e.Sweep(context.Background()) // its first check: same sandbox, kept
	if st := e.Status(); len(st) != 1 || st[0].LastVerdict.Row != 9 {
		t.Fatalf("after the first check: %+v", st)
	}
	deletiontest.Start(t, e)
	deletiontest.Advance(time.Second)
	rt.set("s2") // the runtime replaced the sandbox; the list is a moment old
	trigger(e, pu)
	deletiontest.Advance(time.Second)
	return policy.Destroyed()
}

// deletion.Engine.TriggerAll (go doc): "TriggerAll asks for every PU to be checked now, as TriggerPod does for the
// PUs of one pod." deletion.Options.SandboxConfirmer: "A PU's first check, and one TriggerPod asked for, ask it alone."
//
// TriggerPod's check reads the runtime (SandboxConfirmer) and destroys the PU of the replaced sandbox at once;
// TriggerAll's check reads the list that may be old and keeps it.
func TestTriggerAllAsTriggerPod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		byPod := triggerAfterSandboxChange(t, func(e *deletion.Engine, pu ports.PU) { e.TriggerPod(pu.Pod) })
		if len(byPod) != 1 || byPod[0].Reason != ports.ReasonSandboxChanged {
			t.Fatalf("TriggerPod: destroyed %v, want the PU of s1 for SandboxChanged", byPod)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		all := triggerAfterSandboxChange(t, func(e *deletion.Engine, _ ports.PU) { e.TriggerAll() })
		if len(all) != 1 {
			t.Errorf("TriggerAll: destroyed %v; TriggerPod of the same PU destroyed it for SandboxChanged: TriggerAll does not check as TriggerPod does (its check reads the list that may be old, not the runtime)", all)
		}
	})
}
