package promises_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// Sanity and a hold: a gone pod whose only sandbox the runtime lists
// stopped is freed with the plugins' DEL (row 3), and a second DestroyPU
// is nothing to do (idempotent).
func TestAuditHoldsGonePodStoppedSandboxFreedOnce(t *testing.T) {
	e := newEnv(t)
	e.write("net1", "sbA", "uid1", e.netns("a", true), time.Time{})
	rt := &fakeRuntime{}
	rt.set(sb("sbA", "uid1", false, time.Now().Add(-time.Hour)))
	c := e.collector(rt, 0)
	if err := c.DestroyPU(context.Background(), gone("uid1")); err != nil {
		t.Fatalf("DestroyPU: %v", err)
	}
	if err := c.DestroyPU(context.Background(), gone("uid1")); err != nil {
		t.Fatalf("second DestroyPU: %v", err)
	}
	if n := e.delsOf("sbA"); n != 1 || e.exists("net1", "sbA") {
		t.Fatalf("want 1 DEL and the entry gone; DELs %v, exists %v", e.dels(), e.exists("net1", "sbA"))
	}
}

// Row 2: "The pod is gone, and the runtime lists another of its sandboxes
// ready ... keep ... ErrSandboxRunning". Here the ready sandbox is one the
// runtime lists but the cache holds no (readable) entry of.
func TestAuditRow2RuntimeOnlyReadySandboxAnswersErrSandboxRunning(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	// A: old sandbox of the static pod, stopped, its attachment leaked.
	e.write("net1", "sbA", "uid1", e.netns("a", false), now.Add(-time.Hour))
	rt := &fakeRuntime{}
	// B: the sandbox the kubelet runs the static pod in now (mirror pod
	// missing, so the API says gone). The cache holds none of it.
	rt.set(sb("sbA", "uid1", false, now.Add(-time.Hour)), sb("sbB", "uid1", true, now.Add(-time.Minute)))
	c := e.collector(rt, 0)
	err := c.DestroyPU(context.Background(), gone("uid1"))
	if e.delsOf("sbA") != 0 {
		t.Fatalf("freed a sandbox of a pod the runtime runs: %v", e.dels())
	}
	if !errors.Is(err, cni.ErrSandboxRunning) {
		t.Fatalf("DestroyPU of a gone pod the runtime runs (ready sandbox sbB) = %v, want ErrSandboxRunning (row 2); nil tells the engine the PU is destroyed, so it is dropped and never checked again", err)
	}
}
