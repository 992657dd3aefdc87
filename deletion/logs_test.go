package deletion_test

// The engine's logs: they scale with the failure, not with the PUs: while a port
// fails, or an Observer panics, each failing port gets one error line per
// SweepInterval, however many PUs it fails for and however often Sweep runs;
// and the default logger is never silent.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// TestDefaultLoggerIsNeverSilent: with no Logger, an abandoned PU, a
// panicking port and a failing API reach klog, the ecosystem's default.
func TestDefaultLoggerIsNeverSilent(t *testing.T) {
	var buf syncBuffer
	klog.LogToStderr(false)
	klog.SetOutput(&buf)
	t.Cleanup(func() {
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	})
	getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		switch key.Name {
		case "api-down":
			return nil, errors.New("connection refused")
		case "panics":
			panic("getter bug")
		}
		return nil, ports.ErrPodNotFound
	})
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error {
		return ports.Permanent(errors.New("refused"))
	})
	for _, name := range []string{"api-down", "panics", "gone"} { // an engine each: one summary line each
		c, err := deletion.New(getter, policy, deletion.Options{}) // no Logger
		require.NoError(t, err)
		require.NoError(t, c.Track(ports.PU{PUID: name, Pod: types.NamespacedName{Namespace: "ns", Name: name}}))
		c.Sweep(context.Background())
	}
	klog.Flush()
	out := buf.String()
	assert.Contains(t, out, "connection refused")
	assert.Contains(t, out, "port panicked: GetPod")
	assert.Contains(t, out, "destroying PU failed for the last time")
}

// TestLogsScaleInAnOutage: while the API server is down, the engine logs
// one error line per port per interval, whatever the number of PUs, and
// each PU's first failure at V(1); the Observer still hears of every one.
func TestLogsScaleInAnOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs, evs := &logBuffer{}, &deletiontest.Events{}
		c := deletiontest.NewEngine(t, getterOf(nil, errors.New("connection refused")), &deletiontest.Policy{}, deletion.Options{
			SweepInterval: 5 * time.Second, Logger: logs.logger(), Observer: evs,
		})
		const n = 250
		for i := range n {
			require.NoError(t, c.Track(ports.PU{PUID: fmt.Sprint(i), Pod: types.NamespacedName{Namespace: "ns", Name: fmt.Sprint(i)}}))
		}
		stop := deletiontest.Start(t, c)
		time.Sleep(10*5*time.Second + time.Second) // ten intervals: 2,500 failed reads
		synctest.Wait()
		stop()

		failed := len(evs.Of(deletion.EventGetFailed))
		assert.GreaterOrEqual(t, failed, 10*n, "every failure reaches the Observer")
		summaries := logs.lines("port failing")
		assert.GreaterOrEqual(t, len(summaries), 9)
		assert.LessOrEqual(t, len(summaries), 12, "one line per interval, not one per PU")
		assert.Contains(t, summaries[0], `"port"="GetPod"`)
		assert.Contains(t, summaries[0], "connection refused")
		assert.Len(t, logs.lines(`"msg"="getting pod failed; keeping PU"`), n, "each PU's first failure, at V(1), once")
	})
}

// docs/sdk/engine.md:45-48: "Logs scale with the failure, not with the PUs: while a port fails (the API server down,
// the policy engine restarting), each failing port gets one error line per SweepInterval (how many failures, the last
// error and PU), each PU's first failure is logged at V(1)". The API server hangs past every deadline (a GetPod that
// ignores its context): 40 PUs, three intervals.
func TestAuditLogsScaleWithTheFailureNotThePUs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		sink := &errorSink{}
		getter := ports.PodGetterFunc(func(_ context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			time.Sleep(1500 * time.Millisecond) // past CheckTimeout, ignoring ctx
			return cluster.GetPod(context.Background(), k)
		})
		engine := deletiontest.NewEngine(t, getter, &deletiontest.Policy{}, deletion.Options{
			Workers: 40, CheckTimeout: time.Second, SweepInterval: 5 * time.Second, Logger: logr.New(sink),
		})
		for i := range 40 {
			_ = engine.Track(cluster.CreatePod(key(fmt.Sprint("p", i)), "node-a", ""))
		}
		deletiontest.Start(t, engine)
		deletiontest.Advance(15 * time.Second)
		lines := sink.lines()
		if len(lines) > 6 { // one per failing port per interval, with room for the edges
			t.Errorf("%d error lines in 3 intervals of a hung API server with 40 PUs: %v", len(lines), summary(lines))
		}
	})
}

