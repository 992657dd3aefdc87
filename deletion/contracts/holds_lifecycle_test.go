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

// Start(nil) refuses and may be called again; a cancelled Start returns; Track then fails with ErrNotRunning,
// TriggerPod does nothing, LivenessCheck fails, and a Sweep still runs its checks; a Sweep with a done ctx checks
// nothing.
func TestHoldsLifecycleOrders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		e := newEngine(t, w, deletion.Options{})
		if err := e.LivenessCheck(nil); err != nil {
			t.Fatalf("liveness before Start: %v", err)
		}
		if err := e.ReadinessCheck(nil); !errors.Is(err, deletion.ErrNotRunning) {
			t.Fatalf("readiness before Start: %v", err)
		}
		//lint:ignore SA1012 the nil context is the test
		if err := e.Start(nil); !errors.Is(err, deletion.ErrNilContext) { //nolint:staticcheck
			t.Fatalf("Start(nil): %v", err)
		}
		_ = e.Track(w.add("a", "uid-a", ""))
		w.del("a")
		done, cancel := context.WithCancel(context.Background())
		cancel()
		e.Sweep(done)
		if len(w.destroyed()) != 0 {
			t.Fatalf("a Sweep with a done ctx destroyed %v", w.destroyed())
		}
		if err := e.Start(done); err != nil {
			t.Fatalf("Start: %v", err)
		}
		if err := e.Start(context.Background()); !errors.Is(err, deletion.ErrAlreadyStarted) {
			t.Fatalf("second Start: %v", err)
		}
		if err := e.Track(ports.PU{PUID: "uid-b", Pod: key("b")}); !errors.Is(err, deletion.ErrNotRunning) {
			t.Fatalf("Track after Start returned: %v", err)
		}
		if err := e.LivenessCheck(nil); !errors.Is(err, deletion.ErrNotRunning) {
			t.Fatalf("liveness after Start returned: %v", err)
		}
		e.TriggerPod(key("a"))
		advance(time.Minute)
		if len(w.destroyed()) != 0 {
			t.Fatalf("a trigger after Start returned destroyed %v", w.destroyed())
		}
		e.Sweep(context.Background())
		if len(w.destroyed()) != 1 || e.Len() != 0 {
			t.Fatalf("Sweep after Start: destroyed %v", w.destroyed())
		}
		var zero deletion.Engine
		if err := zero.Track(ports.PU{PUID: "x", Pod: key("x")}); !errors.Is(err, deletion.ErrNotCreated) {
			t.Fatalf("zero Track: %v", err)
		}
		if err := zero.Start(context.Background()); !errors.Is(err, deletion.ErrNotCreated) {
			t.Fatalf("zero Start: %v", err)
		}
		zero.Sweep(context.Background())
		zero.TriggerAll()
		_ = zero.Status()
		_ = deletiontest.PUs(&zero)
		_ = zero.Backlog()
		_ = zero.Len()
		_ = zero.Untrack("x")
		_ = zero.Classify(nil)
		if err := zero.LivenessCheck(nil); err != nil {
			t.Fatalf("zero liveness: %v", err)
		}
		if err := zero.ReadinessCheck(nil); !errors.Is(err, deletion.ErrNotRunning) {
			t.Fatalf("zero readiness: %v", err)
		}
	})
}
