package promises_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// Holds: a gone pod's sandbox that may be being created is refused until NewestSandboxTimeout
// after its first refusal, and freed at that instant.
func TestAuditHoldsGoneRefusalBoundary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.writeEntry(entryOpt{sandbox: "sb1", uid: uidA, netns: e.netns("there", true)})
		c := e.collector(&fakeRuntime{ignoreFilter: true}, 2*time.Minute)
		ctx := context.Background()
		for _, d := range []time.Duration{0, time.Minute, time.Minute - time.Nanosecond} {
			time.Sleep(d)
			if err := c.DestroyPU(ctx, goneDefault(uidA)); !errors.Is(err, cni.ErrSandboxRunning) || e.delled("sb1") {
				t.Fatalf("after %v: %v", d, err)
			}
		}
		time.Sleep(time.Nanosecond)
		if err := c.DestroyPU(ctx, goneDefault(uidA)); err != nil || !e.delled("sb1") {
			t.Fatalf("at the timeout: %v", err)
		}
	})
}
