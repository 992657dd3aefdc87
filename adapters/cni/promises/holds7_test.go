package promises_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/ports"
)

// Holds: a restored cache whose times put the current sandbox first; the Inventory, listed while
// the runtime fails, tracks it; once the runtime answers, Resync untracks that PU and tracks the
// older sandbox (never destroying anything); while it fails, a PU listed with another sandbox is
// neither moved nor tracked.
func TestAuditHoldsResyncMovesWhenTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		now := time.Now()
		e.writeEntry(entryOpt{sandbox: "scur", uid: uidA, netns: e.netns("c", true), written: now.Add(-2 * time.Hour)})
		e.writeEntry(entryOpt{sandbox: "sold", uid: uidA, netns: e.netns("o", true), written: now.Add(-time.Hour)})
		rt := &fakeRuntime{ignoreFilter: true, err: errors.New("down"), sbs: []*runtimeapi.PodSandbox{
			sandbox("sold", uidA, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, now.Add(-3*time.Hour)),
			sandbox("scur", uidA, runtimeapi.PodSandboxState_SANDBOX_READY, now.Add(-2*time.Hour))}}
		c := e.collector(rt, 0)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		pus, _ := c.ListPUs(ctx)
		if len(pus) != 1 || pus[0].SandboxID != "scur" {
			t.Fatalf("inventory %v", pus)
		}
		tr := &trigTracker{fakeTracker: fakeTracker{tracked: map[string]ports.PU{uidA: pus[0]}}}
		go c.Resync(ctx, tr)
		time.Sleep(31 * time.Second)
		synctest.Wait()
		tr.mu.Lock()
		if tr.tracked[uidA].SandboxID != "scur" {
			t.Fatalf("moved while the runtime fails: %v", tr.tracked)
		}
		tr.mu.Unlock()
		rt.mu.Lock()
		rt.err = nil
		rt.mu.Unlock()
		time.Sleep(30 * time.Second)
		synctest.Wait()
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if tr.tracked[uidA].SandboxID != "sold" || len(tr.triggers) == 0 {
			t.Fatalf("not moved once told: %v triggers %v", tr.tracked, tr.triggers)
		}
		if len(e.delLogFields()) != 0 {
			t.Fatalf("DELs: %v", e.delLogFields())
		}
	})
}
