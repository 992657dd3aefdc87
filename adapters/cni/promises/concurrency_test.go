package promises_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
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
