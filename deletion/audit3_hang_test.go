package deletion_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// docs/sdk/engine.md:16-19: "each has a deadline of `CheckTimeout` (30 s). Ports that fail or panic cannot lose a PU;
// a port that ignores its context keeps one worker until it returns, and `LivenessCheck` fails once every worker is
// stuck so." docs/sdk/migrating-from-trireme.md:71: "each check under its own deadline; a port that hangs or panics
// costs one check, not the loop" (against trireme-lib, where "one hung API call stalled all others").
//
// Under a destroy rate of 1/s, A is destroyed at once, B is first in line and C second. At B's turn, one GetPod of B
// hangs, ignoring its context. B, being checked, keeps the head of the line for as long as the port hangs, so C,
// whose pod is gone and whose turns are at hand, is re-read every second and never destroyed: one hung call stalls
// every destroy behind it, while three of the four workers are idle and LivenessCheck passes.
func TestAuditHungPortCostsOneCheckNotEveryDestroy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		pol := &deletiontest.Policy{}
		var mu sync.Mutex
		reads := map[types.NamespacedName]int{}
		release := make(chan struct{})
		defer close(release)
		getter := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			mu.Lock()
			reads[k]++
			hang := k.Name == "b" && reads[k] == 3 // B's read at its turn
			mu.Unlock()
			if hang {
				<-release // ignores its context
			}
			return cluster.GetPod(ctx, k)
		})
		e := deletiontest.NewEngine(t, getter, pol, deletion.Options{DestroyRate: rate.Limit(1), SweepInterval: time.Hour})
		a, b, c := cluster.CreatePod(nsKey("a"), "", ""), cluster.CreatePod(nsKey("b"), "", ""), cluster.CreatePod(nsKey("c"), "", "")
		for _, pu := range []ports.PU{a, b, c} {
			if err := e.Track(pu); err != nil {
				t.Fatal(err)
			}
		}
		deletiontest.Start(t, e)
		for _, pu := range []ports.PU{a, b, c} {
			e.TriggerPod(pu.Pod) // their first checks: alive
		}
		deletiontest.Advance(200 * time.Millisecond)
		for _, pu := range []ports.PU{a, b, c} { // found to go in the order a, b, c
			cluster.DeletePod(pu.Pod)
			e.TriggerPod(pu.Pod)
			deletiontest.Advance(10 * time.Millisecond)
		}
		deletiontest.Advance(10 * time.Minute)

		if n := len(pol.CallsOf(c.PUID)); n == 0 {
			mu.Lock()
			defer mu.Unlock()
			t.Errorf("10 minutes after C's pod went, with B's GetPod hung (one worker of 4): C destroyed %d times, "+
				"read %d times, LivenessCheck %v; want the hung call to cost B's check only", n, reads[c.Pod], e.LivenessCheck(nil))
		}
	})
}
