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
	"github.com/podsweeper/podsweeper/ports"
)

func TestHoldsWorkersBoundStartAndSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		var mu sync.Mutex
		in, max := 0, 0
		per := map[types.NamespacedName]int{}
		g := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			mu.Lock()
			in++
			per[k]++
			if in > max {
				max = in
			}
			if per[k] > 1 {
				t.Errorf("two checks of %s at once", k)
			}
			mu.Unlock()
			time.Sleep(300 * time.Millisecond)
			mu.Lock()
			in--
			per[k]--
			mu.Unlock()
			return w.getter().GetPod(ctx, k)
		})
		e := deletiontest.NewEngine(t, g, w.policy(), deletion.Options{NodeName: node, Workers: 2, SweepInterval: 500 * time.Millisecond})
		for i := range 10 {
			n := fmt.Sprint("p", i)
			_ = e.Track(w.add(n, "uid-"+n, ""))
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { e.Sweep(context.Background()) })
		time.Sleep(100 * time.Millisecond)
		wg.Go(func() { _ = e.Start(ctx) })
		time.Sleep(700 * time.Millisecond)
		e.TriggerAll()
		wg.Go(func() { e.Sweep(context.Background()) })
		time.Sleep(400 * time.Millisecond)
		cancel()
		wg.Go(func() { e.Sweep(context.Background()) })
		wg.Wait()
		if max > 2 {
			t.Fatalf("%d checks at once, Workers 2", max)
		}
	})
}
