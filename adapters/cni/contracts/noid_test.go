package contracts_test

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// Holds: the same running sandbox without an ID keeps a gone pod (row 2, ErrSandboxRunning).
func TestHoldsNoIDRunningSandboxKeepsGonePod(t *testing.T) {
	e := newEnv(t)
	e.writeEntry("net1", "sb1", "eth0", e.goneNetNS("sb1"), "uid-p", netConf("net1", "", false), "10.9.0.5")
	rt := &testcni.Runtime{}
	rt.Set(&runtimeapi.PodSandbox{State: runtimeapi.PodSandboxState_SANDBOX_READY, Metadata: &runtimeapi.PodSandboxMetadata{Uid: "uid-p"}})
	c, err := cni.New(e.opts(rt, (&logRec{}).logger()))
	must(t, err)
	err = destroyGone(t, c, "uid-p", "sb1")
	if d := e.dels(); len(d) > 0 {
		t.Fatalf("DELed %v (err %v)", d, err)
	}
	if err == nil {
		t.Fatal("nil")
	}
}
