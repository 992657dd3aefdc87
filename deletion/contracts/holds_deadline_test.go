package contracts_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// engine.md:19-21: each check "has a deadline of CheckTimeout (30 s; between 99% and 100% of it, for the checks a worker
// runs in quick succession share one deadline)".
func TestHoldsCheckDeadlineBetween99And100Percent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		const timeout = 10 * time.Second
		var mu sync.Mutex
		var left []time.Duration
		g := func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			d, ok := ctx.Deadline()
			mu.Lock()
			if ok {
				left = append(left, time.Until(d))
			} else {
				left = append(left, -1)
			}
			mu.Unlock()
			time.Sleep(7 * time.Millisecond) // quick checks in succession
			return w.getter().GetPod(ctx, k)
		}
		e := deletiontest.NewEngine(t, podGetterFunc(g), w.policy(), deletion.Options{NodeName: node, Workers: 1,
			CheckTimeout: timeout})
		for i := range 60 {
			n := fmt.Sprint("p", i)
			_ = e.Track(w.add(n, "uid-"+n, ""))
		}
		e.Sweep(context.Background())
		deletiontest.Start(t, e)
		e.TriggerAll()
		advance(time.Second)
		mu.Lock()
		defer mu.Unlock()
		for i, l := range left {
			if l < timeout*99/100 || l > timeout {
				t.Fatalf("check %d began with %v of its deadline of %v left", i, l, timeout)
			}
		}
	})
}
