package promises_test

// ListPUs, Resync and Requeue: ListPUs orders a pod's sandboxes dead first, the
// ready one last; a list the Runtime could not order neither moves nor tracks
// a PU listed with another sandbox than before, and once it answers Resync
// moves the PU, never destroying anything; one Resync runs at a time; Requeue
// never blocks, and a running Resync lists at once after it, so that a pod's
// sandboxes are freed oldest first.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

type recordingTracker struct {
	mu    sync.Mutex
	calls []string
}

func (f *recordingTracker) Track(pu ports.PU) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("track %s %s", pu.PUID, pu.SandboxID))
	return nil
}
func (f *recordingTracker) Untrack(puid string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "untrack "+puid)
	return true
}
func (f *recordingTracker) TriggerPod(n types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "trigger "+n.String())
}
func (f *recordingTracker) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

// Hold: "A list the Runtime could not order (it failed) neither moves nor
// tracks a PU listed with another sandbox than before"; once it answers,
// the PU listed with another sandbox than the Inventory's is untracked
// and tracked again; a second Resync is ErrResyncRunning.
func TestAuditHoldsResyncRuntimeFailureNeitherMovesNorTracks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		now := time.Now()
		// Cache times say A is older; the runtime says B (stopped) is dead,
		// so B is listed first when the runtime answers.
		e.write("net1", "sbA", "uid1", e.netns("a", true), now.Add(-2*time.Hour))
		e.write("net1", "sbB", "uid1", e.netns("b", true), now.Add(-time.Hour))
		rt := &fakeRuntime{}
		rt.set(sb("sbB", "uid1", false, now.Add(-3*time.Hour)))
		c := e.collector(rt, 0)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		pus, err := c.ListPUs(ctx)
		if err != nil || len(pus) != 1 || pus[0].SandboxID != "sbB" {
			t.Fatalf("inventory %v %v", pus, err)
		}
		tr := &recordingTracker{}
		done := make(chan error, 1)
		go func() { done <- c.Resync(ctx, tr) }()
		synctest.Wait()
		if err := c.Resync(ctx, tr); !errors.Is(err, cni.ErrResyncRunning) {
			t.Fatalf("second Resync = %v", err)
		}
		// The first list ran at once (the Inventory listed a dead sandbox, sbB): it triggers that pod.
		if calls := tr.take(); len(calls) != 2 || calls[0] != "track uid1 sbB" || calls[1][:len("trigger ")] != "trigger " {
			t.Fatalf("first list: calls %v, want uid1 tracked on sbB and its pod triggered", calls)
		}
		rt.mu.Lock()
		rt.err = errors.New("down")
		rt.mu.Unlock()
		time.Sleep(31 * time.Second)
		synctest.Wait()
		if calls := tr.take(); len(calls) != 0 {
			t.Fatalf("runtime failed: calls %v, want none", calls)
		}
		rt.mu.Lock()
		rt.err = nil
		rt.mu.Unlock()
		time.Sleep(30 * time.Second)
		synctest.Wait()
		calls := tr.take()
		for _, c := range calls {
			if c == "untrack uid1" || c == "track uid1 sbA" {
				t.Fatalf("runtime back: calls %v", calls)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// Hold: ListPUs orders a pod's sandboxes dead first, the ready one last.
func TestAuditHoldsListPUsDeadBeforeReady(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.write("net1", "sbA", "uid1", e.netns("a", true), now.Add(-time.Hour))
	e.write("net1", "sbB", "uid1", e.netns("b", true), now)
	rt := &fakeRuntime{}
	rt.set(sb("sbA", "uid1", true, now.Add(-time.Hour)), sb("sbB", "uid1", false, now))
	c := e.collector(rt, 0)
	pus, err := c.ListPUs(context.Background())
	if err != nil || len(pus) != 1 || pus[0].SandboxID != "sbB" {
		t.Fatalf("%v %v", pus, err)
	}
}

// Holds: a restored cache whose times put the current sandbox first; the Inventory, listed while
// the runtime fails, tracks it; once the runtime answers, Resync untracks that PU and tracks the
// older sandbox (never destroying anything); while it fails, a PU listed with another sandbox is
// neither moved nor tracked.
func TestAuditHoldsResyncMovesWhenTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		now := time.Now()
		e.writeEntry(entryOpt{sandbox: "scur", uid: uidA, netns: e.netns("c", true), written: now.Add(-2 * time.Hour)})
		e.writeEntry(entryOpt{sandbox: "sold", uid: uidA, netns: e.netns("o", true), written: now.Add(-time.Hour)})
		rt := &fakeRuntime{ignoreFilter: true, err: errors.New("down"), sbs: []*runtimeapi.PodSandbox{
			sandbox("sold", uidA, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, now.Add(-3*time.Hour)),
			sandbox("scur", uidA, runtimeapi.PodSandboxState_SANDBOX_READY, now.Add(-2*time.Hour))}}
		c := e.collector(rt, 0)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		pus, _ := c.ListPUs(ctx)
		if len(pus) != 1 || pus[0].SandboxID != "scur" {
			t.Fatalf("inventory %v", pus)
		}
		tr := &trigTracker{fakeTracker: fakeTracker{tracked: map[string]ports.PU{uidA: pus[0]}}}
		go c.Resync(ctx, tr)
		time.Sleep(31 * time.Second)
		synctest.Wait()
		tr.mu.Lock()
		if tr.tracked[uidA].SandboxID != "scur" {
			t.Fatalf("moved while the runtime fails: %v", tr.tracked)
		}
		tr.mu.Unlock()
		rt.mu.Lock()
		rt.err = nil
		rt.mu.Unlock()
		time.Sleep(30 * time.Second)
		synctest.Wait()
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if tr.tracked[uidA].SandboxID != "sold" || len(tr.triggers) == 0 {
			t.Fatalf("not moved once told: %v triggers %v", tr.tracked, tr.triggers)
		}
		if len(e.delLogFields()) != 0 {
			t.Fatalf("DELs: %v", e.delLogFields())
		}
	})
}

