package contested_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// A dry run's Resync whose engine refuses one Track (busy: a journal's commit failed, say) never tracks the pod
// again: the pod is never checked, never reported.
//
// README.md (examples/cni-gc) 153-156: "every check runs ... each pod whose attachments would go is reported with
// its reason"; 161-164: "Each pod is reported once per reason ... the cache's lists track it again only once it has
// left the cache and come back, or changed sandbox." Resync's doc: "it lists the PUs (ListPUs) and tracks each of
// them".
func TestAuditDryRunReportsEveryPod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		// A pod created after the engine started, whose sandbox leaked: only Resync can bring it to the engine.
		e.writeEntry(t, entry{network: "net1", id: "sb1", uid: "uid-1", ns: "ns", name: "p", netns: e.netnsPath(t, "gone", false)})
		rt := &fakeRuntime{}
		rt.set([]*runtimeapi.PodSandbox{sandbox("sb1", "uid-1", false, time.Now().Add(-time.Hour))}, nil)
		o := e.opts(rt)
		o.DryRun = true
		c, err := cni.New(o)
		if err != nil {
			t.Fatal(err)
		}
		tr := newTracker()
		tr.refuse = func(pu ports.PU, n int) error {
			if n == 1 {
				return errRefused // the first Track only
			}
			return nil
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- c.Resync(ctx, tr) }()
		time.Sleep(10 * time.Second) // ten intervals
		synctest.Wait()
		cancel()
		<-done
		tracks, ok, _ := tr.snapshot()
		t.Logf("Track calls: %d, accepted: %d", len(tracks), len(ok))
		if len(ok) == 0 {
			t.Fatalf("the pod's PU was never tracked after one refused Track (%d Track calls in 10 intervals): a dry run never checks or reports it", len(tracks))
		}
	})
}

// The same without the dry run: Resync tracks the PU again at its next list.
func TestAuditHoldsTrackRetriedAfterRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.writeEntry(t, entry{network: "net1", id: "sb1", uid: "uid-1", ns: "ns", name: "p", netns: e.netnsPath(t, "gone", false)})
		rt := &fakeRuntime{}
		rt.set([]*runtimeapi.PodSandbox{sandbox("sb1", "uid-1", false, time.Now().Add(-time.Hour))}, nil)
		c, err := cni.New(e.opts(rt))
		if err != nil {
			t.Fatal(err)
		}
		tr := newTracker()
		tr.refuse = func(pu ports.PU, n int) error {
			if n == 1 {
				return errRefused
			}
			return nil
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- c.Resync(ctx, tr) }()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		cancel()
		<-done
		if _, ok, _ := tr.snapshot(); len(ok) == 0 {
			t.Fatal("never tracked again")
		}
	})
}

// The same in a dry run, for a PU Resync moves (the order of its pod's sandboxes told at last): Resync untracks the
// PU the engine held, the Track of the moved PU is refused once, and no list tracks it again: the engine holds no PU
// of the pod any more, and the pod is never checked or reported.
func TestAuditDryRunMovedPUNeverTrackedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		now := time.Now()
		// A restored cache: the current sandbox's entry looks older than the leaked one's.
		e.writeEntry(t, entry{network: "net1", id: "sold", uid: "uid-1", ns: "ns", name: "p", netns: e.netnsPath(t, "sold", true), written: now.Add(-time.Minute)})
		e.writeEntry(t, entry{network: "net1", id: "scur", uid: "uid-1", ns: "ns", name: "p", netns: e.netnsPath(t, "scur", true), written: now.Add(-time.Hour)})
		rt := &fakeRuntime{}
		rt.set(nil, context.DeadlineExceeded) // the runtime fails while the engine's Inventory lists
		o := e.opts(rt)
		o.DryRun = true
		c, err := cni.New(o)
		if err != nil {
			t.Fatal(err)
		}
		pus, err := c.ListPUs(t.Context())
		if err != nil || len(pus) != 1 || pus[0].SandboxID != "scur" {
			t.Fatalf("Inventory: %v, %v", pus, err)
		}
		tr := newTracker()
		_ = tr.Track(pus[0]) // the engine tracked the Inventory's PU
		tr.refuse = func(pu ports.PU, n int) error {
			if n == 2 {
				return errRefused // the Track of the moved PU, once
			}
			return nil
		}
		rt.set([]*runtimeapi.PodSandbox{sandbox("sold", "uid-1", false, now.Add(-2*time.Hour)), sandbox("scur", "uid-1", true, now.Add(-time.Hour))}, nil)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- c.Resync(ctx, tr) }()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		cancel()
		<-done
		tr.mu.Lock()
		_, held := tr.held["uid-1"]
		untracks, tracks := len(tr.untracks), len(tr.tracks)
		tr.mu.Unlock()
		if !held {
			t.Fatalf("after %d Untrack and %d Track calls over ten intervals, the engine holds no PU of the pod: a dry run never checks or reports it again", untracks, tracks)
		}
	})
}

// Options.DryRun: Resync tracks "a PU it listed the time before, with the same sandbox, no more". Resync returns when
// its ctx ends and may be called again on the same Collector and engine: the second call begins from what the first
// told the engine, not from the Inventory's list at the engine's start, and tracks the pod listed all along no more.
func TestResyncCalledAgainBeginsFromWhatItLastTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		o := e.opts(nil)
		o.DryRun = true
		c, err := cni.New(o)
		if err != nil {
			t.Fatal(err)
		}
		if pus, err := c.ListPUs(t.Context()); err != nil || len(pus) != 0 { // the engine's Inventory, at its start
			t.Fatalf("ListPUs = %v, %v; want an empty cache", pus, err)
		}
		e.writeEntry(t, entry{network: "net1", id: "sb1", uid: "uid-1", ns: "ns", name: "p", netns: e.netnsPath(t, "sb1", true),
			written: time.Now().Add(-time.Minute)})
		tr := newTracker()
		for run := range 2 {
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- c.Resync(ctx, tr) }()
			time.Sleep(3500 * time.Millisecond) // three lists
			synctest.Wait()
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if tracks, _, _ := tr.snapshot(); len(tracks) != 1 {
				t.Fatalf("after Resync call %d, the pod listed all along was tracked %d times; want once in a dry run: %v", run+1, len(tracks), tracks)
			}
		}
	})
}
