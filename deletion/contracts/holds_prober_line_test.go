package contracts_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// Options.DestroyRate: "for a destroy of its sandbox, the SandboxExtractor or the SandboxProber fails" keeps its place.
// b waits for its turn to destroy its dead sandbox (row 12); at its turn the prober answers a typed nil error; c, found
// later, must not pass it; once the prober answers, b goes first.
func TestHoldsProberFailingAtTurnKeepsPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		var failing atomic.Bool
		pr := ports.SandboxProberFunc(func(_ context.Context, _ *corev1.Pod, sb string) (bool, error) {
			if failing.Load() {
				return true, (*ptrErr)(nil)
			}
			return true, nil
		})
		x := ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) { return "", nil })
		e := newEngine(t, w, deletion.Options{SandboxExtractor: x, SandboxProber: pr, Workers: 1, DestroyRate: 0.1,
			SweepInterval: time.Hour})
		for _, n := range []string{"a", "b", "c"} {
			_ = e.Track(w.add(n, "uid-"+n, "s-"+n))
		}
		deletiontest.Start(t, e)
		advance(0)
		e.TriggerPod(key("a"))
		advance(0)
		e.TriggerPod(key("b"))
		advance(0)
		failing.Store(true)
		advance(5 * time.Second)
		e.TriggerPod(key("c")) // c's prober fails too: c stays out of line until it answers
		advance(20 * time.Second)
		failing.Store(false)
		e.TriggerPod(key("c"))
		advance(time.Minute)
		if got := w.destroyed(); !slices.Equal(got, []string{"uid-a", "uid-b", "uid-c"}) {
			t.Fatalf("order %v", got)
		}
	})
}
