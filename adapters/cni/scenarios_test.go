package cni_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// Scenarios on the real plugins, with pods on a real API server; see
// main_test.go for the namespaces they run in.

// freeTimeout bounds the wait for a free that the engine decides within a
// sweep (100ms) and a resync (200ms).
const freeTimeout = 15 * time.Second

// settle runs one more pass of the agent over everything the cache holds,
// and waits for it: a list as Resync's, and a Sweep of the engine.
func (a *agent) settle(t *testing.T) {
	t.Helper()
	pus, err := a.collector.ListPUs(context.Background())
	require.NoError(t, err)
	for _, pu := range pus {
		require.NoError(t, a.engine.Track(pu))
	}
	ctx, cancel := context.WithTimeout(context.Background(), freeTimeout)
	defer cancel()
	a.engine.Sweep(ctx)
}

func TestPodDeletedWithoutDELIsFreedOnce(t *testing.T) {
	needAPI(t)
	for _, tc := range []struct {
		name      string
		netnsGone bool
	}{
		{name: "its network namespace still there", netnsGone: false},
		{name: "its network namespace gone with the sandbox", netnsGone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t, network{name: "second"})
			p := n.createPod("web")
			sb := n.add(p)
			other := n.add(n.createPod("other"))
			n.requireIntact(sb)
			deletePod(t, p)
			// The runtime lists the other pod's sandbox ready; the deleted
			// pod's stopped (its DEL never ran), or not at all once its
			// namespace is gone.
			runtime := &currentSandboxes{}
			runtime.set(other.Pod, other)
			if tc.netnsGone {
				n.removeNetNS(sb)
			} else {
				runtime.stop(p, sb)
			}
			a := n.startAgent(agentOptions{sandboxes: runtime, runtime: runtime})
			eventually(t, freeTimeout, func() bool { return n.freed(sb) }, "the attachments of the deleted pod freed")
			a.settle(t)
			a.settle(t)
			n.requireFreed(sb)
			n.requireIntact(other)
			require.Equal(t, 1, a.events.count(deletion.EventDestroyed, p), "one destroy")
			require.Equal(t, ports.ReasonPodGone, a.events.destroyed(t, p).Reason)
		})
	}
}

// lagging is a pod cache that has not seen any pod yet: it answers not
// found for every one.
var lagging = ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
	return nil, ports.ErrPodNotFound
})

func TestLivePodIsNeverFreed(t *testing.T) {
	needAPI(t)
	n := newNode(t, network{name: "second"})
	p := n.createPod("web")
	sb := n.add(p)
	current := &currentSandboxes{}
	current.set(p, sb)

	// A cache that lags says the pod is gone at every check; the API
	// server's direct read vetoes each destroy.
	a := n.startAgent(agentOptions{getter: lagging, sandboxes: current})
	eventually(t, freeTimeout, func() bool { return a.events.count(deletion.EventVetoed, p) >= 20 }, "20 destroys vetoed")
	a.stop()
	n.requireIntact(sb)

	// The agent restarts: the cache restores the PU, with its sandbox.
	a = n.startAgent(agentOptions{sandboxes: current})
	eventually(t, freeTimeout, func() bool { return a.events.count(deletion.EventChecked, p) >= 20 }, "20 checks after the restart")
	a.settle(t)
	a.stop()
	n.requireIntact(sb)
	require.Zero(t, a.events.count(deletion.EventDestroyed, p))
}

// A static pod's attachments carry the UID the kubelet runs it under, not
// its mirror pod's: read through k8s.StaticPodUIDs, as examples/cni-gc
// reads pods, the mirror is that pod, and its attachment is kept.
func TestStaticPodIsKeptThroughItsMirrorPod(t *testing.T) {
	needAPI(t)
	n := newNode(t)
	p := n.createMirrorPod("etcd-"+nodeName, "6f1d4e1c52ad6a7c0d4b3fd1a7b1cc9e")
	sb := n.add(p)
	current := &currentSandboxes{}
	current.set(p, sb)
	a := n.startAgent(agentOptions{sandboxes: current})
	eventually(t, freeTimeout, func() bool { return a.events.count(deletion.EventChecked, p) >= 20 }, "20 checks")
	a.settle(t)
	n.requireIntact(sb)
	require.Zero(t, a.events.count(deletion.EventDestroyed, p))
}

