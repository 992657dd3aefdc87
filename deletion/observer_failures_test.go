package deletion_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// docs/sdk/engine.md:55-58: "while a port fails (...), each failing port gets one error line per SweepInterval (...),
// each PU's first failure is logged at V(1), and the Observer, so the metrics, still hear of every one."
//
// A Requeuer that fails: the engine logs it and sums it up with the ports' failures, and no Event tells the Observer
// of it (the Requeuer is called after the check, off the workers: EventChecked).
func TestARequeueFailureIsLoggedAndSummedUpNotTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		pu := cl.CreatePod(nsKey("pod-1"), "node-a", "s1")
		var logs logBuffer
		events := &deletiontest.Events{}
		requeuer := ports.RequeuerFunc(func(context.Context, *corev1.Pod) error { return errors.New("controller queue closed") })
		e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{NodeName: "node-a", SandboxExtractor: cl,
			Requeuer: requeuer, Observer: events, Logger: logs.logger()})
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		deletiontest.Start(t, e)
		if err := cl.SetSandbox(nsKey("pod-1"), "s2"); err != nil {
			t.Fatal(err)
		}
		e.TriggerPod(nsKey("pod-1"))
		deletiontest.Advance(time.Minute)
		if len(logs.lines("requeueing pod failed")) != 1 || len(logs.lines(`"port"="Requeue"`)) != 1 {
			t.Fatalf("the Requeue failure is not logged, and summed up: %s", logs.String())
		}
		if got := eventKinds(events.All()); len(events.Of(deletion.EventDestroyed)) != 1 {
			t.Fatalf("the PU of the replaced sandbox is destroyed once: %v", got)
		}
		for _, ev := range events.All() {
			if ev.Err != nil {
				t.Errorf("an Event told of the Requeuer's failure: %v", ev)
			}
		}
	})
}

// The same promise, for the SandboxProber: the events of a check whose prober fails are those of one whose prober
// answers "not dead"; the Observer cannot hear of the failure.
func TestObserverHearsProberFailure(t *testing.T) {
	run := func(t *testing.T, prober ports.SandboxProber) []deletion.Event {
		cl := deletiontest.NewCluster()
		pu := cl.CreatePod(nsKey(fmt.Sprintf("pod-%d", 1)), "node-a", "s1")
		events := &deletiontest.Events{}
		e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{NodeName: "node-a", SandboxExtractor: cl,
			SandboxProber: prober, Observer: events})
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		if err := cl.KillSandbox(nsKey(fmt.Sprintf("pod-%d", 1))); err != nil {
			t.Fatal(err)
		}
		e.Sweep(context.Background())
		var out []deletion.Event
		for _, ev := range events.All() {
			ev.CheckDuration = 0
			out = append(out, ev)
		}
		return out
	}
	var failing, alive []deletion.Event
	synctest.Test(t, func(t *testing.T) {
		failing = run(t, ports.SandboxProberFunc(func(context.Context, *corev1.Pod, string) (bool, error) {
			return false, errors.New("runtime unreachable")
		}))
	})
	synctest.Test(t, func(t *testing.T) {
		alive = run(t, ports.SandboxProberFunc(func(context.Context, *corev1.Pod, string) (bool, error) { return false, nil }))
	})
	if reflect.DeepEqual(failing, alive) {
		t.Errorf("the SandboxProber failed, and the Observer was told exactly what it is told when the prober answers \"not dead\": %v", eventKinds(failing))
	}
}

func eventKinds(evs []deletion.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Kind.String()+"("+ev.Verdict.String()+")")
	}
	return out
}

// The same promise (and deletion.Options.Observer: "Observer is told about every check, destroy and failure"), for
// the Inventory: while its lists fail, the engine retries, logs and sums the failures up; the Observer is told nothing.
func TestObserverHearsListFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inv := deletiontest.NewInventory()
		inv.FailLists(errors.New("journal unreadable"))
		var logs logBuffer
		events := &deletiontest.Events{}
		e := deletiontest.NewEngine(t, deletiontest.NewCluster(), &deletiontest.Policy{}, deletion.Options{
			Inventory: inv, Observer: events, Logger: logs.logger()})
		deletiontest.Start(t, e)
		deletiontest.Advance(5 * time.Minute)
		if inv.Lists() < 5 || len(logs.lines("listing the Inventory failed")) < 5 {
			t.Fatalf("%d lists", inv.Lists())
		}
		if n := len(events.All()); n == 0 {
			t.Errorf("%d lists of the Inventory failed (logged, summed up at error level); the Observer heard nothing of them", inv.Lists())
		}
	})
}

// engine.md:59-66: "while a port fails ..., each failing port gets one error line per SweepInterval ... and the
// Observer, so the metrics, still hear of every one: EventChecked's Err holds the failures of a check's ports".
// A DestroyPU that ignores its context and succeeds past the check's deadline is logged as a failing port (one
// error line, port "a port or the Observer past its check's deadline"), but the Observer hears of no failure.
func TestObserverHearsEveryLoggedFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := deletiontest.NewCluster()
		pu := c.CreatePod(nsKey("a"), testNode, "")
		pol := &deletiontest.Policy{}
		pol.SetAnswer(func(ctx context.Context, ev ports.DestroyEvent) error {
			time.Sleep(1500 * time.Millisecond) // ignores its context
			return nil
		})
		var logs logBuffer
		evs := &deletiontest.Events{}
		e := deletiontest.NewEngine(t, c, pol, deletion.Options{NodeName: testNode, CheckTimeout: time.Second, Observer: evs,
			Logger: logs.logger()})
		_ = e.Track(pu)
		c.DeletePod(nsKey("a"))
		deletiontest.Start(t, e)
		e.TriggerPod(nsKey("a"))
		deletiontest.Advance(10 * time.Second)
		failing := countLines(&logs, `"msg"="port failing`)
		var errs []error
		for _, ev := range evs.All() {
			if ev.Err != nil {
				errs = append(errs, ev.Err)
			}
		}
		if failing > 0 && len(errs) == 0 {
			t.Fatalf("%d error line(s) of a failing port, none told to the Observer (events %s)\n%s", failing,
				kindsLine(evs.All()), logs.String())
		}
	})
}

// TestASlowObserverIsNoLatePort: EventChecked's Err "holds the failures of
// its ports" (go doc deletion.EventChecked): a journal whose commit of
// EventDestroyed takes past CheckTimeout, every port answering at once, is
// no failure of the check's ports.
func TestASlowObserverIsNoLatePort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		events := &deletiontest.Events{}
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventDestroyed {
				time.Sleep(3 * time.Second) // the commit, past CheckTimeout
			}
			events.Observe(ev)
		})
		policy := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Observer: obs, CheckTimeout: time.Second})
		pu := cluster.CreatePod(nsKey("a"), "", "")
		require.NoError(t, e.Track(pu))
		cluster.DeletePod(pu.Pod)
		e.Sweep(context.Background())
		time.Sleep(5 * time.Second) // the Sweep may leave the check in its Observer
		require.Equal(t, 1, policy.CallCount())
		for _, ev := range events.Of(deletion.EventChecked) {
			assert.NoError(t, ev.Err, "no port failed or answered late")
		}
	})
}
