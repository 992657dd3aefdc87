package deletion_test

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
	"github.com/podsweeper/podsweeper/ports"
)

// Options.DestroyRate: "in any window of w seconds, at most DestroyRate*w + DestroyBurst start." Sweeps without and
// with Start, triggers, failed destroys and their retries, Untracks.
func TestAuditHoldsDestroyRateBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		const rate, burst = 2.0, 3
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{
			DestroyRate: rate, DestroyBurst: burst, RetryMinDelay: 100 * time.Millisecond, Workers: 3,
		})
		var pus []ports.PU
		for i := range 30 {
			pu := cluster.CreatePod(key(fmt.Sprint("p", i)), "node-a", "")
			pus = append(pus, pu)
			_ = engine.Track(pu)
		}
		for _, pu := range pus[:20] {
			cluster.DeletePod(pu.Pod)
		}
		policy.FailNext(4, errors.New("busy"))
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		engine.Sweep(ctx) // without Start, ended early
		cancel()
		stop := deletiontest.Start(t, engine)
		go engine.Sweep(t.Context())
		for i := range 10 {
			engine.TriggerAll()
			engine.Untrack(pus[20-i-1].PUID)
			cluster.DeletePod(pus[20+i].Pod)
			engine.TriggerPod(pus[20+i].Pod)
			deletiontest.Advance(700 * time.Millisecond)
		}
		stop()
		engine.Sweep(t.Context()) // after Start returned
		deletiontest.Advance(time.Minute)

		calls := policy.Calls()
		for i := range calls {
			for j := i; j < len(calls); j++ {
				w := calls[j].At.Sub(calls[i].At).Seconds()
				if n := float64(j - i + 1); n > rate*w+burst+1e-9 {
					t.Fatalf("%v DestroyPU calls started within %.3fs: over %v*w+%d", n, w, rate, burst)
				}
			}
		}
		t.Logf("%d calls", len(calls))
	})
}

// Options.DestroyRate: "a PU destroys only when fewer PUs are ahead of it than turns are at hand; otherwise it waits
// ... until about its turn, and is checked again then. A trigger, or a check whose ports fail, keeps its place; a
// check that sees the pod alive ... takes it out of the line, and the turn it did not use goes to the next in line".
// Line a, x, y, b at one turn a second: y is seen alive (its 2s turn is b's), and b's own check fails while x takes
// its turn at 1s. b keeps its place, first in line, its turn at hand at 2s.
func TestAuditTurnAtHandIsTakenAfterAFailedCheck(t *testing.T) { turnAfterFailedCheck(t, true) }

// The same line, b's check not failing: b is nudged to its 2s turn.
func TestAuditHoldsTurnGoesToTheNextInLine(t *testing.T) { turnAfterFailedCheck(t, false) }

func turnAfterFailedCheck(t *testing.T, fail bool) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		var failB atomic.Bool
		b := key("b")
		getter := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			if k == b && failB.CompareAndSwap(true, false) {
				time.Sleep(200 * time.Millisecond)
				return nil, errors.New("API server: timeout")
			}
			return cluster.GetPod(ctx, k)
		})
		engine := deletiontest.NewEngine(t, getter, policy, deletion.Options{
			DestroyRate: 1, DestroyBurst: 1, SweepInterval: time.Hour,
		})
		pus := map[string]ports.PU{}
		for _, n := range []string{"a", "x", "y", "b"} {
			pus[n] = cluster.CreatePod(key(n), "node-a", "")
			_ = engine.Track(pus[n])
			cluster.FailReads(key(n), ports.ErrPodNotFound) // the cache says gone
		}
		deletiontest.Start(t, engine)
		synctest.Wait()
		t0 := time.Now()
		for _, n := range []string{"a", "x", "y", "b"} { // found to go in this order
			engine.TriggerPod(key(n))
			synctest.Wait()
		}
		deletiontest.Advance(500 * time.Millisecond)
		cluster.FailReads(key("y"), nil) // y lives: out of the line
		engine.TriggerPod(key("y"))
		deletiontest.Advance(400 * time.Millisecond) // 0.9s
		if fail {
			failB.Store(true)
			engine.TriggerPod(b)
		} // b's check: 0.9s to 1.1s, fails
		deletiontest.Advance(5 * time.Second)

		at := func(n string) time.Duration {
			c := policy.CallsOf(pus[n].PUID)
			if len(c) == 0 {
				return -1
			}
			return c[0].At.Sub(t0)
		}
		t.Logf("destroys: a %v, x %v, y %v, b %v", at("a"), at("x"), at("y"), at("b"))
		if at("x") != time.Second || at("y") != -1 {
			t.Fatalf("setup: x at %v, y at %v", at("x"), at("y"))
		}
		if got := at("b"); got < 0 || got > 2100*time.Millisecond {
			t.Errorf("b, first in line from 1s with its check failed, destroyed at %v; its turn was at hand at 2s and no one used it", got)
		}
	})
}
