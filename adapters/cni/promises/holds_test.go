package promises_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// A sandbox change of a sandbox being created (not listed, namespace
// there) with no later sandbox is refused; an older stopped one freed.
func TestAuditHoldsSandboxChangeBeingCreatedRefused(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.write("net1", "sbA", "uid1", e.netns("a", true), now.Add(-time.Hour))
	e.write("net1", "sbB", "uid1", e.netns("b", true), now)
	rt := &fakeRuntime{}
	rt.set(sb("sbA", "uid1", false, now.Add(-time.Hour)))
	c := e.collector(rt, 0)
	if err := c.DestroyPU(context.Background(), changed("uid1", "sbB")); !errors.Is(err, cni.ErrNewestSandbox) || e.delsOf("sbB") != 0 {
		t.Fatalf("%v %v", err, e.dels())
	}
	pus, err := c.ListPUs(context.Background())
	if err != nil || len(pus) != 1 || pus[0].SandboxID != "sbA" {
		t.Fatalf("ListPUs %v %v", pus, err)
	}
	if err := c.DestroyPU(context.Background(), changed("uid1", "sbA")); err != nil || e.delsOf("sbA") != 1 {
		t.Fatalf("%v %v", err, e.dels())
	}
}