// The same promise for the Inventory, one of the seven ports (docs/sdk/ports.md): a policy engine restarting fails
// every list for a minute.
func TestAuditLogsOneErrorLinePerIntervalForAFailingInventory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		sink := &errorSink{}
		inv := deletiontest.NewInventory()
		inv.FailLists(errors.New("policy engine restarting"))
		engine := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{
			Inventory: inv, SweepInterval: 5 * time.Second, Logger: logr.New(sink),
		})
		deletiontest.Start(t, engine)
		deletiontest.Advance(5 * time.Second)
		if lines := sink.lines(); len(lines) > 2 {
			t.Errorf("%d error lines in one 5s interval of a failing Inventory (%d lists): %v", len(lines), inv.Lists(), summary(lines))
		}
		inv.FailLists(nil)
		deletiontest.Advance(2 * time.Minute)
	})
}

// docs/sdk/engine.md:43-45: "each failing port gets one error line per `SweepInterval`".
func TestAuditHoldsLogsScaleWithTheFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		n := 0
		log := funcr.New(func(_, _ string) { mu.Lock(); n++; mu.Unlock() }, funcr.Options{})
		cluster := deletiontest.NewCluster()
		e := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{Logger: log})
		for i := range 20 {
			_ = e.Track(cluster.CreatePod(nsKey(fmt.Sprint("p", i)), "", ""))
		}
		deletiontest.Start(t, e)
		deletiontest.Advance(time.Second)
		cluster.FailAllReads(errors.New("api down"))
		deletiontest.Advance(time.Minute)
		mu.Lock()
		defer mu.Unlock()
		if n > 14 {
			t.Errorf("%d log lines in a minute of a failing API with 20 PUs, want about 12", n)
		}
	})
}

// Holds: a failing port's errors are summed up, one error line per port per SweepInterval.
func TestAuditHoldsFailingPortLogsScaleWithTheFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, sink := newErrorLogger()
		cluster := deletiontest.NewCluster()
		engine := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{
			Logger: log, SweepInterval: 5 * time.Second,
		})
		for i := range 200 {
			pu := cluster.CreatePod(types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("p%d", i)}, "node-a", "")
			if err := engine.Track(pu); err != nil {
				t.Fatal(err)
			}
		}
		cluster.FailAllReads(errors.New("connection refused"))
		deletiontest.Start(t, engine)
		deletiontest.Advance(20 * time.Second)
		if n := sink.errorLines(); n > 10 {
			t.Errorf("%d error lines for one failing port over 4 intervals: %v", n, summary(sink.lines()))
		}
	})
}

// Promise (docs/sdk/engine.md:50-52): "Logs scale with the failure, not with the PUs: while a port fails (the API
// server down, the policy engine restarting), each failing port gets one error line per `SweepInterval` (how many
// failures, the last error and PU)".
//
// Start runs with the default 5 s interval; GetPod fails for every pod; an agent also calls Sweep once a second (a
// custom schedule). Over 60 s the engine writes one "port failing" error line per Sweep, about 60, not about 12.
func TestAuditFailingPortOneErrorLinePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lc logBuffer
		cluster := deletiontest.NewCluster()
		e := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{Logger: lc.loggerAt(0)})
		for _, n := range []string{"a", "b", "c"} {
			if err := e.Track(cluster.CreatePod(nsKey(n), "node-a", "")); err != nil {
				t.Fatal(err)
			}
		}
		cluster.FailAllReads(errors.New("connection refused"))
		deletiontest.Start(t, e)
		synctest.Wait()
		for range 60 {
			e.Sweep(context.Background())
			time.Sleep(time.Second)
		}
		synctest.Wait()
		n := len(lc.lines(`"port"="GetPod"`))
		if n > 60/5+2 {
			t.Errorf("GetPod failing for 60 s with a 5 s SweepInterval: %d error lines for it, want about %d; first: %s", n, 60/5, strings.SplitN(lc.String(), "\n", 2)[0])
		}
	})
}

