package cni_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// listedRuntime is a cni.Runtime that lists what the test says, as a
// runtime's CRI would, filtering by the pod UID label.
type listedRuntime struct {
	mu  sync.Mutex
	sbs []*runtimeapi.PodSandbox
	err error
}

func (r *listedRuntime) set(err error, sbs ...*runtimeapi.PodSandbox) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sbs, r.err = sbs, err
}

func (r *listedRuntime) ListPodSandbox(_ context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return nil, r.err
	}
	var out []*runtimeapi.PodSandbox
	for _, sb := range r.sbs {
		if uid := f.GetLabelSelector()["io.kubernetes.pod.uid"]; uid == "" || sb.GetLabels()["io.kubernetes.pod.uid"] == uid {
			out = append(out, sb)
		}
	}
	return out, nil
}

// listed is a sandbox of the pod uid as the runtime lists it.
func listed(id, uid string, ready bool, created time.Time) *runtimeapi.PodSandbox {
	state := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if ready {
		state = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return &runtimeapi.PodSandbox{Id: id, State: state, CreatedAt: created.UnixNano(), Labels: map[string]string{"io.kubernetes.pod.uid": uid}}
}

func (c *cacheDir) collectorWith(rt cni.Runtime, timeout time.Duration) *cni.Collector {
	coll, err := cni.New(cni.Options{CacheDir: c.dir, PluginDirs: []string{c.plugins}, ConfDir: c.conf,
		ResyncInterval: time.Minute, Runtime: rt, NewestSandboxTimeout: timeout, Logger: c.logs.Logger()})
	require.NoError(c.t, err)
	return coll
}

// withNetNS rewrites the cache entry file so that it names netns as the
// namespace it was added with.
func (c *cacheDir) withNetNS(file, netns string) {
	path := filepath.Join(c.dir, "results", file)
	info, err := os.Stat(path)
	require.NoError(c.t, err)
	b, err := os.ReadFile(path)
	require.NoError(c.t, err)
	b = append(b[:len(b)-1], []byte(`,"netns":"`+netns+`"}`)...)
	require.NoError(c.t, os.WriteFile(path, b, 0o600))
	require.NoError(c.t, os.Chtimes(path, info.ModTime(), info.ModTime()))
}

// A restored cache reorders the write times: the leaked sandbox's entry
// looks newer than the current one's. The runtime's CreatedAt orders them
// where it lists them: the leaked sandbox is the pod's oldest, and it is
// freed, the current one never.
func TestSandboxesAreOrderedByTheRuntimesCreatedAt(t *testing.T) {
	c := newCacheDir(t)
	leaked := c.write(entry{network: "podnet", sandbox: "leaked", uid: "u1", namespace: "ns", name: "pod-u1", age: 0})
	current := c.write(entry{network: "podnet", sandbox: "current", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
	rt := &listedRuntime{}
	now := time.Now()
	rt.set(nil, listed("leaked", "u1", false, now.Add(-2*time.Hour)), listed("current", "u1", true, now.Add(-time.Minute)))
	coll := c.collectorWith(rt, 0)
	ctx := context.Background()

	pus, err := coll.ListPUs(ctx)
	require.NoError(t, err)
	require.Equal(t, []ports.PU{pu("u1", "leaked")}, pus, "by CreatedAt, not by the files' times")
	pus, err = c.collector().ListPUs(ctx)
	require.NoError(t, err)
	require.Equal(t, []ports.PU{pu("u1", "current")}, pus, "without a runtime, the files' times decide")

	ev := ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, SandboxID: "current", Reason: ports.ReasonSandboxChanged}
	require.ErrorIs(t, coll.DestroyPU(ctx, ev), cni.ErrNewestSandbox, "the runtime reports it ready")
	ev.SandboxID = "leaked"
	require.NoError(t, coll.DestroyPU(ctx, ev))
	require.Equal(t, []string{"DEL:leaked", "eth0"}, c.delCalls())
	require.False(t, c.exists(leaked))
	require.True(t, c.exists(current))

	// Not listed at all (a reboot wiped the runtime), written before the
	// pod's current sandbox was created: it cannot be one in creation.
	old := c.write(entry{network: "podnet", sandbox: "old", uid: "u1", namespace: "ns", name: "pod-u1", age: 10 * time.Minute})
	ev.SandboxID = "old"
	require.NoError(t, coll.DestroyPU(ctx, ev))
	require.False(t, c.exists(old))
	// Written after it, its namespace still there: it may be.
	creating := c.write(entry{network: "podnet", sandbox: "creating", uid: "u1", namespace: "ns", name: "pod-u1"})
	c.withNetNS(creating, "/proc/self/ns/net")
	ev.SandboxID = "creating"
	require.ErrorIs(t, coll.DestroyPU(ctx, ev), cni.ErrNewestSandbox)
	require.True(t, c.exists(creating))
}

// Written at the same instant and not listed by the runtime, two sandboxes
// cannot be told apart by time. One whose network namespace is gone is
// dead (a sandbox being created has its namespace); one whose namespace
// may live is refused as the newest for NewestSandboxTimeout, then given
// up for good: a permanent error, and ListPUs no longer lists it, instead
// of an error retried forever.
func TestAnOrderThatCannotBeKnownIsGivenUpOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCacheDir(t)
		a := c.write(entry{network: "podnet", sandbox: "a", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Minute})
		b := c.write(entry{network: "podnet", sandbox: "b", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Minute})
		gone := c.write(entry{network: "podnet", sandbox: "gone", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Minute})
		c.withNetNS(a, "/proc/self/ns/net")
		c.withNetNS(b, "/proc/self/ns/net")
		c.withNetNS(gone, filepath.Join(t.TempDir(), "cni-that-is-no-more"))
		rt := &listedRuntime{}
		rt.set(nil, listed("current", "u1", true, time.Now().Add(-time.Hour))) // older than every entry
		coll := c.collectorWith(rt, 5*time.Minute)
		ctx := context.Background()
		ev := ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, Reason: ports.ReasonSandboxChanged}

		ev.SandboxID = "gone"
		require.NoError(t, coll.DestroyPU(ctx, ev), "not listed, its namespace gone: dead")
		require.False(t, c.exists(gone))

		ev.SandboxID = "a"
		for range 4 {
			err := coll.DestroyPU(ctx, ev)
			require.ErrorIs(t, err, cni.ErrNewestSandbox)
			require.False(t, ports.IsPermanent(err), "within the timeout: checked again")
			time.Sleep(time.Minute)
		}
		time.Sleep(time.Minute)
		err := coll.DestroyPU(ctx, ev)
		require.ErrorIs(t, err, cni.ErrOrderUnknown)
		require.True(t, ports.IsPermanent(err), "given up: the engine drops it")
		require.True(t, c.exists(a), "kept")
		require.Equal(t, []string{"DEL:gone", "eth0"}, c.delCalls())

		pus, err := coll.ListPUs(ctx)
		require.NoError(t, err)
		require.Equal(t, []ports.PU{pu("u1", "b")}, pus, "the sandbox given up is passed over")
		require.Equal(t, 1, c.logs.Count(a), "and logged once")

		// The pod gone, everything of its UID goes, the sandbox given up too;
		// but a sandbox the runtime does not list with its namespace there
		// may be one it is creating, for NewestSandboxTimeout at most.
		rt.set(nil)
		podGone := ports.DestroyEvent{PUID: "u1", Pod: ev.Pod, Reason: ports.ReasonPodGone}
		for range 5 {
			require.ErrorIs(t, coll.DestroyPU(ctx, podGone), cni.ErrSandboxRunning)
			time.Sleep(time.Minute)
		}
		require.True(t, c.exists(a))
		require.NoError(t, coll.DestroyPU(ctx, podGone))
		require.False(t, c.exists(a))
		require.False(t, c.exists(b))
	})
}

