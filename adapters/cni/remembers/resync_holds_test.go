package remembers_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// Resync (go doc): "A pod listed with another sandbox than ... the Inventory's list, for a pod Resync has not listed
// yet, while the cache still holds that one, has had its sandboxes' order told meanwhile ...: its PU is untracked
// and tracked with the sandbox listed now"; "A list the Runtime could not order (it failed) neither moves nor tracks
// a PU listed with another sandbox than before."
func TestAuditHoldsResyncMovesPUWhenOrderIsTold(t *testing.T) {
	e := newEnv(t)
	e.fakePlugin(t, "fake")
	conf := conflist("net1", "fake")
	e.writeEntry(t, "net1", "sbX", "eth0", "uid-1", conf, time.Now().Add(-2*time.Hour)) // older by the cache's times
	e.writeEntry(t, "net1", "sbY", "eth0", "uid-1", conf, time.Now().Add(-time.Hour))
	var mu sync.Mutex
	fail := true
	rt := &fakeRuntime{answer: func(int) ([]*runtimeapi.PodSandbox, error) {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return nil, errors.New("unavailable")
		}
		x := sb("sbX", "uid-1", runtimeapi.PodSandboxState_SANDBOX_NOTREADY)
		y := sb("sbY", "uid-1", runtimeapi.PodSandboxState_SANDBOX_NOTREADY)
		y.CreatedAt = time.Now().Add(-3 * time.Hour).UnixNano() // the runtime tells sbY is the older
		return []*runtimeapi.PodSandbox{x, y}, nil
	}}
	c := mustNew(t, cni.Options{CacheDir: e.cache, PluginDirs: []string{e.bin}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: rt, ResyncInterval: 50 * time.Millisecond})
	pus, err := c.ListPUs(context.Background()) // the Inventory: the cache's order
	if err != nil || len(pus) != 1 || pus[0].SandboxID != "sbX" {
		t.Fatalf("Inventory: %+v %v", pus, err)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	tr := &testcni.Recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Resync(ctx, tr) }()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if tracked, _, _ := tr.Snapshot(); len(tracked) > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	tracked, untracked, triggered := tr.Snapshot()
	if len(untracked) == 0 || untracked[0] != "uid-1" || len(tracked) == 0 || tracked[0].SandboxID != "sbY" || len(triggered) == 0 {
		t.Fatalf("untracked %v, tracked %+v, triggered %v: want uid-1 moved to sbY and checked", untracked, tracked, triggered)
	}
}