// docs/sdk/engine.md: "Logs scale with the failure, not with the PUs". An Observer (a metrics exporter, say) that
// panics on every EventChecked is one failure; with 200 PUs tracked, one SweepInterval must not bring one error line
// per PU.
func TestAuditPanickingObserverLogsScaleWithTheFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, sink := newErrorLogger()
		cluster := deletiontest.NewCluster()
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventChecked {
				panic("metrics exporter: label set mismatch")
			}
		})
		engine := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{
			Observer: obs, Logger: log, SweepInterval: 5 * time.Second,
		})
		for i := range 200 {
			pu := cluster.CreatePod(types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("p%d", i)}, "node-a", "")
			if err := engine.Track(pu); err != nil {
				t.Fatal(err)
			}
		}
		deletiontest.Start(t, engine)
		deletiontest.Advance(5 * time.Second)
		if n := sink.errorLines(); n > 10 {
			t.Errorf("one SweepInterval with an Observer that panics on every check of 200 PUs wrote %d error lines (%v), want a summary (a few lines), as a failing port gets",
				n, summary(sink.lines()))
		}
	})
}

// TestASlowLoggerIsNoPortsLateness: a Logger (stderr into a pipe drained
// slowly) that takes twice CheckTimeout to write "PU destroyed", after ports
// that all answered at once, is no failure of the check: EventChecked's Err
// stays nil and no error line blames a port or the Observer.
func TestASlowLoggerIsNoPortsLateness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var lines []string
		slow := funcr.New(func(_, args string) {
			mu.Lock()
			lines = append(lines, args)
			mu.Unlock()
			if strings.Contains(args, "PU destroyed") {
				time.Sleep(200 * time.Millisecond)
			}
		}, funcr.Options{})
		events := &deletiontest.Events{}
		policy := &deletiontest.Policy{}
		c := deletiontest.NewEngine(t, deletiontest.NewCluster(), policy,
			deletion.Options{Observer: events, Logger: slow, CheckTimeout: 100 * time.Millisecond})
		require.NoError(t, c.Track(ports.PU{PUID: "a", Pod: types.NamespacedName{Namespace: "ns", Name: "a"}})) // its pod is gone
		c.Sweep(t.Context())
		require.Equal(t, 1, policy.CallCount())
		checked := events.Of(deletion.EventChecked)
		require.Len(t, checked, 1)
		assert.NoError(t, checked[0].Err, "a slow Logger blamed on the check's ports")
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			assert.NotContains(t, l, "deadline", "a slow Logger reported as a late port or Observer")
		}
	})
}

