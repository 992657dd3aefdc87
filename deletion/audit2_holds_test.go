package deletion_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// Untrack while a destroy waits its turn: no DestroyPU of it, and its turn goes to the next in line.
func TestAuditHoldsUntrackInLineGivesTurnToNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{DestroyRate: 0.1, SweepInterval: time.Second})
		var pus []ports.PU
		for _, n := range []string{"a", "b", "c"} {
			pu := cluster.CreatePod(nsKey(n), "node-a", "")
			pus = append(pus, pu)
			if err := engine.Track(pu); err != nil {
				t.Fatal(err)
			}
		}
		deletiontest.Start(t, engine)
		deletiontest.Advance(2 * time.Second)
		for _, pu := range pus {
			cluster.DeletePod(pu.Pod)
			engine.TriggerPod(pu.Pod)
			synctest.Wait()
		}
		deletiontest.Advance(2 * time.Second)
		if !engine.Untrack(pus[1].PUID) {
			t.Fatal("b not tracked")
		}
		began := policy.Calls()[0].At
		deletiontest.Advance(30 * time.Second)
		if n := policy.Count(pus[1].PUID); n != 0 {
			t.Errorf("%d DestroyPU of an untracked PU", n)
		}
		c := policy.CallsOf(pus[2].PUID)
		if len(c) != 1 || c[0].At.Sub(began) > 10*time.Second+time.Millisecond {
			t.Errorf("c's calls %v: want one, 10s after a's (b's turn)", c)
		}
	})
}

type nilMapErr map[string]string

func (m nilMapErr) Error() string        { return "map error" }
func (m nilMapErr) Is(target error) bool { return target == ports.ErrPodNotFound }

type nilFuncErr func() string

func (f nilFuncErr) Error() string        { return f() }
func (f nilFuncErr) Is(target error) bool { return target == ports.ErrPodNotFound }

type nilSliceErr []error

func (s nilSliceErr) Error() string   { return "slice error" }
func (s nilSliceErr) Unwrap() []error { return []error{ports.ErrPodNotFound} }

type ptrErr2 struct{ msg string }

func (p *ptrErr2) Error() string { return p.msg }
func (p *ptrErr2) Unwrap() error { return ports.ErrPodNotFound }

// Ports answering nonsense keep the PU: typed-nil errors of every kind, matching ErrPodNotFound or not, wrapped or
// joined, a nil pod, another pod, a panic with ErrPodNotFound.
func TestAuditHoldsNonsenseFromGetPodKeepsThePU(t *testing.T) {
	answers := map[string]func() (*corev1.Pod, error){
		"nil map error":          func() (*corev1.Pod, error) { return nil, nilMapErr(nil) },
		"nil func error":         func() (*corev1.Pod, error) { return nil, nilFuncErr(nil) },
		"nil slice error":        func() (*corev1.Pod, error) { return nil, nilSliceErr(nil) },
		"nil pointer error":      func() (*corev1.Pod, error) { return nil, (*ptrErr2)(nil) },
		"wrapped nil pointer":    func() (*corev1.Pod, error) { return nil, fmt.Errorf("x: %w", (*ptrErr2)(nil)) },
		"joined with a nil":      func() (*corev1.Pod, error) { return nil, errors.Join(ports.ErrPodNotFound, nilMapErr(nil)) },
		"nil pod, nil error":     func() (*corev1.Pod, error) { return nil, nil },
		"another pod":            func() (*corev1.Pod, error) { return deletiontest.Pod(nsKey("other"), "uid-x", "node-a"), nil },
		"pod without a UID":      func() (*corev1.Pod, error) { return deletiontest.Pod(nsKey("web"), "", "node-a"), nil },
		"panic with not found":   func() (*corev1.Pod, error) { panic(ports.ErrPodNotFound) },
		"pod and typed-nil err":  func() (*corev1.Pod, error) { return nil, nilSliceErr(nil) },
		"nameless pod other UID": func() (*corev1.Pod, error) { return deletiontest.Pod(types.NamespacedName{}, "uid-x", ""), nil },
	}
	for name, answer := range answers {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return answer() })
				policy := &deletiontest.Policy{}
				events := &deletiontest.Events{}
				engine := deletiontest.NewEngine(t, getter, policy, deletion.Options{NodeName: "node-a", Observer: events})
				if err := engine.Track(ports.PU{PUID: "uid-1", Pod: nsKey("web")}); err != nil {
					t.Fatal(err)
				}
				engine.Sweep(t.Context())
				deletiontest.Start(t, engine)
				deletiontest.Advance(time.Minute)
				if policy.CallCount() != 0 || engine.Len() != 1 || events.Count(deletion.EventGetFailed) == 0 {
					t.Errorf("%d destroys, %d tracked, %d EventGetFailed", policy.CallCount(), engine.Len(), events.Count(deletion.EventGetFailed))
				}
			})
		})
	}
}

