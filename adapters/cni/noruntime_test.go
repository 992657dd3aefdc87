package cni_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// Without Options.Runtime, nothing but a network namespace that is gone
// tells the collector that a sandbox is dead: the API's answer alone is
// no evidence (doc.go, "Gone needs two sources").

// A static pod whose mirror pod is missing in the API (the API has no pod
// of its UID) runs in a sandbox whose network namespace is there: a
// collector without a Runtime never frees its network, however often the
// engine finds the pod gone.
func TestAStaticPodWithoutItsMirrorKeepsItsNetworkWithoutARuntime(t *testing.T) {
	needAPI(t)
	n := newNode(t)
	p := pod{Namespace: "kube-system", Name: "kube-proxy-" + nodeName, UID: "0b8f5e3ad1c94e51a8f2c7d64e9b13a0"}
	sb := n.add(p)
	a := n.startAgent(agentOptions{})
	eventually(t, freeTimeout, func() bool { return a.events.count(deletion.EventDestroyFailed, p) >= 3 }, "three destroys refused")
	a.settle(t)
	n.requireIntact(sb)
	require.True(t, eth0In(t, sb.NetNS), "its eth0")
	require.Zero(t, a.events.count(deletion.EventDestroyed, p))
	failed := a.events.of(deletion.EventDestroyFailed, p)
	require.ErrorIs(t, failed[len(failed)-1].Err, cni.ErrNoEvidence)
	require.False(t, ports.IsPermanent(failed[len(failed)-1].Err), "a plain error: checked again, kept while it runs")
}

// A pod gone from the API whose sandbox's network namespace is gone too
// (a reboot emptied /run, or the runtime removed the sandbox without DEL)
// is freed by a collector without a Runtime: the namespace is the
// evidence.
func TestAPodWhoseNetnsIsGoneIsFreedWithoutARuntime(t *testing.T) {
	needAPI(t)
	n := newNode(t)
	sb := n.leak(true)
	a := n.startAgent(agentOptions{})
	eventually(t, freeTimeout, func() bool { return n.freed(sb) }, "the attachments of the pod freed")
	n.requireFreed(sb)
	require.Equal(t, ports.ReasonPodGone, a.events.destroyed(t, sb.Pod).Reason)
}

// The same at the collector alone: a gone pod's attachment whose
// namespace is there is kept (ErrNoEvidence, a plain error), one whose
// namespace is gone is freed.
func TestDestroyPUWithoutARuntimeFreesOnlySandboxesWhoseNetnsIsGone(t *testing.T) {
	c := newCacheDir(t)
	running := c.write(entry{network: "podnet", sandbox: "running", uid: "u1", namespace: "kube-system", name: "static-node-a"})
	c.withNetNS(running, presentNetNS(t))
	coll := c.collector()
	ev := ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, SandboxID: "running", Reason: ports.ReasonPodGone}
	err := coll.DestroyPU(context.Background(), ev)
	require.ErrorIs(t, err, cni.ErrNoEvidence)
	require.False(t, ports.IsPermanent(err))
	require.True(t, c.exists(running), "the running static pod's attachment was freed")
	require.Empty(t, c.delCalls())

	gone := c.write(entry{network: "podnet", sandbox: "gone", uid: "u2", namespace: "ns", name: "pod-u2"})
	c.withNetNS(gone, t.TempDir()+"/cni-gone")
	require.NoError(t, coll.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "u2", Pod: pu("u2", "").Pod, SandboxID: "gone", Reason: ports.ReasonPodGone}))
	require.False(t, c.exists(gone))
	require.Equal(t, []string{"DEL:gone", "eth0"}, c.delCalls())
}