// docs/sdk/engine.md:55-58: "Logs scale with the failure, not with the PUs: while a port fails (the API server down,
// the policy engine restarting), each failing port gets one error line per SweepInterval (...), each PU's first
// failure is logged at V(1), and the Observer, so the metrics, still hear of every one."
//
// A policy engine that is down: one PU's DestroyPU fails at every retry. Its first failure is to be logged at V(1),
// not every one of them.
func TestDestroyFailureLoggedOncePerPU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		pu := cl.CreatePod(nsKey(fmt.Sprintf("pod-%d", 1)), "node-a", "")
		policy := &deletiontest.Policy{}
		policy.Fail(errors.New("policy engine restarting"))
		var logs logBuffer
		events := &deletiontest.Events{}
		e := deletiontest.NewEngine(t, cl, policy, deletion.Options{NodeName: "node-a", Logger: logs.logger(),
			Observer: events, RetryMinDelay: time.Second, RetryMaxDelay: 2 * time.Second})
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		deletiontest.Start(t, e)
		deletiontest.Advance(time.Second)
		cl.DeletePod(nsKey(fmt.Sprintf("pod-%d", 1)))
		e.TriggerPod(nsKey(fmt.Sprintf("pod-%d", 1)))
		deletiontest.Advance(30 * time.Second)
		fails := events.Count(deletion.EventDestroyFailed)
		if fails < 5 {
			t.Fatalf("only %d failed destroys in 30s", fails)
		}
		// The PU's other failures (a failed read) are logged once: "getting pod failed" is logged at V(1) once per
		// PU until a check succeeds. The destroy's failures are logged at each one.
		if n := len(logs.lines("destroying PU failed; will retry")); n > 1 {
			t.Errorf("one PU's destroy failed %d times while the policy engine was down: %d V(1) lines for it, want its first failure only",
				fails, n)
		}
	})
}

// The same promise with its other example, the API server down: a node agent's cache says a deleted pod is gone, the
// Confirmer (a read of the API server) fails at every check. The PU's first failure is to be logged at V(1); every check
// writes a V(1) line for it ("destroy not confirmed; keeping PU").
func TestConfirmerFailureLoggedOncePerPU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		pu := cl.CreatePod(nsKey(fmt.Sprintf("pod-%d", 1)), "node-a", "")
		apiDown := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			return nil, errors.New("connection refused")
		})
		var logs logBuffer
		events := &deletiontest.Events{}
		e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{NodeName: "node-a", Logger: logs.logger(),
			Observer: events, Confirmer: apiDown})
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		deletiontest.Start(t, e)
		cl.DeletePod(nsKey(fmt.Sprintf("pod-%d", 1)))
		deletiontest.Advance(30 * time.Second)
		vetoes := events.Count(deletion.EventVetoed)
		if vetoes < 5 {
			t.Fatalf("only %d vetoes in 30s", vetoes)
		}
		first := len(logs.lines("getting pod failed; keeping PU"))
		if n := len(logs.lines("destroy not confirmed; keeping PU")); n > 1 {
			t.Errorf("the Confirmer failed at %d checks of one PU: %d V(1) lines %q for it (and %d of its first failure), want its first failure only",
				vetoes, n, "destroy not confirmed; keeping PU", first)
		}
	})
}

// docs/sdk/engine.md:55-57: "Logs scale with the failure, not with the PUs: while a port fails (...), each failing
// port gets one error line per `SweepInterval` (how many failures, the last error and PU)"; docs/sdk/ports.md:16-18:
// the engine "treats a port that hangs, fails or answers nonsense (...) as a failure".
//
// An Inventory that answers nonsense (PUs without a PUID) in one list: one error line for the list, that counts
// them (each PU's is at V(1)).
func TestInvalidListedPUsLogScaleWithPUs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 200
		var pus []ports.PU
		for i := range n {
			pus = append(pus, ports.PU{PUID: "", Pod: types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("p-%d", i)}})
		}
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) { return pus, nil })
		var logs logBuffer
		cl := deletiontest.NewCluster()
		e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{NodeName: "node-a",
			Logger: logs.logger(), Inventory: inv})
		deletiontest.Start(t, e)
		deletiontest.Advance(time.Minute)
		perPU := len(logs.lines(`"msg"="skipping a PU the Inventory listed" "error"=`)) // an error line; at V(1) it has a level
		errorLines := perPU + len(logs.lines(`"msg"="skipping PUs the Inventory listed" "error"=`))
		if errorLines != 1 || len(logs.lines(`"skipped"=200`)) < 1 {
			t.Errorf("one list of the Inventory answering %d invalid PUs: %d error lines, want one that counts them:\n%s", n, errorLines, logs.String())
		}
	})
}

