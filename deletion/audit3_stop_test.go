package deletion_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// docs/sdk/engine.md:4-5: "`Track` ... once `Start`'s context is done it fails with `ErrNotRunning`";
// deletion/queue.go:431 (go doc Engine.Track): "once Start's context is done (Start stops), nothing would check it:
// Track returns an error wrapping ErrNotRunning."
//
// Track right after Start's context is cancelled returns nil: the engine only notices the context once Start's own
// goroutine has run, and the PU is tracked by an engine that never checks it again.
func TestAuditTrackFailsOnceStartsContextIsDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		e := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{})
		ctx, cancel := context.WithCancel(t.Context())
		returned := make(chan error)
		go func() { returned <- e.Start(ctx) }()
		synctest.Wait()

		pu := cluster.CreatePod(nsKey("a"), "", "")
		cancel() // Start's context is done from here on
		err := e.Track(pu)
		<-returned

		if !errors.Is(err, deletion.ErrNotRunning) {
			t.Errorf("Track after Start's context is done returned %v, want ErrNotRunning; the engine, stopped, tracks %d PU(s)",
				err, e.Len())
		}
	})
}

// docs/sdk/engine.md:21-22: "`Start` returns soon after its context ends, even with a hung port; once its context is
// done no check and no destroy starts." deletion/workers.go:19 (go doc Engine.Start): "Once ctx is done, no check of
// its own and no DestroyPU of them starts".
//
// A TriggerPod made right after Start's context is cancelled (TriggerPod is documented to do nothing only once Start
// has returned) wakes one of Start's workers, which begins a check: GetPod is called with the dead context, fails,
// and the Observer hears a spurious EventGetFailed.
func TestAuditNoCheckStartsOnceStartsContextIsDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		evs := &deletiontest.Events{}
		e := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{Observer: evs})
		pu := cluster.CreatePod(nsKey("a"), "", "")
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		returned := make(chan error)
		go func() { returned <- e.Start(ctx) }()
		synctest.Wait()
		reads, failed := cluster.Reads(pu.Pod), evs.Count(deletion.EventGetFailed)

		cancel() // Start's context is done from here on
		e.TriggerPod(pu.Pod)
		<-returned
		synctest.Wait()

		if n := cluster.Reads(pu.Pod) - reads; n != 0 {
			t.Errorf("%d check(s) began after Start's context was done (GetPod called); %d EventGetFailed told",
				n, evs.Count(deletion.EventGetFailed)-failed)
		}
	})
}
