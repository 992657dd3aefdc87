package promises_test

import (
	"context"
	"errors"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// Holds: a sandbox change of a sandbox that may be being created (not listed, namespace there),
// whose cache entry was written in the future, is refused: no sandbox was created later.
func TestAuditHoldsFutureWriteRefused(t *testing.T) {
	e := newEnv(t)
	e.writeEntry(entryOpt{sandbox: "sbnew", uid: uidA, netns: e.netns("there", true), written: time.Now().Add(time.Hour)})
	c := e.collector(&fakeRuntime{ignoreFilter: true, sbs: []*runtimeapi.PodSandbox{sandbox("sbcur", uidA, runtimeapi.PodSandboxState_SANDBOX_READY, time.Now())}}, 0)
	if err := c.DestroyPU(context.Background(), changedDefault(uidA, "sbnew")); !errors.Is(err, cni.ErrNewestSandbox) || e.delled("sbnew") {
		t.Fatalf("err %v dels %v", err, e.delLogFields())
	}
}
