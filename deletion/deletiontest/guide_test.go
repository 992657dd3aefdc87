package deletiontest_test

// The tests docs/sdk/testing.md shows.

import (
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// TestAPUIsDestroyedOnceItsPodIsGone: under Start in a synctest bubble,
// the periodic check of a PU whose pod was deleted destroys it within one
// SweepInterval of fake time.
// docs:begin testing-4
func TestAPUIsDestroyedOnceItsPodIsGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{
			NodeName: "node-a", SweepInterval: 10 * time.Second,
		})
		pu := cluster.CreatePod(types.NamespacedName{Namespace: "shop", Name: "web-0"}, "node-a", "")
		if err := engine.Track(pu); err != nil {
			t.Fatal(err)
		}
		deletiontest.Start(t, engine) // stopped when the test ends

		cluster.DeletePod(pu.Pod)
		deletiontest.Advance(10 * time.Second) // one SweepInterval, in a blink

		got := policy.Destroyed()
		if len(got) != 1 || got[0].PUID != pu.PUID || got[0].Reason != ports.ReasonPodGone {
			t.Fatalf("destroyed %v, want the PU of web-0 for PodGone", got)
		}
	})
}

// docs:end testing-4

// TestACheckTakesTheReadDelayOnTheFakeClock: a check takes no fake time
// unless a port does; with SetReadDelay it takes that long, and a read
// longer than CheckTimeout fails the check, which keeps the PU.
// docs:begin testing-5
func TestACheckTakesTheReadDelayOnTheFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		events := &deletiontest.Events{}
		engine := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{
			CheckTimeout: 5 * time.Second, Observer: events,
		})
		pu := cluster.CreatePod(types.NamespacedName{Namespace: "shop", Name: "web-0"}, "node-a", "")
		if err := engine.Track(pu); err != nil {
			t.Fatal(err)
		}

		cluster.SetReadDelay(2 * time.Second)
		began := time.Now()
		engine.Sweep(t.Context())
		if took := time.Since(began); took != 2*time.Second {
			t.Errorf("the Sweep took %v, want the read's 2s", took)
		}

		cluster.SetReadDelay(time.Minute) // past CheckTimeout
		engine.Sweep(t.Context())
		if n := events.Count(deletion.EventGetFailed); n != 1 {
			t.Errorf("%d failed reads, want the one past its deadline", n)
		}
		if engine.Len() != 1 {
			t.Error("a check whose read failed destroyed the PU")
		}
	})
}

// docs:end testing-5

// TestARestartedEngineDestroysWhatWentAwayWhileItWasDown: an Inventory
// hooked as Inventory and Observer keeps what the first engine tracked; the
// second, started on it after the first stopped, destroys the PU of the pod
// deleted in between and tracks the other again.
// docs:begin testing-6
func TestARestartedEngineDestroysWhatWentAwayWhileItWasDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		inv := deletiontest.NewInventory()
		opts := deletion.Options{NodeName: "node-a", SandboxExtractor: cluster, Inventory: inv, Observer: inv}
		web := cluster.CreatePod(types.NamespacedName{Namespace: "shop", Name: "web-0"}, "node-a", "sb-1")
		db := cluster.CreatePod(types.NamespacedName{Namespace: "shop", Name: "db-0"}, "node-a", "sb-2")

		first := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, opts)
		stop := deletiontest.Start(t, first)
		for _, pu := range []ports.PU{web, db} {
			if err := first.Track(pu); err != nil {
				t.Fatal(err)
			}
		}
		stop() // the agent stops

		cluster.DeletePod(web.Pod) // while it is down
		policy := &deletiontest.Policy{}
		second := deletiontest.NewEngine(t, cluster, policy, opts)
		deletiontest.Start(t, second)
		deletiontest.Advance(deletion.DefaultSweepInterval)

		if got := policy.Destroyed(); len(got) != 1 || got[0].PUID != web.PUID {
			t.Errorf("destroyed %v, want web-0's PU alone", got)
		}
		if got := deletiontest.PUs(second); !reflect.DeepEqual(got, []ports.PU{db}) {
			t.Errorf("the second engine tracks %v, want %v", got, []ports.PU{db})
		}
	})
}

// docs:end testing-6