// NewestSandboxTimeout times the refusals since the Runtime last listed the
// sandbox ready: a sandbox refused once, then the pod's current one for an
// hour, is not given up at its next refusal, but timed anew.
func TestARefusalBeforeTheSandboxWasCurrentDoesNotGiveUpTheNextAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCacheDir(t)
		a := c.write(entry{network: "podnet", sandbox: "a", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Minute})
		c.withNetNS(a, "/proc/self/ns/net")
		rt := &listedRuntime{}
		rt.set(nil, listed("current", "u1", true, time.Now().Add(-time.Hour)))
		coll := c.collectorWith(rt, 5*time.Minute)
		ev := ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, SandboxID: "a", Reason: ports.ReasonSandboxChanged}
		require.ErrorIs(t, coll.DestroyPU(context.Background(), ev), cni.ErrNewestSandbox)
		rt.set(nil, listed("a", "u1", true, time.Now())) // a is the pod's current sandbox
		_, err := coll.ListPUs(context.Background())
		require.NoError(t, err)
		time.Sleep(time.Hour)
		rt.set(nil, listed("current", "u1", true, time.Now().Add(-2*time.Hour))) // a listed no more
		err = coll.DestroyPU(context.Background(), ev)
		require.ErrorIs(t, err, cni.ErrNewestSandbox, "refused before it was current: timed anew")
		require.False(t, ports.IsPermanent(err))
		time.Sleep(5 * time.Minute)
		err = coll.DestroyPU(context.Background(), ev)
		require.ErrorIs(t, err, cni.ErrOrderUnknown, "refused for the timeout since")
		require.True(t, c.exists(a))
	})
}

