package cni_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// Resync compares with "the Inventory's list" a pod it has not listed yet
// (a pod listed with another sandbox than the time before, or than the
// Inventory's list, is untracked and tracked with the sandbox listed now). In
// examples/cni-gc, Resync is a manager.RunnableFunc (the manager's
// leader-election group, started at once) and the engine is adapters/k8s's
// runnable, which first waits for the pod handler to sync (polling every
// 10 ms) and only then starts the engine, which lists the Inventory: Resync
// reads the Inventory's list before there is one. The copied-cache case of
// TestALeakedSandboxIsFreedWhenARestoredCacheMadeTheCurrentOneLookOlder,
// wired in that order: the leaked sandbox must still be freed while the pod
// runs ("A pod with three leaked sandboxes thus frees them oldest first ...
// and keeps the current one").
func TestResyncStartedBeforeTheInventorysListStillMovesThePUOntoTheLeakedSandbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCacheDir(t)
		current := c.write(entry{network: "podnet", sandbox: "current", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Minute})
		c.withNetNS(current, presentNetNS(t))
		leaked := c.write(entry{network: "podnet", sandbox: "leaked", uid: "u1", namespace: "ns", name: "pod-u1"})
		c.withNetNS(leaked, presentNetNS(t))
		rt := &listedRuntime{}
		coll := c.collectorWith(rt, 0)

		var sandbox atomic.Value
		sandbox.Store("")
		engine := gcEngine(t, coll, gcWiring{sandbox: func() string { return sandbox.Load().(string) }})
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		// As examples/cni-gc's manager starts them: Resync at once, the
		// engine once the pod handler has synced.
		wg.Go(func() { _ = coll.Resync(ctx, engine) })
		wg.Go(func() {
			time.Sleep(10 * time.Millisecond)
			_ = engine.Start(ctx)
		})
		defer func() { cancel(); wg.Wait() }()

		time.Sleep(20 * time.Second) // the pod waits for its sandbox
		require.True(t, c.exists(leaked), "a sandbox the runtime may be creating is kept")
		rt.set(nil, listed("current", "u1", true, time.Now()))
		sandbox.Store("current")

		time.Sleep(10 * time.Minute) // ten resyncs
		require.True(t, c.exists(current), "the current sandbox is kept")
		require.False(t, c.exists(leaked), "the leaked sandbox of a running pod is still held, its PU left on the current one (engine's PU: %+v)", engine.Status())
	})
}

// "It never frees a pod of which the runtime lists a ready sandbox, or may
// be creating one (not listed, its network namespace there), whatever the
// API says (ErrSandboxRunning)". The collector itself takes a sandbox it
// does not list, whose cached namespace is a /proc/<pid>/ns/net path that
// exists or a link to a pinned namespace, as one that may be being
// created: SandboxDead says it is not dead, and DestroyPU(SandboxChanged)
// refuses it as the newest ("kept, the runtime may still be creating it").
// The same sandbox of a static pod whose mirror pod is missing (PodGone)
// must then be kept too; it is DELed.
func TestASandboxTheCollectorSaysMayBeBeingCreatedKeepsAGonePodsNetwork(t *testing.T) {
	for _, tc := range []struct {
		name  string
		netns func(t *testing.T) string
	}{
		{name: "a /proc path", netns: func(*testing.T) string { return "/proc/self/ns/net" }},
		{name: "a link to the pinned namespace", netns: func(t *testing.T) string {
			link := filepath.Join(t.TempDir(), "cni-link")
			require.NoError(t, os.Symlink(presentNetNS(t), link))
			return link
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCacheDir(t)
			old := c.write(entry{network: "podnet", sandbox: "old", uid: "u1", namespace: "kube-system", name: "static-node-a", age: 10 * time.Minute})
			c.withNetNS(old, filepath.Join(t.TempDir(), "cni-old-gone"))
			creating := c.write(entry{network: "podnet", sandbox: "creating", uid: "u1", namespace: "kube-system", name: "static-node-a"})
			c.withNetNS(creating, tc.netns(t))
			rt := &listedRuntime{}
			rt.set(nil, listed("old", "u1", false, time.Now().Add(-10*time.Minute)))
			coll := c.collectorWith(rt, 0)
			ctx := context.Background()
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "static-node-a", UID: "u1"}}

			dead, err := coll.SandboxDead(ctx, pod, "creating")
			require.NoError(t, err)
			require.False(t, dead, "the collector's prober: not dead, perhaps being created")
			ev := ports.DestroyEvent{PUID: "u1", Pod: types.NamespacedName{Namespace: "kube-system", Name: "static-node-a"}, SandboxID: "creating", Reason: ports.ReasonSandboxChanged}
			require.ErrorIs(t, coll.DestroyPU(ctx, ev), cni.ErrNewestSandbox, "the collector: the runtime may still be creating it")

			ev.SandboxID, ev.Reason = "old", ports.ReasonPodGone
			err = coll.DestroyPU(ctx, ev)
			require.True(t, c.exists(creating), "the attachment of a sandbox the collector says may be being created was freed for a gone pod (DestroyPU: %v; DELs %v)", err, c.delCalls())
		})
	}
}

// flakyRuntime fails every other list (a runtime busy on a full node, a
// CRI call timing out), and answers as rt otherwise.
type flakyRuntime struct {
	rt *listedRuntime
	n  atomic.Int64
}

func (f *flakyRuntime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	if f.n.Add(1)%2 == 0 {
		return nil, errors.New("rpc error: code = DeadlineExceeded")
	}
	return f.rt.ListPodSandbox(ctx, filter)
}

