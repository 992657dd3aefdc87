package contracts_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// engine.md:47-55: a drain while the API server is slow makes the agent unready, not restarted; LivenessCheck fails
// when every worker is stuck in a port past its deadline.
func TestHoldsHealthSlowVersusStuck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		delay := 900 * time.Millisecond
		hang := make(chan struct{})
		var hanging atomic.Bool
		g := func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			if hanging.Load() {
				<-hang // ignores its context
			}
			select {
			case <-time.After(delay):
			case <-ctx.Done():
			}
			return w.getter().GetPod(ctx, k)
		}
		e := deletiontest.NewEngine(t, podGetterFunc(g), w.policy(), deletion.Options{NodeName: node, Workers: 1,
			SweepInterval: time.Second, CheckTimeout: time.Second})
		for i := range 10 {
			n := fmt.Sprint("p", i)
			_ = e.Track(w.add(n, "uid-"+n, ""))
		}
		deletiontest.Start(t, e)
		advance(20 * time.Second)
		if err := e.ReadinessCheck(nil); !errors.Is(err, deletion.ErrBehind) {
			t.Fatalf("readiness while behind: %v", err)
		}
		if err := e.LivenessCheck(nil); err != nil {
			t.Fatalf("liveness while behind: %v", err)
		}
		hanging.Store(true)
		advance(5 * time.Second)
		if err := e.LivenessCheck(nil); !errors.Is(err, deletion.ErrWorkersStuck) {
			t.Fatalf("liveness with its one worker stuck: %v", err)
		}
		hanging.Store(false)
		close(hang)
	})
}
