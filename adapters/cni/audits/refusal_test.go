package audit6_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// Control: the same with ListPUs at 1m (Resync's list) holds: the refusal
// is timed again from 1m.
func TestAuditHoldsRefusalTimedFromLastKnownPlaceViaListPUs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.write("net1", "sbB", "uid1", e.netns("b", true), time.Time{})
		rt := &fakeRuntime{}
		c := e.collector(rt, 5*time.Minute)
		ctx := context.Background()
		if err := c.DestroyPU(ctx, gone("uid1")); !errors.Is(err, cni.ErrSandboxRunning) {
			t.Fatalf("0: %v", err)
		}
		time.Sleep(time.Minute)
		rt.set(sb("sbB", "uid1", true, time.Now()))
		if _, err := c.ListPUs(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(4*time.Minute + time.Second)
		rt.set()
		if err := c.DestroyPU(ctx, gone("uid1")); !errors.Is(err, cni.ErrSandboxRunning) || e.delsOf("sbB") != 0 {
			t.Fatalf("5m1s: DestroyPU = %v, DELs %v", err, e.dels())
		}
	})
}
