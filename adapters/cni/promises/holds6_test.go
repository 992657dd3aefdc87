package promises_test

import (
	"context"
	"testing"
	"time"
)

// Holds: Requeue never blocks, Resync running or not.
func TestAuditHoldsRequeueNeverBlocks(t *testing.T) {
	e := newEnv(t)
	c := e.collector(&fakeRuntime{ignoreFilter: true}, 0)
	done := make(chan struct{})
	go func() {
		for i := 0; i < 10000; i++ {
			c.Requeue(context.Background(), podOf(uidA))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Requeue blocked")
	}
	if err := c.Requeue(context.Background(), nil); err == nil {
		t.Fatal("nil pod accepted")
	}
}