func TestLeakedSandboxBesideTheCurrentOneIsFreed(t *testing.T) {
	needAPI(t)
	n := newNode(t, network{name: "second"})
	p := n.createPod("web")
	current := &currentSandboxes{}
	a := n.startAgent(agentOptions{sandboxes: current, runtime: current})

	// The first sandbox's ADDs succeed but it never becomes ready (the
	// runtime gave up on it without DEL), while the agent runs.
	leaked := n.add(p)
	eventually(t, freeTimeout, func() bool { return a.events.count(deletion.EventTracked, p) >= 1 }, "the pod's PU tracked from the cache")
	a.settle(t)
	n.requireIntact(leaked) // no ready sandbox yet: nothing is known

	// The kubelet's next attempt becomes the pod's sandbox.
	now := n.add(p)
	current.set(p, now)
	eventually(t, freeTimeout, func() bool { return n.freed(leaked) }, "the leaked sandbox freed")
	n.requireFreed(leaked)
	require.Equal(t, ports.ReasonSandboxChanged, a.events.destroyed(t, p).Reason)

	// The current sandbox is tracked next, and kept; so is a newer one
	// the runtime is still creating (not ready: not reported).
	creating := n.add(p)
	eventually(t, freeTimeout, func() bool {
		return a.events.count(deletion.EventTracked, p) >= 2 && a.events.count(deletion.EventChecked, p) >= 20
	}, "the current sandbox's PU tracked and checked")
	a.settle(t)
	n.requireIntact(now)
	n.requireIntact(creating)

	// Once the newer one is the pod's, the one before goes (its DEL
	// failed in the runtime, say), and the newest stays.
	current.set(p, creating)
	eventually(t, freeTimeout, func() bool { return n.freed(now) }, "the replaced sandbox freed")
	a.settle(t)
	n.requireFreed(now)
	n.requireIntact(creating)
}

func TestPodRecreatedUnderItsNameFreesTheOldOne(t *testing.T) {
	needAPI(t)
	n := newNode(t)
	old := n.createPod("db-0")
	oldSB := n.add(old)
	deletePod(t, old)
	n.removeNetNS(oldSB)
	p := n.createPod("db-0")
	require.NotEqual(t, old.UID, p.UID)
	sb := n.add(p)
	current := &currentSandboxes{}
	current.set(p, sb)

	a := n.startAgent(agentOptions{sandboxes: current})
	eventually(t, freeTimeout, func() bool { return n.freed(oldSB) }, "the old pod's attachments freed")
	a.settle(t)
	n.requireFreed(oldSB)
	n.requireIntact(sb)
	require.Equal(t, ports.ReasonUIDChanged, a.events.destroyed(t, old).Reason)
}

func TestFailingDELIsRetriedWithBackoffUntilItSucceeds(t *testing.T) {
	needAPI(t)
	n := newNode(t)
	p := n.createPod("web")
	sb := n.add(p)
	live := n.createPod("live")
	liveSB := n.add(live)
	current := &currentSandboxes{}
	current.set(live, liveSB)
	deletePod(t, p)
	current.stop(p, sb) // its DEL never ran
	require.NoError(t, os.WriteFile(n.failFile, nil, 0o644))

	a := n.startAgent(agentOptions{sandboxes: current, runtime: current})
	eventually(t, freeTimeout, func() bool { return a.events.count(deletion.EventDestroyFailed, p) >= 4 }, "4 failed DELs")
	// Nothing is lost while DEL fails: the bridge network's entry and
	// address stay (the loopback's DEL succeeded at the first call).
	require.Equal(t, []string{"podnet-" + sb.ID + "-eth0"}, n.cached(sb))
	require.Len(t, n.addresses(sb), 1)
	require.Len(t, n.veths(sb), 1)
	// The retries back off (RetryMinDelay 20ms, doubled: 20, 40, 80, 160ms
	// after the first four failures), measured from each failure's event so
	// that how long a DEL took on a loaded machine does not count.
	waits := a.events.retryWaits(p)
	require.Greater(t, waits[3], 2*waits[0], "the retries back off: %v", waits)
	require.LessOrEqual(t, waits[3], 160*time.Millisecond, "the fourth wait is RetryMinDelay doubled three times: %v", waits)

	require.NoError(t, os.Remove(n.failFile))
	eventually(t, freeTimeout, func() bool { return n.freed(sb) }, "freed once DEL succeeds")
	a.settle(t)
	calls := a.events.destroyed(t, p).DestroyCalls
	require.Greater(t, calls, 4)
	require.Empty(t, n.cached(sb))
	require.Empty(t, n.addresses(sb))
	require.Empty(t, n.veths(sb))
	require.Equal(t, calls, n.delsOn(sb, "eth0"), "one bridge DEL per DestroyPU call")
	require.Equal(t, 1, n.delsOn(sb, "lo"), "the loopback's, freed at the first call, never again")
	n.requireIntact(liveSB)
}