// "When Resync lists a pod with another sandbox than the time before while
// the cache still holds that one (the runtime told their order meanwhile),
// it untracks the pod's PU and tracks it with the sandbox listed now."
// A runtime that fails a list tells no order: ListPUs then orders by the
// cache's times, which a restored cache reverses. Resync must not untrack
// and track the pod's PU again at every list the runtime fails or answers
// (each Untrack drops the engine's record: its backoff, its attempts
// towards MaxDestroyAttempts, its turn, and makes a check at once).
func TestAFlakyRuntimeDoesNotUntrackAndTrackAPodAtEveryResync(t *testing.T) {
	c := newCacheDir(t)
	synctest.Test(t, func(t *testing.T) {
		c.write(entry{network: "podnet", sandbox: "current", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
		c.write(entry{network: "podnet", sandbox: "leaked", uid: "u1", namespace: "ns", name: "pod-u1"}) // restored: looks newer
		rt := &listedRuntime{}
		rt.set(nil, listed("leaked", "u1", false, time.Now().Add(-2*time.Hour)), listed("current", "u1", true, time.Now().Add(-time.Minute)))
		coll := c.collectorWith(&flakyRuntime{rt: rt}, 0)
		ctx, cancel := context.WithCancel(t.Context())
		pus, err := coll.ListPUs(ctx) // the Inventory, the runtime answering
		require.NoError(t, err)
		require.Equal(t, []ports.PU{pu("u1", "leaked")}, pus)
		var r tracker
		done := make(chan error)
		go func() { done <- coll.Resync(ctx, &r) }()
		time.Sleep(10*time.Minute + time.Second) // ten resyncs
		synctest.Wait()
		r.mu.Lock()
		untracked, triggered := len(r.untracked), len(r.triggered)
		r.mu.Unlock()
		cancel()
		require.NoError(t, <-done)
		require.LessOrEqual(t, untracked, 1, "untracked %d times and triggered %d times in ten resyncs, by a runtime that failed every other list", untracked, triggered)
	})
}

// gatedRuntime is a listedRuntime whose list of every pod's sandboxes (a
// list of the cache's, not one of DestroyPU's) waits at its gate while the
// gate is set.
type gatedRuntime struct {
	listedRuntime
	mu      sync.Mutex
	gate    chan struct{}
	waiting chan struct{} // closed once a list waits at the gate
	passed  bool          // the first list since close has come: those after it do not wait
}

func (r *gatedRuntime) close() {
	r.mu.Lock()
	r.gate, r.waiting, r.passed = make(chan struct{}), make(chan struct{}), false
	r.mu.Unlock()
}

func (r *gatedRuntime) open() {
	r.mu.Lock()
	close(r.gate)
	r.gate = nil
	r.mu.Unlock()
}

func (r *gatedRuntime) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r.mu.Lock()
	gate, waiting := r.gate, r.waiting
	first := gate != nil && !r.passed // the first list after close waits (Resync's); those after it, DestroyPU's, do not
	r.passed = r.passed || first
	r.mu.Unlock()
	if first {
		close(waiting)
		<-gate
	}
	return r.listedRuntime.ListPodSandbox(ctx, f)
}

// A list of Resync read before a destroy must not bring the PU back: the
// engine destroys a gone pod's PU while Resync's list, which read the
// cache before, is under way; that list must not track the PU again, or it
// is destroyed twice (a DestroyPU that frees nothing, an EventDestroyed
// too many).
func TestAListReadBeforeADestroyDoesNotTrackThePUAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCacheDir(t)
		c.write(entry{network: "podnet", sandbox: "s1", uid: "u1", namespace: "ns", name: "pod-u1"})
		rt := &gatedRuntime{}
		coll := c.collectorWith(rt, 0)
		var gone atomic.Bool
		var destroyed atomic.Int32
		engine := gcEngine(t, coll, gcWiring{gone: gone.Load, observer: deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventDestroyed {
				destroyed.Add(1)
			}
		})})
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { _ = engine.Start(ctx) })
		defer func() { cancel(); wg.Wait() }()
		synctest.Wait()
		require.Equal(t, 1, engine.Len(), "restored from the cache")

		rt.close()
		wg.Go(func() { _ = coll.Resync(ctx, engine) })
		time.Sleep(time.Minute) // Resync lists: it has read the cache, and waits for the runtime
		<-rt.waiting
		gone.Store(true)
		engine.TriggerPod(types.NamespacedName{Namespace: "ns", Name: "pod-u1"})
		synctest.Wait()
		require.Equal(t, int32(1), destroyed.Load(), "the gone pod's PU destroyed")
		rt.open()
		synctest.Wait()
		time.Sleep(5 * time.Minute)
		require.Equal(t, int32(1), destroyed.Load(), "destroyed once, not tracked again from a list read before")
		require.Zero(t, engine.Len())
	})
}

// hungTracker is an engine whose Track does not return until released (its Observer's commit hangs).
type hungTracker struct {
	release  chan struct{}
	tracks   atomic.Int32
	triggers atomic.Int32
}

func (h *hungTracker) Track(ports.PU) error {
	h.tracks.Add(1)
	<-h.release
	return nil
}
func (h *hungTracker) Untrack(string) bool             { return false }
func (h *hungTracker) TriggerPod(types.NamespacedName) { h.triggers.Add(1) }

// Resync "returns when ctx ends (nil), even while a call of t has not returned (the list under way then calls t no
// more once it does)": an engine whose Track hangs cannot keep the agent from stopping.
func TestResyncReturnsWhenItsContextEndsWhileTrackHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCacheDir(t)
		for _, sb := range []string{"a", "b"} {
			e := c.write(entry{network: "podnet", sandbox: sb, uid: "u-" + sb, namespace: "ns", name: "pod-" + sb})
			c.withNetNS(e, presentNetNS(t))
		}
		coll := c.collectorWith(&listedRuntime{}, 0)
		h := &hungTracker{release: make(chan struct{})}
		ctx, cancel := context.WithCancel(context.Background())
		returned := make(chan error, 1)
		go func() { returned <- coll.Resync(ctx, h) }()
		time.Sleep(2 * time.Hour) // the first list has begun, and hangs in Track
		if h.tracks.Load() != 1 {
			t.Fatalf("Track called %d times, want 1 (hung)", h.tracks.Load())
		}
		cancel()
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case err := <-returned:
			if err != nil {
				t.Fatalf("Resync: %v, want nil", err)
			}
		default:
			close(h.release)
			t.Fatalf("Resync has not returned a second after its context ended: a hung Track holds it")
		}
		close(h.release)
		synctest.Wait()
		if n, m := h.tracks.Load(), h.triggers.Load(); n != 1 || m != 0 {
			t.Errorf("after the context ended and the hung Track returned, Track called %d times in all (want 1), TriggerPod %d (want 0): Resync had returned", n, m)
		}
	})
}

// A DestroyPU refused while Resync lists leaves the PU tracked, with its
// sandbox: Resync must still know which sandbox the engine holds, or it
// cannot move the PU when the pod's sandboxes change places. A pod's newest
// sandbox, not yet listed by the runtime (being created), holds the PU
// while the current one runs: its DestroyPU is refused (row 7) again and
// again, one of them while a list is under way. Then the newest becomes
// the pod's current sandbox and the one before is no longer listed: the
// PU must move onto the one before and free it ("A pod with three leaked
// sandboxes thus frees them oldest first ... and keeps the current one"),
// not stay on the current sandbox, where nothing ever frees the other.
func TestADestroyRefusedDuringAListStillLetsThePUMoveOntoTheReplacedSandbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCacheDir(t)
		before := c.write(entry{network: "podnet", sandbox: "before", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
		c.withNetNS(before, presentNetNS(t))
		newest := c.write(entry{network: "podnet", sandbox: "newest", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Second})
		c.withNetNS(newest, presentNetNS(t))
		rt := &gatedRuntime{}
		rt.set(nil, listed("before", "u1", true, time.Now().Add(-time.Hour)))
		coll := c.collectorWith(rt, 0)

		var sandbox atomic.Value
		sandbox.Store("before")
		var refused atomic.Int32
		var destroyed []string
		var mu sync.Mutex
		engine := gcEngine(t, coll, gcWiring{sandbox: func() string { return sandbox.Load().(string) },
			observer: deletion.ObserverFunc(func(ev deletion.Event) {
				switch ev.Kind {
				case deletion.EventDestroyFailed:
					refused.Add(1)
				case deletion.EventDestroyed:
					mu.Lock()
					destroyed = append(destroyed, ev.PU.SandboxID)
					mu.Unlock()
				}
			})})
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { _ = engine.Start(ctx) })
		defer func() { cancel(); wg.Wait() }()
		synctest.Wait()
		engine.TriggerPod(types.NamespacedName{Namespace: "ns", Name: "pod-u1"})
		time.Sleep(time.Second)
		synctest.Wait()
		require.NotZero(t, refused.Load(), "the newest sandbox's DestroyPU refused (row 7): it holds the PU")

		wg.Go(func() { _ = coll.Resync(ctx, engine) })
		time.Sleep(59 * time.Second) // its sweep at start is over; its first list comes at a minute
		synctest.Wait()
		rt.close()
		<-rt.waiting // Resync's list has read the cache, and waits for the runtime
		was := refused.Load()
		time.Sleep(40 * time.Second) // the refused DestroyPU's backoff ends meanwhile
		synctest.Wait()
		require.Greater(t, refused.Load(), was, "a DestroyPU refused while the list was under way")
		rt.open()
		synctest.Wait()

		// The newest sandbox is the pod's now; the one before is no longer listed.
		rt.set(nil, listed("newest", "u1", true, time.Now()))
		sandbox.Store("newest")
		time.Sleep(3 * time.Minute)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, []string{"before"}, destroyed, "the replaced sandbox's PU destroyed, and it alone")
		require.False(t, c.exists(before), "the replaced sandbox's attachment freed")
		require.True(t, c.exists(newest), "the pod's current sandbox kept")
	})
}

