package deletion_test

import (
	"context"
	"errors"
	"fmt"
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

// docs/sdk/engine.md:27-29: "`Sweep` runs one synchronous pass, for tests and custom schedules; under a destroy rate it
// waits for the turns of the destroys it decides (end it sooner with its context)." deletion/options.go:118-120 (go doc
// Options.DestroyRate): "a check that learns nothing of why it waits (GetPod fails ...) keeps its place, or its turn
// come, the next tick ... a Sweep waits for them."
//
// A Sweep without Start, under a rate of 1/s: three PUs' pods are gone; one is destroyed at once, the two others wait
// in line. The head's check at its turn meets one transient GetPod failure: it keeps its place (as documented), but
// nothing checks it again, "the next tick" never comes without Start, and the Sweep waits for the second one's turn,
// which can only come after the head's. The Sweep never ends on its own: it re-reads the second PU's pod every
// second until its context ends (an hour here, forever with context.Background()), and destroys nothing more.
func TestAuditSweepUnderRateEndsAfterATransientFailure(t *testing.T) { sweepLine(t) }

func sweepLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		pol := &deletiontest.Policy{}
		var mu sync.Mutex
		reads := map[types.NamespacedName]int{}
		failed := false
		getter := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			mu.Lock()
			reads[k]++
			fail := reads[k] == 2 && !failed // the first read at a PU's turn fails, once
			failed = failed || fail
			mu.Unlock()
			if fail {
				return nil, errors.New("transient: connection reset")
			}
			return cluster.GetPod(ctx, k)
		})
		e := deletiontest.NewEngine(t, getter, pol, deletion.Options{DestroyRate: rate.Limit(1)})
		for i := range 3 {
			pu := cluster.CreatePod(nsKey(fmt.Sprint("p", i)), "", "")
			if err := e.Track(pu); err != nil {
				t.Fatal(err)
			}
			cluster.DeletePod(pu.Pod)
		}

		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		start := time.Now()
		e.Sweep(ctx)
		took := time.Since(start)

		if took > time.Minute || len(pol.Destroyed()) != 3 {
			mu.Lock()
			defer mu.Unlock()
			t.Errorf("Sweep under a rate of 1/s over 3 gone pods returned after %v (its context's end), with %d destroyed, "+
				"%d still tracked, pods read %v; want it to end within seconds, all 3 destroyed",
				took, len(pol.Destroyed()), e.Len(), reads)
		}
	})
}

// The same transient failure at the head's turn while Start runs: deletion/options.go:118-120 holds: the head keeps
// its place, is checked again the next tick and destroyed before the PU found to go after it.
func TestAuditHoldsHeadKeepsPlaceAfterTransientFailureWithStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		pol := &deletiontest.Policy{}
		var mu sync.Mutex
		reads := map[types.NamespacedName]int{}
		getter := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			mu.Lock()
			reads[k]++
			fail := k.Name == "b" && reads[k] == 3 // B's read at its turn
			mu.Unlock()
			if fail {
				return nil, errors.New("transient: connection reset")
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
		deletiontest.Advance(10 * time.Second)
		got := pol.Destroyed()
		if len(got) != 3 || got[0].PUID != a.PUID || got[1].PUID != b.PUID || got[2].PUID != c.PUID {
			t.Errorf("destroys %v, want a, b, c", got)
		}
	})
}
