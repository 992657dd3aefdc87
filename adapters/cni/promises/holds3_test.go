package promises_test

import (
	"context"
	"os"
	"path/filepath"
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

// Holds: a conflist whose second DEL fails keeps the entry, and the retry, once the plugin
// works, frees it.
func TestAuditHoldsHalfDel(t *testing.T) {
	e := newEnv(t)
	flag := filepath.Join(e.plugins, "fail.flag")
	writeFile(t, e.plugins, "flaky", "#!/bin/sh\nif [ \"$CNI_COMMAND\" = DEL ] && [ -e "+flag+" ]; then echo '{\"code\":11,\"msg\":\"x\"}'; exit 1; fi\nexit 0\n")
	os.Chmod(filepath.Join(e.plugins, "flaky"), 0o755)
	writeFile(t, e.plugins, "fail.flag", "")
	f := e.writeEntry(entryOpt{network: "chain", sandbox: "sb1", uid: uidA, netns: e.netns("g", false), config: `{"cniVersion":"1.0.0","name":"chain","plugins":[{"type":"flaky"},{"type":"fakeplug"}]}`})
	c := e.collector(&fakeRuntime{ignoreFilter: true}, 0)
	if err := c.DestroyPU(context.Background(), goneDefault(uidA)); err == nil || ports.IsPermanent(err) {
		t.Fatalf("half DEL: %v", err)
	}
	if _, err := os.Stat(f); err != nil || !e.delled("sb1") {
		t.Fatalf("entry %v dels %v", err, e.delLogFields())
	}
	os.Remove(flag)
	if err := c.DestroyPU(context.Background(), goneDefault(uidA)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f); !os.IsNotExist(err) {
		t.Fatalf("entry left after a DEL that succeeded: %v", err)
	}
}
