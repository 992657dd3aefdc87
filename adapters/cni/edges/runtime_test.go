package edges_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// TestASandboxListedWithoutAnIDKeepsEveryReservation: the runtime lists a ready sandbox with no ID (of pod
// uid-a). DestroyPU reads that as "the pod runs" and keeps everything of it (row 2, ErrSandboxRunning). The sweep
// frees a reservation no cache entry accounts for all the same (row 18): the one answer keeps for DestroyPU and
// frees for the sweep, though "no host-local reservation of a sandbox the runtime lists, ready or not ... is freed".
func TestASandboxListedWithoutAnIDKeepsEveryReservation(t *testing.T) {
	e := newEnv(t)
	e.sweepPlugin("")
	e.netConf("10-net1.conflist", "net1", "")
	e.cacheEntry(entry{Network: "net1", ID: "aaa", UID: "uid-a", NS: "ns", Name: "pod-a", IP: "10.1.0.70"})
	p := e.reservation("net1", "10.1.0.71", "bbb") // the ready sandbox's, whose ID the runtime does not tell
	l := &logs{}
	o := e.opts(l)
	o.Runtime = &countingRuntime{f: func(context.Context, int) ([]*runtimeapi.PodSandbox, error) {
		return []*runtimeapi.PodSandbox{{State: runtimeapi.PodSandboxState_SANDBOX_READY, Metadata: &runtimeapi.PodSandboxMetadata{Uid: "uid-a", Name: "pod-a", Namespace: "ns"}}}, nil
	}}
	c := newCollector(t, o)
	err := c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-a", Pod: podA, SandboxID: "aaa", Reason: ports.ReasonPodGone})
	if !errors.Is(err, cni.ErrSandboxRunning) {
		t.Fatalf("DestroyPU = %v, want ErrSandboxRunning", err)
	}
	resyncUntil(t, c, func() bool {
		st := testcni.Address(t, c, "10.1.0.71")
		return len(st.Reservations) == 1 && st.Reservations[0].State != "to free"
	})
	if _, err := os.Stat(p); err != nil {
		t.Errorf("the runtime lists a ready sandbox it names no ID of, and the sweep freed a reservation: %s", dump(testcni.Address(t, c, "10.1.0.71").Reservations))
	}
}

// TestThePageSaysTheRuntimeDidNotAnswer: a Runtime is set and fails when the round asks it; the leaked
// reservation is kept by row 14 ("or it did not answer"). The page must tell why: it says "no runtime to ask", as
// if there were none, and nothing of the failed list (neither in the why nor in Unread).
func TestThePageSaysTheRuntimeDidNotAnswer(t *testing.T) {
	e := newEnv(t)
	e.sweepPlugin("")
	e.netConf("10-net1.conflist", "net1", "")
	e.reservation("net1", "10.1.0.90", "zzz")
	l := &logs{}
	o := e.opts(l)
	o.Runtime = &countingRuntime{f: func(context.Context, int) ([]*runtimeapi.PodSandbox, error) {
		return nil, errors.New("rpc error: code = Unavailable desc = connection refused")
	}}
	c := newCollector(t, o)
	resyncUntil(t, c, func() bool { return len(testcni.Address(t, c, "10.1.0.90").Reservations) == 1 })
	st := testcni.Address(t, c, "10.1.0.90")
	r := st.Reservations[0]
	if r.Decision.Row != 14 {
		t.Fatalf("want row 14: %s", dump(st))
	}
	if !strings.Contains(r.Decision.Why, "connection refused") && !strings.Contains(r.Decision.Why, "could not") &&
		!strings.Contains(r.Decision.Why, "did not answer") && len(st.Unread) == 0 {
		t.Errorf("the runtime was asked and failed; the page tells only %q (unread %q)", r.Decision.Why, st.Unread)
	}
}
