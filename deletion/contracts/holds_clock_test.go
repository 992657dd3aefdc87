package contracts_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// Options.Clock "drives the periodic checks, the retries, the rate's turns": with a fake clock stepped by hand, a
// failed destroy is retried and the second PU gets its turn.
func TestHoldsFakeClockDrivesChecksRetriesAndTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
		w := newWorld()
		fails := 1
		w.destroyErr = func(ev ports.DestroyEvent) error {
			if ev.PUID == "uid-a" && fails > 0 {
				fails--
				return errors.New("busy")
			}
			return nil
		}
		e := newEngine(t, w, deletion.Options{Clock: fc, DestroyRate: 0.1, Workers: 1})
		_ = e.Track(w.add("a", "uid-a", ""))
		_ = e.Track(w.add("b", "uid-b", ""))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = e.Start(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		w.del("a")
		w.del("b")
		synctest.Wait()
		fc.Step(5 * time.Second) // the periodic checks
		synctest.Wait()
		if len(w.destroyed()) == 0 {
			t.Fatalf("no check after a SweepInterval on the Clock")
		}
		for i := 0; i < 40 && e.Len() > 0; i++ {
			fc.Step(time.Second)
			synctest.Wait()
		}
		if e.Len() != 0 {
			t.Fatalf("left %+v, destroyed %v", e.Status(), w.destroyed())
		}
	})
}
