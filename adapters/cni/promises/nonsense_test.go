package promises_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// doc.go: "A sandbox is dead when the runtime lists it stopped, or does
// not list it and its network namespace is gone." and "nothing is freed
// without evidence" (row 3: "The runtime lists it stopped | free"). The
// runtime lists the sandbox in a state that is neither READY nor NOTREADY
// (a value this CRI version does not know); its namespace is there. That
// is no evidence that it is stopped: the gone pod's sandbox must not be
// freed, nor reported dead.
func TestAuditUnknownSandboxStateIsNotStopped(t *testing.T) {
	e := newEnv(t)
	e.write("net1", "sbA", "uid1", e.netns("a", true), time.Time{})
	rt := &fakeRuntime{}
	s := sb("sbA", "uid1", true, time.Now())
	s.State = runtimeapi.PodSandboxState(2)
	rt.set(s)
	c := e.collector(rt, 0)
	pod := &corev1.Pod{}
	pod.UID, pod.Namespace, pod.Name = "uid1", "ns", "pod-uid1"
	dead, err := c.SandboxDead(context.Background(), pod, "sbA")
	derr := c.DestroyPU(context.Background(), gone("uid1"))
	if e.delsOf("sbA") != 0 || dead {
		t.Fatalf("sandbox listed in unknown state %v with its namespace there: SandboxDead = %v (%v), DestroyPU = %v, DELs %v; want it kept", s.State, dead, err, derr, e.dels())
	}
}

// Hold: ListPUs orders a pod's sandboxes dead first, the ready one last.
func TestAuditHoldsListPUsDeadBeforeReady(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.write("net1", "sbA", "uid1", e.netns("a", true), now.Add(-time.Hour))
	e.write("net1", "sbB", "uid1", e.netns("b", true), now)
	rt := &fakeRuntime{}
	rt.set(sb("sbA", "uid1", true, now.Add(-time.Hour)), sb("sbB", "uid1", false, now))
	c := e.collector(rt, 0)
	pus, err := c.ListPUs(context.Background())
	if err != nil || len(pus) != 1 || pus[0].SandboxID != "sbB" {
		t.Fatalf("%v %v", pus, err)
	}
}
