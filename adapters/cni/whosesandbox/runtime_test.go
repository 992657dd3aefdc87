package whosesandbox_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// Promise (docs/sdk/cni-freeing.md:19, row 2; :49-50): a gone pod of which the runtime lists another
// sandbox ready is kept; a sandbox listed as two pods' makes the runtime's answer a failure (either may
// run in it). Here one listing names two pods: the kubelet's label says pod A, its metadata (what the
// runtime puts in the cache's K8S_POD_UID) says pod B.
func TestAuditSandboxOfTwoPodsInOneListing(t *testing.T) {
	e := newEnv(t)
	conf := e.hostLocalList("net1", nil)
	e.writeConf(t, "10-net1.conflist", conf)
	const podB = "uid-b"
	// Pod B's old sandbox Y: listed stopped, its entry in the cache.
	entry := e.entry(t, "net1", "sandboxY", "eth0", podB, "ns", "p", "", conf, "10.22.0.5")
	e.reserve(t, "net1", "10.22.0.5", "sandboxY", "eth0", time.Hour)
	now := time.Now()
	rt := &testcni.Runtime{}
	rt.Set(
		sandbox("sandboxY", podB, podB, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, now.Add(-time.Hour)),
		// Sandbox X runs, listed once: label pod A, metadata pod B.
		sandbox("sandboxX", "uid-a", podB, runtimeapi.PodSandboxState_SANDBOX_READY, now),
	)
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	err = c.DestroyPU(context.Background(), goneEvent(podB, "sandboxY"))
	t.Logf("DestroyPU: %v", err)
	if !testcni.Exists(entry) {
		t.Errorf("pod B's attachment was freed (DestroyPU: %v) while the runtime lists a ready sandbox whose metadata names pod B: want it kept (row 2) or the answer failed", err)
	}
	if err == nil || errors.Is(err, cni.ErrUnusableEntry) {
		t.Errorf("DestroyPU = %v, want ErrSandboxRunning or a failed runtime answer", err)
	}
}

// The same two pods, told in two listings of sandbox X: the answer fails, as docs/sdk/cni-freeing.md:49-50 says.
func TestAuditHoldsSandboxListedTwiceAsTwoPods(t *testing.T) {
	e := newEnv(t)
	conf := e.hostLocalList("net1", nil)
	e.writeConf(t, "10-net1.conflist", conf)
	const podB = "uid-b"
	entry := e.entry(t, "net1", "sandboxY", "eth0", podB, "ns", "p", "", conf, "10.22.0.5")
	now := time.Now()
	rt := &testcni.Runtime{}
	rt.Set(
		sandbox("sandboxY", podB, podB, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, now.Add(-time.Hour)),
		sandbox("sandboxX", "uid-a", "", runtimeapi.PodSandboxState_SANDBOX_READY, now),
		sandbox("sandboxX", "", podB, runtimeapi.PodSandboxState_SANDBOX_READY, now),
	)
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	err = c.DestroyPU(context.Background(), goneEvent(podB, "sandboxY"))
	if err == nil || !testcni.Exists(entry) {
		t.Fatalf("DestroyPU = %v, entry there: %v", err, testcni.Exists(entry))
	}
}