// deletion.Observer (go doc): "A panic in it is recovered: logged at V(1), and summed up once an interval among the
// failing ports (one error line)."; docs/sdk/engine.md:52-53: "a panicking port or a failing API is never silent".
//
// A running engine whose Observer panics as its last PU is untracked: the panic is logged at V(1) only; the error line
// that sums it up never comes while the engine has nothing due (the scheduler does not wake up to write it).
func TestObserverPanicSummedUpOnceAnInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		pu := cl.CreatePod(nsKey(fmt.Sprintf("pod-%d", 1)), "node-a", "")
		var logs logBuffer
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventUntracked {
				panic("journal write failed")
			}
		})
		e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{NodeName: "node-a", Observer: obs,
			Logger: logs.logger()})
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		deletiontest.Start(t, e)
		deletiontest.Advance(10 * time.Millisecond) // Start has begun; the PU's first periodic check is not due yet
		if !e.Untrack(pu.PUID) {
			t.Fatal("Untrack: not tracked")
		}
		if n := len(logs.lines("observer panicked")); n != 1 {
			t.Fatalf("%d V(1) lines of the panic", n)
		}
		deletiontest.Advance(10 * time.Minute) // 120 SweepIntervals
		if n := len(logs.lines("port failing")); n == 0 {
			t.Errorf("the Observer panicked 10 minutes ago: no error line sums it up (only a V(1) line), want one within an interval; logs:\n%s", logs.String())
		}
	})
}

// engine.md:59-63 "Logs scale with the failure, not with the PUs: while a port fails (the API server down, the policy
// engine restarting), each failing port gets one error line per SweepInterval ..., each PU's first failure is logged at
// V(1) (a failed destroy's, and a veto for a failing confirmer's, too)".
// Under a DestroyRate, a PU whose destroy keeps failing waits for its turn between two attempts; each attempt is then
// logged again at V(1), as if it were the PU's first failure.
func TestFirstFailureLoggedOnceUnderDestroyRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := deletiontest.NewCluster()
		pol := &deletiontest.Policy{}
		pol.Fail(errors.New("policy engine restarting"))
		var logs logBuffer
		e := deletiontest.NewEngine(t, c, pol, deletion.Options{NodeName: testNode, Logger: logs.logger(), DestroyRate: 2})
		for i := range 5 {
			k := nsKey(fmt.Sprintf("p%d", i))
			_ = e.Track(c.CreatePod(k, testNode, ""))
			c.DeletePod(k)
		}
		deletiontest.Start(t, e)
		deletiontest.Advance(2 * time.Minute)
		lines := countLines(&logs, "destroying PU failed; will retry")
		if lines != 5 {
			t.Fatalf("%d V(1) lines of a failed destroy for 5 PUs whose destroys failed %d times (want one per PU)",
				lines, pol.CallCount())
		}
	})
}

