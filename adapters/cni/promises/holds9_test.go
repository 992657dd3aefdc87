package promises_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Holds (the contrast to TestAuditReadyUnlabeledSandbox): the same ready, unlabeled sandbox is
// kept when the runtime ignores the label filter.
func TestAuditHoldsReadyUnlabeledFilterIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.writeEntry(entryOpt{sandbox: "sbready", uid: uidA, netns: e.netns("live", true)})
		ready := sandbox("sbready", uidA, runtimeapi.PodSandboxState_SANDBOX_READY, time.Now())
		ready.Labels = nil
		c := e.collector(&fakeRuntime{ignoreFilter: true, sbs: []*runtimeapi.PodSandbox{ready}}, 0)
		for i := 0; i < 3; i++ {
			c.DestroyPU(context.Background(), goneDefault(uidA))
			time.Sleep(3 * time.Minute)
		}
		if e.delled("sbready") {
			t.Fatal("freed")
		}
	})
}
