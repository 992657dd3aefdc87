package promises_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/ports"
)

type trigTracker struct {
	fakeTracker
	triggers []types.NamespacedName
}

func (f *trigTracker) TriggerPod(p types.NamespacedName) {
	f.mu.Lock()
	f.triggers = append(f.triggers, p)
	f.mu.Unlock()
}

// Holds: a pod with three sandboxes (two stopped, one ready) frees them oldest first, one
// DestroyPU each, Requeue listing the next at once (well before ResyncInterval), and keeps the
// ready one.
func TestAuditHoldsOldestFirstRequeue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rt := &fakeRuntime{ignoreFilter: true}
		for i, id := range []string{"s1", "s2", "s3"} {
			e.writeEntry(entryOpt{sandbox: id, uid: uidA, netns: e.netns(id, true)})
			st := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
			if id == "s3" {
				st = runtimeapi.PodSandboxState_SANDBOX_READY
			}
			rt.sbs = append(rt.sbs, sandbox(id, uidA, st, time.Unix(int64(100+i), 0)))
		}
		c := e.collector(rt, 0)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		pus, _ := c.ListPUs(ctx)
		if len(pus) != 1 || pus[0].SandboxID != "s1" {
			t.Fatalf("inventory %v", pus)
		}
		tr := &trigTracker{fakeTracker: fakeTracker{tracked: map[string]ports.PU{uidA: pus[0]}}}
		go c.Resync(ctx, tr)
		for _, want := range []string{"s1", "s2"} {
			tr.mu.Lock()
			pu := tr.tracked[uidA]
			delete(tr.tracked, uidA) // the engine drops the PU it destroyed
			tr.mu.Unlock()
			if pu.SandboxID != want {
				t.Fatalf("tracked %v, want %s", pu, want)
			}
			if err := c.DestroyPU(ctx, changedDefault(uidA, want)); err != nil {
				t.Fatal(err)
			}
			c.Requeue(ctx, podOf(uidA))
			time.Sleep(time.Second)
			synctest.Wait()
		}
		tr.mu.Lock()
		pu := tr.tracked[uidA]
		tr.mu.Unlock()
		if pu.SandboxID != "s3" || e.delled("s3") || !e.delled("s1") || !e.delled("s2") {
			t.Fatalf("last %v dels %v", pu, e.delLogFields())
		}
	})
}