// cutShort writes the cache entry name as libcni leaves it while it writes it in place: cut before its config
// is told. It returns the entry's whole content, to write back.
func (c *cacheDir) cutShort(name string) []byte {
	path := filepath.Join(c.dir, "results", name)
	whole, err := os.ReadFile(path)
	require.NoError(c.t, err)
	require.NoError(c.t, os.WriteFile(path, []byte(`{"kind":"cniCacheV1","containerId":"Z","config":"eyJjbmlW`), 0o600))
	return whole
}

// A list that reads the cache while libcni writes another pod's entry of the same network cannot tell of that
// network's pods: it must not forget them. A dry run's Resync tracks a PU it listed before with the same sandbox
// no more ("the cache's lists track it again only once it has left the cache and come back, or changed
// sandbox", examples/cni-gc's README): a gone pod is tracked, so reported, once, whatever a list could not read.
// So when the entry libcni writes is the pod's own, its only one.
func TestADryRunTracksAPodOnceThoughAListCouldNotTellOfIt(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprint("its own entry: ", own), func(t *testing.T) { dryRunTracksOnce(t, own) })
	}
}

func dryRunTracksOnce(t *testing.T, own bool) {
	c := newCacheDir(t)
	synctest.Test(t, func(t *testing.T) {
		its := c.write(entry{network: "podnet", sandbox: "s1", uid: "u1", namespace: "ns", name: "pod-u1"})
		other := c.write(entry{network: "podnet", sandbox: "Z", uid: "u2", namespace: "ns", name: "pod-u2"})
		if own {
			other = its
		}
		_, r, stop := c.dryRunResync(t) // its first list is in
		whole := c.cutShort(other)
		time.Sleep(time.Minute) // a list that cannot tell of podnet's pods
		synctest.Wait()
		c.writeRaw(other, whole, 0)
		time.Sleep(3 * time.Minute)
		synctest.Wait()
		stop()
		r.mu.Lock()
		defer r.mu.Unlock()
		tracks := 0
		for _, pu := range r.tracked {
			if pu.PUID == "u1" {
				tracks++
			}
		}
		require.Equal(t, 1, tracks, "pod-u1, listed with the same sandbox at every list it could tell of, tracked %d times: %v", tracks, r.tracked)
	})
}

