package promises_test

import (
	"context"
	"errors"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
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

// Holds: a sandbox listed only with an unknown state is kept for a gone pod.
func TestAuditHoldsUnknownStateKept(t *testing.T) {
	e := newEnv(t)
	e.writeEntry(entryOpt{sandbox: "sb1", uid: uidA, netns: e.netns("g", false)})
	c := e.collector(&fakeRuntime{ignoreFilter: true, sbs: []*runtimeapi.PodSandbox{sandbox("sb1", uidA, 9, time.Now())}}, 0)
	err := c.DestroyPU(context.Background(), goneDefault(uidA))
	if e.delled("sb1") {
		t.Fatalf("freed: %v", err)
	}
	_ = cni.ErrSandboxRunning
}