// Promise (docs/sdk/cni-freeing.md:19, row 2): a gone pod of which the runtime lists another sandbox ready is
// kept. Here the runtime lists that sandbox X twice, ready both times: once with the kubelet's pod-UID label
// empty and no metadata UID (a listing without the pod's UID), once labelled as pod A's.
func TestAuditReadySandboxListedTwiceOnceWithEmptyLabel(t *testing.T) {
	e := newEnv(t)
	conf := e.hostLocalList("net1", nil)
	e.writeConf(t, "10-net1.conflist", conf)
	const podA = "uid-a"
	entry := e.entry(t, "net1", "sandboxS", "eth0", podA, "ns", "p", "", conf, "10.22.0.5")
	now := time.Now()
	first := sandbox("sandboxX", "", "", runtimeapi.PodSandboxState_SANDBOX_READY, now)
	first.Labels = map[string]string{"io.kubernetes.pod.uid": ""}
	rt := &testcni.Runtime{}
	rt.Set(
		sandbox("sandboxS", podA, podA, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, now.Add(-time.Hour)),
		first,
		sandbox("sandboxX", podA, "", runtimeapi.PodSandboxState_SANDBOX_READY, now),
	)
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	err = c.DestroyPU(context.Background(), goneEvent(podA, "sandboxS"))
	t.Logf("DestroyPU: %v", err)
	if !testcni.Exists(entry) || !errors.Is(err, cni.ErrSandboxRunning) {
		t.Errorf("pod A's stopped sandbox was freed (DestroyPU: %v, entry there %v) while the runtime lists sandbox X ready as pod A's: want ErrSandboxRunning (row 2)", err, testcni.Exists(entry))
	}
}

// Control: the same two listings in the other order keep the pod (row 2).
func TestAuditHoldsReadySandboxListedTwiceLabelFirst(t *testing.T) {
	e := newEnv(t)
	conf := e.hostLocalList("net1", nil)
	e.writeConf(t, "10-net1.conflist", conf)
	const podA = "uid-a"
	entry := e.entry(t, "net1", "sandboxS", "eth0", podA, "ns", "p", "", conf, "10.22.0.5")
	now := time.Now()
	second := sandbox("sandboxX", "", "", runtimeapi.PodSandboxState_SANDBOX_READY, now)
	second.Labels = map[string]string{"io.kubernetes.pod.uid": ""}
	rt := &testcni.Runtime{}
	rt.Set(
		sandbox("sandboxS", podA, podA, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, now.Add(-time.Hour)),
		sandbox("sandboxX", podA, "", runtimeapi.PodSandboxState_SANDBOX_READY, now),
		second,
	)
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	err = c.DestroyPU(context.Background(), goneEvent(podA, "sandboxS"))
	if !testcni.Exists(entry) || !errors.Is(err, cni.ErrSandboxRunning) {
		t.Fatalf("DestroyPU: %v, entry there %v", err, testcni.Exists(entry))
	}
}

// Promise (docs/sdk/cni-freeing.md:18 row 1, :48 "A running sandbox the runtime lists without an ID may be any
// sandbox"; adapters/cni doc "A sandbox the runtime lists ready is never freed"). Pod A lives; the runtime
// lists its current sandbox T ready, and a second running sandbox of pod A without an ID, which may be any
// sandbox, S included. S (in the cache, its namespace there) is asked freed for a sandbox change.
func TestAuditSandboxChangeFreesWhatMayBeTheRunningNoIDSandbox(t *testing.T) {
	e := newEnv(t)
	conf := e.hostLocalList("net1", nil)
	e.writeConf(t, "10-net1.conflist", conf)
	const podA = "uid-a"
	present := filepath.Join(e.netns, "cni-s")
	os.WriteFile(present, nil, 0o644)
	entry := e.entry(t, "net1", "sandboxS", "eth0", podA, "ns", "p", present, conf, "10.22.0.5")
	old := time.Now().Add(-time.Hour)
	os.Chtimes(entry, old, old)
	rt := &testcni.Runtime{}
	rt.Set(
		sandbox("sandboxT", podA, podA, runtimeapi.PodSandboxState_SANDBOX_READY, time.Now()),
		sandbox("", podA, podA, runtimeapi.PodSandboxState_SANDBOX_READY, time.Now()),
	)
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	err = c.DestroyPU(context.Background(), changedEvent(podA, "sandboxS"))
	t.Logf("DestroyPU: %v", err)
	if !testcni.Exists(entry) {
		t.Errorf("sandbox S was freed (row 6) while the runtime lists a running sandbox of its pod without an ID, which may be S")
	}
}
