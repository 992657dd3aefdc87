package promises_test

// Refusals of a sandbox that may be being created: a sandbox change of one is
// refused while no later sandbox was created (written at the same instant, or
// in the future, is not later); a refusal is timed from the first since the
// sandbox's place was last known (listed ready, or dead), anew once it was
// seen ready; at exactly NewestSandboxTimeout a sandbox change is given up
// (ErrOrderUnknown, permanent, passed over by ListPUs, never freed again by
// that Collector), and a gone pod's sandbox is freed, on time.

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// docs/sdk/cni-freeing.md: "A refusal is timed from the first since the
// sandbox's place was last known (listed ready, or dead)." Sandbox sbB is
// refused at 0 (row 9), then the runtime lists it ready at 1m, which the
// collector reads (a DestroyPU of the pod's dead sandbox sbA, or
// SandboxDead of sbB); at 5m1s the runtime does not list it again and its
// namespace is still there: it has been refused for 4m1s since its place
// was last known, less than NewestSandboxTimeout (5m), so it must be kept
// (row 9, ErrSandboxRunning), not freed (row 10).
func TestAuditRefusalTimedFromLastKnownPlace(t *testing.T) {
	for _, how := range []string{"DestroyPU of the dead sandbox", "SandboxDead"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{})
				e.write("net1", "sbB", "uid1", e.netns("b", true), time.Time{})
				rt := &fakeRuntime{}
				c := e.collector(rt, 5*time.Minute)
				ctx := context.Background()
				// 0: the pod is gone, sbB may be being created.
				if err := c.DestroyPU(ctx, gone("uid1")); !errors.Is(err, cni.ErrSandboxRunning) {
					t.Fatalf("0: DestroyPU = %v, want ErrSandboxRunning", err)
				}
				time.Sleep(time.Minute)
				// 1m: the runtime lists sbB ready; the collector reads it.
				rt.set(sb("sbB", "uid1", true, time.Now()))
				if how == "SandboxDead" {
					pod := &corev1.Pod{}
					pod.UID, pod.Namespace, pod.Name = types.UID("uid1"), "ns", "pod-uid1"
					if dead, err := c.SandboxDead(ctx, pod, "sbB"); err != nil || dead {
						t.Fatalf("1m: SandboxDead(sbB) = %v, %v", dead, err)
					}
				} else if err := c.DestroyPU(ctx, changed("uid1", "sbA")); err != nil {
					t.Fatalf("1m: DestroyPU(SandboxChanged, sbA) = %v", err)
				}
				if e.delsOf("sbB") != 0 {
					t.Fatalf("1m: sbB freed while ready")
				}
				time.Sleep(4*time.Minute + time.Second)
				// 5m1s: not listed, namespace there.
				rt.set()
				err := c.DestroyPU(ctx, gone("uid1"))
				if e.delsOf("sbB") != 0 {
					t.Fatalf("5m1s: sbB freed (row 10) %v after its place was last known (ready at 1m); DestroyPU = %v", 4*time.Minute+time.Second, err)
				}
				if !errors.Is(err, cni.ErrSandboxRunning) {
					t.Fatalf("5m1s: DestroyPU = %v, want ErrSandboxRunning", err)
				}
			})
		})
	}
}

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

// Holds: a refusal is timed anew once the sandbox was seen ready (by ListPUs) in between.
func TestAuditHoldsRefusalResetByReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.writeEntry(entryOpt{sandbox: "sb1", uid: uidA, netns: e.netns("there", true)})
		rt := &fakeRuntime{ignoreFilter: true}
		c := e.collector(rt, time.Minute)
		ctx := context.Background()
		if err := c.DestroyPU(ctx, goneDefault(uidA)); !errors.Is(err, cni.ErrSandboxRunning) {
			t.Fatalf("first: %v", err)
		}
		time.Sleep(30 * time.Second)
		rt.mu.Lock()
		rt.sbs = []*runtimeapi.PodSandbox{sandbox("sb1", uidA, runtimeapi.PodSandboxState_SANDBOX_READY, time.Now())}
		rt.mu.Unlock()
		c.ListPUs(ctx)
		rt.mu.Lock()
		rt.sbs = nil
		rt.mu.Unlock()
		time.Sleep(31 * time.Second)
		err := c.DestroyPU(ctx, goneDefault(uidA))
		if e.delled("sb1") {
			t.Fatalf("freed 61s after the first refusal though seen ready 31s ago: %v", err)
		}
	})
}

