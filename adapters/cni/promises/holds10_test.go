package promises_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// Holds: a second Resync fails at once with ErrResyncRunning; Resync returns nil when its
// context ends; a nil Tracker is refused.
func TestAuditHoldsResyncRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		c := e.collector(&fakeRuntime{ignoreFilter: true}, 0)
		ctx, cancel := context.WithCancel(context.Background())
		tr := &fakeTracker{tracked: map[string]ports.PU{}}
		done := make(chan error, 1)
		go func() { done <- c.Resync(ctx, tr) }()
		synctest.Wait()
		if err := c.Resync(context.Background(), tr); !errors.Is(err, cni.ErrResyncRunning) {
			t.Fatalf("second Resync: %v", err)
		}
		time.Sleep(time.Minute)
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Resync: %v", err)
		}
		if err := c.Resync(context.Background(), nil); err == nil {
			t.Fatal("nil Tracker accepted")
		}
	})
}
