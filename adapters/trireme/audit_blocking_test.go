package trireme_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/podsweeper/podsweeper/adapters/trireme"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// adapters/trireme DeleteController.Start: "Start runs the controller until ctx is done, then returns nil once the
// engine has stopped (within about the engine's ShutdownTimeout)."
// A journal (the Observer) whose commit of an EventTracked stalls for a minute keeps Start from returning for that
// minute, though the engine itself stops within its ShutdownTimeout.
func TestAuditStartReturnsWithinShutdownTimeoutWhileTrackWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var stall atomic.Bool
		stall.Store(true)
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventTracked && ev.PU.PUID == "u1" && stall.Load() {
				time.Sleep(time.Minute) // an fsync that stalls
			}
		})
		dc, err := trireme.NewDeleteControllerWithOptions(fake.NewClientBuilder().Build(), "node-a", &deletiontest.Policy{}, nil, nil,
			deletion.Options{Observer: obs, Logger: deletiontest.Discard()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		returned := make(chan struct{})
		go func() { _ = dc.Start(ctx); close(returned) }()
		synctest.Wait()
		dc.GetDeleteCh() <- trireme.DeleteEvent{PodUID: "u1", NamespaceName: key("a")}
		time.Sleep(time.Second) // u1's commit under way
		cancel()
		t0 := time.Now()
		select {
		case <-returned:
		case <-time.After(2 * time.Minute):
		}
		if d := time.Since(t0); d > 2*deletion.DefaultShutdownTimeout+time.Second {
			t.Fatalf("DeleteController.Start returned %v after its context was cancelled (engine ShutdownTimeout %v)", d, deletion.DefaultShutdownTimeout)
		}
		time.Sleep(2 * time.Minute) // the stalled commit ends, and the Track that waited for it: nothing is left behind
	})
}

// adapters/trireme GetDeleteCh: "While Start runs, a send waits only for a map insert, never for a check".
// A check whose EventDestroyed the Observer (a journal, metrics) takes a minute to hear holds the next Track of the
// same PodUID, and with it every send behind the 1000 buffered.
func TestAuditASendNeverWaitsForACheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var stall atomic.Bool
		stall.Store(true)
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventDestroyed && ev.PU.PUID == "u1" && stall.Load() {
				time.Sleep(time.Minute) // in the check that destroyed u1
			}
		})
		pol := &deletiontest.Policy{}
		dc, err := trireme.NewDeleteControllerWithOptions(fake.NewClientBuilder().Build(), "node-a", pol, nil, nil,
			deletion.Options{Observer: obs, Logger: deletiontest.Discard()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { _ = dc.Start(ctx) }()
		dc.GetDeleteCh() <- trireme.DeleteEvent{PodUID: "u1", SandboxID: "s1", NamespaceName: key("a")}
		dc.GetReconcileCh() <- struct{}{}
		time.Sleep(time.Second) // u1's pod is not found: destroyed; the Observer hears EventDestroyed for a minute
		if pol.CallCount() != 1 {
			t.Fatalf("calls %d", pol.CallCount())
		}
		dc.GetDeleteCh() <- trireme.DeleteEvent{PodUID: "u1", SandboxID: "s2", NamespaceName: key("a")} // its new sandbox's PU
		for i := range 1000 {
			dc.GetDeleteCh() <- trireme.DeleteEvent{PodUID: "x" + string(rune('a'+i%26)) + string(rune('a'+i/26)), NamespaceName: key("b")}
		}
		t0 := time.Now()
		dc.GetDeleteCh() <- trireme.DeleteEvent{PodUID: "last", NamespaceName: key("c")}
		if d := time.Since(t0); d > 0 {
			t.Fatalf("a send on the delete channel waited %v, for the check that destroyed u1 (its Observer)", d)
		}
		cancel()
		time.Sleep(2 * time.Minute) // the Observer's stall ends, and the Tracks behind it: nothing is left behind
	})
}

// adapters/trireme GetReconcileCh: "Requests merge: a send waits only while an earlier one has not been picked up,
// which happens at once while Start runs." While a Track waits for a stalled Observer, no request is picked up.
func TestAuditAReconcileRequestIsPickedUpAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventTracked && ev.PU.PUID == "u1" {
				time.Sleep(time.Minute) // a journal's commit that stalls
			}
		})
		dc, err := trireme.NewDeleteControllerWithOptions(fake.NewClientBuilder().Build(), "node-a", &deletiontest.Policy{}, nil, nil,
			deletion.Options{Observer: obs, Logger: deletiontest.Discard()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { _ = dc.Start(ctx) }()
		synctest.Wait()
		dc.GetDeleteCh() <- trireme.DeleteEvent{PodUID: "u1", NamespaceName: key("a")}
		time.Sleep(time.Second)
		dc.GetReconcileCh() <- struct{}{}
		t0 := time.Now()
		dc.GetReconcileCh() <- struct{}{}
		if d := time.Since(t0); d > time.Second {
			t.Fatalf("a reconcile request waited %v to be picked up while Start runs", d)
		}
		cancel()
		time.Sleep(2 * time.Minute) // the stalled commit ends: nothing is left behind
	})
}

// key names a pod of namespace ns.
func key(n string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: n} }
