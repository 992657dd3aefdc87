package deletion_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// lineRun sets up a destroy line under a rate of 1/s: A takes the turn at hand, B (its sandbox dead, row 12) is first
// in line, C (its pod gone) second. Then a triggered check of B learns nothing of why B waits, because fail makes the
// SandboxExtractor or the SandboxProber fail. It returns who was destroyed, in order.
func lineRun(t *testing.T, failExtractor bool) []ports.DestroyEvent {
	cluster := deletiontest.NewCluster()
	pol := &deletiontest.Policy{}
	var failing atomic.Bool
	extractor := ports.SandboxExtractorFunc(func(ctx context.Context, pod *corev1.Pod) (string, error) {
		if failExtractor && failing.Load() {
			return "", errors.New("runtime unreachable")
		}
		return cluster.SandboxID(ctx, pod)
	})
	prober := ports.SandboxProberFunc(func(ctx context.Context, pod *corev1.Pod, id string) (bool, error) {
		if !failExtractor && failing.Load() {
			return false, errors.New("runtime unreachable")
		}
		return cluster.SandboxDead(ctx, pod, id)
	})
	e := deletiontest.NewEngine(t, cluster, pol, deletion.Options{SandboxExtractor: extractor, SandboxProber: prober,
		DestroyRate: rate.Limit(1), SweepInterval: time.Hour})
	a := cluster.CreatePod(nsKey("a"), "", "sb-a")
	b := cluster.CreatePod(nsKey("b"), "", "sb-b")
	c := cluster.CreatePod(nsKey("c"), "", "sb-c")
	for _, pu := range []ports.PU{a, b, c} {
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
	}
	deletiontest.Start(t, e)
	deletiontest.Advance(100 * time.Millisecond)

	cluster.DeletePod(a.Pod)
	e.TriggerPod(a.Pod) // A takes the one turn at hand
	deletiontest.Advance(100 * time.Millisecond)
	if err := cluster.KillSandbox(b.Pod); err != nil {
		t.Fatal(err)
	}
	e.TriggerPod(b.Pod) // B: SandboxDead, first in line
	deletiontest.Advance(100 * time.Millisecond)
	cluster.DeletePod(c.Pod)
	e.TriggerPod(c.Pod) // C: PodGone, second in line
	deletiontest.Advance(100 * time.Millisecond)

	failing.Store(true)
	e.TriggerPod(b.Pod) // a trigger, and a check that learns nothing of why B waits
	deletiontest.Advance(100 * time.Millisecond)
	failing.Store(false)
	deletiontest.Advance(5 * time.Second)
	e.TriggerPod(b.Pod) // B is seen again (its periodic check is an hour away)
	deletiontest.Advance(5 * time.Second)
	return pol.Destroyed()
}

// deletion/options.go:115-120 (go doc Options.DestroyRate): "The PUs whose checks decide a destroy form a line in the
// order they were found to go, and turns go to them in that order ... A trigger, or a check that learns nothing of why
// it waits (GetPod fails; or, for a destroy of its sandbox, the SandboxExtractor fails), keeps its place; a check that
// sees the pod alive, or Untrack, takes it out of the line, and the turn it did not use goes to the next in line,
// never to a later arrival." ports/ports.go:48-49 (SandboxProber): "An error means the answer is not known".
//
// A PU in line for SandboxDead (row 12, decided by the SandboxProber) whose triggered check finds the prober failing
// (row 8: nothing learnt of its sandbox, the prober's answer "not known") is taken out of the line as if its pod had
// been seen alive: C, found to go after it, takes its turn, and B goes last. The same check with the
// SandboxExtractor failing keeps B's place (TestAuditHoldsExtractorFailureKeepsPlaceInLine).
func TestAuditProberFailureKeepsPlaceInLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := lineRun(t, false)
		if len(got) != 3 || got[1].PUID != "uid-2" || got[2].PUID != "uid-3" {
			t.Errorf("destroys %v: want A, then B (first in line, SandboxDead), then C (PodGone, found after B)", got)
		}
	})
}

// The same line, B's check learning nothing because the SandboxExtractor fails (row 6): B keeps its place.
func TestAuditHoldsExtractorFailureKeepsPlaceInLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := lineRun(t, true)
		if len(got) != 3 || got[1].PUID != "uid-2" || got[2].PUID != "uid-3" {
			t.Errorf("destroys %v: want A, then B, then C", got)
		}
	})
}
