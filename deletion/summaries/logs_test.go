package summaries_test

import (
	"context"
	"errors"
	"github.com/podsweeper/podsweeper/ports"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// docs/sdk/engine.md:67-69: "each failing port gets one error line per SweepInterval (how many failures, the last
// error and PU: the first failure after a quiet interval at once, the next ones summed up an interval after the last
// line, whoever drives the engine, Start or Sweeps, and on its Clock)".
func TestAuditFirstFailureLineAtOnceOnFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l lines
		fc := clocktesting.NewFakeClock(time.Now())
		cl := deletiontest.NewCluster()
		pol := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cl, pol, deletion.Options{Clock: fc, Logger: l.logger()})
		pu := cl.CreatePod(key("a"), "node", "")
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		deletiontest.Start(t, e)
		synctest.Wait()
		before := cl.Reads(pu.Pod)
		cl.FailReads(pu.Pod, errors.New("api down"))
		e.TriggerPod(pu.Pod)
		synctest.Wait()
		time.Sleep(time.Second) // real (bubble) time passes; the engine's Clock does not move
		synctest.Wait()
		if cl.Reads(pu.Pod) <= before {
			t.Fatalf("trigger did not check: %d reads", cl.Reads(pu.Pod))
		}
		if n := len(l.with("port failing")); n != 1 {
			t.Errorf("after the first GetPod failure since Start (a quiet interval), %d summary lines, want 1 at once\n%s", n, l.all())
		}
	})
}

// engine.md:69-70: "each PU's first failure is logged at V(1) (a failed destroy's, and a veto for a failing
// confirmer's, too)".
func TestAuditHoldsFirstFailurePerPUOnceAtV1(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l lines
		cl := deletiontest.NewCluster()
		pol := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cl, pol, deletion.Options{Logger: l.logger()})
		a := cl.CreatePod(key("a"), "node", "")
		b := cl.CreatePod(key("b"), "node", "")
		for _, pu := range []ports.PU{a, b} {
			if err := e.Track(pu); err != nil {
				t.Fatal(err)
			}
		}
		deletiontest.Start(t, e)
		deletiontest.Advance(0)
		cl.FailReads(a.Pod, errors.New("api down"))
		pol.Fail(errors.New("busy"))
		cl.DeletePod(b.Pod)
		deletiontest.Advance(time.Minute)
		if n := len(l.with(`"msg"="getting pod failed; keeping PU"`)); n != 1 {
			t.Errorf("get failures logged %d times", n)
		}
		if n := len(l.with(`"msg"="destroying PU failed; will retry`)); n != 1 {
			t.Errorf("destroy failures logged %d times (calls %d)", n, pol.CallCount())
		}
	})
}

// Observer doc: "A panic in it is recovered: logged at V(1), and summed up once an interval among the failing ports
// (one error line)."
func TestAuditHoldsPanickingObserverSummedUp(t *testing.T) {
	for _, driver := range []string{"start", "sweep"} {
		t.Run(driver, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l lines
				cl := deletiontest.NewCluster()
				obs := deletion.ObserverFunc(func(ev deletion.Event) { panic("observer down") })
				e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{Logger: l.logger(), Observer: obs})
				t0 := time.Now()
				for _, n := range []string{"a", "b", "c"} {
					if err := e.Track(cl.CreatePod(key(n), "node", "")); err != nil {
						t.Fatal(err)
					}
				}
				if driver == "start" {
					deletiontest.Start(t, e)
					deletiontest.Advance(12 * time.Second)
				} else {
					for range 12 {
						e.Sweep(context.Background())
						time.Sleep(time.Second)
					}
					synctest.Wait()
				}
				got := l.with(`"port"="Observer"`)
				var errLines []string
				for _, s := range got {
					if !contains(s, `"level"=1`) {
						errLines = append(errLines, s)
					}
				}
				t.Logf("after %v: %d error lines", time.Since(t0), len(errLines))
				if len(errLines) < 2 || len(errLines) > 3 {
					t.Errorf("%d Observer summary lines in 12s:\n%s", len(errLines), l.all())
				}
			})
		})
	}
}

