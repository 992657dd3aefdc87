package promises_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/ports"
)

type hangingRuntime struct{}

func (hangingRuntime) ListPodSandbox(ctx context.Context, _ *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// Hold: a Runtime that hangs keeps everything: DestroyPU fails (plain
// error) when its context ends; ListPUs orders by the cache and lists.
func TestAuditHoldsHangingRuntimeKeepsAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{})
		c := e.collector(hangingRuntime{}, 0)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := c.DestroyPU(ctx, gone("uid1"))
		if err == nil || ports.IsPermanent(err) || len(e.dels()) != 0 {
			t.Fatalf("%v %v", err, e.dels())
		}
		ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel2()
		pus, err := c.ListPUs(ctx2)
		if err != nil || len(pus) != 1 {
			t.Fatalf("ListPUs %v %v", pus, err)
		}
	})
}