// The API says the pod is gone, but the runtime still runs a ready sandbox
// of its UID (a static pod whose mirror pod is missing): nothing is freed,
// and the error is a plain one, checked again; once the runtime stops the
// sandbox, everything of the UID is freed. A runtime that cannot be asked
// keeps everything too.
func TestAPodTheRuntimeStillRunsIsNeverFreed(t *testing.T) {
	c := newCacheDir(t)
	f := c.write(entry{network: "podnet", sandbox: "static", uid: "u1", namespace: "kube-system", name: "etcd-node-a"})
	rt := &listedRuntime{}
	rt.set(nil, listed("static", "u1", true, time.Now().Add(-time.Minute)))
	coll := c.collectorWith(rt, 0)
	ctx := context.Background()
	for _, reason := range []ports.Reason{ports.ReasonPodGone, ports.ReasonUIDChanged, ports.ReasonNodeChanged, ports.ReasonPodTerminated} {
		err := coll.DestroyPU(ctx, ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, SandboxID: "static", Reason: reason})
		require.ErrorIs(t, err, cni.ErrSandboxRunning, reason)
		require.False(t, ports.IsPermanent(err), reason)
	}
	rt.set(errors.New("runtime down"))
	err := coll.DestroyPU(ctx, ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, Reason: ports.ReasonPodGone})
	require.ErrorContains(t, err, "runtime down")
	require.False(t, ports.IsPermanent(err))
	require.Empty(t, c.delCalls())
	require.True(t, c.exists(f))

	rt.set(nil, listed("static", "u1", false, time.Now().Add(-time.Minute)))
	require.NoError(t, coll.DestroyPU(ctx, ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, Reason: ports.ReasonPodGone}))
	require.False(t, c.exists(f))
}

