package cni_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// What the Runtime tells keeps a pod's network: a sandbox being created,
// one listed ready, and a namespace named through a link into /proc; and a
// restored cache's times lose no leaked sandbox.

// A static pod whose mirror pod is missing (row 1, PodGone, confirmed) and
// whose sandbox is being re-created: the runtime lists its old sandbox
// stopped and does not list the new one yet, whose ADD has succeeded (its
// cache entry is there) and whose network namespace is present. "A sandbox
// being created (not listed yet, netns present) is never dead" and "gone
// needs two sources": the new sandbox's attachment must not be DELed, or
// the static pod starts without its network. Also the first sandbox of a
// static pod after a reboot, before the runtime lists it.
func TestASandboxBeingCreatedOfAStaticPodWithoutItsMirrorIsNeverFreed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		listOld bool
	}{
		{name: "its old sandbox listed stopped", listOld: true},
		{name: "no sandbox listed yet (after a reboot)", listOld: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCacheDir(t)
			old := c.write(entry{network: "podnet", sandbox: "old", uid: "u1", namespace: "kube-system", name: "static-node-a", age: 10 * time.Minute})
			c.withNetNS(old, filepath.Join(t.TempDir(), "cni-old-gone"))
			creating := c.write(entry{network: "podnet", sandbox: "creating", uid: "u1", namespace: "kube-system", name: "static-node-a"})
			c.withNetNS(creating, presentNetNS(t)) // present, as the runtime pins it before ADD
			rt := &listedRuntime{}
			if tc.listOld {
				rt.set(nil, listed("old", "u1", false, time.Now().Add(-10*time.Minute)))
			}
			coll := c.collectorWith(rt, 0)
			ev := ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, SandboxID: "old", Reason: ports.ReasonPodGone}
			err := coll.DestroyPU(context.Background(), ev)
			require.True(t, c.exists(creating), "the attachment of the sandbox being created was freed (DestroyPU: %v)", err)
			require.NotContains(t, c.delCalls(), "DEL:creating", "a DEL ran on the sandbox being created")
		})
	}
}

// A cached netns path outside /proc that is a symbolic link to
// /proc/<pid>/ns/net (the `ln -s /proc/$pid/ns/net /var/run/netns/$name`
// that `ip netns` users make) names whatever namespace the process of that
// PID is in now, an unrelated live one once the PID is reused. "DEL gets a
// cached netns only when it is a bind-mounted nsfs outside /proc": it must
// run with an empty CNI_NETNS.
func TestADELNeverGetsANetnsThatLinksIntoProc(t *testing.T) {
	c := newCacheDir(t)
	script := fmt.Sprintf("#!/bin/sh\necho \"$CNI_COMMAND netns=$CNI_NETNS\" >> %s\n", c.calls)
	require.NoError(t, os.WriteFile(filepath.Join(c.plugins, "nslogger"), []byte(script), 0o755))
	netnsDir := t.TempDir() // stands for /run/netns
	link := filepath.Join(netnsDir, "sandbox-ns")
	require.NoError(t, os.Symlink(fmt.Sprintf("/proc/%d/ns/net", os.Getpid()), link))
	f := c.write(entry{network: "podnet", sandbox: "sb1", uid: "u1", namespace: "ns", name: "pod-u1",
		config: `{"cniVersion":"1.1.0","name":"podnet","plugins":[{"type":"nslogger"}]}`})
	c.withNetNS(f, link)
	rt := &listedRuntime{}
	rt.set(nil, listed("sb1", "u1", false, time.Now().Add(-time.Minute))) // stopped, its namespace still there
	coll := c.collectorWith(rt, 0)
	require.NoError(t, coll.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, Reason: ports.ReasonPodGone}))
	b, err := os.ReadFile(c.calls)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.True(t, slices.Contains(lines, "DEL netns="), "the DEL ran in the namespace of whatever process has the PID now: %q", lines)
}

