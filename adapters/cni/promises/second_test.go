package promises_test

import (
	"context"
	"errors"
	"testing"
)

// Holds: a runtime that fails keeps everything.
func TestAuditHoldsRuntimeFailsKeeps(t *testing.T) {
	e := newEnv(t)
	e.writeEntry(entryOpt{sandbox: "sb1", uid: uidA, netns: e.netns("g", false)})
	c := e.collector(&fakeRuntime{ignoreFilter: true, err: errors.New("unavailable")}, 0)
	err := c.DestroyPU(context.Background(), goneDefault(uidA))
	if err == nil || e.delled("sb1") {
		t.Fatalf("err %v dels %v", err, e.delLogFields())
	}
}
