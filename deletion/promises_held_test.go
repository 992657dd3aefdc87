package deletion_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// deletion.Engine.Sweep: "Sweep returns once every check it waits for, or every Workers slot, is held by one stuck in
// a port a second past its deadline (CheckTimeout), whoever began them: with a CheckTimeout of 100ms, about 1.1 to
// 2.1s after such a check began."
func TestSweepReturnsPastStuckCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		block := make(chan struct{})
		defer close(block)
		g := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			<-block
			return nil, errors.New("late")
		})
		e := deletiontest.NewEngine(t, g, &deletiontest.Policy{}, deletion.Options{CheckTimeout: 100 * time.Millisecond, Workers: 1})
		if err := e.Track(ports.PU{PUID: "u1", Pod: nsPod(1)}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		e.Sweep(context.Background())
		if d := time.Since(start); d < 1100*time.Millisecond || d > 2100*time.Millisecond {
			t.Errorf("Sweep returned %v after a check stuck in a port began, want 1.1 to 2.1s", d)
		}
	})
}

// deletion.Options.Inventory: "The first list delays the first check by at most its deadline (CheckTimeout, at
// least a second) and a second"; deletion.Engine.Start: "Start returns within about ShutdownTimeout even when a port
// hangs, the Inventory included."
func TestHungFirstListDelaysChecksByItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		block := make(chan struct{})
		defer close(block)
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) { <-block; return nil, nil })
		cl := deletiontest.NewCluster()
		pu := cl.CreatePod(nsPod(1), "node-a", "")
		policy := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cl, policy, deletion.Options{NodeName: "node-a", Inventory: inv, CheckTimeout: 2 * time.Second})
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		cl.DeletePod(nsPod(1))
		e.TriggerPod(nsPod(1))
		stop := deletiontest.Start(t, e)
		deletiontest.Advance(2900 * time.Millisecond)
		if n := policy.CallCount(); n != 0 {
			t.Fatalf("destroyed %d before the first list's deadline", n)
		}
		if err := e.LivenessCheck(nil); err != nil {
			t.Errorf("LivenessCheck during the first list: %v", err)
		}
		deletiontest.Advance(200 * time.Millisecond)
		if n := policy.CallCount(); n != 1 {
			t.Errorf("%d destroys 3.1s after Start with a hung first list of deadline 2s, want 1", n)
		}
		begin := time.Now()
		stop()
		if d := time.Since(begin); d > deletion.DefaultShutdownTimeout+100*time.Millisecond {
			t.Errorf("Start returned %v after its context ended, with the Inventory hung", d)
		}
	})
}

// docs/sdk/decision-table.md:71-73: "A failed destroy is tried again after RetryMinDelay (1 s), doubling up to
// RetryMaxDelay (1 min), and not before, whatever brings the PU up (its periodic check, a trigger)".
func TestRetryNotBeforeItsTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		pu := cl.CreatePod(nsPod(1), "node-a", "")
		policy := &deletiontest.Policy{}
		policy.Fail(errors.New("down"))
		e := deletiontest.NewEngine(t, cl, policy, deletion.Options{NodeName: "node-a", SweepInterval: 500 * time.Millisecond,
			RetryMinDelay: 4 * time.Second, RetryMaxDelay: 16 * time.Second})
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		deletiontest.Start(t, e)
		cl.DeletePod(nsPod(1))
		e.TriggerPod(nsPod(1))
		deletiontest.Advance(10 * time.Millisecond)
		for i := 0; i < 30; i++ {
			e.TriggerPod(nsPod(1))
			deletiontest.Advance(100 * time.Millisecond)
		}
		calls := policy.Calls()
		for i := 1; i < len(calls); i++ {
			want := 4 * time.Second << (i - 1)
			if want > 16*time.Second {
				want = 16 * time.Second
			}
			if d := calls[i].At.Sub(calls[i-1].At); d < want {
				t.Errorf("attempt %d came %v after the one before, want %v", i+1, d, want)
			}
		}
	})
}

// deletion.Options.DryRun: "a PU that would go is reported once per reason (EventWouldDestroy, an info log line,
// PUStatus.WouldDestroy) and kept".
func TestDryRunReportsOncePerReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		pu := cl.CreatePod(nsPod(1), "node-a", "s1")
		var logs recordedLog
		events := &deletiontest.Events{}
		policy := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cl, policy, deletion.Options{NodeName: "node-a", DryRun: true, SandboxExtractor: cl,
			Observer: events, Logger: logs.logger(), SweepInterval: time.Second})
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		deletiontest.Start(t, e)
		deletiontest.Advance(2 * time.Second)
		if err := cl.SetSandbox(nsPod(1), "s2"); err != nil {
			t.Fatal(err)
		}
		deletiontest.Advance(10 * time.Second)
		if err := cl.SetSandbox(nsPod(1), "s3"); err != nil {
			t.Fatal(err)
		}
		deletiontest.Advance(10 * time.Second)
		if n := events.Count(deletion.EventWouldDestroy); n != 1 {
			t.Errorf("%d EventWouldDestroy, want 1", n)
		}
		if n := logs.count("dry run: PU would be destroyed"); n != 1 {
			t.Errorf("%d dry-run lines, want 1", n)
		}
		if st := e.Status(); len(st) != 1 || st[0].WouldDestroy != ports.ReasonSandboxChanged {
			t.Errorf("Status: %+v", st)
		}
		if policy.CallCount() != 0 {
			t.Errorf("a dry run called DestroyPU")
		}
	})
}

