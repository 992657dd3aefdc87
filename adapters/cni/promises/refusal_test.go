package promises_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
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
