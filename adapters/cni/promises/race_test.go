package promises_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/ports"
)

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
