package promises_test

import (
	"context"
	"testing"
	"time"
)

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
