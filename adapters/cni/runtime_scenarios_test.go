package cni_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// Scenarios on the real plugins where the collector asks the runtime
// (cni.Options.Runtime) and where the cached network namespace is not one
// to trust; see main_test.go for the namespaces they run in.

// liveNamespace starts a process in a network namespace of its own and
// returns the /proc path of that namespace: what a runtime that does not
// pin namespaces caches, and what, once the PID is reused, names an
// unrelated live namespace.
func liveNamespace(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid)
}

// eth0In returns whether the namespace at path has an eth0.
func eth0In(t *testing.T, path string) bool {
	t.Helper()
	return exec.Command("nsenter", "--net="+path, "ip", "link", "show", "eth0").Run() == nil
}

// A cache entry whose netns is a /proc/<pid>/ns/net path is DELed without
// it: the namespace that path names now (here a live one, as after the
// PID's reuse) keeps its eth0, while the address and the cache entry are
// freed.
func TestACachedProcNetNSIsNeverEntered(t *testing.T) {
	needAPI(t)
	n := newNode(t)
	p := n.createPod("web")
	live := liveNamespace(t)
	sb := n.addIn(p, randomID(), live)
	require.True(t, eth0In(t, live), "the ADD made eth0 in the live namespace")
	deletePod(t, p)
	// Not listed, its path there: the runtime may be creating it, until
	// NewestSandboxTimeout.
	a := n.startAgent(agentOptions{runtime: &currentSandboxes{}, newestTimeout: 2 * time.Second})
	eventually(t, freeTimeout, func() bool { return len(n.cached(sb)) == 0 && len(n.addresses(sb)) == 0 }, "the attachment freed")
	// The DEL frees the attachment before DestroyPU returns and the engine tells EventDestroyed.
	eventually(t, freeTimeout, func() bool { return a.events.count(deletion.EventDestroyed, p) == 1 }, "the PU destroyed")
	require.True(t, eth0In(t, live), "the live namespace's eth0 survives the DEL")
	log, err := os.ReadFile(n.callLog)
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		if strings.HasPrefix(line, "DEL ") {
			require.True(t, strings.HasSuffix(line, " netns="), "DEL without a namespace: %s", line)
		}
	}
}

// setWritten sets the modification time of every cache entry of sb.
func (n *node) setWritten(sb *sandbox, when time.Time) {
	n.t.Helper()
	for _, f := range n.cached(sb) {
		require.NoError(n.t, os.Chtimes(filepath.Join(n.cacheDir, "results", f), when, when))
	}
}

// A restored cache gives a leaked sandbox and the current one the same
// write time, or the leaked one a later one. The runtime's CreatedAt of
// the current sandbox, and the leaked one's namespace being gone, free it
// at once instead of an ErrNewestSandbox retried forever; the current one
// is kept.
func TestEqualOrReorderedWriteTimesDoNotKeepALeakForever(t *testing.T) {
	needAPI(t)
	for _, tc := range []struct {
		name   string
		leaked time.Duration // the leaked entry's time, relative to the current one's
	}{
		{name: "equal", leaked: 0},
		{name: "reordered", leaked: time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t)
			p := n.createPod("web")
			leaked := n.add(p)
			n.removeNetNS(leaked) // the runtime gave up on it without DEL
			current := n.add(p)
			runtime := &currentSandboxes{}
			runtime.set(p, current)
			restored := time.Now().Add(time.Hour)
			n.setWritten(current, restored)
			n.setWritten(leaked, restored.Add(tc.leaked))
			a := n.startAgent(agentOptions{sandboxes: runtime, runtime: runtime})
			eventually(t, freeTimeout, func() bool { return n.freed(leaked) }, "the leaked sandbox freed")
			n.requireFreed(leaked)
			a.settle(t)
			n.requireIntact(current)
			require.Equal(t, ports.ReasonSandboxChanged, a.events.destroyed(t, p).Reason)
		})
	}
}

// Written at the same instant, not listed by the runtime and its network
// namespace alive, a sandbox's place cannot be told: it is refused for
// NewestSandboxTimeout, then given up once (a permanent error), and never
// tried again, its attachments kept.
func TestASandboxOfUnknownOrderIsGivenUpNotRetriedForever(t *testing.T) {
	needAPI(t)
	n := newNode(t)
	p := n.createPod("web")
	unknown := n.add(p)
	current := n.add(p)
	runtime := &currentSandboxes{}
	runtime.set(p, current)
	// Both entries written at the same instant, after the current sandbox
	// was created: by time, the other one may be newer.
	restored := time.Now().Add(time.Hour)
	n.setWritten(current, restored)
	n.setWritten(unknown, restored)
	a := n.startAgent(agentOptions{sandboxes: runtime, runtime: runtime, newestTimeout: time.Second})
	eventually(t, freeTimeout, func() bool { return a.events.count(deletion.EventDestroyFailed, p) >= 1 }, "the destroy refused")
	before := a.events.count(deletion.EventDestroyFailed, p)
	time.Sleep(3 * time.Second) // the timeout, and more destroys would have been tried
	a.settle(t)
	given := a.events.count(deletion.EventDestroyFailed, p)
	time.Sleep(2 * time.Second)
	a.settle(t)
	require.Equal(t, given, a.events.count(deletion.EventDestroyFailed, p), "no destroy tried after giving up")
	require.GreaterOrEqual(t, given, before)
	failed := a.events.of(deletion.EventDestroyFailed, p)
	require.ErrorIs(t, failed[len(failed)-1].Err, cni.ErrOrderUnknown, "the last refusal gave up")
	n.requireIntact(unknown)
	n.requireIntact(current)
	require.Zero(t, a.events.count(deletion.EventDestroyed, p))
}

// A static pod whose mirror pod is missing (the API has no pod of its
// UID at all) runs in a ready sandbox the runtime lists: its network is
// never freed, its eth0 never deleted, however often the engine finds it
// gone; once the runtime stops the sandbox, it is freed.
func TestAStaticPodWithoutItsMirrorKeepsItsNetwork(t *testing.T) {
	needAPI(t)
	n := newNode(t)
	p := pod{Namespace: "kube-system", Name: "etcd-" + nodeName, UID: "6f1d4e1c52ad6a7c0d4b3fd1a7b1cc9e"}
	sb := n.add(p)
	runtime := &currentSandboxes{}
	runtime.set(p, sb)
	a := n.startAgent(agentOptions{sandboxes: runtime, runtime: runtime})
	eventually(t, freeTimeout, func() bool { return a.events.count(deletion.EventDestroyFailed, p) >= 3 }, "three destroys refused")
	a.settle(t)
	n.requireIntact(sb)
	require.True(t, eth0In(t, sb.NetNS), "its eth0")
	require.Zero(t, a.events.count(deletion.EventDestroyed, p))

	runtime.stop(p, sb)
	eventually(t, 2*time.Minute, func() bool { return n.freed(sb) }, "freed once the runtime stopped it")
	require.Equal(t, ports.ReasonPodGone, a.events.destroyed(t, p).Reason)
}
