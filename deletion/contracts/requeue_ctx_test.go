package contracts_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// docs/sdk/engine.md:23-26: "A Requeuer that nobody reads cannot block the engine: it is called off the workers, one
// pod at a time in the order the checks requeued them, each call under a deadline of CheckTimeout (a Sweep waits for
// the calls of the pods it requeued, unless one runs past its deadline)".
//
// A Requeuer stuck past its deadline on pod x (requeued by a first Sweep) makes a second Sweep return without waiting
// for the call of the pod it requeued, a: documented. Its caller then cancels that Sweep's context, as
// `ctx, cancel := context.WithTimeout(...); defer cancel()` does. Once x's call returns, a's pod is handed to the
// Requeuer under a context that is already done: the call has no deadline of CheckTimeout, it has none at all, and a
// Requeuer that honours its context (k8s.NewChannelRequeuer) drops the pod whose PU went for a sandbox change.
func TestRequeueCallHasItsCheckTimeoutAfterASweepReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		release := make(chan struct{})
		var mu sync.Mutex
		entryErr := map[string]error{}
		ch := make(chan event.GenericEvent, 10) // the main controller's source, with room
		channel := k8s.NewChannelRequeuer(ch)
		rq := ports.RequeuerFunc(func(ctx context.Context, p *corev1.Pod) error {
			mu.Lock()
			entryErr[p.Name] = ctx.Err()
			mu.Unlock()
			if p.Name == "x" {
				<-release // a Requeuer stuck on x, past its deadline
			}
			return channel.Requeue(ctx, p)
		})
		e := newEngine(t, w, deletion.Options{SandboxExtractor: w.extractor(), Requeuer: rq, Workers: 1,
			CheckTimeout: time.Second})
		_ = e.Track(w.add("x", "uid-x", "s1"))
		w.setSandbox("x", "s2")
		e.Sweep(context.Background()) // destroys x's PU, requeues x; returns once the call is stuck
		_ = e.Track(w.add("a", "uid-a", "s1"))
		w.setSandbox("a", "s2")
		func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			e.Sweep(ctx) // destroys a's PU, requeues a behind x
		}()
		time.Sleep(time.Second)
		close(release)
		time.Sleep(time.Second)
		mu.Lock()
		defer mu.Unlock()
		err, called := entryErr["a"]
		if !called {
			t.Fatalf("a's pod never handed to the Requeuer (calls %v)", entryErr)
		}
		delivered := map[string]bool{}
		for len(ch) > 0 {
			delivered[(<-ch).Object.GetName()] = true
		}
		if err != nil || !delivered["a"] {
			t.Fatalf("a's pod never reached the controller (k8s.NewChannelRequeuer, delivered %v): it was handed to the Requeuer under a context already done (%v), not a deadline of CheckTimeout", delivered, err)
		}
	})
}

// The same, when Start's context ends (a leader that loses its Lease, engine.md:29-31): a pod a check of Start
// requeued just before is handed to the Requeuer under Start's done context once the call ahead of it returns, and
// k8s.NewChannelRequeuer drops it; the next leader knows nothing of it.
func TestRequeueCallHasItsCheckTimeoutAfterStartStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		var mu sync.Mutex
		entryErr := map[string]error{}
		ch := make(chan event.GenericEvent, 10)
		channel := k8s.NewChannelRequeuer(ch)
		rq := ports.RequeuerFunc(func(ctx context.Context, p *corev1.Pod) error {
			mu.Lock()
			entryErr[p.Name] = ctx.Err()
			mu.Unlock()
			if p.Name == "x" {
				time.Sleep(500 * time.Millisecond) // slow, within its deadline
			}
			return channel.Requeue(ctx, p)
		})
		e := newEngine(t, w, deletion.Options{SandboxExtractor: w.extractor(), Requeuer: rq, Workers: 2,
			SweepInterval: time.Hour})
		_ = e.Track(w.add("x", "uid-x", "s1"))
		_ = e.Track(w.add("a", "uid-a", "s1"))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = e.Start(ctx); close(done) }()
		synctest.Wait()
		w.setSandbox("x", "s2")
		w.setSandbox("a", "s2")
		e.TriggerPod(key("x"))
		synctest.Wait()
		e.TriggerPod(key("a"))
		synctest.Wait() // both PUs destroyed, x's call under way, a's pod queued behind it
		cancel()
		<-done
		time.Sleep(time.Second)
		mu.Lock()
		defer mu.Unlock()
		delivered := map[string]bool{}
		for len(ch) > 0 {
			delivered[(<-ch).Object.GetName()] = true
		}
		if !delivered["a"] {
			t.Fatalf("a's pod never reached the controller (delivered %v): handed to the Requeuer under %v", delivered, entryErr["a"])
		}
	})
}
