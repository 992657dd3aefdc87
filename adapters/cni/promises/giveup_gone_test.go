package promises_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// docs/sdk/cni-freeing.md row 10: "The same [the pod is gone, the runtime
// may be creating the sandbox], refused for NewestSandboxTimeout | free",
// and below the table: "A refusal is timed from the first since the
// sandbox's place was last known (listed ready, or dead)." doc.go: "with
// its gone pod only once it has been refused for NewestSandboxTimeout".
//
// sbB is refused from 0 (sandbox change, row 7), given up at 5m (row 8);
// its place was never known meanwhile. The pod is then gone: at 5m1s sbB
// has been refused for 5m1s since the first refusal, so row 10 frees it.
// Observed: the give-up forgot the first refusal, and the gone pod's sbB
// is refused (ErrSandboxRunning) for another NewestSandboxTimeout.
func TestAuditGivenUpSandboxFreedWithGonePodOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.write("net1", "sbB", "uid1", e.netns("b", true), time.Time{})
		rt := &fakeRuntime{}
		c := e.collector(rt, 5*time.Minute)
		ctx := context.Background()
		if err := c.DestroyPU(ctx, changed("uid1", "sbB")); !errors.Is(err, cni.ErrNewestSandbox) {
			t.Fatalf("0: %v", err)
		}
		time.Sleep(5 * time.Minute)
		if err := c.DestroyPU(ctx, changed("uid1", "sbB")); !errors.Is(err, cni.ErrOrderUnknown) {
			t.Fatalf("5m: %v", err)
		}
		time.Sleep(time.Second)
		err := c.DestroyPU(ctx, gone("uid1"))
		if e.delsOf("sbB") != 1 {
			t.Fatalf("5m1s, pod gone: DestroyPU = %v, sbB not freed though refused since 0 (row 10 after %v)", err, 5*time.Minute)
		}
	})
}