// docs/sdk/engine.md: "each failing port gets one error line per SweepInterval". The summary is owed whoever drives
// the engine, and whenever the failure comes: each case fails a port once a summary was just written, and the next
// summary must come within the interval (5s here) and a second, on the engine's Clock.
func TestEveryFailureIsSummedUpWithinAnIntervalWhoeverDrivesTheEngine(t *testing.T) {
	const interval = 5 * time.Second
	failing := errors.New("connection refused")
	// summedUp waits (in the bubble's time) up to the interval and a second for n summaries of port.
	summedUp := func(t *testing.T, logs *logBuffer, n int, port string) {
		t.Helper()
		for range 2 * (interval + time.Second) / (500 * time.Millisecond) {
			if summaries(logs, port) >= n {
				return
			}
			time.Sleep(500 * time.Millisecond)
			synctest.Wait()
		}
		t.Fatalf("summary %d of %s not written within %s: %s", n, port, interval+time.Second, logs.String())
	}
	t.Run("a Sweep after Start returned", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			logs := &logBuffer{}
			c := deletiontest.NewEngine(t, getterOf(nil, failing), &deletiontest.Policy{},
				deletion.Options{SweepInterval: interval, Logger: logs.logger()})
			require.NoError(t, c.Track(ports.PU{PUID: "a", Pod: nsKey("a")}))
			stop := deletiontest.Start(t, c)
			synctest.Wait()
			stop()
			c.Sweep(context.Background())
			synctest.Wait() // the summary's timer may be writing it
			require.Equal(t, 1, summaries(logs, "GetPod"), "the first failure is summed up at once")
			time.Sleep(time.Second)
			c.Sweep(context.Background()) // within the interval of the last summary: not yet due
			require.Equal(t, 1, summaries(logs, "GetPod"))
			summedUp(t, logs, 2, "GetPod")
		})
	})
	t.Run("a Requeuer left behind past its deadline, as its Sweep returns", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			logs := &logBuffer{}
			cl := deletiontest.NewCluster()
			pu := cl.CreatePod(nsKey("pod-1"), "node-a", "s1")
			requeuer := ports.RequeuerFunc(func(context.Context, *corev1.Pod) error {
				time.Sleep(5 * time.Second) // past its deadline: left behind at 4s, as the Sweep's wait for it ends
				return errors.New("controller queue closed")
			})
			c := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{NodeName: "node-a",
				SandboxExtractor: cl, Requeuer: requeuer, SweepInterval: interval, CheckTimeout: 3 * time.Second,
				Logger: logs.logger()})
			require.NoError(t, c.Track(pu))
			require.NoError(t, cl.SetSandbox(nsKey("pod-1"), "s2"))
			c.Sweep(context.Background())
			summedUp(t, logs, 1, "Requeue")
			time.Sleep(2 * time.Second) // the call left behind returns
		})
	})
	t.Run("a failure while Start's first list is under way", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			logs := &logBuffer{}
			inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			})
			obs := deletion.ObserverFunc(func(ev deletion.Event) {
				if ev.Kind == deletion.EventTracked {
					panic("observer bug")
				}
			})
			c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), &deletiontest.Policy{},
				deletion.Options{SweepInterval: interval, Inventory: inv, Observer: obs, Logger: logs.logger()})
			deletiontest.Start(t, c)
			require.NoError(t, c.Track(ports.PU{PUID: "a", Pod: nsKey("a")}))
			summedUp(t, logs, 1, "Observer")
		})
	})
}

// The same promise on a fake Clock of k8s.io/utils (Options.Clock): the summary is due by that clock, not the
// machine's. Two Sweeps a second apart (by the fake clock) fail; the second's failure is summed up once the fake
// clock passes the interval, though no real time passes.
func TestFailuresAreSummedUpOnTheEnginesClock(t *testing.T) {
	logs := &logBuffer{}
	fake := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := deletiontest.NewEngine(t, getterOf(nil, errors.New("connection refused")), &deletiontest.Policy{},
		deletion.Options{SweepInterval: time.Hour, Clock: fake, Logger: logs.logger()})
	require.NoError(t, c.Track(ports.PU{PUID: "a", Pod: nsKey("a")}))
	c.Sweep(context.Background())
	require.Eventually(t, func() bool { return summaries(logs, "GetPod") == 1 }, 10*time.Second, time.Millisecond)
	fake.Step(time.Second)
	c.Sweep(context.Background())
	require.Equal(t, 1, summaries(logs, "GetPod"), "within the hour of the last summary")
	fake.Step(time.Hour)
	require.Eventually(t, func() bool { return summaries(logs, "GetPod") == 2 }, 10*time.Second, 10*time.Millisecond,
		"the second Sweep's failure summed up once the fake clock passes the hour: %s", logs.String())
}

// summaries counts the summaries of port's failures in logs.
func summaries(logs *logBuffer, port string) int {
	n := 0
	for _, l := range logs.lines("port failing") {
		if strings.Contains(l, `"port"="`+port+`"`) {
			n++
		}
	}
	return n
}
