package contracts_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// engine.md:23-24: "A Requeuer that nobody reads cannot block the engine". A Requeuer that blocks for good, ignoring
// its context, or panics: checks and destroys go on, LivenessCheck holds, a Sweep returns.
func TestHoldsRequeuerNeverReadDoesNotBlock(t *testing.T) {
	for _, mode := range []string{"block", "panic"} {
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld()
				release := make(chan struct{})
				defer close(release)
				rq := ports.RequeuerFunc(func(context.Context, *corev1.Pod) error {
					if mode == "panic" {
						panic("requeuer")
					}
					<-release
					return nil
				})
				e := newEngine(t, w, deletion.Options{SandboxExtractor: w.extractor(), Requeuer: rq, Workers: 1,
					SweepInterval: time.Second, CheckTimeout: time.Second})
				for i := range 5 {
					n := fmt.Sprint("p", i)
					_ = e.Track(w.add(n, "uid-"+n, "s1"))
				}
				deletiontest.Start(t, e)
				advance(2 * time.Second)
				for i := range 5 {
					w.setSandbox(fmt.Sprint("p", i), "s2")
				}
				advance(3 * time.Second)
				if len(w.destroyed()) != 5 {
					t.Fatalf("destroyed %v", w.destroyed())
				}
				_ = e.Track(w.add("q", "uid-q", "s1"))
				w.del("q")
				done := make(chan struct{})
				go func() { e.Sweep(context.Background()); close(done) }()
				advance(5 * time.Second)
				select {
				case <-done:
				default:
					t.Fatalf("Sweep blocked")
				}
				if err := e.LivenessCheck(nil); err != nil {
					t.Fatalf("liveness: %v", err)
				}
			})
		})
	}
}
