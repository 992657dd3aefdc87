package contracts_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

type recTracker struct {
	mu        sync.Mutex
	triggered []types.NamespacedName
	tracked   []ports.PU
}

func (r *recTracker) Track(pu ports.PU) error {
	r.mu.Lock()
	r.tracked = append(r.tracked, pu)
	r.mu.Unlock()
	return nil
}
func (r *recTracker) Untrack(string) bool { return false }
func (r *recTracker) TriggerPod(p types.NamespacedName) {
	r.mu.Lock()
	r.triggered = append(r.triggered, p)
	r.mu.Unlock()
}

// go doc Options.DryRun: "It also has Resync track a PU it listed the time before, with the same sandbox, no more
// (...), unless its pod was requeued."
func TestHoldsDryRunTracksOnce(t *testing.T) {
	e := newEnv(t)
	e.writeEntry("net1", "sb1", "eth0", e.goneNetNS("sb1"), "uid-p", netConf("net1", "", false), "10.9.0.5")
	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.DryRun, o.ResyncInterval = true, 20*time.Millisecond
	c, err := cni.New(o)
	must(t, err)
	tr := &recTracker{}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	must(t, c.Resync(ctx, tr))
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.tracked) != 1 {
		t.Fatalf("tracked %d times: %+v", len(tr.tracked), tr.tracked)
	}
}

// go doc Collector.Resync: "A pod listed with another sandbox than the time before ..., while the cache still holds
// that one, has had its sandboxes' order told meanwhile ...: its PU is untracked (never destroyed) and tracked with
// the sandbox listed now".
func TestHoldsResyncRetracksOnOrderTold(t *testing.T) {
	e := newEnv(t)
	e.writeEntry("net1", "s-unk", "eth0", "", "uid-p", netConf("net1", "", false), "10.9.0.5")
	e.writeEntry("net1", "s-cre", "eth0", e.presentNetNS("c"), "uid-p", netConf("net1", "", false), "10.9.0.6")
	rt := &testcni.Runtime{}
	o := e.opts(rt, (&logRec{}).logger())
	o.ResyncInterval = 20 * time.Millisecond
	c, err := cni.New(o)
	must(t, err)
	tr := &recTracker{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Resync(ctx, tr) }()
	deadline := time.Now().Add(3 * time.Second)
	switched := false
	for time.Now().Before(deadline) {
		tr.mu.Lock()
		n := len(tr.tracked)
		var last string
		if n > 0 {
			last = tr.tracked[n-1].SandboxID
		}
		tr.mu.Unlock()
		if n > 0 && !switched {
			rt.Set(sandbox("s-unk", "uid-p", true, time.Now())) // the runtime lists s-unk ready: s-cre comes first now
			switched = true
		}
		if last == "s-cre" {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	must(t, <-done)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.tracked) < 2 || tr.tracked[0].SandboxID != "s-unk" || tr.tracked[len(tr.tracked)-1].SandboxID != "s-cre" {
		t.Fatalf("tracked %+v", tr.tracked)
	}
}

// go doc (package, "host-local's reservations"): the sweep runs "on a goroutine of its own, one round at a time, so
// that no list waits for a DEL". A reservation's DEL that hangs: Resync keeps listing and tracking.
func TestHoldsListsGoOnWhileADELHangs(t *testing.T) {
	e := newEnv(t)
	hang := filepath.Join(e.plugins, "hangplug")
	must(t, os.WriteFile(hang, []byte("#!/bin/sh\ncat >/dev/null\nexec sleep 30\n"), 0o755))
	e.writeConf("10-net1.conflist", []byte(`{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"hangplug","ipam":{"type":"host-local","dataDir":"`+e.data+`"}}]}`))
	e.writeReservation(e.data, "net1", "10.9.0.1", "c1", "eth0", time.Hour)
	e.writeEntry("net2", "sb1", "eth0", e.goneNetNS("sb1"), "uid-p", netConf("net2", "", false), "10.8.0.5")
	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.ResyncInterval = 20 * time.Millisecond
	c, err := cni.New(o)
	must(t, err)
	tr := &recTracker{}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	must(t, c.Resync(ctx, tr))
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.tracked) < 5 {
		t.Fatalf("tracked %d times in 500ms while a DEL hangs", len(tr.tracked))
	}
}

// go doc Requeue: "it asks a running Resync to list the cache at once".
func TestHoldsRequeueListsAtOnce(t *testing.T) {
	e := newEnv(t)
	e.writeEntry("net1", "sb1", "eth0", e.goneNetNS("sb1"), "uid-p", netConf("net1", "", false), "10.9.0.5")
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger())) // ResyncInterval: an hour
	must(t, err)
	tr := &recTracker{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Resync(ctx, tr) }()
	time.Sleep(50 * time.Millisecond)
	must(t, c.Requeue(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-uid-p", UID: "uid-p"}}))
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		tr.mu.Lock()
		n := len(tr.tracked)
		tr.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	must(t, <-done)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.tracked) != 1 || len(tr.triggered) != 1 {
		t.Fatalf("tracked %v, triggered %v", tr.tracked, tr.triggered)
	}
}

// go doc Resync: "It returns when ctx ends (nil), or at once with ErrResyncRunning when another Resync runs."
func TestHoldsResyncRunningOnce(t *testing.T) {
	e := newEnv(t)
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Resync(ctx, testcni.NopTracker{}) }()
	time.Sleep(30 * time.Millisecond)
	if err := c.Resync(context.Background(), testcni.NopTracker{}); !errors.Is(err, cni.ErrResyncRunning) {
		t.Fatalf("second: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("first: %v", err)
	}
}
