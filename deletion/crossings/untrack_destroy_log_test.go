package crossings_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// Options.Logger: "errors at error level, destroys at info"; engine.md: "The lines that record what became of a PU
// (`PU destroyed`, ...)". Untrack: "one the engine had already started may finish". A DestroyPU under way when the
// agent untracks the PU succeeds: the PU is destroyed.
func TestAuditDestroyUnderUntrackIsLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		pol := &deletiontest.Policy{}
		entered, release := make(chan struct{}), make(chan struct{})
		pol.SetAnswer(func(ctx context.Context, ev ports.DestroyEvent) error {
			close(entered)
			<-release
			return nil
		})
		lg := &logLines{}
		e := deletiontest.NewEngine(t, cl, pol, deletion.Options{NodeName: node, Logger: lg.logger(0)})
		pu := cl.CreatePod(key("a"), node, "")
		_ = e.Track(pu)
		cl.DeletePod(key("a"))
		done := make(chan struct{})
		go func() { e.Sweep(context.Background()); close(done) }()
		<-entered
		if !e.Untrack(pu.PUID) {
			t.Fatal("not tracked")
		}
		close(release)
		<-done
		synctest.Wait()
		if len(pol.Destroyed()) != 1 {
			t.Fatalf("destroyed %v", pol.Destroyed())
		}
		if lg.count("PU destroyed") != 1 {
			t.Fatalf("the PolicyHandler destroyed the PU; no info line says so:\n%q", lg.all())
		}
		_ = time.Second
	})
}
