package promises_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The runtime lists the gone pod's sandbox ready (unfiltered), but without the pod-UID label; a
// CRI runtime that honors the label filter does not return it to a per-pod list.
func TestAuditReadyUnlabeledSandbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		ns := e.netns("live", true)
		e.writeEntry(entryOpt{sandbox: "sbready", uid: uidA, netns: ns})
		ready := sandbox("sbready", uidA, runtimeapi.PodSandboxState_SANDBOX_READY, time.Now())
		ready.Labels = nil // CRI's metadata still names the pod's UID; the kubelet's label is missing
		rt := &fakeRuntime{sbs: []*runtimeapi.PodSandbox{ready}}
		c := e.collector(rt, 0)
		ctx := context.Background()
		pus, err := c.ListPUs(ctx)
		t.Logf("ListPUs: %v %v", pus, err)
		var errs []error
		for i := 0; i < 3; i++ {
			errs = append(errs, c.DestroyPU(ctx, goneDefault(uidA)))
			time.Sleep(3 * time.Minute)
		}
		if e.delled("sbready") {
			t.Fatalf("DEL of a sandbox the runtime lists ready (errors %v)", errs)
		}
	})
}

// A sandbox listed twice: once with a state CRI does not name (which alone keeps it, as ready),
// once stopped. The verdict must not depend on the order of the runtime's answer.
func TestAuditDuplicateUnknownStateOrder(t *testing.T) {
	for _, order := range []string{"notready-then-unknown", "unknown-then-notready"} {
		t.Run(order, func(t *testing.T) {
			e := newEnv(t)
			e.writeEntry(entryOpt{sandbox: "sbdup", uid: uidA, netns: e.netns("live", true)})
			unk := sandbox("sbdup", uidA, runtimeapi.PodSandboxState(7), time.Now())
			nr := sandbox("sbdup", uidA, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, time.Now())
			sbs := []*runtimeapi.PodSandbox{nr, unk}
			if order == "unknown-then-notready" {
				sbs = []*runtimeapi.PodSandbox{unk, nr}
			}
			c := e.collector(&fakeRuntime{ignoreFilter: true, sbs: sbs}, 0)
			dead, derr := c.SandboxDead(context.Background(), podOf(uidA), "sbdup")
			t.Logf("SandboxDead: %v %v", dead, derr)
			err := c.DestroyPU(context.Background(), goneDefault(uidA))
			if e.delled("sbdup") {
				t.Fatalf("freed a sandbox listed with an unknown state and stopped (order %s; err %v)", order, err)
			}
		})
	}
}

// Row 2 through the same door: the gone pod's dead sandbox is freed although the runtime lists
// another sandbox of the pod ready (CRI metadata names the pod; the label is missing).
func TestAuditReadyUnlabeledSandboxRow2(t *testing.T) {
	e := newEnv(t)
	e.writeEntry(entryOpt{sandbox: "sbdead", uid: uidA, netns: e.netns("gone", false)})
	ready := sandbox("sbcur", uidA, runtimeapi.PodSandboxState_SANDBOX_READY, time.Now())
	ready.Labels = nil
	c := e.collector(&fakeRuntime{sbs: []*runtimeapi.PodSandbox{ready}}, 0)
	err := c.DestroyPU(context.Background(), goneDefault(uidA))
	if e.delled("sbdead") {
		t.Fatalf("freed a sandbox of a gone pod the runtime runs (lists sbcur ready): err %v", err)
	}
}