// A restored cache: the leaked sandbox's entry was written (restored) after
// the entry of the sandbox the runtime is creating, and the runtime lists
// neither yet. "A pod with leaked sandboxes frees them oldest first and
// keeps the current one" and "nothing that must go is lost": the engine and
// Resync, wired as examples/cni-gc wires them, free the leaked sandbox
// while the pod runs, whatever the cache's times say. After a reboot its
// network namespace is gone: it is dead, and its PU's from the start. When
// it is there (a cache copied from a live node), the PU takes the sandbox
// being created, by the times; once the runtime lists that one ready, and
// created after the leaked one's entry was written, ListPUs lists the
// leaked one, and Resync must move the PU onto it (Track being
// insert-only, a PU left on the current sandbox is kept by row 9 for as
// long as the pod runs).
func TestALeakedSandboxIsFreedWhenARestoredCacheMadeTheCurrentOneLookOlder(t *testing.T) {
	for _, tc := range []struct {
		name       string
		leakedGone bool
	}{
		{name: "its network namespace gone (a reboot)", leakedGone: true},
		{name: "its network namespace there (a copied cache)", leakedGone: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCacheDir(t)
				current := c.write(entry{network: "podnet", sandbox: "current", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Minute})
				c.withNetNS(current, presentNetNS(t)) // present: being created
				leaked := c.write(entry{network: "podnet", sandbox: "leaked", uid: "u1", namespace: "ns", name: "pod-u1"})
				if tc.leakedGone {
					c.withNetNS(leaked, filepath.Join(t.TempDir(), "cni-leaked-gone"))
				} else {
					c.withNetNS(leaked, presentNetNS(t))
				}
				rt := &listedRuntime{}
				coll := c.collectorWith(rt, 0)

				var sandbox atomic.Value
				sandbox.Store("")
				engine := gcEngine(t, coll, gcWiring{sandbox: func() string { return sandbox.Load().(string) }})
				ctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				wg.Go(func() { _ = engine.Start(ctx) })
				synctest.Wait() // the Inventory's list, before Resync begins from it
				wg.Go(func() { _ = coll.Resync(ctx, engine) })
				defer func() { cancel(); wg.Wait() }()

				time.Sleep(20 * time.Second) // the pod waits for its sandbox
				require.True(t, c.exists(current))
				if !tc.leakedGone {
					require.True(t, c.exists(leaked), "a sandbox the runtime may be creating is kept")
					// The runtime lists the sandbox it was creating, ready, created
					// after the leaked one's entry was written.
					rt.set(nil, listed("current", "u1", true, time.Now()))
					sandbox.Store("current")
					pus, err := c.collectorWith(rt, 0).ListPUs(ctx) // another collector: what this one would list
					require.NoError(t, err)
					require.Equal(t, []ports.PU{pu("u1", "leaked")}, pus, "the collector lists the leaked sandbox first now")
				}

				time.Sleep(10 * time.Minute) // ten resyncs, a hundred sweeps
				require.True(t, c.exists(current), "the current sandbox is kept")
				require.False(t, c.exists(leaked), "the leaked sandbox of a running pod is still held (engine's PU: %v)", engine.Status())
			})
		})
	}
}

// presentNetNS returns the path of a file that stands for a sandbox's
// network namespace, pinned under /run/netns by the runtime (a bind mount
// of nsfs needs root; the collector takes a file there as a namespace it
// may not see mounted).
func presentNetNS(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cni-present")
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	return path
}

// gcWiring is how gcEngine wires the engine's ports.
type gcWiring struct {
	// sandbox is the SandboxExtractor's answer, and the Collector the
	// SandboxProber; nil: neither.
	sandbox func() string
	// gone makes the pod read as not found while it reports true; nil: never.
	gone func() bool
	// observer is the engine's; nil: none.
	observer deletion.Observer
}

// gcEngine returns an engine over coll as examples/cni-gc wires one (the
// Collector its Inventory, PolicyHandler and Requeuer), for the pod
// ns/pod-u1 of UID u1 on node-a.
func gcEngine(t *testing.T, coll *cni.Collector, w gcWiring) *deletion.Engine {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-u1", UID: "u1"}, Spec: corev1.PodSpec{NodeName: "node-a"}}
	opts := deletion.Options{NodeName: "node-a", Inventory: coll, Requeuer: coll, Observer: w.observer, Logger: quiet()}
	if w.sandbox != nil {
		opts.SandboxProber = coll
		opts.SandboxExtractor = ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) { return w.sandbox(), nil })
	}
	engine, err := deletion.New(ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
		if w.gone != nil && w.gone() {
			return nil, ports.ErrPodNotFound
		}
		return pod.DeepCopy(), nil
	}), coll, opts)
	require.NoError(t, err)
	return engine
}

