package deletion_test

import (
	"math"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/time/rate"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// Options.DestroyBurst (doc: "DestroyBurst is how many DestroyPU calls may start at once under DestroyRate"; Options:
// "values out of range are rejected by New"; DestroyRate: "a PU destroys only when fewer PUs are ahead of it than
// turns are at hand"). New takes a large burst; a PU alone in line must then destroy at once, not never.
func TestAuditLargeDestroyBurstStillDestroys(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rate  rate.Limit
		burst int
	}{
		{"1/s, burst MaxInt", 1, math.MaxInt},
		{"1/min, burst MaxInt32", rate.Every(time.Minute), math.MaxInt32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cluster := deletiontest.NewCluster()
				policy := &deletiontest.Policy{}
				opts := deletion.Options{DestroyRate: tc.rate, DestroyBurst: tc.burst, SweepInterval: time.Second}
				if err := opts.Validate(); err != nil {
					t.Skipf("rejected, as documented: %v", err)
				}
				engine := deletiontest.NewEngine(t, cluster, policy, opts)
				pu := cluster.CreatePod(nsKey("web"), "node-a", "")
				if err := engine.Track(pu); err != nil {
					t.Fatal(err)
				}
				deletiontest.Start(t, engine)
				cluster.DeletePod(pu.Pod)
				deletiontest.Advance(time.Hour)
				if n := policy.CallCount(); n != 1 {
					t.Errorf("DestroyBurst %d under DestroyRate %v: %d DestroyPU calls an hour after the only PU's pod went, want 1 (status %+v)",
						tc.burst, tc.rate, n, engine.Status())
				}
			})
		})
	}
}

// Options.DestroyRate (doc: "in any window of w seconds, at most DestroyRate*w + DestroyBurst start"). At 0.3 a
// second, burst 1, two DestroyPU calls may start only 1/0.3 = 3.333...s apart: 2 <= 0.3*w + 1 needs w >= 3.333...s.
func TestAuditDestroyRateWindowBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const r, burst = 0.3, 1
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{DestroyRate: r, DestroyBurst: burst})
		for _, name := range []string{"a", "b", "c"} {
			pu := cluster.CreatePod(nsKey(name), "node-a", "")
			if err := engine.Track(pu); err != nil {
				t.Fatal(err)
			}
			cluster.DeletePod(pu.Pod)
		}
		deletiontest.Start(t, engine)
		deletiontest.Advance(time.Minute)
		calls := policy.Calls()
		if len(calls) != 3 {
			t.Fatalf("%d calls, want 3", len(calls))
		}
		for i := range calls {
			for j := i + 1; j < len(calls); j++ {
				w := calls[j].At.Sub(calls[i].At).Seconds()
				if n := float64(j - i + 1); n > r*w+burst {
					t.Errorf("%v DestroyPU calls started in a window of %v (from %v to %v): over DestroyRate*w + DestroyBurst = %.10f",
						n, calls[j].At.Sub(calls[i].At), calls[i].At.Format("15:04:05.000000000"),
						calls[j].At.Format("15:04:05.000000000"), r*w+burst)
				}
			}
		}
	})
}
