package cacheentries_test

import (
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// cni-freeing.md:43-44: "A running sandbox the runtime lists without an ID may be any sandbox: no reservation
// is freed while it is listed." doc.go: "no reservation is freed while it is listed (row 15)".
func TestRunningSandboxWithoutIDOrUIDKeepsReservations(t *testing.T) {
	e := newEnv(t)
	e.write(e.conf+"/10-podnet.conflist", hostLocalConf("podnet", e.data, ""))
	res := e.reservation(e.data, "podnet", "10.88.0.9", "cafe01", "eth0", time.Now().Add(-time.Hour))
	// The runtime lists one running sandbox, without an ID (and without the pod's labels).
	rt := &fakeRuntime{sbs: []*runtimeapi.PodSandbox{{State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: time.Now().UnixNano()}}}
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	st := oneRound(t, c, "10.88.0.9")
	for _, r := range st.Reservations {
		t.Logf("page: row %d, %s, state %q", r.Decision.Row, r.Decision.Why, r.State)
	}
	if !testcni.Exists(res) {
		t.Errorf("a reservation was freed while the runtime lists a running sandbox without an ID")
	}
}

// Hold: the same with the pod's UID on the ID-less sandbox.
func TestHoldsRunningSandboxWithoutIDKeepsReservations(t *testing.T) {
	e := newEnv(t)
	e.write(e.conf+"/10-podnet.conflist", hostLocalConf("podnet", e.data, ""))
	res := e.reservation(e.data, "podnet", "10.88.0.9", "cafe01", "eth0", time.Now().Add(-time.Hour))
	rt := &fakeRuntime{sbs: []*runtimeapi.PodSandbox{{State: runtimeapi.PodSandboxState_SANDBOX_READY, Metadata: &runtimeapi.PodSandboxMetadata{Uid: "u"}}}}
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	oneRound(t, c, "10.88.0.9")
	if !testcni.Exists(res) {
		t.Errorf("freed")
	}
}