// DestroyPU: Permanent of a typed nil is retried; Permanent of a real error gives up at once; a panic with a
// Permanent error is retried.
func TestAuditHoldsDestroyPUNonsense(t *testing.T) {
	for name, tc := range map[string]struct {
		err      func() error
		abandons bool
	}{
		"permanent typed nil": {func() error { return ports.Permanent((*ptrErr2)(nil)) }, false},
		"permanent":           {func() error { return ports.Permanent(errors.New("no such PU")) }, true},
		"panic permanent":     {func() error { panic(ports.Permanent(errors.New("x"))) }, false},
		"typed nil":           {func() error { return nilMapErr(nil) }, false},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cluster := deletiontest.NewCluster()
				policy := &deletiontest.Policy{}
				policy.SetAnswer(func(context.Context, ports.DestroyEvent) error { return tc.err() })
				events := &deletiontest.Events{}
				engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Observer: events})
				pu := cluster.CreatePod(nsKey("web"), "node-a", "")
				if err := engine.Track(pu); err != nil {
					t.Fatal(err)
				}
				cluster.DeletePod(pu.Pod)
				engine.Sweep(t.Context())
				if got := events.Count(deletion.EventAbandoned) == 1; got != tc.abandons {
					t.Errorf("abandoned %v, want %v (%d tracked)", got, tc.abandons, engine.Len())
				}
			})
		})
	}
}

// An Inventory that hangs past every deadline: Start checks after the list's deadline and a second, LivenessCheck
// holds meanwhile, and Start returns within about ShutdownTimeout.
func TestAuditHoldsHungInventory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		hang := make(chan struct{})
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) { <-hang; return nil, nil })
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Inventory: inv, SweepInterval: time.Second, CheckTimeout: 5 * time.Second})
		pu := cluster.CreatePod(nsKey("web"), "node-a", "")
		if err := engine.Track(pu); err != nil {
			t.Fatal(err)
		}
		cluster.DeletePod(pu.Pod)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- engine.Start(ctx) }()
		for range 5 {
			time.Sleep(time.Second)
			if err := engine.LivenessCheck(nil); err != nil {
				t.Errorf("LivenessCheck during the first list: %v", err)
			}
		}
		if policy.CallCount() != 0 {
			t.Errorf("a check before the first list's deadline")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if policy.CallCount() != 1 {
			t.Errorf("%d destroys 7s in, want 1 (list deadline 5s and a second)", policy.CallCount())
		}
		cancel()
		began := time.Now()
		<-done
		if took := time.Since(began); took > deletion.DefaultShutdownTimeout+time.Second {
			t.Errorf("Start took %v to return", took)
		}
		close(hang)
	})
}

// Dry run: a PU dropped before the first list answers is not brought back and reported again by it.
func TestAuditHoldsDryRunListDoesNotReportAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		var pus []ports.PU
		for i := range 20 {
			pus = append(pus, cluster.CreatePod(nsKey(fmt.Sprint("p", i)), "node-a", ""))
		}
		inv := deletiontest.NewInventory(pus...) // the policy engine's own list: it observes nothing
		inv.FailNextLists(1, errors.New("unavailable"))
		events := &deletiontest.Events{}
		engine := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{DryRun: true, Inventory: inv, Observer: events})
		for _, pu := range pus {
			if err := engine.Track(pu); err != nil {
				t.Fatal(err)
			}
			cluster.DeletePod(pu.Pod)
		}
		deletiontest.Start(t, engine)
		deletiontest.Advance(5 * time.Minute)
		if inv.Lists() < 2 {
			t.Fatalf("%d lists", inv.Lists())
		}
		if n := events.Count(deletion.EventWouldDestroy); n != 20 {
			t.Errorf("%d EventWouldDestroy, want 20 (once per PU)", n)
		}
	})
}

// Start(nil) returns ErrNilContext and may be called again.
func TestAuditHoldsStartNilContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		engine := deletiontest.NewEngine(t, deletiontest.NewCluster(), &deletiontest.Policy{}, deletion.Options{})
		//lint:ignore SA1012 the promise under test
		if err := engine.Start(nil); !errors.Is(err, deletion.ErrNilContext) { //nolint:staticcheck
			t.Fatalf("Start(nil) = %v", err)
		}
		deletiontest.Start(t, engine)
		synctest.Wait()
		if err := engine.LivenessCheck(nil); err != nil {
			t.Error(err)
		}
	})
}

// Untrack during a list that holds the PU: the list does not bring it back.
func TestAuditHoldsUntrackDuringListNotBroughtBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		pu := cluster.CreatePod(nsKey("web"), "node-a", "")
		release := make(chan struct{})
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) { <-release; return []ports.PU{pu}, nil })
		policy := &deletiontest.Policy{}
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Inventory: inv})
		if err := engine.Track(pu); err != nil {
			t.Fatal(err)
		}
		deletiontest.Start(t, engine)
		synctest.Wait()
		engine.Untrack(pu.PUID)
		close(release)
		cluster.DeletePod(pu.Pod)
		deletiontest.Advance(time.Minute)
		if engine.Len() != 0 || policy.CallCount() != 0 {
			t.Errorf("%d tracked, %d destroys", engine.Len(), policy.CallCount())
		}
	})
}
