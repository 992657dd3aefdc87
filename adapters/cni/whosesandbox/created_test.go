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

// creatingX writes pod P's attachment of sandbox X, which the runtime does not list and whose network namespace is
// there: it may be one the runtime is creating (docs/sdk/cni-freeing.md, row 6; the package doc, "When a sandbox may be
// freed"). It returns the entry's file.
func creatingX(t *testing.T, e *env, conf []byte) string {
	t.Helper()
	ns := filepath.Join(e.netns, "cni-x")
	if err := os.WriteFile(ns, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return e.entry(t, "net1", "sandboxX", "eth0", "uid-p", "ns", "p", ns, conf, "10.22.0.5")
}

// Promise (adapters/cni/doc.go, "When a sandbox may be freed"; docs/sdk/cni-freeing.md row 6): a sandbox that may be
// being created is freed for a sandbox change only once a sandbox of its pod was created strictly later. A runtime
// that lists the pod's other sandbox Y twice, created an hour before X and an hour after, does not tell that: Y may
// have been created at either time.
func TestSandboxListedAtTwoCreationTimesTellsNoLaterSandbox(t *testing.T) {
	for _, twice := range []bool{false, true} {
		e := newEnv(t)
		conf := e.hostLocalList("net1", nil)
		e.writeConf(t, "10-net1.conflist", conf)
		x := creatingX(t, e, conf)
		now := time.Now()
		ready := runtimeapi.PodSandboxState_SANDBOX_READY
		sbs := []*runtimeapi.PodSandbox{sandbox("sandboxY", "uid-p", "uid-p", ready, now.Add(-time.Hour))}
		if twice {
			sbs = append(sbs, sandbox("sandboxY", "uid-p", "uid-p", ready, now.Add(time.Hour)))
		}
		rt := &testcni.Runtime{}
		rt.Set(sbs...)
		c, err := cni.New(e.opts(rt))
		if err != nil {
			t.Fatal(err)
		}
		err = c.DestroyPU(context.Background(), changedEvent("uid-p", "sandboxX"))
		if !testcni.Exists(x) || !errors.Is(err, cni.ErrNewestSandbox) {
			t.Fatalf("Y listed twice=%v: DestroyPU = %v, X's entry there: %v; want ErrNewestSandbox and X kept: no sandbox of the pod is known to be created after it",
				twice, err, testcni.Exists(x))
		}
	}
}

// The same promise, when the cache and the runtime name two pods for one sandbox: the cache holds W as pod P's,
// written an hour before X; the runtime lists W as pod Q's, created an hour after X. A listing of another pod tells
// nothing of when a sandbox of P was created: of P, W is the older, and X is refused.
func TestAnotherPodsListingTellsNotWhenASandboxOfThePodWasCreated(t *testing.T) {
	e := newEnv(t)
	conf := e.hostLocalList("net1", nil)
	e.writeConf(t, "10-net1.conflist", conf)
	x := creatingX(t, e, conf)
	w := e.entry(t, "net1", "sandboxW", "eth0", "uid-p", "ns", "p", "", conf, "10.22.0.6")
	hourAgo := time.Now().Add(-time.Hour)
	if err := os.Chtimes(w, hourAgo, hourAgo); err != nil {
		t.Fatal(err)
	}
	rt := &testcni.Runtime{}
	rt.Set(sandbox("sandboxW", "uid-q", "uid-q", runtimeapi.PodSandboxState_SANDBOX_READY, time.Now().Add(time.Hour)))
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DestroyPU(context.Background(), changedEvent("uid-p", "sandboxX")); !testcni.Exists(x) || !errors.Is(err, cni.ErrNewestSandbox) {
		t.Fatalf("DestroyPU = %v, X's entry there: %v; want ErrNewestSandbox and X kept", err, testcni.Exists(x))
	}
}

// Promise (adapters/cni, ListPUs): it lists the pods that hold collectable attachments; entries of a disableGC
// network are skipped. Pod A's only attachment is of a disableGC network, on a container of which pod B holds an
// ordinary attachment: A holds nothing to free, and is not listed; B is.
func TestListPUsListsNoPodWhoseOwnAttachmentsAreNeverFreed(t *testing.T) {
	e := newEnv(t)
	never, net1 := e.hostLocalList("never", map[string]any{"disableGC": true}), e.hostLocalList("net1", nil)
	e.writeConf(t, "10-never.conflist", never)
	e.writeConf(t, "20-net1.conflist", net1)
	e.entry(t, "never", "sandboxX", "eth0", "uid-a", "ns", "a", "", never, "10.22.0.5")
	e.entry(t, "net1", "sandboxX", "eth1", "uid-b", "ns", "b", "", net1, "10.22.0.6")
	c, err := cni.New(e.opts(&testcni.Runtime{}))
	if err != nil {
		t.Fatal(err)
	}
	pus, err := c.ListPUs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(pus) != 1 || pus[0].PUID != "uid-b" {
		t.Fatalf("ListPUs = %+v, want pod uid-b's alone", pus)
	}
}

// Promise (docs/sdk/cni-freeing.md; adapters/cni/doc.go): a sandbox listed as two pods' (by its label and its
// metadata) makes the runtime's answer a failure, either pod may run in it; so it does without an ID. Pod P is gone
// from the API, its sandbox X in the cache; the runtime lists, running and without an ID, a sandbox whose label names
// pod Q and whose metadata names P: nothing of P is freed.
func TestNoIDSandboxOfTwoPodsFailsTheAnswer(t *testing.T) {
	e := newEnv(t)
	conf := e.hostLocalList("net1", nil)
	e.writeConf(t, "10-net1.conflist", conf)
	x := e.entry(t, "net1", "sandboxX", "eth0", "uid-p", "ns", "p", "", conf, "10.22.0.5")
	rt := &testcni.Runtime{}
	rt.Set(sandbox("", "uid-q", "uid-p", runtimeapi.PodSandboxState_SANDBOX_READY, time.Now()))
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DestroyPU(context.Background(), goneEvent("uid-p", "sandboxX")); err == nil || !testcni.Exists(x) {
		t.Fatalf("DestroyPU = %v, X's entry there: %v; want the runtime's answer failed and X kept", err, testcni.Exists(x))
	}
}