// deletion.Engine.Untrack: "Once it returns, no DestroyPU of that PU starts"; deletion.Options.DestroyRate: "Untrack
// takes it out of the line, and the turn it did not use goes to the next in line, never to a later arrival."
func TestUntrackInLineGivesTurnToNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cl, policy, deletion.Options{NodeName: "node-a", DestroyRate: 0.1, SweepInterval: time.Hour})
		var pus []ports.PU
		for i := range 3 {
			pu := cl.CreatePod(nsPod(i), "node-a", "")
			pus = append(pus, pu)
			if err := e.Track(pu); err != nil {
				t.Fatal(err)
			}
		}
		deletiontest.Start(t, e)
		for i := range 3 { // found to go in this order
			cl.DeletePod(nsPod(i))
			e.TriggerPod(nsPod(i))
			deletiontest.Advance(100 * time.Millisecond)
		}
		late := cl.CreatePod(nsPod(9), "node-a", "")
		if err := e.Track(late); err != nil {
			t.Fatal(err)
		}
		deletiontest.Advance(2 * time.Second)
		if !e.Untrack(pus[1].PUID) { // the head of the line
			t.Fatal("not tracked")
		}
		cl.DeletePod(nsPod(9)) // a later arrival
		e.TriggerPod(nsPod(9))
		deletiontest.Advance(9 * time.Second)
		calls := policy.Calls()
		if len(calls) != 2 || calls[0].Event.PUID != pus[0].PUID || calls[1].Event.PUID != pus[2].PUID {
			t.Fatalf("calls %v", calls)
		}
		if d := calls[1].At.Sub(calls[0].At); d > 10*time.Second+time.Millisecond {
			t.Errorf("the turn the untracked PU did not use came %v after the first", d)
		}
		deletiontest.Advance(time.Minute)
		for _, c := range policy.Calls() {
			if c.Event.PUID == pus[1].PUID {
				t.Errorf("DestroyPU of an untracked PU")
			}
		}
	})
}

// docs/sdk/engine.md:7-12 and docs/sdk/restarts.md: the events of one PU reach the Observer in the order of the
// moves; a Requeuer that tracks the PU of the new sandbox under the same PUID leaves the journal holding it.
func TestJournalAfterRequeueRetrack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		pu := cl.CreatePod(nsPod(1), "node-a", "s1")
		journal := deletiontest.NewInventory()
		var e *deletion.Engine
		requeuer := ports.RequeuerFunc(func(_ context.Context, pod *corev1.Pod) error {
			cur, _ := cl.PU(nsPod(1))
			return e.Track(cur)
		})
		e = deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{NodeName: "node-a", SandboxExtractor: cl,
			Requeuer: requeuer, Observer: journal, Inventory: journal})
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		deletiontest.Start(t, e)
		deletiontest.Advance(time.Second)
		if err := cl.SetSandbox(nsPod(1), "s2"); err != nil {
			t.Fatal(err)
		}
		e.TriggerPod(nsPod(1))
		deletiontest.Advance(time.Second)
		got := journal.PUs()
		if len(got) != 1 || got[0].SandboxID != "s2" {
			t.Errorf("journal after the re-track: %v, want the PU of s2", got)
		}
	})
}

// deletion.Options.DestroyRate: "one that learns nothing is checked again the next tick, until a check learns why, so
// that the line moves as soon as the port answers (while the API server fails, a PU in line is read once or twice a
// second, not once a SweepInterval)".
func TestLineReadWhilePortFails(t *testing.T) {
	for _, withStart := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			cl := deletiontest.NewCluster()
			policy := &deletiontest.Policy{}
			e := deletiontest.NewEngine(t, cl, policy, deletion.Options{NodeName: "node-a", DestroyRate: 0.1,
				SweepInterval: time.Minute})
			for i := range 3 {
				if err := e.Track(cl.CreatePod(nsPod(i), "node-a", "")); err != nil {
					t.Fatal(err)
				}
				cl.DeletePod(nsPod(i))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			done := make(chan struct{})
			if withStart {
				deletiontest.Start(t, e)
				e.TriggerAll()
				close(done)
			} else {
				go func() { e.Sweep(ctx); close(done) }()
			}
			deletiontest.Advance(time.Second) // one destroyed, two in line
			if policy.CallCount() != 1 {
				t.Fatalf("withStart %v: %d destroys", withStart, policy.CallCount())
			}
			st := e.Status() // the two in line: the head is the one whose turn comes first
			if len(st) != 2 {
				t.Fatalf("Status: %+v", st)
			}
			head := st[0]
			if st[1].NextAttempt.Before(head.NextAttempt) {
				head = st[1]
			}
			cl.FailAllReads(errors.New("API server down"))
			deletiontest.Advance(10 * time.Second) // the turn of the head comes: its check learns nothing
			before := cl.Reads(head.Pod)
			deletiontest.Advance(5 * time.Second)
			reads := cl.Reads(head.Pod) - before
			cl.FailAllReads(nil)
			if reads < 5 || reads > 10 {
				t.Errorf("withStart %v: the head of the line read %d times in 5s while the API server failed; want once or twice a second", withStart, reads)
			}
			deletiontest.Advance(25 * time.Second)
			if n := policy.CallCount(); n != 3 {
				t.Errorf("withStart %v: %d destroys", withStart, n)
			}
			<-done
		})
	}
}