// engine.md:64-67: "Logs scale with the failure, not with the PUs: while a port fails ..., each failing port gets one
// error line per SweepInterval"; ports.md:15-16 "a port that hangs, fails or answers nonsense" is a failure.
// A GetPod that hangs past its deadline, with a Sweep each second (a custom schedule), gets an error line per Sweep.
func TestAuditHungPortErrorLinesPerSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l lines
		cl := deletiontest.NewCluster()
		rel := make(chan struct{})
		getter := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			<-rel // ignores its deadline
			return cl.GetPod(context.Background(), k)
		})
		e := deletiontest.NewEngine(t, getter, &deletiontest.Policy{}, deletion.Options{Logger: l.logger(), CheckTimeout: 100 * time.Millisecond, Workers: 100})
		pu := cl.CreatePod(key("a"), "node", "")
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		release := func() { close(rel) }
		t0 := time.Now()
		for time.Since(t0) < 10*time.Second {
			e.Sweep(context.Background())
			time.Sleep(time.Second)
		}
		var errLines []string
		for _, s := range strings.Split(l.all(), "\n") {
			if s != "" && !strings.Contains(s, `"level"=1`) {
				errLines = append(errLines, s)
			}
		}
		t.Logf("%d error lines in %v (SweepInterval 5s):\n%s", len(errLines), time.Since(t0), strings.Join(errLines, "\n"))
		if len(errLines) > 3 {
			t.Errorf("%d error lines in %v for one hung port (SweepInterval 5s)", len(errLines), time.Since(t0))
		}
		release()
		synctest.Wait()
	})
}

// engine.md:66-69: "the next ones summed up an interval after the last line, whoever drives the engine, Start or
// Sweeps, and on its Clock".
func TestAuditHoldsSweepDrivenSummaryOnFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l lines
		fc := clocktesting.NewFakeClock(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
		cl := deletiontest.NewCluster()
		e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{Clock: fc, Logger: l.logger()})
		pu := cl.CreatePod(key("a"), "node", "")
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		cl.FailReads(pu.Pod, errors.New("api down"))
		e.Sweep(context.Background())
		if n := len(l.with("port failing")); n != 1 {
			t.Fatalf("first: %d lines", n)
		}
		fc.Step(time.Second)
		e.Sweep(context.Background())
		synctest.Wait()
		if n := len(l.with("port failing")); n != 1 {
			t.Fatalf("within the interval: %d lines", n)
		}
		time.Sleep(time.Hour) // real time: the Clock stands still
		synctest.Wait()
		if n := len(l.with("port failing")); n != 1 {
			t.Fatalf("Clock still: %d lines", n)
		}
		fc.Step(4 * time.Second)
		synctest.Wait()
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n := len(l.with("port failing")); n != 2 {
			t.Errorf("an interval after the last line, on the Clock: %d lines\n%s", n, l.all())
		}
	})
}

// engine.md:69-70: "each PU's first failure is logged at V(1) (a failed destroy's, and a veto for a failing confirmer's,
// too)".
func TestAuditHoldsFailingConfirmerVetoLoggedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l lines
		cl := deletiontest.NewCluster()
		conf := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			return nil, errors.New("API server unreachable")
		})
		e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{Confirmer: conf, Logger: l.logger()})
		pu := cl.CreatePod(key("a"), "node", "")
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		cl.DeletePod(pu.Pod)
		deletiontest.Start(t, e)
		deletiontest.Advance(time.Minute)
		if n := len(l.with(`"msg"="destroy not confirmed; keeping PU"`)); n != 1 {
			t.Errorf("%d veto lines for one PU whose confirmer keeps failing", n)
		}
	})
}