func TestNetworkWithDisableGCIsNeverTouched(t *testing.T) {
	needAPI(t)
	for _, tc := range []struct {
		name string
		// cached: the config the attachments were added with says
		// disableGC; otherwise only the one in the config directory does.
		cached bool
	}{
		{name: "in the cached config", cached: true},
		{name: "in the runtime's config directory only", cached: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t, network{name: "kept", disableGC: tc.cached})
			kept := n.nets[len(n.nets)-1]
			if !tc.cached {
				kept.disableGC = true
				require.NoError(t, os.WriteFile(n.confDir+"/20-kept.conflist", n.conflist(kept), 0o644))
			}
			p := n.createPod("web")
			sb := n.add(p)
			deletePod(t, p)
			runtime := &currentSandboxes{}
			runtime.stop(p, sb) // its DEL never ran
			a := n.startAgent(agentOptions{runtime: runtime})
			eventually(t, freeTimeout, func() bool { return len(n.cached(sb)) == 1 }, "all but the disableGC network freed")
			a.settle(t)
			a.settle(t)
			require.Equal(t, []string{"kept-" + sb.ID + "-net1"}, n.cached(sb))
			addrs := n.addresses(sb)
			require.Len(t, addrs, 1)
			require.Contains(t, addrs[0], "kept/", "the disableGC network's address stays")
			require.Len(t, n.veths(sb), 1, "the disableGC network's veth stays")
			require.Equal(t, 1, n.delsOn(sb, "lo"))
			require.Equal(t, 1, n.delsOn(sb, "eth0"))
			require.Zero(t, n.delsOn(sb, "net1"), "never a DEL of the disableGC network")
		})
	}
}

func TestCollectorKilledAndRestartedFreesEachAttachmentOnce(t *testing.T) {
	needAPI(t)
	n := newNode(t)
	var gone []*sandbox
	current := &currentSandboxes{}
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		p := n.createPod(name)
		sb := n.add(p)
		gone = append(gone, sb)
		deletePod(t, p)
		current.stop(p, sb) // its DEL never ran
	}
	live := n.createPod("live")
	liveSB := n.add(live)
	current.set(live, liveSB)

	// The first agent is stopped as soon as some are freed, DELs in
	// flight included (their plugins are killed with the context).
	a := n.startAgent(agentOptions{sandboxes: current, runtime: current})
	freedBy := func() (freed []*sandbox) {
		for _, sb := range gone {
			if len(n.cached(sb)) == 0 {
				freed = append(freed, sb)
			}
		}
		return freed
	}
	eventually(t, freeTimeout, func() bool { return len(freedBy()) >= 2 }, "a first few freed")
	a.stop()
	first := freedBy()
	dels := map[string]int{}
	for _, sb := range gone {
		dels[sb.ID] = n.dels(sb)
	}

	a = n.startAgent(agentOptions{sandboxes: current, runtime: current})
	eventually(t, freeTimeout, func() bool { return len(freedBy()) == len(gone) }, "all freed after the restart")
	a.settle(t)
	for _, sb := range first {
		require.Equal(t, dels[sb.ID], n.dels(sb), "no DEL after the restart for %s, freed before it", sb.ID)
		n.requireFreed(sb)
	}
	for _, sb := range gone {
		require.True(t, n.freed(sb))
	}
	n.requireIntact(liveSB)
}