// SandboxDead, the engine's SandboxProber: a sandbox the runtime lists
// stopped is dead, a ready one is not; one it does not list is dead only
// once the network namespace it was added with is gone (a sandbox being
// created has its namespace). Without a Runtime, only one whose namespace
// is gone is known to be dead; a Runtime that cannot be asked is an error,
// which keeps the PU.
func TestSandboxDeadAsksTheRuntimeThenTheNamespace(t *testing.T) {
	c := newCacheDir(t)
	c.write(entry{network: "podnet", sandbox: "stopped", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
	c.write(entry{network: "podnet", sandbox: "ready", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Minute})
	gone := c.write(entry{network: "podnet", sandbox: "gone", uid: "u1", namespace: "ns", name: "pod-u1", age: 2 * time.Hour})
	c.withNetNS(gone, filepath.Join(t.TempDir(), "no-such-netns"))
	creating := c.write(entry{network: "podnet", sandbox: "creating", uid: "u1", namespace: "ns", name: "pod-u1"})
	c.withNetNS(creating, "/proc/self/ns/net")
	rt := &listedRuntime{}
	rt.set(nil, listed("stopped", "u1", false, time.Now().Add(-time.Hour)), listed("ready", "u1", true, time.Now().Add(-time.Minute)))
	coll := c.collectorWith(rt, 0)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-u1", UID: "u1"}}
	dead := func(coll *cni.Collector, id string) bool {
		t.Helper()
		ok, err := coll.SandboxDead(context.Background(), pod, id)
		require.NoError(t, err)
		return ok
	}

	require.True(t, dead(coll, "stopped"), "listed stopped")
	require.False(t, dead(coll, "ready"), "listed ready")
	require.True(t, dead(coll, "gone"), "not listed, its namespace gone")
	require.False(t, dead(coll, "creating"), "not listed, a namespace there: perhaps being created")
	// Neither listed nor cached: nothing of it is left to free (its PU moves on to the pod's next sandbox; a
	// DestroyPU of it frees nothing, and decides anew on what the cache holds by then).
	require.True(t, dead(coll, "unknown"), "neither listed nor cached")
	require.False(t, dead(c.collectorWith(nil, 0), "unknown"), "no Runtime: not known gone")
	require.False(t, dead(c.collectorWith(nil, 0), "stopped"), "no Runtime: a sandbox whose namespace tells nothing is not known dead")
	require.True(t, dead(c.collectorWith(nil, 0), "gone"), "no Runtime: its namespace gone, it is dead")

	rt.set(errors.New("runtime down"))
	_, err := coll.SandboxDead(context.Background(), pod, "stopped")
	require.Error(t, err)
	_, err = coll.SandboxDead(context.Background(), pod, "")
	require.Error(t, err, "no sandbox ID")

	// The engine then destroys the PU for SandboxDead: only that sandbox's
	// attachments go.
	rt.set(nil, listed("ready", "u1", true, time.Now().Add(-time.Minute)))
	ev := ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, SandboxID: "gone", Reason: ports.ReasonSandboxDead}
	require.NoError(t, coll.DestroyPU(context.Background(), ev))
	require.False(t, c.exists(gone))
	require.True(t, c.exists(creating), "the others are kept")
	ev.SandboxID = "creating"
	require.ErrorIs(t, coll.DestroyPU(context.Background(), ev), cni.ErrNewestSandbox, "a sandbox that may be being created is kept")
}

// SandboxDead tells of the sandbox asked about by its ID, whatever the
// runtime's labels say ("a sandbox listed by its ID tells of that ID"): one
// the runtime lists stopped without the pod's label, with no cache entry,
// is told as the same sandbox listed with the label is.
func TestSandboxDeadOfAnUnlabeledSandboxIsThatOfALabeledOne(t *testing.T) {
	c := newCacheDir(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-u1", UID: "u1"}}
	for _, ready := range []bool{false, true} {
		labeled := listed("sb", "u1", ready, time.Now().Add(-time.Hour))
		unlabeled := listed("sb", "", ready, time.Now().Add(-time.Hour))
		unlabeled.Labels = nil
		var got [2]bool
		for i, sb := range []*runtimeapi.PodSandbox{labeled, unlabeled} {
			rt := &listedRuntime{}
			rt.set(nil, sb)
			dead, err := c.collectorWith(rt, 0).SandboxDead(context.Background(), pod, "sb")
			require.NoError(t, err)
			got[i] = dead
		}
		require.Equal(t, got[0], got[1], "listed ready=%v: labeled dead=%v, unlabeled dead=%v", ready, got[0], got[1])
		require.Equal(t, !ready, got[0], "listed ready=%v", ready)
	}
}

// ListPUs: "Of a pod's sandboxes, one a DEL of DestroyPU failed on comes after the others but its ready one, so that
// one that cannot be freed holds none of them" (the package doc's "One PU per pod, its oldest sandbox first";
// examples/cni-gc/README.md: "passed over for the later ones"). A live pod runs in s3; the runtime lists s1 stopped;
// s2, created after s1, is listed stopped too, or not listed, its namespace telling nothing (row 6 frees it: the pod
// has a newer one). s1's network ran a plugin since removed, so its DEL fails every time. Once it failed, the pod is
// listed with s2, which is freed; then with s1 again, the one sandbox left but the current, which is retried.
func TestASandboxWhoseDELFailsHoldsNoLaterOne(t *testing.T) {
	for _, s2Listed := range []bool{true, false} {
		t.Run(map[bool]string{true: "s2 stopped", false: "s2 not listed"}[s2Listed], func(t *testing.T) {
			c := newCacheDir(t)
			now := time.Now()
			s1 := c.write(entry{network: "old", sandbox: "s1", uid: "u1", namespace: "ns", name: "pod-u1", age: 3 * time.Hour,
				config: `{"cniVersion":"1.1.0","name":"old","plugins":[{"type":"removed-plugin"}]}`})
			s2 := c.write(entry{network: "podnet", sandbox: "s2", uid: "u1", namespace: "ns", name: "pod-u1", age: 2 * time.Hour})
			s3 := c.write(entry{network: "podnet", sandbox: "s3", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
			sbs := []*runtimeapi.PodSandbox{listed("s1", "u1", false, now.Add(-3*time.Hour)), listed("s3", "u1", true, now.Add(-time.Hour))}
			if s2Listed {
				sbs = append(sbs, listed("s2", "u1", false, now.Add(-2*time.Hour)))
			}
			rt := &listedRuntime{}
			rt.set(nil, sbs...)
			coll := c.collectorWith(rt, 0)
			listedWith := func() string { return onlySandboxListed(t, coll) }
			changed := func(sb string) error {
				return coll.DestroyPU(t.Context(), ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, SandboxID: sb, Reason: ports.ReasonSandboxChanged})
			}
			require.Equal(t, "s1", listedWith(), "the oldest, dead, first")
			require.Error(t, changed("s1"), "its plugin is gone")
			require.True(t, c.exists(s1))
			require.Equal(t, "s2", listedWith(), "the next sandbox, past the one whose DEL failed")
			require.NoError(t, changed("s2"))
			require.False(t, c.exists(s2), "freed")
			require.Equal(t, "s1", listedWith(), "the one left but the current, retried")
			require.True(t, c.exists(s3), "the current one is kept")
		})
	}
}

// ListPUs: a sandbox a DEL failed on comes after the pod's others that may go, "and before those that may not, so
// that it is tried again". A live pod runs in no sandbox yet: its s1 is dead (listed stopped), and a later s2 may be
// being created (not listed, its namespace there), which no row frees while the pod lives. Once s1's DEL failed (its
// plugin answered an error once), the pod is still listed with s1: its PU is checked again and s1 freed, not moved to
// s2 for good, where SandboxDead is false and s1 would leak.
func TestASandboxWhoseDELFailedIsTriedAgainBeforeOneThatMayNotGo(t *testing.T) {
	c := newCacheDir(t)
	now := time.Now()
	fails := filepath.Join(t.TempDir(), "fail-once")
	require.NoError(t, os.WriteFile(fails, nil, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(c.plugins, "flaky"), []byte("#!/bin/sh\ncat >/dev/null\nif [ -e "+fails+
		" ]; then rm -f "+fails+"; echo '{\"cniVersion\":\"1.1.0\",\"code\":11,\"msg\":\"try again later\"}'; exit 1; fi\n"), 0o755))
	s1 := c.write(entry{network: "old", sandbox: "s1", uid: "u1", namespace: "ns", name: "pod-u1", age: 2 * time.Hour,
		config: `{"cniVersion":"1.1.0","name":"old","plugins":[{"type":"flaky"}]}`})
	s2 := c.write(entry{network: "podnet", sandbox: "s2", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
	c.withNetNS(s2, presentNetNS(t))
	rt := &listedRuntime{}
	rt.set(nil, listed("s1", "u1", false, now.Add(-2*time.Hour)))
	coll := c.collectorWith(rt, 0)
	listedWith := func() string { return onlySandboxListed(t, coll) }
	dead := func(sb string) bool {
		d, err := coll.SandboxDead(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-u1", UID: "u1"}}, sb)
		require.NoError(t, err)
		return d
	}
	destroy := func() error {
		return coll.DestroyPU(t.Context(), ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, SandboxID: "s1", Reason: ports.ReasonSandboxDead})
	}
	require.Equal(t, "s1", listedWith(), "the dead one first")
	require.True(t, dead("s1"))
	require.False(t, dead("s2"), "being created, for all the collector knows")
	require.Error(t, destroy(), "its DEL fails once")
	require.True(t, c.exists(s1))
	require.Equal(t, "s1", listedWith(), "still first: s2 may not go while the pod lives")
	require.NoError(t, destroy(), "tried again")
	require.False(t, c.exists(s1), "freed")
	require.True(t, c.exists(s2), "kept")
}

// onlySandboxListed returns the sandbox ListPUs lists the one PU it lists with.
func onlySandboxListed(t *testing.T, coll *cni.Collector) string {
	t.Helper()
	pus, err := coll.ListPUs(t.Context())
	require.NoError(t, err)
	require.Len(t, pus, 1)
	return pus[0].SandboxID
}
