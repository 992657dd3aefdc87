package contracts_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// Engine.Sweep: "Sweep returns once every check it waits for, or every Workers slot, is held by one stuck in a port a
// second past its deadline ...: with a CheckTimeout of 100ms, about 1.1 to 2.1s after such a check began."
func TestHoldsSweepReturnsFromAStuckCheckInTime(t *testing.T) {
	for _, lead := range []time.Duration{0, 450 * time.Millisecond, 950 * time.Millisecond} {
		t.Run(lead.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld()
				release := make(chan struct{})
				var mu sync.Mutex
				var began time.Time
				g := func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
					if k.Name == "b" {
						mu.Lock()
						began = time.Now()
						mu.Unlock()
						<-release // ignores its context
					} else {
						time.Sleep(lead) // a check before it on the one worker: the stuck one begins lead later
					}
					return w.getter().GetPod(ctx, k)
				}
				e := deletiontest.NewEngine(t, podGetterFunc(g), w.policy(), deletion.Options{NodeName: node, Workers: 1,
					CheckTimeout: 100 * time.Millisecond})
				_ = e.Track(w.add("a", "uid-a", ""))
				_ = e.Track(w.add("b", "uid-b", ""))
				var done time.Time
				e.Sweep(context.Background())
				done = time.Now()
				mu.Lock()
				d := done.Sub(began)
				mu.Unlock()
				close(release)
				if began.IsZero() || d < 1100*time.Millisecond || d > 2100*time.Millisecond {
					t.Fatalf("Sweep returned %v after the stuck check began", d)
				}
			})
		})
	}
}
