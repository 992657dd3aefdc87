package deletion_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

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
