package contracts_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

func TestHoldsRequeuerTracksFromInside(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		var e *deletion.Engine
		var mu sync.Mutex
		var calls []string
		rq := ports.RequeuerFunc(func(ctx context.Context, p *corev1.Pod) error {
			mu.Lock()
			calls = append(calls, p.Name)
			mu.Unlock()
			sb, _ := w.extractor().SandboxID(ctx, p)
			return e.Track(ports.PU{PUID: string(p.UID), Pod: key(p.Name), SandboxID: sb})
		})
		e = newEngine(t, w, deletion.Options{SandboxExtractor: w.extractor(), Requeuer: rq, Observer: &deletiontest.Events{}})
		_ = e.Track(w.add("a", "uid-a", "s1"))
		w.setSandbox("a", "s2")
		e.Sweep(context.Background())
		st := e.Status()
		t.Logf("calls %v status %+v destroyed %v", calls, st, w.destroys)
		if len(st) != 1 || st[0].SandboxID != "s2" || len(calls) != 1 {
			t.Fatalf("status %+v calls %v", st, calls)
		}
	})
}

// docs/sdk/engine.md: the Requeuer "is called off the workers, one pod at a time in the order the checks requeued
// them (a pod requeued again while it waits goes once, at its latest place, with its latest copy)".
//
// The Requeuer is slow on its first pod (x). Meanwhile checks requeue a (its PU of sandbox s1 destroyed), b, then a
// again (its next PU, of sandbox s2, destroyed too): four requeues, x a b a. The Requeuer is called x, b, a: a once,
// at its latest place, as the pod of sandbox s3.
func TestRequeuerCalledInTheOrderChecksRequeued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		var mu sync.Mutex
		var calls []string
		release := make(chan struct{})
		first := true
		rq := ports.RequeuerFunc(func(ctx context.Context, p *corev1.Pod) error {
			mu.Lock()
			calls = append(calls, p.Name+"/"+w.sandboxOf(p.Name))
			f := first
			first = false
			mu.Unlock()
			if f {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return nil
		})
		e := newEngine(t, w, deletion.Options{SandboxExtractor: w.extractor(), Requeuer: rq, Workers: 1, SweepInterval: time.Hour})
		for _, n := range []string{"x", "a", "b"} {
			_ = e.Track(w.add(n, "uid-"+n, "s1"))
		}
		deletiontest.Start(t, e)
		advance(0)
		for _, n := range []string{"x", "a", "b"} {
			w.setSandbox(n, "s2")
			e.TriggerPod(key(n))
			advance(0)
		}
		// a again: its new PU, then another sandbox
		_ = e.Track(ports.PU{PUID: "uid-a", Pod: key("a"), SandboxID: "s2"})
		w.setSandbox("a", "s3")
		e.TriggerPod(key("a"))
		advance(0)
		close(release)
		advance(time.Second)
		mu.Lock()
		defer mu.Unlock()
		t.Logf("calls %v destroyed %v", calls, w.destroys)
		if want := []string{"x/s2", "b/s2", "a/s3"}; !slices.Equal(calls, want) {
			t.Fatalf("requeued x, a, b, a in that order; Requeuer called %v, want %v", calls, want)
		}
	})
}

func (w *world) sandboxOf(n string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sandbox[key(n)]
}

var _ = slices.Equal[[]string]
