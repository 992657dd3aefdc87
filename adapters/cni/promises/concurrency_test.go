package promises_test

// DestroyPU repeated, and run at once with ListPUs and Resync: what is dead is
// freed, never a ready sandbox, and it answers nil once done.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// Hold: concurrent DestroyPU (twice) and ListPUs of a gone pod with a ready
// sandbox and a stopped one free nothing; of a gone pod with stopped
// sandboxes free everything, and leave no entry.
func TestAuditHoldsConcurrentDestroyAndList(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.write("net1", "sbA", "uid1", e.netns("a", true), now.Add(-time.Hour))
	e.write("net1", "sbB", "uid1", e.netns("b", true), now)
	e.write("net1", "sbC", "uid2", e.netns("c", true), now)
	e.write("net2", "sbC", "uid2", e.netns("c", true), now)
	rt := &fakeRuntime{}
	rt.set(sb("sbA", "uid1", false, now.Add(-time.Hour)), sb("sbB", "uid1", true, now), sb("sbC", "uid2", false, now))
	c := e.collector(rt, 0)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch i % 4 {
			case 0:
				errs[i] = c.DestroyPU(context.Background(), gone("uid1"))
				if errors.Is(errs[i], cni.ErrSandboxRunning) {
					errs[i] = nil
				}
			case 1, 2:
				errs[i] = c.DestroyPU(context.Background(), gone("uid2"))
			case 3:
				_, errs[i] = c.ListPUs(context.Background())
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	if e.delsOf("sbA")+e.delsOf("sbB") != 0 || e.exists("net1", "sbC") || e.exists("net2", "sbC") {
		t.Fatalf("DELs %v", e.dels())
	}
}

// Holds: DestroyPU repeated and concurrent with ListPUs and Resync frees the stopped sandbox,
// never the ready one, and answers nil once done (run with -race).
func TestAuditHoldsConcurrentDestroy(t *testing.T) {
	e := newEnv(t)
	var sbs []*runtimeapi.PodSandbox
	for i := 0; i < 4; i++ {
		uid := fmt.Sprintf("uid-%d", i)
		e.writeEntry(entryOpt{sandbox: fmt.Sprintf("old%d", i), uid: uid, netns: e.netns(fmt.Sprintf("o%d", i), true)})
		e.writeEntry(entryOpt{sandbox: fmt.Sprintf("cur%d", i), uid: uid, netns: e.netns(fmt.Sprintf("c%d", i), true)})
		sbs = append(sbs, sandbox(fmt.Sprintf("old%d", i), uid, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, time.Unix(100, 0)),
			sandbox(fmt.Sprintf("cur%d", i), uid, runtimeapi.PodSandboxState_SANDBOX_READY, time.Unix(200, 0)))
	}
	c := e.collector(&fakeRuntime{ignoreFilter: true, sbs: sbs}, 0)
	ctx, cancel := context.WithCancel(context.Background())
	tr := &fakeTracker{tracked: map[string]ports.PU{}}
	done := make(chan struct{})
	go func() { c.Resync(ctx, tr); close(done) }()
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		for k := 0; k < 3; k++ {
			wg.Add(2)
			go func() {
				defer wg.Done()
				uid := fmt.Sprintf("uid-%d", i)
				c.DestroyPU(ctx, ports.DestroyEvent{PUID: uid, Pod: types.NamespacedName{Namespace: "default", Name: "pod"}, SandboxID: fmt.Sprintf("old%d", i), Reason: ports.ReasonSandboxChanged})
				c.Requeue(ctx, podOf(uid))
			}()
			go func() { defer wg.Done(); c.ListPUs(ctx) }()
		}
	}
	wg.Wait()
	for i := 0; i < 4; i++ {
		uid := fmt.Sprintf("uid-%d", i)
		if err := c.DestroyPU(ctx, ports.DestroyEvent{PUID: uid, Pod: types.NamespacedName{Namespace: "default", Name: "pod"}, SandboxID: fmt.Sprintf("old%d", i), Reason: ports.ReasonSandboxChanged}); err != nil {
			t.Errorf("repeat: %v", err)
		}
		if !e.delled(fmt.Sprintf("old%d", i)) || e.delled(fmt.Sprintf("cur%d", i)) {
			t.Errorf("pod %d: dels %v", i, e.delLogFields())
		}
	}
	cancel()
	<-done
}