// Requeue "asks a running Resync to list the cache at once, so that the pod's next sandbox in the cache is
// tracked and checked without waiting for ResyncInterval": a list that could not tell of the pod (libcni was
// writing another pod's entry of its network) does not drop the requeue; another list soon tracks and triggers it.
func TestARequeueOutlivesAListThatCouldNotTellOfThePod(t *testing.T) {
	c := newCacheDir(t)
	synctest.Test(t, func(t *testing.T) {
		first := c.write(entry{network: "podnet", sandbox: "A", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
		c.write(entry{network: "podnet", sandbox: "B", uid: "u1", namespace: "ns", name: "pod-u1"})
		other := c.write(entry{network: "podnet", sandbox: "Z", uid: "u2", namespace: "ns", name: "pod-u2"})
		coll := c.collectorWith(&listedRuntime{}, 0)
		var r tracker
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- coll.Resync(ctx, &r) }()
		time.Sleep(time.Minute + time.Second) // the first list: pod-u1 on A
		synctest.Wait()
		// A is freed, and the engine requeues the pod while libcni writes another pod's entry of podnet.
		require.NoError(t, os.Remove(filepath.Join(c.dir, "results", first)))
		whole := c.cutShort(other)
		require.NoError(t, coll.Requeue(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-u1", UID: "u1"}}))
		synctest.Wait() // the list the Requeue asked for has run
		c.writeRaw(other, whole, 0)
		r.mu.Lock()
		r.tracked, r.triggered = nil, nil
		r.mu.Unlock()
		time.Sleep(10 * time.Second) // within ResyncInterval of the requeue
		synctest.Wait()
		r.mu.Lock()
		tracked := slices.ContainsFunc(r.tracked, func(pu ports.PU) bool { return pu.PUID == "u1" && pu.SandboxID == "B" })
		triggered := slices.Contains(r.triggered, types.NamespacedName{Namespace: "ns", Name: "pod-u1"})
		r.mu.Unlock()
		cancel()
		require.NoError(t, <-done)
		require.True(t, tracked && triggered, "10s after the requeue, pod-u1 tracked on its next sandbox B: %v, triggered: %v", tracked, triggered)
	})
}

// "Each pod is reported once per reason, however long the dry run" (examples/cni-gc's README), "unless its pod was
// requeued" (Options.DryRun): a gone pod's PU is not tracked again when a pod recreated under its name, another
// UID, is requeued.
func TestADryRunTracksAGonePodOnceThoughAPodOfItsNameIsRequeued(t *testing.T) {
	c := newCacheDir(t)
	synctest.Test(t, func(t *testing.T) {
		c.write(entry{network: "podnet", sandbox: "s1", uid: "u-old", namespace: "ns", name: "web"})
		coll, r, stop := c.dryRunResync(t) // its first list is in
		require.NoError(t, coll.Requeue(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u-new"}}))
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		stop()
		r.mu.Lock()
		defer r.mu.Unlock()
		require.Len(t, r.tracked, 1, "the gone pod u-old, listed with the same sandbox at every list, tracked again on the requeue of u-new: %v", r.tracked)
	})
}

// The same promise, and "A list that cannot tell of a pod ... forgets nothing of it" (Collector.Resync): a gone pod
// with a sandbox on each of two networks, listed with the older, is neither moved onto the other nor tracked again
// while one network's config is half-written for a list, nor when it is whole again.
func TestADryRunTracksAPodOnceWhileOneOfItsNetworksConfigIsWritten(t *testing.T) {
	c := newCacheDir(t)
	synctest.Test(t, func(t *testing.T) {
		c.write(entry{network: "net1", sandbox: "older", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
		c.write(entry{network: "net2", sandbox: "newer", uid: "u1", namespace: "ns", name: "pod-u1"})
		conf := filepath.Join(c.conf, "10-net1.conflist")
		whole := `{"cniVersion":"1.1.0","name":"net1","plugins":[{"type":"logger"}]}`
		require.NoError(t, os.WriteFile(conf, []byte(whole), 0o644))
		// Its first list, of u1 with its older sandbox, is in; then net1's config is rewritten in place: half of
		// it, for a list.
		_, r, stop := c.dryRunResync(t)
		require.NoError(t, os.WriteFile(conf, []byte(whole[:40]), 0o644))
		time.Sleep(time.Minute)
		synctest.Wait()
		require.NoError(t, os.WriteFile(conf, []byte(whole), 0o644))
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		stop()
		r.mu.Lock()
		defer r.mu.Unlock()
		require.Equal(t, []ports.PU{pu("u1", "older")}, r.tracked, "untracked %v", r.untracked)
	})
}

// dryRunResync runs, in the synctest bubble of t, a dry run's Resync over c every minute, feeding a tracker, until
// its first list is in; stop ends it.
func (c *cacheDir) dryRunResync(t *testing.T) (coll *cni.Collector, r *tracker, stop func()) {
	t.Helper()
	coll = c.dryRunCollector(t, &listedRuntime{})
	r = &tracker{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- coll.Resync(ctx, r) }()
	time.Sleep(time.Minute + time.Second)
	synctest.Wait()
	return coll, r, func() { cancel(); require.NoError(t, <-done) }
}

// requeueHeld reports whether r tracked pod-u1's PU with sandbox and triggered pod-u1.
func requeueHeld(r *tracker, sandbox string) (tracked, triggered bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tracked = slices.ContainsFunc(r.tracked, func(pu ports.PU) bool { return pu.PUID == "u1" && pu.SandboxID == sandbox })
	triggered = slices.Contains(r.triggered, types.NamespacedName{Namespace: "ns", Name: "pod-u1"})
	return tracked, triggered
}

// Requeue "asks a running Resync to list the cache at once, so that the pod's next sandbox in the cache is
// tracked and checked without waiting for ResyncInterval": a DestroyPU of the pod that ends while the requeue's list
// reads (the engine retrying the old sandbox's, which finds nothing left) has the list pass the pod over; the
// requeue is carried to another list, not spent.
func TestARequeueOutlivesAListThatADestroyOfThePodEndedDuring(t *testing.T) {
	c := newCacheDir(t)
	synctest.Test(t, func(t *testing.T) {
		first := c.write(entry{network: "podnet", sandbox: "A", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
		c.write(entry{network: "podnet", sandbox: "B", uid: "u1", namespace: "ns", name: "pod-u1"})
		rt := &gatedRuntime{}
		coll := c.collectorWith(rt, 0)
		pus, err := coll.ListPUs(t.Context()) // the engine's Inventory: pod-u1 on A
		require.NoError(t, err)
		require.Len(t, pus, 1)
		require.Equal(t, "A", pus[0].SandboxID)
		var r tracker
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- coll.Resync(ctx, &r) }()
		synctest.Wait()
		// The engine freed A, and requeues the pod; while the requeue's list reads, a DestroyPU of A ends.
		require.NoError(t, os.Remove(filepath.Join(c.dir, "results", first)))
		rt.close()
		require.NoError(t, coll.Requeue(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-u1", UID: "u1"}}))
		<-rt.waiting
		require.NoError(t, coll.DestroyPU(t.Context(), ports.DestroyEvent{PUID: "u1", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-u1"},
			SandboxID: "A", Reason: ports.ReasonSandboxChanged}))
		rt.open()
		time.Sleep(10 * time.Second) // well within ResyncInterval of the requeue
		synctest.Wait()
		tracked, triggered := requeueHeld(&r, "B")
		cancel()
		require.NoError(t, <-done)
		require.True(t, tracked && triggered, "10s after the requeue, pod-u1 tracked on its next sandbox B: %v, triggered: %v", tracked, triggered)
	})
}

// A requeue outlives the Resync whose list took it: the Resync returned (its context ended) while its list read
// the runtime, and that list, left behind, calls the engine no more; the Resync called next triggers the pod.
func TestARequeueTakenByAListAResyncLeftBehindIsTheNextResyncs(t *testing.T) {
	c := newCacheDir(t)
	synctest.Test(t, func(t *testing.T) {
		c.write(entry{network: "podnet", sandbox: "A", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
		rt := &gatedRuntime{}
		coll := c.collectorWith(rt, 0)
		_, err := coll.ListPUs(t.Context())
		require.NoError(t, err)
		var r tracker
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- coll.Resync(ctx, &r) }()
		synctest.Wait()
		rt.close()
		require.NoError(t, coll.Requeue(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-u1", UID: "u1"}}))
		<-rt.waiting // the requeue's list reads the runtime
		cancel()
		require.NoError(t, <-done)
		rt.open()
		synctest.Wait() // the list left behind has ended, having called nothing
		_, triggered := requeueHeld(&r, "A")
		require.False(t, triggered, "a list left behind by a Resync that returned triggers nothing")

		ctx, cancel = context.WithCancel(t.Context())
		go func() { done <- coll.Resync(ctx, &r) }()
		time.Sleep(10 * time.Second) // well within ResyncInterval
		synctest.Wait()
		_, triggered = requeueHeld(&r, "A")
		cancel()
		require.NoError(t, <-done)
		require.True(t, triggered, "the pod requeued while the Resync before returned is triggered by the next within 10s")
	})
}

// Resync "triggers a check of those it did not list the time before or listed with another sandbox, and of the
// pods requeued", the time before being, before its first list, the Inventory's list: a pod the Inventory listed,
// listed again with the same sandbox and not requeued, is tracked (Track is insert-only) but not triggered.
func TestResyncsFirstListTriggersOnlyWhatChangedSinceTheInventory(t *testing.T) {
	c := newCacheDir(t)
	synctest.Test(t, func(t *testing.T) {
		c.write(entry{network: "podnet", sandbox: "A", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
		coll := c.collectorWith(&listedRuntime{}, 0)
		_, err := coll.ListPUs(t.Context()) // the engine's Inventory: pod-u1 on A
		require.NoError(t, err)
		c.write(entry{network: "podnet", sandbox: "Z", uid: "u2", namespace: "ns", name: "pod-u2"}) // created since
		var r tracker
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- coll.Resync(ctx, &r) }()
		time.Sleep(time.Minute + time.Second) // the first list
		synctest.Wait()
		cancel()
		require.NoError(t, <-done)
		r.mu.Lock()
		defer r.mu.Unlock()
		require.Equal(t, []types.NamespacedName{{Namespace: "ns", Name: "pod-u2"}}, r.triggered,
			"only the pod the Inventory did not list is triggered")
	})
}

// Collector.Resync: "its first list triggers, too, each pod listed with a dead sandbox ..., and an Inventory's list
// that lists one has that first list run at once". After a node's reboot every restored sandbox is dead, and the pods
// waiting for an address wait for them to be freed: they are checked now, not at their places in the engine's first
// interval; a pod whose sandbox runs is not triggered, and the lists after the first trigger neither of them again.
// An Inventory without a dead sandbox leaves the first list at the interval.
func TestResyncsFirstListTriggersAtOnceThePodsOfDeadSandboxesTheInventoryListed(t *testing.T) {
	for _, dryRun := range []bool{false, true} {
		t.Run(fmt.Sprintf("DryRun=%v", dryRun), func(t *testing.T) {
			c := newCacheDir(t)
			synctest.Test(t, func(t *testing.T) {
				c.write(entry{network: "podnet", sandbox: "A", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
				c.write(entry{network: "podnet", sandbox: "D", uid: "u2", namespace: "ns", name: "pod-u2", age: time.Hour})
				rt := &listedRuntime{}
				rt.set(nil, listed("A", "u1", true, time.Now().Add(-time.Hour)), listed("D", "u2", false, time.Now().Add(-time.Hour)))
				coll, err := cni.New(cni.Options{CacheDir: c.dir, PluginDirs: []string{c.plugins}, ConfDir: c.conf,
					ResyncInterval: time.Minute, Runtime: rt, DryRun: dryRun, Logger: c.logs.Logger()})
				require.NoError(t, err)
				pus, err := coll.ListPUs(t.Context()) // the engine's Inventory
				require.NoError(t, err)
				require.Equal(t, []ports.PU{pu("u1", "A"), pu("u2", "D")}, pus)
				var r tracker
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel() // a failed require ends Resync too
				done := make(chan error, 1)
				go func() { done <- coll.Resync(ctx, &r) }()
				synctest.Wait()
				r.mu.Lock()
				require.Equal(t, []types.NamespacedName{{Namespace: "ns", Name: "pod-u2"}}, r.triggered,
					"at once, before the interval: the pod of the dead sandbox alone")
				r.mu.Unlock()
				time.Sleep(2*time.Minute + time.Second) // two lists more
				synctest.Wait()
				cancel()
				require.NoError(t, <-done)
				r.mu.Lock()
				defer r.mu.Unlock()
				require.Equal(t, []types.NamespacedName{{Namespace: "ns", Name: "pod-u2"}}, r.triggered, "once")
			})
		})
	}
	t.Run("no dead sandbox", func(t *testing.T) {
		c := newCacheDir(t)
		synctest.Test(t, func(t *testing.T) {
			c.write(entry{network: "podnet", sandbox: "A", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
			rt := &listedRuntime{}
			rt.set(nil, listed("A", "u1", true, time.Now().Add(-time.Hour)))
			coll := c.collectorWith(rt, 0)
			_, err := coll.ListPUs(t.Context())
			require.NoError(t, err)
			var r tracker
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- coll.Resync(ctx, &r) }()
			synctest.Wait()
			r.mu.Lock()
			require.Empty(t, r.tracked, "no list before the interval")
			r.mu.Unlock()
			cancel()
			require.NoError(t, <-done)
		})
	})
}

// Collector.Resync: a pod listed with another sandbox than the time before, "while the cache still holds an entry of
// that one (whatever it is: of a disableGC network, a link)", has its PU untracked and tracked with the sandbox listed
// now. The first list tracks the pod's current sandbox s2; then the cache holds an older, dead sandbox s1 of the pod,
// and s2's entry, kept, can no longer be listed. A PU left on s2 would keep s1 leaked for as long as the pod runs.
func TestResyncMovesAPUOffASandboxTheCacheHoldsButNoLongerLists(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(c *cacheDir, s2 string)
	}{
		{"its network made disableGC", func(c *cacheDir, _ string) {
			require.NoError(c.t, os.WriteFile(filepath.Join(c.conf, "10-net2.conflist"),
				[]byte(`{"cniVersion":"1.1.0","name":"net2","disableGC":true,"plugins":[{"type":"logger"}]}`), 0o644))
		}},
		{"its entry now a link", func(c *cacheDir, s2 string) {
			path, moved := filepath.Join(c.dir, "results", s2), filepath.Join(c.dir, "moved-"+s2)
			require.NoError(c.t, os.Rename(path, moved))
			require.NoError(c.t, os.Symlink(moved, path))
		}},
		{"its entry now a link to a device", func(c *cacheDir, s2 string) {
			path := filepath.Join(c.dir, "results", s2)
			require.NoError(c.t, os.Remove(path))
			require.NoError(c.t, os.Symlink("/dev/null", path))
		}},
		{"its entry now a named pipe", func(c *cacheDir, s2 string) {
			path := filepath.Join(c.dir, "results", s2)
			require.NoError(c.t, os.Remove(path))
			require.NoError(c.t, syscall.Mkfifo(path, 0o600))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCacheDir(t)
			synctest.Test(t, func(t *testing.T) {
				s2 := c.write(entry{network: "net2", sandbox: "s2", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Minute})
				rt := &listedRuntime{}
				rt.set(nil, listed("s1", "u1", false, time.Now().Add(-2*time.Hour)), listed("s2", "u1", true, time.Now().Add(-time.Minute)))
				r, stop := resyncFirstList(t, c.collectorWith(rt, 0), pu("u1", "s2"))
				c.write(entry{network: "net1", sandbox: "s1", uid: "u1", namespace: "ns", name: "pod-u1", age: 2 * time.Hour})
				tc.change(c, s2)
				time.Sleep(time.Minute + time.Second)
				synctest.Wait()
				stop()
				r.mu.Lock()
				defer r.mu.Unlock()
				require.Equal(t, []string{"u1"}, r.untracked, "the PU on s2 is untracked (tracked: %v)", r.tracked)
				require.Equal(t, pu("u1", "s1"), r.tracked[len(r.tracked)-1], "and tracked with s1")
			})
		})
	}
}

// docs/sdk/cni-freeing.md: "an entry cut short (libcni writes it in place) whose cached config is cut too keeps its
// network by no row until it is whole, as a config being written does (a PU whose entry it is answers a plain error:
// the engine tries again)". A gone pod whose only entry is being written: DestroyPU and DryRunDestroyPU keep it with
// an error the engine retries, not a permanent one that would have it give the PU up; once whole, it is freed.
func TestAnEntryBeingWrittenIsKeptAndTriedAgainNotGivenUp(t *testing.T) {
	c := newCacheDir(t)
	its := c.write(entry{network: "podnet", sandbox: "s1", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
	coll := c.collectorListingNone()
	ev := ports.DestroyEvent{PUID: "u1", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-u1"}, SandboxID: "s1", Reason: ports.ReasonPodGone}
	whole := c.cutShort(its)
	for name, destroy := range map[string]func(context.Context, ports.DestroyEvent) error{"DestroyPU": coll.DestroyPU, "DryRunDestroyPU": coll.DryRunDestroyPU} {
		err := destroy(t.Context(), ev)
		require.Error(t, err, "%s of a pod whose only entry is being written", name)
		require.False(t, ports.IsPermanent(err), "%s: a permanent error gives the PU up: %v", name, err)
		require.ErrorIs(t, err, cni.ErrUnusableEntry, name)
	}
	require.True(t, c.exists(its), "the entry being written is left as it is")
	require.Empty(t, c.delCalls())
	c.writeRaw(its, whole, time.Hour)
	require.NoError(t, coll.DestroyPU(t.Context(), ev), "once whole")
	require.False(t, c.exists(its), "freed once whole")
}

// DryRunDestroyPU "records its refusals as DestroyPU does, so that its answers follow DestroyPU's in time". A live
// pod's sandbox A, not listed, its network namespace there, is refused (row 7); its entry then leaves the cache
// (DestroyPU forgets its refusal) and comes back: a minute after the first refusal, the dry run answers as DestroyPU
// does (refused anew, not given up), with whatever it read meanwhile.
func TestDryRunFollowsDestroyPUInTimeWhenAnEntryLeavesAndComesBack(t *testing.T) {
	answer := func(t *testing.T, dry bool) (last error) {
		c := newCacheDir(t)
		netns := filepath.Join(t.TempDir(), "netns-a") // there: a sandbox being created, as far as it tells
		require.NoError(t, os.WriteFile(netns, nil, 0o600))
		synctest.Test(t, func(t *testing.T) {
			its := c.write(entry{network: "podnet", sandbox: "A", uid: "u1", namespace: "ns", name: "pod-u1"})
			c.withNetNS(its, netns)
			coll, err := cni.New(cni.Options{CacheDir: c.dir, PluginDirs: []string{c.plugins}, ConfDir: c.conf, ResyncInterval: time.Minute,
				Runtime: &listedRuntime{}, NewestSandboxTimeout: time.Minute, Logger: c.logs.Logger()})
			require.NoError(t, err)
			ev := ports.DestroyEvent{PUID: "u1", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-u1"}, SandboxID: "A", Reason: ports.ReasonSandboxChanged}
			call := coll.DestroyPU
			if dry {
				call = coll.DryRunDestroyPU
			}
			require.ErrorIs(t, call(t.Context(), ev), cni.ErrNewestSandbox, "refused")
			whole, err := os.ReadFile(filepath.Join(c.dir, "results", its))
			require.NoError(t, err)
			require.NoError(t, os.Remove(filepath.Join(c.dir, "results", its)))
			time.Sleep(10 * time.Second)
			require.NoError(t, call(t.Context(), ev), "nothing cached: nothing to do")
			c.writeRaw(its, whole, 0)
			time.Sleep(50 * time.Second)
			last = call(t.Context(), ev)
		})
		return last
	}
	real, dry := answer(t, false), answer(t, true)
	require.ErrorIs(t, real, cni.ErrNewestSandbox, "DestroyPU refuses it anew")
	require.ErrorIs(t, dry, cni.ErrNewestSandbox, "DryRunDestroyPU answers as DestroyPU: %v", dry)
	require.False(t, ports.IsPermanent(dry))
}

// Resync compares a list with "the Inventory's list, before Resync's first list and when the engine listed its
// Inventory since": also when the engine lists it while this Resync runs. The first list tracks pod-u1 with A; the
// engine's ListPUs then lists it with B (the runtime told the other order meanwhile), and the engine holds B; the
// next list, with A again while the cache still holds B, moves the PU to A: Track alone (insert-only) would leave it
// on B.
func TestResyncComparesWithAnInventoryListedWhileItRuns(t *testing.T) {
	c := newCacheDir(t)
	synctest.Test(t, func(t *testing.T) {
		coll, aFirst, bOlder := c.twoSandboxes()
		r, stop := resyncFirstList(t, coll, pu("u1", "A"))
		bOlder()
		pus, err := coll.ListPUs(t.Context()) // the engine's Inventory, while Resync runs
		require.NoError(t, err)
		require.Equal(t, []ports.PU{pu("u1", "B")}, pus)
		aFirst()
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		stop()
		r.mu.Lock()
		defer r.mu.Unlock()
		require.Equal(t, []string{"u1"}, r.untracked, "the PU on B untracked (tracked: %v)", r.tracked)
		require.Equal(t, pu("u1", "A"), r.tracked[len(r.tracked)-1], "and tracked with A")
	})
}

// resyncFirstList runs coll.Resync on a tracker (in a synctest bubble, its ResyncInterval a minute) until stop, and
// holds its first list to have tracked first.
func resyncFirstList(t *testing.T, coll *cni.Collector, first ...ports.PU) (r *tracker, stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	r = &tracker{}
	done := make(chan error)
	go func() { done <- coll.Resync(ctx, r) }()
	time.Sleep(time.Minute + time.Second)
	synctest.Wait()
	r.mu.Lock()
	require.Equal(t, first, r.tracked, "the first list")
	r.mu.Unlock()
	return r, func() { cancel(); require.NoError(t, <-done) }
}

// Resync "triggers a check of those it did not list the time before"; Options.DryRun: a dry run's Resync tracks a
// PU it listed the time before, with the same sandbox, no more. ListPUs cannot tell whose list it answers: one of
// another caller than the engine (which tracks nothing) between two lists of Resync, holding a pod created since the
// first, does not make that pod's PU one the engine holds: the next list tracks and triggers it, a dry run's too.
func TestAListOfAnotherCallerDoesNotHideANewPUFromResync(t *testing.T) {
	for _, dryRun := range []bool{false, true} {
		t.Run(fmt.Sprintf("dry run %v", dryRun), func(t *testing.T) {
			c := newCacheDir(t)
			synctest.Test(t, func(t *testing.T) {
				var coll *cni.Collector
				var r *tracker
				var stop func()
				if dryRun {
					coll, r, stop = c.dryRunResync(t)
				} else {
					coll = c.collectorWith(&listedRuntime{}, 0)
					r, stop = resyncFirstList(t, coll)
				}
				defer stop()
				c.write(entry{network: "podnet", sandbox: "A", uid: "u1", namespace: "ns", name: "pod-u1"})
				pus, err := coll.ListPUs(t.Context()) // not the engine's: it tracks nothing
				require.NoError(t, err)
				require.Equal(t, []ports.PU{pu("u1", "A")}, pus)
				time.Sleep(time.Minute + time.Second)
				synctest.Wait()
				tracked, triggered := requeueHeld(r, "A")
				require.True(t, tracked && triggered, "the next list tracked pod-u1's PU: %v, triggered it: %v", tracked, triggered)
			})
		})
	}
}

// Resync moves a PU off its pod's current sandbox once the order is told (the Runtime lists it ready): a list of
// another caller than the engine between two lists of Resync, taken with the new order, does not make the engine
// hold the PU on the older sandbox: the next list untracks it and tracks it with the older one.
func TestAListOfAnotherCallerDoesNotKeepAPUOnItsPodsCurrentSandbox(t *testing.T) {
	c := newCacheDir(t)
	synctest.Test(t, func(t *testing.T) {
		coll, _, bOlder := c.twoSandboxes()
		r, stop := resyncFirstList(t, coll, pu("u1", "A"))
		defer stop()
		// The order is told the other way now: A runs, B is the older; another caller lists the PU on B.
		bOlder()
		pus, err := coll.ListPUs(t.Context())
		require.NoError(t, err)
		require.Equal(t, []ports.PU{pu("u1", "B")}, pus)
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		r.mu.Lock()
		defer r.mu.Unlock()
		require.Equal(t, []string{"u1"}, r.untracked, "the PU on A untracked (tracked: %v)", r.tracked)
		require.Equal(t, pu("u1", "B"), r.tracked[len(r.tracked)-1], "and tracked with B")
	})
}

// The same across two calls of Resync: a Resync lists an empty cache and returns; a pod is created; another caller
// than the engine lists ListPUs; Resync is called again: its list tracks and triggers the pod's PU, a dry run's too
// (it compares with the last list of the Resync before, a list of ListPUs since being one more account).
func TestAListOfAnotherCallerBetweenTwoResyncsDoesNotHideANewPU(t *testing.T) {
	for _, dryRun := range []bool{false, true} {
		t.Run(fmt.Sprintf("dry run %v", dryRun), func(t *testing.T) {
			c := newCacheDir(t)
			synctest.Test(t, func(t *testing.T) {
				var coll *cni.Collector
				var stop func()
				if dryRun {
					coll, _, stop = c.dryRunResync(t)
				} else {
					coll = c.collectorWith(&listedRuntime{}, 0)
					_, stop = resyncFirstList(t, coll)
				}
				stop()
				c.write(entry{network: "podnet", sandbox: "A", uid: "u1", namespace: "ns", name: "pod-u1"})
				_, err := coll.ListPUs(t.Context()) // not the engine's
				require.NoError(t, err)
				r, stop := resyncFirstList(t, coll, pu("u1", "A"))
				stop()
				_, triggered := requeueHeld(r, "A")
				require.True(t, triggered, "the second Resync's list did not trigger pod-u1")
			})
		})
	}
}

// Before Resync's first list, every answer of ListPUs is an account of what the engine may hold: the engine's
// Inventory lists u1 on A (the Runtime telling A the older), then the Runtime tells B the older and another caller's
// list gives u1 on B. Resync's first list gives u1 on B: it moves the PU off A, which the engine holds it with.
func TestResyncsFirstListKeepsEveryAccountOfTheInventory(t *testing.T) {
	c := newCacheDir(t)
	synctest.Test(t, func(t *testing.T) {
		coll, _, bOlder := c.twoSandboxes()
		pus, err := coll.ListPUs(t.Context()) // the engine's Inventory: u1 on A
		require.NoError(t, err)
		require.Equal(t, []ports.PU{pu("u1", "A")}, pus)
		bOlder()
		pus, err = coll.ListPUs(t.Context()) // another caller's: u1 on B
		require.NoError(t, err)
		require.Equal(t, []ports.PU{pu("u1", "B")}, pus)
		ctx, cancel := context.WithCancel(t.Context())
		r := &tracker{}
		done := make(chan error)
		go func() { done <- coll.Resync(ctx, r) }()
		synctest.Wait() // the first list, at once: the Inventory listed a dead sandbox (A)
		cancel()
		require.NoError(t, <-done)
		r.mu.Lock()
		defer r.mu.Unlock()
		require.Equal(t, []ports.PU{pu("u1", "B")}, r.tracked, "the first list")
		require.Equal(t, []string{"u1"}, r.untracked, "the PU untracked from A (tracked: %v)", r.tracked)
	})
}

// stallingTracker is a tracker whose second Track waits until release is closed.
type stallingTracker struct {
	tracker
	release chan struct{}
	n       int
}

func (s *stallingTracker) Track(pu ports.PU) error {
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	if n == 2 {
		<-s.release
	}
	return s.tracker.Track(pu)
}

// Options.DryRun: a dry run's Resync tracks a PU it listed the time before, with the same sandbox, no more; and
// Resync returns with its list under way when a Track hangs. What that list told the engine (one PU, then the one
// whose Track returns once Resync has returned) stands for the next Resync, which tracks neither again (its dry run
// would report them again).
func TestWhatAListLeftBehindToldStandsForTheNextResync(t *testing.T) {
	c := newCacheDir(t)
	synctest.Test(t, func(t *testing.T) {
		c.write(entry{network: "podnet", sandbox: "A", uid: "u1", namespace: "ns", name: "pod-u1"})
		c.write(entry{network: "podnet", sandbox: "B", uid: "u2", namespace: "ns", name: "pod-u2"})
		coll := c.dryRunCollector(t, &listedRuntime{})
		stalled := &stallingTracker{release: make(chan struct{})}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- coll.Resync(ctx, stalled) }()
		time.Sleep(time.Minute + time.Second)
		synctest.Wait() // its first list told one PU, and waits in the second's Track
		cancel()
		require.NoError(t, <-done)
		stalled.mu.Lock()
		first := slices.Clone(stalled.tracked)
		stalled.mu.Unlock()
		require.Len(t, first, 1, "the first Track returned, the second waits")
		close(stalled.release) // its Track returns: the engine was told that one too
		synctest.Wait()
		_, stop := resyncFirstList(t, coll) // the next Resync's first list tracks neither again
		stop()
	})
}

// twoSandboxes writes pod-u1's entries of sandboxes A (the older by the cache's times) and B, and returns a collector
// over a Runtime that tells A the older (B ready); aOlder and bOlder have the Runtime tell the one or the other the
// older (the other ready).
func (c *cacheDir) twoSandboxes() (coll *cni.Collector, aOlder, bOlder func()) {
	c.write(entry{network: "podnet", sandbox: "A", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
	c.write(entry{network: "podnet", sandbox: "B", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Minute})
	now := time.Now()
	rt := &listedRuntime{}
	aOlder = func() {
		rt.set(nil, listed("A", "u1", false, now.Add(-2*time.Hour)), listed("B", "u1", true, now.Add(-time.Minute)))
	}
	bOlder = func() {
		rt.set(nil, listed("B", "u1", false, now.Add(-2*time.Hour)), listed("A", "u1", true, now.Add(-time.Minute)))
	}
	aOlder()
	return c.collectorWith(rt, 0), aOlder, bOlder
}

// slowToWake is a context whose end Err tells before Done is closed, as a goroutine waiting on Done is woken only when
// the scheduler gets to it: a list that sees Err first may end before Resync's goroutine sees Done. end ends it;
// wake closes Done.
type slowToWake struct {
	context.Context
	ended atomic.Bool
	done  chan struct{}
	woken sync.Once
}

func newSlowToWake(parent context.Context) *slowToWake {
	return &slowToWake{Context: parent, done: make(chan struct{})}
}

func (c *slowToWake) Done() <-chan struct{} { return c.done }

func (c *slowToWake) Err() error {
	if c.ended.Load() {
		return context.Canceled
	}
	return nil
}

func (c *slowToWake) end()  { c.ended.Store(true) }
func (c *slowToWake) wake() { c.woken.Do(func() { close(c.done) }) }

// endingTracker ends Resync's context in its first Track (the agent stops while the engine tracks the list's first
// PU), which returns as ever.
type endingTracker struct {
	tracker
	end func()
}

func (e *endingTracker) Track(pu ports.PU) error {
	e.end()
	return e.tracker.Track(pu)
}

// Resync "tracks each of" the PUs it lists; a dry run's tracks one it listed the time before, with the same
// sandbox, no more. A list cut short by the end of Resync's context told the engine only the PUs it reached: the
// next Resync tracks the others, a dry run's too, whether Resync saw its context end before the list did or after.
func TestAListCutShortByResyncsEndCountsOnlyWhatItTold(t *testing.T) {
	for _, seenFirst := range []string{"by the list", "by Resync"} {
		t.Run("the end seen first "+seenFirst, func(t *testing.T) {
			c := newCacheDir(t)
			synctest.Test(t, func(t *testing.T) {
				c.write(entry{network: "podnet", sandbox: "A", uid: "u1", namespace: "ns", name: "pod-u1"})
				c.write(entry{network: "podnet", sandbox: "B", uid: "u2", namespace: "ns", name: "pod-u2"})
				coll := c.dryRunCollector(t, &listedRuntime{})
				ctx := newSlowToWake(t.Context())
				ending := &endingTracker{end: ctx.end}
				if seenFirst == "by Resync" {
					ending.end = func() { ctx.end(); ctx.wake(); synctest.Wait() }
				} else {
					// and a pod requeued meanwhile asks for a list at once: none begins after the one cut short
					ending.end = func() {
						ctx.end()
						other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-u9", UID: "u9"}}
						require.NoError(t, coll.Requeue(t.Context(), other))
					}
				}
				done := make(chan error)
				go func() { done <- coll.Resync(ctx, ending) }()
				time.Sleep(time.Minute + time.Second)
				synctest.Wait() // by the list: Resync has taken what the list returned, and waits for its sweep
				ctx.wake()
				require.NoError(t, <-done)
				ending.mu.Lock()
				told := slices.Clone(ending.tracked)
				ending.mu.Unlock()
				require.Len(t, told, 1, "the list told one PU, and was cut short")
				rest := pu("u1", "A")
				if told[0].PUID == "u1" {
					rest = pu("u2", "B")
				}
				_, stop := resyncFirstList(t, coll, rest)
				stop()
			})
		})
	}
}

// Options.DryRun: a dry run's Resync tracks a PU it listed the time before, with the same sandbox, no more. The
// answers of ListPUs a list used are spent by it: one answered while a list ran is the next list's account, but the
// answers the list used are not, or a PU it moved is moved again by the next (a dry run would report it again).
func TestTheListPUsAnswersAListUsedAreSpent(t *testing.T) {
	c := newCacheDir(t)
	synctest.Test(t, func(t *testing.T) {
		c.write(entry{network: "podnet", sandbox: "A", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
		c.write(entry{network: "podnet", sandbox: "B", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Minute})
		now := time.Now()
		rt := &gatedRuntime{}
		rt.set(nil, listed("A", "u1", false, now.Add(-2*time.Hour)), listed("B", "u1", true, now.Add(-time.Minute)))
		coll := c.dryRunCollector(t, rt)
		r, stop := resyncFirstList(t, coll, pu("u1", "A"))
		defer stop()
		_, err := coll.ListPUs(t.Context()) // an account: A, as the first list told
		require.NoError(t, err)
		rt.set(nil, listed("B", "u1", false, now.Add(-2*time.Hour)), listed("A", "u1", true, now.Add(-time.Minute)))
		rt.close()
		time.Sleep(time.Minute)
		<-rt.waiting                       // the second list waits in the Runtime
		_, err = coll.ListPUs(t.Context()) // answered while it runs: B
		require.NoError(t, err)
		rt.open()
		synctest.Wait() // the second list moves the PU to B
		time.Sleep(time.Minute + time.Second)
		synctest.Wait() // the third, nothing changed
		r.mu.Lock()
		defer r.mu.Unlock()
		require.Equal(t, []string{"u1"}, r.untracked, "moved once, for one change (tracked: %v)", r.tracked)
	})
}

// dryRunCollector is a dry run's collector over c and rt, listing every minute.
func (c *cacheDir) dryRunCollector(t *testing.T, rt cni.Runtime) *cni.Collector {
	t.Helper()
	coll, err := cni.New(cni.Options{CacheDir: c.dir, PluginDirs: []string{c.plugins}, ConfDir: c.conf,
		ResyncInterval: time.Minute, Runtime: rt, DryRun: true, Logger: c.logs.Logger()})
	require.NoError(t, err)
	return coll
}

// cutConfig writes a config of ConfDir cut before its name, as an installer caught mid-write leaves it: a list of the
// cache fails while it is there. It returns a func that removes it.
func (c *cacheDir) cutConfig(t *testing.T) (remove func()) {
	path := filepath.Join(c.conf, "20-cut.conflist")
	require.NoError(t, os.WriteFile(path, []byte(`{"cniVersion":`), 0o644))
	return func() { require.NoError(t, os.Remove(path)) }
}

// Collector.Resync: a failed list "follows at the next interval, or, while a pod is requeued, a second later, doubling
// at each failure up to the interval", as its log line says ("in"). With a pod requeued and the cache failing for
// hours, the wait reaches the interval and the retry falls on the interval's own tick: each instant lists once, never
// a second time at once after a list that said it would list again later.
func TestAFailedListIsNeverFollowedAtOnceByAnother(t *testing.T) {
	c := newCacheDir(t)
	synctest.Test(t, func(t *testing.T) {
		c.write(entry{network: "podnet", sandbox: "A", uid: "u1", namespace: "ns", name: "pod-u1"})
		coll := c.collectorWith(&listedRuntime{}, 0)
		_, stop := resyncFirstList(t, coll, pu("u1", "A"))
		defer stop()
		remove := c.cutConfig(t)
		defer remove()
		require.NoError(t, coll.Requeue(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-u1", UID: "u1"}}))
		before := c.logs.Count("listing the cache failed; will list again")
		const hours = 3
		time.Sleep(hours * time.Hour)
		synctest.Wait()
		// 1, 2, 4, ... 32 s, then one a minute (the interval), at most: a list at once after one makes more.
		failed := c.logs.Count("listing the cache failed; will list again") - before
		require.LessOrEqual(t, failed, 7+hours*60, "failed lists in %d hours with the interval 1m", hours)
		require.GreaterOrEqual(t, failed, hours*60-1, "the lists go on")
	})
}

// Resync "feeds t with what the cache holds while the agent runs: every ResyncInterval ... It returns when ctx
// ends"; runbooks.md: "listing the cache failed; will list again". A first list that fails (a config of ConfDir cut
// short) told nothing: the next list is Resync's first, and its rounds go on.
func TestResyncListsAgainAfterItsFirstListFailed(t *testing.T) {
	c := newCacheDir(t)
	synctest.Test(t, func(t *testing.T) {
		c.write(entry{network: "podnet", sandbox: "A", uid: "u1", namespace: "ns", name: "pod-u1"})
		remove := c.cutConfig(t)
		coll := c.collectorWith(&listedRuntime{}, 0)
		r, stop := resyncFirstList(t, coll) // it fails: nothing tracked
		defer stop()
		require.Equal(t, 1, c.logs.Count("listing the cache failed; will list again"), "the first list failed")
		remove()
		time.Sleep(time.Minute)
		synctest.Wait()
		r.mu.Lock()
		defer r.mu.Unlock()
		require.Equal(t, []ports.PU{pu("u1", "A")}, r.tracked, "the next list tracks what the cache holds")
		require.Equal(t, []types.NamespacedName{{Namespace: "ns", Name: "pod-u1"}}, r.triggered, "and triggers it, new to Resync")
	})
}

// Resync: "of one it told, a list of ListPUs since is one more account of the sandbox the engine may hold it with". A
// list that fails told nothing and compared nothing: the accounts stand for the next. An answer of ListPUs (B, the
// runtime telling the order the other way for a while) between a list that told A and one that failed moves the PU
// at the next list, which lists A while the cache holds B.
func TestAFailedListSpendsNoAccount(t *testing.T) {
	c := newCacheDir(t)
	synctest.Test(t, func(t *testing.T) {
		coll, aOlder, bOlder := c.twoSandboxes()
		r, stop := resyncFirstList(t, coll, pu("u1", "A"))
		defer stop()
		bOlder()
		_, err := coll.ListPUs(t.Context()) // an account: B
		require.NoError(t, err)
		aOlder()
		remove := c.cutConfig(t)
		time.Sleep(time.Minute)
		synctest.Wait() // the second list fails
		require.Equal(t, 1, c.logs.Count("listing the cache failed; will list again"), "the second list failed")
		remove()
		time.Sleep(time.Minute)
		synctest.Wait() // the third lists A
		r.mu.Lock()
		defer r.mu.Unlock()
		require.Equal(t, []string{"u1"}, r.untracked, "moved off B (tracked: %v)", r.tracked)
		require.Equal(t, []ports.PU{pu("u1", "A"), pu("u1", "A")}, r.tracked)
	})
}

// Collector.Resync: a list that fails "follows at the next interval, or, while a pod is requeued, a second later,
// doubling at each failure up to the interval". A requeue whose lists fail for three seconds (1 s, then 2 s) is
// triggered once the cache reads again, not at the next interval; and with no pod requeued, a failed list waits for
// the interval.
func TestAFailedListWithAPodRequeuedIsTriedAgainSoon(t *testing.T) {
	c := newCacheDir(t)
	synctest.Test(t, func(t *testing.T) {
		c.write(entry{network: "podnet", sandbox: "A", uid: "u1", namespace: "ns", name: "pod-u1"})
		coll := c.collectorWith(&listedRuntime{}, 0)
		r, stop := resyncFirstList(t, coll, pu("u1", "A"))
		defer stop()
		remove := c.cutConfig(t)
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Equal(t, 1, c.logs.Count(`"in"="1m0s"`), "no pod requeued: the next list at the interval")
		require.NoError(t, coll.Requeue(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-u1", UID: "u1"}}))
		synctest.Wait() // fails: again in 1 s
		time.Sleep(time.Second)
		synctest.Wait() // fails: again in 2 s
		require.Equal(t, 1, c.logs.Count(`"in"="1s"`))
		require.Equal(t, 1, c.logs.Count(`"in"="2s"`))
		remove()
		requeuedAt := time.Now()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		r.mu.Lock()
		defer r.mu.Unlock()
		require.Len(t, r.triggered, 2, "the requeue is triggered once the cache reads, %v after", time.Since(requeuedAt))
	})
}