// Holds: a second Resync fails at once with ErrResyncRunning; Resync returns nil when its
// context ends; a nil Tracker is refused.
func TestAuditHoldsResyncRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		c := e.collector(&fakeRuntime{ignoreFilter: true}, 0)
		ctx, cancel := context.WithCancel(context.Background())
		tr := &fakeTracker{tracked: map[string]ports.PU{}}
		done := make(chan error, 1)
		go func() { done <- c.Resync(ctx, tr) }()
		synctest.Wait()
		if err := c.Resync(context.Background(), tr); !errors.Is(err, cni.ErrResyncRunning) {
			t.Fatalf("second Resync: %v", err)
		}
		time.Sleep(time.Minute)
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Resync: %v", err)
		}
		if err := c.Resync(context.Background(), nil); err == nil {
			t.Fatal("nil Tracker accepted")
		}
	})
}

type trigTracker struct {
	fakeTracker
	triggers []types.NamespacedName
}

func (f *trigTracker) TriggerPod(p types.NamespacedName) {
	f.mu.Lock()
	f.triggers = append(f.triggers, p)
	f.mu.Unlock()
}

// Holds: a pod with three sandboxes (two stopped, one ready) frees them oldest first, one
// DestroyPU each, Requeue listing the next at once (well before ResyncInterval), and keeps the
// ready one.
func TestAuditHoldsOldestFirstRequeue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rt := &fakeRuntime{ignoreFilter: true}
		for i, id := range []string{"s1", "s2", "s3"} {
			e.writeEntry(entryOpt{sandbox: id, uid: uidA, netns: e.netns(id, true)})
			st := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
			if id == "s3" {
				st = runtimeapi.PodSandboxState_SANDBOX_READY
			}
			rt.sbs = append(rt.sbs, sandbox(id, uidA, st, time.Unix(int64(100+i), 0)))
		}
		c := e.collector(rt, 0)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		pus, _ := c.ListPUs(ctx)
		if len(pus) != 1 || pus[0].SandboxID != "s1" {
			t.Fatalf("inventory %v", pus)
		}
		tr := &trigTracker{fakeTracker: fakeTracker{tracked: map[string]ports.PU{uidA: pus[0]}}}
		go c.Resync(ctx, tr)
		synctest.Wait() // the first list, at once: the Inventory listed a dead sandbox (s1)
		for _, want := range []string{"s1", "s2"} {
			tr.mu.Lock()
			pu := tr.tracked[uidA]
			delete(tr.tracked, uidA) // the engine drops the PU it destroyed
			tr.mu.Unlock()
			if pu.SandboxID != want {
				t.Fatalf("tracked %v, want %s", pu, want)
			}
			if err := c.DestroyPU(ctx, changedDefault(uidA, want)); err != nil {
				t.Fatal(err)
			}
			c.Requeue(ctx, podOf(uidA))
			time.Sleep(time.Second)
			synctest.Wait()
		}
		tr.mu.Lock()
		pu := tr.tracked[uidA]
		tr.mu.Unlock()
		if pu.SandboxID != "s3" || e.delled("s3") || !e.delled("s1") || !e.delled("s2") {
			t.Fatalf("last %v dels %v", pu, e.delLogFields())
		}
	})
}

// Hold: after the PU of an old sandbox is destroyed (sandbox change) and
// Requeue is called, a running Resync lists at once (well before
// ResyncInterval) and tracks the pod's next sandbox, and triggers it.
func TestAuditHoldsRequeueListsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		now := time.Now()
		e.write("net1", "sbA", "uid1", e.netns("a", false), now.Add(-2*time.Hour))
		e.write("net1", "sbB", "uid1", e.netns("b", true), now.Add(-time.Hour))
		rt := &fakeRuntime{}
		rt.set(sb("sbB", "uid1", true, now.Add(-time.Hour)))
		c := e.collector(rt, 0)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if pus, err := c.ListPUs(ctx); err != nil || len(pus) != 1 || pus[0].SandboxID != "sbA" {
			t.Fatalf("%v %v", pus, err)
		}
		tr := &recordingTracker{}
		go func() { _ = c.Resync(ctx, tr) }()
		synctest.Wait()
		if err := c.DestroyPU(ctx, changed("uid1", "sbA")); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{}
		pod.UID, pod.Namespace, pod.Name = "uid1", "ns", "pod-uid1"
		if err := c.Requeue(ctx, pod); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		calls := tr.take()
		if !slices.Contains(calls, "track uid1 sbB") || !slices.Contains(calls, "trigger ns/pod-uid1") || slices.Contains(calls, "untrack uid1") {
			t.Fatalf("calls %v", calls)
		}
		cancel()
	})
}

// Holds: Requeue never blocks, Resync running or not.
func TestAuditHoldsRequeueNeverBlocks(t *testing.T) {
	e := newEnv(t)
	c := e.collector(&fakeRuntime{ignoreFilter: true}, 0)
	done := make(chan struct{})
	go func() {
		for i := 0; i < 10000; i++ {
			c.Requeue(context.Background(), podOf(uidA))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Requeue blocked")
	}
	if err := c.Requeue(context.Background(), nil); err == nil {
		t.Fatal("nil pod accepted")
	}
}
