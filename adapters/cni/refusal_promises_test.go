package cni_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// Options.NewestSandboxTimeout: "how long it keeps a gone pod for a sandbox
// the runtime may be creating (ErrSandboxRunning) before it frees it with
// the pod". A gone pod with two sandboxes the runtime does not list, their
// namespaces pinned (the kubelet tried twice; the runtime lost both), the
// second cached a minute after the first refusal: the engine's checks go on
// calling DestroyPU(PodGone). The pod must be freed NewestSandboxTimeout
// after the second's first refusal at most; each sandbox's refusal must not
// restart whenever the other one's has not run out.
func TestAGonePodIsKeptForASandboxThatMayBeBeingCreatedForNewestSandboxTimeoutAtMost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCacheDir(t)
		a := c.write(entry{network: "podnet", sandbox: "a", uid: "u1", namespace: "ns", name: "pod-u1"})
		c.withNetNS(a, presentNetNS(t))
		rt := &listedRuntime{}
		coll := c.collectorWith(rt, 5*time.Minute)
		ev := ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, Reason: ports.ReasonPodGone}
		ctx := context.Background()
		require.ErrorIs(t, coll.DestroyPU(ctx, ev), cni.ErrSandboxRunning)
		time.Sleep(time.Minute)
		b := c.write(entry{network: "podnet", sandbox: "b", uid: "u1", namespace: "ns", name: "pod-u1"})
		c.withNetNS(b, presentNetNS(t))
		start := time.Now()
		var err error
		for time.Since(start) < 30*time.Minute {
			if err = coll.DestroyPU(ctx, ev); err == nil {
				break
			}
			require.ErrorIs(t, err, cni.ErrSandboxRunning)
			time.Sleep(30 * time.Second) // the engine checks the pod again
		}
		require.NoError(t, err, "after %v of checks the gone pod is still kept; \"freed with its pod\" logged %d times, DELs %v",
			time.Since(start), c.logs.Count("freed with its pod"), c.delCalls())
		require.LessOrEqual(t, time.Since(start), 5*time.Minute+time.Minute, "freed later than NewestSandboxTimeout after the second sandbox's first refusal")
		require.False(t, c.exists(a) || c.exists(b))
	})
}

// Options.NewestSandboxTimeout: the time a gone pod is kept for a sandbox
// the runtime may be creating is "timed from the first refusal since the
// runtime last listed the sandbox ready" (CHANGELOG: "a sandbox the runtime
// lists ready meanwhile is timed anew"). A static pod whose mirror pod is
// missing (PodGone): its sandbox is refused while being created, then the
// runtime lists it ready for an hour (each DestroyPU sees it ready), then
// one list of the runtime misses it while its namespace is there. That
// refusal is the first since the runtime listed it ready: the running
// static pod must keep its network, not lose it on the spot.
func TestARefusalIsTimedSinceDestroyPUSawTheSandboxReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCacheDir(t)
		f := c.write(entry{network: "podnet", sandbox: "static", uid: "u1", namespace: "kube-system", name: "static-node-a"})
		c.withNetNS(f, presentNetNS(t))
		rt := &listedRuntime{}
		coll := c.collectorWith(rt, 5*time.Minute)
		ev := ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, Reason: ports.ReasonPodGone}
		ctx := context.Background()
		require.ErrorIs(t, coll.DestroyPU(ctx, ev), cni.ErrSandboxRunning, "being created")
		created := time.Now()
		rt.set(nil, listed("static", "u1", true, created))
		for range 60 {
			time.Sleep(time.Minute)
			require.ErrorIs(t, coll.DestroyPU(ctx, ev), cni.ErrSandboxRunning, "listed ready")
		}
		rt.set(nil) // one list that misses it; its namespace is there
		err := coll.DestroyPU(ctx, ev)
		require.True(t, c.exists(f) && errors.Is(err, cni.ErrSandboxRunning),
			"a static pod's sandbox the runtime listed ready a minute ago was freed at its first refusal since (DestroyPU: %v; DELs %v)", err, c.delCalls())
	})
}

// uidFailingRuntime is a listedRuntime whose list of every pod's sandboxes
// (the cache's, not DestroyPU's) fails while failing is set.
type uidFailingRuntime struct {
	listedRuntime
	failing atomic.Bool
}

func (r *uidFailingRuntime) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	if r.failing.Load() && f.GetLabelSelector()["io.kubernetes.pod.uid"] == "" {
		return nil, errors.New("rpc error: code = DeadlineExceeded")
	}
	return r.listedRuntime.ListPodSandbox(ctx, f)
}

// Resync: "A list the Runtime could not order (it failed) moves no PU",
// and a pod listed with another sandbox than the time before, while the
// cache still holds that one, is untracked and tracked with the sandbox
// listed now, "for a PU left on the pod's current sandbox would never
// reach the older one". A running pod with three sandboxes: s1 dead (the
// engine frees it), s3 leaked (listed stopped) whose restored cache entry
// looks newer than s2, the current one. The list after s1's destroy fails
// to ask the runtime: Resync tracks the pod's next PU by the cache's times
// (s2, the current sandbox) but remembers s1; when the runtime answers
// again, it lists s3, the PU on s2 is never moved, and s3 stays leaked for
// as long as the pod runs.
func TestAListTheRuntimeCouldNotOrderDoesNotLeaveANewPUOnTheCurrentSandbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCacheDir(t)
		s1 := c.write(entry{network: "podnet", sandbox: "s1", uid: "u1", namespace: "ns", name: "pod-u1", age: 3 * time.Hour})
		s2 := c.write(entry{network: "podnet", sandbox: "s2", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
		s3 := c.write(entry{network: "podnet", sandbox: "s3", uid: "u1", namespace: "ns", name: "pod-u1"}) // restored: looks newest
		now := time.Now()
		rt := &uidFailingRuntime{}
		rt.set(nil, listed("s1", "u1", false, now.Add(-3*time.Hour)), listed("s3", "u1", false, now.Add(-2*time.Hour)),
			listed("s2", "u1", true, now.Add(-time.Hour)))
		coll := c.collectorWith(rt, 0)
		engine := gcEngine(t, coll, gcWiring{sandbox: func() string { return "s2" }})
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { _ = engine.Start(ctx) })
		defer func() { cancel(); wg.Wait() }()
		synctest.Wait()
		engine.TriggerPod(types.NamespacedName{Namespace: "ns", Name: "pod-u1"})
		synctest.Wait()
		require.False(t, c.exists(s1), "the dead sandbox s1 freed from the Inventory's PU (engine: %+v)", engine.Status())

		rt.failing.Store(true) // the list after the destroy cannot ask the runtime
		wg.Go(func() { _ = coll.Resync(ctx, engine) })
		synctest.Wait()
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		rt.failing.Store(false)
		time.Sleep(10 * time.Minute) // ten resyncs, the runtime answering
		synctest.Wait()
		require.True(t, c.exists(s2), "the current sandbox is kept")
		require.False(t, c.exists(s3), "the leaked sandbox s3 of a running pod is still held, its PU left on the current one (engine: %+v)", engine.Status())
	})
}
