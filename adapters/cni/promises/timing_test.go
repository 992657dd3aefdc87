package promises_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// Holds: a sandbox change of a sandbox that may be being created is refused until
// NewestSandboxTimeout, then given up (permanent), passed over by ListPUs, and freed with its
// gone pod at once.
func TestAuditHoldsGiveUpTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.writeEntry(entryOpt{sandbox: "sbnew", uid: uidA, netns: e.netns("there", true)})
		rt := &fakeRuntime{ignoreFilter: true, sbs: []*runtimeapi.PodSandbox{sandbox("sbcur", uidA, runtimeapi.PodSandboxState_SANDBOX_READY, time.Unix(1, 0))}}
		c := e.collector(rt, time.Minute)
		ctx := context.Background()
		if err := c.DestroyPU(ctx, changedDefault(uidA, "sbnew")); !errors.Is(err, cni.ErrNewestSandbox) {
			t.Fatalf("first: %v", err)
		}
		time.Sleep(time.Minute - time.Nanosecond)
		if err := c.DestroyPU(ctx, changedDefault(uidA, "sbnew")); !errors.Is(err, cni.ErrNewestSandbox) {
			t.Fatalf("before timeout: %v", err)
		}
		time.Sleep(time.Nanosecond)
		if err := c.DestroyPU(ctx, changedDefault(uidA, "sbnew")); !errors.Is(err, cni.ErrOrderUnknown) || !ports.IsPermanent(err) {
			t.Fatalf("at timeout: %v", err)
		}
		pus, _ := c.ListPUs(ctx)
		for _, pu := range pus {
			if pu.SandboxID == "sbnew" {
				t.Fatalf("listed a given-up sandbox: %v", pus)
			}
		}
		if e.delled("sbnew") {
			t.Fatal("freed before the pod is gone")
		}
		rt.mu.Lock()
		rt.sbs = nil
		rt.mu.Unlock()
		if err := c.DestroyPU(ctx, goneDefault(uidA)); err != nil || !e.delled("sbnew") {
			t.Fatalf("gone pod: %v, dels %v", err, e.delLogFields())
		}
	})
}

// Holds: a refusal is timed anew once the sandbox was seen ready (by ListPUs) in between.
func TestAuditHoldsRefusalResetByReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.writeEntry(entryOpt{sandbox: "sb1", uid: uidA, netns: e.netns("there", true)})
		rt := &fakeRuntime{ignoreFilter: true}
		c := e.collector(rt, time.Minute)
		ctx := context.Background()
		if err := c.DestroyPU(ctx, goneDefault(uidA)); !errors.Is(err, cni.ErrSandboxRunning) {
			t.Fatalf("first: %v", err)
		}
		time.Sleep(30 * time.Second)
		rt.mu.Lock()
		rt.sbs = []*runtimeapi.PodSandbox{sandbox("sb1", uidA, runtimeapi.PodSandboxState_SANDBOX_READY, time.Now())}
		rt.mu.Unlock()
		c.ListPUs(ctx)
		rt.mu.Lock()
		rt.sbs = nil
		rt.mu.Unlock()
		time.Sleep(31 * time.Second)
		err := c.DestroyPU(ctx, goneDefault(uidA))
		if e.delled("sb1") {
			t.Fatalf("freed 61s after the first refusal though seen ready 31s ago: %v", err)
		}
	})
}
