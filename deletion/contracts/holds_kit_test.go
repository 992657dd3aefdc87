package contracts_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// deletiontest: Advance panics outside a bubble; Start's stop may be called more than once; Policy.Hang's release
// may be called more than once and a hung call answers its context's error; FailNext(n, nil) answers success;
// Cluster.FailReads with ErrPodNotFound is a lagging cache that APIServer (the Confirmer) vetoes.
func TestHoldsTestKitPromises(t *testing.T) {
	func() {
		defer func() {
			if recover() == nil {
				t.Errorf("Advance outside a bubble did not panic")
			}
		}()
		deletiontest.Advance(0)
	}()
	synctest.Test(t, func(t *testing.T) {
		c := deletiontest.NewCluster()
		pol := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, c, pol, deletion.Options{NodeName: node, Confirmer: c.APIServer(), CheckTimeout: time.Second})
		a := c.CreatePod(key("a"), node, "s1")
		b := c.CreatePod(key("b"), node, "s1")
		_ = e.Track(a)
		_ = e.Track(b)
		c.FailReads(a.Pod, ports.ErrPodNotFound)
		e.Sweep(context.Background())
		if pol.CallCount() != 0 {
			t.Fatalf("a lagging cache was not vetoed: %v", pol.Calls())
		}
		c.FailReads(a.Pod, nil)
		release := pol.Hang()
		c.DeletePod(b.Pod)
		e.Sweep(context.Background())
		calls := pol.Calls()
		if len(calls) != 1 || !calls[0].Done || !errors.Is(calls[0].Err, context.DeadlineExceeded) {
			t.Fatalf("hung call: %+v", calls)
		}
		release()
		release()
		pol.FailNext(1, nil)
		e.Sweep(context.Background())
		if len(pol.Destroyed()) != 1 || e.Len() != 1 {
			t.Fatalf("FailNext(1, nil): destroyed %v, len %d", pol.Destroyed(), e.Len())
		}
		stop := deletiontest.Start(t, e)
		stop()
		stop()
	})
}