// A sandbox change of a sandbox being created (not listed, namespace
// there) with no later sandbox is refused; an older stopped one freed.
func TestAuditHoldsSandboxChangeBeingCreatedRefused(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.write("net1", "sbA", "uid1", e.netns("a", true), now.Add(-time.Hour))
	e.write("net1", "sbB", "uid1", e.netns("b", true), now)
	rt := &fakeRuntime{}
	rt.set(sb("sbA", "uid1", false, now.Add(-time.Hour)))
	c := e.collector(rt, 0)
	if err := c.DestroyPU(context.Background(), changed("uid1", "sbB")); !errors.Is(err, cni.ErrNewestSandbox) || e.delsOf("sbB") != 0 {
		t.Fatalf("%v %v", err, e.dels())
	}
	pus, err := c.ListPUs(context.Background())
	if err != nil || len(pus) != 1 || pus[0].SandboxID != "sbA" {
		t.Fatalf("ListPUs %v %v", pus, err)
	}
	if err := c.DestroyPU(context.Background(), changed("uid1", "sbA")); err != nil || e.delsOf("sbA") != 1 {
		t.Fatalf("%v %v", err, e.dels())
	}
}

// Hold: two sandboxes written at the same instant: a sandbox change of one
// that may be being created is refused (not "created strictly later").
func TestAuditHoldsEqualTimesAreNotLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		at := time.Now().Add(-time.Minute)
		e.write("net1", "sbA", "uid1", e.netns("a", true), at)
		e.write("net1", "sbB", "uid1", e.netns("b", true), at)
		c := e.collector(&fakeRuntime{}, 0)
		for _, id := range []string{"sbA", "sbB"} {
			if err := c.DestroyPU(context.Background(), changed("uid1", id)); !errors.Is(err, cni.ErrNewestSandbox) {
				t.Fatalf("%s: %v", id, err)
			}
		}
		if len(e.dels()) != 0 {
			t.Fatal(e.dels())
		}
	})
}

// Holds: a sandbox change of a sandbox that may be being created (not listed, namespace there),
// whose cache entry was written in the future, is refused: no sandbox was created later.
func TestAuditHoldsFutureWriteRefused(t *testing.T) {
	e := newEnv(t)
	e.writeEntry(entryOpt{sandbox: "sbnew", uid: uidA, netns: e.netns("there", true), written: time.Now().Add(time.Hour)})
	c := e.collector(&fakeRuntime{ignoreFilter: true, sbs: []*runtimeapi.PodSandbox{sandbox("sbcur", uidA, runtimeapi.PodSandboxState_SANDBOX_READY, time.Now())}}, 0)
	if err := c.DestroyPU(context.Background(), changedDefault(uidA, "sbnew")); !errors.Is(err, cni.ErrNewestSandbox) || e.delled("sbnew") {
		t.Fatalf("err %v dels %v", err, e.delLogFields())
	}
}

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

// Holds: a sandbox change of a sandbox that may be being created is refused until
// NewestSandboxTimeout, then given up (permanent), passed over by ListPUs, and freed with its
// gone pod at once.
func TestAuditHoldsGiveUpTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.writeEntry(entryOpt{sandbox: "sbnew", uid: uidA, netns: e.netns("there", true)})
		rt := &fakeRuntime{ignoreFilter: true, sbs: []*runtimeapi.PodSandbox{sandbox("sbcur", uidA, runtimeapi.PodSandboxState_SANDBOX_READY, time.Unix(1, 0))}}
		c := e.collector(rt, time.Minute)
		ctx := context.Background()
		if err := c.DestroyPU(ctx, changedDefault(uidA, "sbnew")); !errors.Is(err, cni.ErrNewestSandbox) {
			t.Fatalf("first: %v", err)
		}
		time.Sleep(time.Minute - time.Nanosecond)
		if err := c.DestroyPU(ctx, changedDefault(uidA, "sbnew")); !errors.Is(err, cni.ErrNewestSandbox) {
			t.Fatalf("before timeout: %v", err)
		}
		time.Sleep(time.Nanosecond)
		if err := c.DestroyPU(ctx, changedDefault(uidA, "sbnew")); !errors.Is(err, cni.ErrOrderUnknown) || !ports.IsPermanent(err) {
			t.Fatalf("at timeout: %v", err)
		}
		pus, _ := c.ListPUs(ctx)
		for _, pu := range pus {
			if pu.SandboxID == "sbnew" {
				t.Fatalf("listed a given-up sandbox: %v", pus)
			}
		}
		if e.delled("sbnew") {
			t.Fatal("freed before the pod is gone")
		}
		rt.mu.Lock()
		rt.sbs = nil
		rt.mu.Unlock()
		if err := c.DestroyPU(ctx, goneDefault(uidA)); err != nil || !e.delled("sbnew") {
			t.Fatalf("gone pod: %v, dels %v", err, e.delLogFields())
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
