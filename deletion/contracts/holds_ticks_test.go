package contracts_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// Options.DestroyRate (options.go:123-126): "one that learns nothing is checked again at its turn, and then every
// tick until a check learns why ... (while the API server fails, a PU whose turn has come is read once or twice a
// second, not once a SweepInterval)".
func TestHoldsFailingHeadReadEveryTick(t *testing.T) {
	for _, interval := range []time.Duration{5 * time.Second, time.Minute, 10 * time.Minute} {
		t.Run(interval.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld()
				var mu sync.Mutex
				reads := map[string]int{}
				g := func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
					mu.Lock()
					reads[k.Name]++
					mu.Unlock()
					return w.getter().GetPod(ctx, k)
				}
				e := deletiontest.NewEngine(t, podGetterFunc(g), w.policy(), deletion.Options{NodeName: node, Workers: 1,
					DestroyRate: 0.1, SweepInterval: interval})
				_ = e.Track(w.add("a", "uid-a", ""))
				_ = e.Track(w.add("b", "uid-b", ""))
				deletiontest.Start(t, e)
				advance(0)
				w.del("a")
				w.del("b")
				e.TriggerPod(key("a"))
				advance(0)
				e.TriggerPod(key("b"))
				advance(0)
				w.failGet("b", errors.New("api down"))
				advance(10 * time.Second) // b's turn comes
				mu.Lock()
				before := reads["b"]
				mu.Unlock()
				advance(10 * time.Second)
				mu.Lock()
				n := reads["b"] - before
				mu.Unlock()
				if n < 9 || n > 21 {
					t.Fatalf("interval %v: the head, failing at its turn, read %d times in 10s", interval, n)
				}
			})
		})
	}
}
