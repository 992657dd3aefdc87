package promises_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Hold: after the PU of an old sandbox is destroyed (sandbox change) and
// Requeue is called, a running Resync lists at once (well before
// ResyncInterval) and tracks the pod's next sandbox, and triggers it.
func TestAuditHoldsRequeueListsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		now := time.Now()
		e.write("net1", "sbA", "uid1", e.netns("a", false), now.Add(-2*time.Hour))
		e.write("net1", "sbB", "uid1", e.netns("b", true), now.Add(-time.Hour))
		rt := &fakeRuntime{}
		rt.set(sb("sbB", "uid1", true, now.Add(-time.Hour)))
		c := e.collector(rt, 0)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if pus, err := c.ListPUs(ctx); err != nil || len(pus) != 1 || pus[0].SandboxID != "sbA" {
			t.Fatalf("%v %v", pus, err)
		}
		tr := &recordingTracker{}
		go func() { _ = c.Resync(ctx, tr) }()
		synctest.Wait()
		if err := c.DestroyPU(ctx, changed("uid1", "sbA")); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{}
		pod.UID, pod.Namespace, pod.Name = "uid1", "ns", "pod-uid1"
		if err := c.Requeue(ctx, pod); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		calls := tr.take()
		if !slices.Contains(calls, "track uid1 sbB") || !slices.Contains(calls, "trigger ns/pod-uid1") || slices.Contains(calls, "untrack uid1") {
			t.Fatalf("calls %v", calls)
		}
		cancel()
	})
}
