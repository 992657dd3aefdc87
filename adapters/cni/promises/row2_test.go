package promises_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

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
