package promises_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// Holds: a runtime that hangs keeps everything (DestroyPU ends with its context, nothing freed),
// and ListPUs still lists the cache.
func TestAuditHoldsRuntimeHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.writeEntry(entryOpt{sandbox: "sb1", uid: uidA, netns: e.netns("g", false)})
		c := e.collector(hangingRuntime{}, 0)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.DestroyPU(ctx, goneDefault(uidA)); err == nil || e.delled("sb1") {
			t.Fatalf("err %v dels %v", err, e.delLogFields())
		}
		ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel2()
		if pus, err := c.ListPUs(ctx2); err != nil || len(pus) != 1 {
			t.Fatalf("ListPUs %v %v", pus, err)
		}
	})
}

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
