package promises_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// Hold: a refusal of a sandbox change times out exactly at
// NewestSandboxTimeout (row 8, ErrOrderUnknown, permanent), not before;
// ListPUs then passes the sandbox over.
func TestAuditHoldsGiveUpAtExactlyTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.write("net1", "sbB", "uid1", e.netns("b", true), time.Time{})
		rt := &fakeRuntime{}
		c := e.collector(rt, 5*time.Minute)
		ctx := context.Background()
		if err := c.DestroyPU(ctx, changed("uid1", "sbB")); !errors.Is(err, cni.ErrNewestSandbox) || ports.IsPermanent(err) {
			t.Fatalf("0: %v", err)
		}
		time.Sleep(5*time.Minute - time.Nanosecond)
		if err := c.DestroyPU(ctx, changed("uid1", "sbB")); !errors.Is(err, cni.ErrNewestSandbox) || ports.IsPermanent(err) {
			t.Fatalf("5m-1ns: %v", err)
		}
		time.Sleep(time.Nanosecond)
		if err := c.DestroyPU(ctx, changed("uid1", "sbB")); !errors.Is(err, cni.ErrOrderUnknown) || !ports.IsPermanent(err) {
			t.Fatalf("5m: %v", err)
		}
		pus, err := c.ListPUs(ctx)
		if err != nil || len(pus) != 1 || pus[0].SandboxID != "" {
			t.Fatalf("ListPUs = %v, %v; want the pod without a sandbox", pus, err)
		}
		if len(e.dels()) != 0 {
			t.Fatalf("DELs: %v", e.dels())
		}
	})
}

// Hold: a gone pod's sandbox that may be being created is kept until it
// has been refused for exactly NewestSandboxTimeout, then freed (rows 9, 10).
func TestAuditHoldsGonePodCreatingFreedAtExactlyTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.write("net1", "sbB", "uid1", e.netns("b", true), time.Time{})
		rt := &fakeRuntime{}
		c := e.collector(rt, 5*time.Minute)
		ctx := context.Background()
		if err := c.DestroyPU(ctx, gone("uid1")); !errors.Is(err, cni.ErrSandboxRunning) {
			t.Fatalf("0: %v", err)
		}
		time.Sleep(5*time.Minute - time.Nanosecond)
		if err := c.DestroyPU(ctx, gone("uid1")); !errors.Is(err, cni.ErrSandboxRunning) || len(e.dels()) != 0 {
			t.Fatalf("5m-1ns: %v %v", err, e.dels())
		}
		time.Sleep(time.Nanosecond)
		if err := c.DestroyPU(ctx, gone("uid1")); err != nil || e.delsOf("sbB") != 1 {
			t.Fatalf("5m: %v %v", err, e.dels())
		}
	})
}

// ErrOrderUnknown (runtime.go): "the engine drops the PU, and this
// Collector never lists or frees that sandbox again (ListPUs skips it,
// logged once) until the Collector is made anew". The pod lives on; a
// later sandbox of it appears in the cache; a sandbox-change DestroyPU of
// the given-up sandbox frees it.
func TestAuditGivenUpSandboxNeverFreedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.write("net1", "sbB", "uid1", e.netns("b", true), time.Now().Add(-time.Hour))
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
		// A newer sandbox of the pod is written, the runtime lists it ready.
		e.write("net1", "sbC", "uid1", e.netns("c", true), time.Now())
		rt.set(sb("sbC", "uid1", true, time.Now()))
		err := c.DestroyPU(ctx, changed("uid1", "sbB"))
		if e.delsOf("sbB") != 0 {
			t.Fatalf("the given-up sandbox sbB was freed (DestroyPU = %v) by the same Collector", err)
		}
	})
}
