package deletion_test

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

// docs/sdk/engine.md:11: "At most Workers (4) checks run at once, never two of one PU, whoever runs them (Start or a
// Sweep)". Sweeps before, during and after Start, triggers, and slow reads.
func TestAuditHoldsWorkersBoundAndOneCheckPerPU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		var mu sync.Mutex
		inFlight, max := map[types.NamespacedName]int{}, 0
		total := 0
		pg := podGetter(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			mu.Lock()
			inFlight[k]++
			total++
			if inFlight[k] > 1 {
				t.Errorf("two checks of %s at once", k)
			}
			if total > max {
				max = total
			}
			mu.Unlock()
			time.Sleep(300 * time.Millisecond)
			mu.Lock()
			inFlight[k]--
			total--
			mu.Unlock()
			return cluster.GetPod(ctx, k)
		})
		engine := deletiontest.NewEngine(t, pg, &deletiontest.Policy{}, deletion.Options{Workers: 3, SweepInterval: time.Second})
		for i := range 12 {
			_ = engine.Track(cluster.CreatePod(key(fmt.Sprint("p", i)), "node-a", ""))
		}
		var wg sync.WaitGroup
		ctx, cancel := context.WithCancel(t.Context())
		defer func() { cancel(); wg.Wait(); time.Sleep(time.Second) }()
		wg.Go(func() { engine.Sweep(ctx) })
		deletiontest.Advance(200 * time.Millisecond)
		stop := deletiontest.Start(t, engine)
		for i := range 10 {
			wg.Go(func() { engine.Sweep(ctx) })
			engine.TriggerAll()
			engine.TriggerPod(key(fmt.Sprint("p", i)))
			deletiontest.Advance(150 * time.Millisecond)
		}
		stop()
		wg.Go(func() { engine.Sweep(ctx) })
		deletiontest.Advance(10 * time.Second)
		if max > 3 {
			t.Errorf("%d checks at once, Workers 3", max)
		}
	})
}

type podGetter func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error)

func (f podGetter) GetPod(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
	return f(ctx, k)
}

// Observer: "A panic in it is recovered and logged." Observers: "A panic in one does not keep the others from being
// told". docs/sdk/engine.md:12-13: "Ports that fail or panic cannot lose a PU". An Observer panics on every event.
func TestAuditHoldsPanickingObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		inv := deletiontest.NewInventory()
		boom := deletion.ObserverFunc(func(deletion.Event) { panic("metrics exploded") })
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Observer: deletion.Observers(boom, inv), Inventory: inv})
		pu := cluster.CreatePod(key("a"), "node-a", "")
		if err := engine.Track(pu); err != nil {
			t.Fatal(err)
		}
		if len(inv.PUs()) != 1 {
			t.Errorf("journal after Track: %v", inv.PUs())
		}
		deletiontest.Start(t, engine)
		cluster.DeletePod(pu.Pod)
		deletiontest.Advance(time.Minute)
		if policy.CallCount() != 1 || engine.Len() != 0 || len(inv.PUs()) != 0 {
			t.Errorf("%d destroys, %d tracked, journal %v", policy.CallCount(), engine.Len(), inv.PUs())
		}
	})
}