// quiet is a Logger that drops everything (the zero Logger means klog).
func quiet() logr.Logger { return funcr.New(func(string, string) {}, funcr.Options{}) }

// A runtime's answer that cannot be told from nonsense: the same sandbox
// listed twice, ready and stopped (a CRI proxy merging two answers, a list
// read while the runtime rewrites its store). "It never frees a pod of which
// the runtime lists a ready sandbox, whatever the API says", and an answer
// that cannot be told from an error keeps the PU: the running static pod
// keeps its network, and the sandbox is not "dead" for the SandboxProber.
func TestASandboxListedReadyIsNeverFreedEvenWhenAlsoListedStopped(t *testing.T) {
	c := newCacheDir(t)
	f := c.write(entry{network: "podnet", sandbox: "static", uid: "u1", namespace: "kube-system", name: "static-node-a"})
	rt := &listedRuntime{}
	created := time.Now().Add(-time.Minute)
	rt.set(nil, listed("static", "u1", true, created), listed("static", "u1", false, created))
	coll := c.collectorWith(rt, 0)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "static-node-a", UID: "u1"}}
	dead, err := coll.SandboxDead(context.Background(), pod, "static")
	assert.False(t, dead && err == nil, "a sandbox the runtime lists ready is dead for the prober")
	err = coll.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, SandboxID: "static", Reason: ports.ReasonPodGone})
	assert.True(t, c.exists(f), "the attachment of a sandbox the runtime lists ready was freed (DestroyPU: %v)", err)
}

// "A running sandbox the runtime lists without an ID may be any sandbox: ... one that names no pod either makes
// the runtime's answer a failure (nothing is decided on it)" (doc.go): a nil sandbox in a Go Runtime's answer reads,
// through the CRI getters, as one of no ID, no pod, ready; it makes the answer a failure as an empty one does, and
// the gone pod's attachment is kept.
func TestANilSandboxInTheRuntimesAnswerDecidesNothing(t *testing.T) {
	for name, sb := range map[string]*runtimeapi.PodSandbox{"empty": {}, "nil": nil} {
		c := newCacheDir(t)
		f := c.write(entry{network: "podnet", sandbox: "s1", uid: "u1", namespace: "ns", name: "pod-u1"})
		rt := &listedRuntime{}
		rt.set(nil, sb)
		coll := c.collectorWith(rt, 0)
		err := coll.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, SandboxID: "s1", Reason: ports.ReasonPodGone})
		assert.True(t, err != nil && c.exists(f) && len(c.delCalls()) == 0,
			"%s sandbox listed: DestroyPU answered %v and ran DELs %v; want a failure and the attachment kept", name, err, c.delCalls())
	}
}

// Collector.DestroyPU: for ports.ReasonSandboxChanged and ports.ReasonSandboxDead, "those of ev.SandboxID only ... An
// attachment gone already ... is nothing to do, so DestroyPU is idempotent". A sandbox change of sbS, which the cache
// no longer holds, while the Runtime cannot be asked, is nothing to do whether or not the cache holds an entry it
// cannot use of the pod's other sandbox sbT: the event is not of that one.
func TestAGoneSandboxIsNothingToDoBesideAnotherSandboxsUnusableEntry(t *testing.T) {
	c := newCacheDir(t)
	c.write(entry{network: "podnet", sandbox: "sbT", uid: "u1", namespace: "ns", name: "pod-u1",
		config: `{"cniVersion":"1.1.0","name":"podnet","plugins":[]}`}) // runs no plugin: not usable
	rt := &listedRuntime{}
	rt.set(errors.New("rpc error: code = Unavailable desc = connection refused"))
	coll := c.collectorWith(rt, 0)
	for _, reason := range []ports.Reason{ports.ReasonSandboxChanged, ports.ReasonSandboxDead} {
		ev := ports.DestroyEvent{PUID: "u1", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-u1"}, SandboxID: "sbS", Reason: reason}
		require.NoError(t, coll.DestroyPU(t.Context(), ev), "%s of a sandbox the cache no longer holds", reason)
		require.NoError(t, coll.DryRunDestroyPU(t.Context(), ev), "%s of a sandbox the cache no longer holds (dry run)", reason)
	}
	require.Empty(t, c.delCalls())
}
