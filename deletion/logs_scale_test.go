package deletion_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// recordedLog records every line a logr.Logger writes, V(1) included.
type recordedLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *recordedLog) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 1})
}

// count returns how many lines hold s.
func (l *recordedLog) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

func (l *recordedLog) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func nsPod(i int) types.NamespacedName {
	return types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("pod-%d", i)}
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
		pu := cl.CreatePod(nsPod(1), "node-a", "")
		policy := &deletiontest.Policy{}
		policy.Fail(errors.New("policy engine restarting"))
		var logs recordedLog
		events := &deletiontest.Events{}
		e := deletiontest.NewEngine(t, cl, policy, deletion.Options{NodeName: "node-a", Logger: logs.logger(),
			Observer: events, RetryMinDelay: time.Second, RetryMaxDelay: 2 * time.Second})
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		deletiontest.Start(t, e)
		deletiontest.Advance(time.Second)
		cl.DeletePod(nsPod(1))
		e.TriggerPod(nsPod(1))
		deletiontest.Advance(30 * time.Second)
		fails := events.Count(deletion.EventDestroyFailed)
		if fails < 5 {
			t.Fatalf("only %d failed destroys in 30s", fails)
		}
		// The PU's other failures (a failed read) are logged once: "getting pod failed" is logged at V(1) once per
		// PU until a check succeeds. The destroy's failures are logged at each one.
		if n := logs.count("destroying PU failed; will retry"); n > 1 {
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
		pu := cl.CreatePod(nsPod(1), "node-a", "")
		apiDown := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			return nil, errors.New("connection refused")
		})
		var logs recordedLog
		events := &deletiontest.Events{}
		e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{NodeName: "node-a", Logger: logs.logger(),
			Observer: events, Confirmer: apiDown})
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		deletiontest.Start(t, e)
		cl.DeletePod(nsPod(1))
		deletiontest.Advance(30 * time.Second)
		vetoes := events.Count(deletion.EventVetoed)
		if vetoes < 5 {
			t.Fatalf("only %d vetoes in 30s", vetoes)
		}
		first := logs.count("getting pod failed; keeping PU")
		if n := logs.count("destroy not confirmed; keeping PU"); n > 1 {
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
		var logs recordedLog
		cl := deletiontest.NewCluster()
		e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{NodeName: "node-a",
			Logger: logs.logger(), Inventory: inv})
		deletiontest.Start(t, e)
		deletiontest.Advance(time.Minute)
		perPU := logs.count(`"msg"="skipping a PU the Inventory listed" "error"=`) // an error line; at V(1) it has a level
		errorLines := perPU + logs.count(`"msg"="skipping PUs the Inventory listed" "error"=`)
		if errorLines != 1 || logs.count(`"skipped"=200`) < 1 {
			t.Errorf("one list of the Inventory answering %d invalid PUs: %d error lines, want one that counts them:\n%s", n, errorLines, logs.all())
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
		pu := cl.CreatePod(nsPod(1), "node-a", "")
		var logs recordedLog
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
		if n := logs.count("observer panicked"); n != 1 {
			t.Fatalf("%d V(1) lines of the panic", n)
		}
		deletiontest.Advance(10 * time.Minute) // 120 SweepIntervals
		if n := logs.count("port failing"); n == 0 {
			t.Errorf("the Observer panicked 10 minutes ago: no error line sums it up (only a V(1) line), want one within an interval; logs:\n%s", logs.all())
		}
	})
}
