package deletion_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podsweeper/podsweeper/deletion"
	dt "github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// firstHangs is a PodGetter whose first call hangs, ignoring its context, until released; the others answer at once.
type firstHangs struct {
	cl      *dt.Cluster
	mu      sync.Mutex
	calls   int
	pods    map[types.NamespacedName]bool
	release chan struct{}
}

func (g *firstHangs) GetPod(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
	g.mu.Lock()
	g.calls++
	first := g.calls == 1
	if g.pods == nil {
		g.pods = map[types.NamespacedName]bool{}
	}
	g.pods[k] = true
	release := g.release
	g.mu.Unlock()
	if first {
		<-release
	}
	return g.cl.GetPod(ctx, k)
}

func (g *firstHangs) n() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls
}

// TestAHungPortKeepsOneWorkerWhateverTheClock: "a port that ignores its context keeps one worker until it returns"
// (docs/sdk/engine.md): the other workers take the rest of its batch, on the real clock and on a Clock of the
// user's own (Options.Clock) that stands still meanwhile; a check is slow in the time it takes, as its deadline is.
func TestAHungPortKeepsOneWorkerWhateverTheClock(t *testing.T) {
	for _, name := range []string{"real", "fake"} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cl := dt.NewCluster()
				g := &firstHangs{cl: cl, release: make(chan struct{})}
				opts := deletion.Options{SweepInterval: time.Second, Workers: 4, CheckTimeout: time.Second}
				var fc *testingclock.FakeClock
				if name == "fake" {
					fc = testingclock.NewFakeClock(time.Now())
					opts.Clock = fc
				}
				e := dt.NewEngine(t, g, &dt.Policy{}, opts)
				for i := range 4 {
					e.Track(cl.CreatePod(nsKey(fmt.Sprint("p", i)), "", ""))
				}
				dt.Start(t, e)
				synctest.Wait()
				e.TriggerAll() // one check each, now; wakes the workers
				time.Sleep(100 * time.Millisecond)
				if g.n() != 4 {
					t.Fatalf("the trigger read %d pods", g.n())
				}
				g.mu.Lock()
				close(g.release)
				g.mu.Unlock()
				time.Sleep(time.Second)
				// Now a batch: every PU due at once, on the clock the engine runs on.
				g.mu.Lock()
				g.calls = 0
				g.pods = nil
				g.release = make(chan struct{})
				g.mu.Unlock()
				if fc != nil {
					fc.Step(time.Second)
				} else {
					time.Sleep(time.Second - 1100*time.Millisecond%time.Second)
				}
				time.Sleep(10 * time.Second) // real time, 10 CheckTimeouts
				g.mu.Lock()
				got := len(g.pods)
				close(g.release)
				g.mu.Unlock()
				time.Sleep(time.Second)
				if got != 4 {
					t.Errorf("%d of the 4 PUs checked in 10s (10 CheckTimeouts) while one check hangs; Workers 4", got)
				}
			})
		})
	}
}
