package crossings_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// hungRequeuer ignores its context on its first call, until released; its other calls return at once.
type hungRequeuer struct {
	mu      sync.Mutex
	calls   []string
	release chan struct{}
}

func (h *hungRequeuer) Requeue(_ context.Context, p *corev1.Pod) error {
	h.mu.Lock()
	h.calls = append(h.calls, p.Name)
	first := len(h.calls) == 1
	h.mu.Unlock()
	if first {
		<-h.release
	}
	return nil
}

func (h *hungRequeuer) called() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.calls...)
}

// TestARequeuerThatIgnoresItsDeadlineIsLeftBehind: the Requeuer is called off the workers, each call under a deadline
// of CheckTimeout (docs/sdk/engine.md); one that ignores it is left behind a second past it, a failure summed up in
// the logs, and the next pod's call begins. Two pods' sandboxes are replaced; the Requeuer hangs on the first.
func TestARequeuerThatIgnoresItsDeadlineIsLeftBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := deletiontest.NewCluster()
		rq := &hungRequeuer{release: make(chan struct{})}
		var mu sync.Mutex
		var lines []string
		log := funcr.New(func(prefix, args string) {
			mu.Lock()
			lines = append(lines, prefix+" "+args)
			mu.Unlock()
		}, funcr.Options{})
		e := deletiontest.NewEngine(t, c, &deletiontest.Policy{}, deletion.Options{SandboxExtractor: c, Requeuer: rq, Logger: log})
		keys := []types.NamespacedName{{Namespace: "shop", Name: "a"}, {Namespace: "shop", Name: "b"}}
		for _, k := range keys {
			if err := e.Track(c.CreatePod(k, "node-a", "s1")); err != nil {
				t.Fatal(err)
			}
		}
		stop := deletiontest.Start(t, e)
		for _, k := range keys {
			if err := c.SetSandbox(k, "s2"); err != nil {
				t.Fatal(err)
			}
		}
		deletiontest.Advance(5 * time.Minute)
		got := rq.called()
		stop()
		close(rq.release)
		if len(got) != 2 {
			t.Errorf("the Requeuer was called for %v in 5 minutes (CheckTimeout 30s): the pod after the hung call was never handed over", got)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			if strings.Contains(l, `"port"="Requeue"`) && strings.Contains(l, "left behind") {
				return
			}
		}
		t.Errorf("no error line tells of the Requeuer left behind; the lines: %q", lines)
	})
}

// selfWrapping is an error that wraps itself, and whose Error reads what it wraps, as an ordinary wrapper does:
// printing it without a bound overflows the stack, which no recover catches.
type selfWrapping struct{}

func (e *selfWrapping) Error() string { return "wraps " + e.Unwrap().Error() }
func (e *selfWrapping) Unwrap() error { return e }

// TestAPortThatPanicsWithAnErrorThatWrapsItselfIsAFailure: the engine recovers a port's panics, whatever their value
// (docs/sdk/ports.md): GetPod and the Observer panic with an error that wraps itself, alone or in a struct; the PU of
// the live pod is kept, and the process lives on (an unbounded print of the value would overflow the stack).
func TestAPortThatPanicsWithAnErrorThatWrapsItselfIsAFailure(t *testing.T) {
	for _, v := range []any{&selfWrapping{}, struct{ cause error }{&selfWrapping{}}} {
		synctest.Test(t, func(t *testing.T) {
			c := deletiontest.NewCluster()
			k := types.NamespacedName{Namespace: "shop", Name: "web"}
			pu := c.CreatePod(k, "node-a", "s1")
			getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { panic(v) })
			obs := deletion.ObserverFunc(func(deletion.Event) { panic(v) })
			e := deletiontest.NewEngine(t, getter, &deletiontest.Policy{}, deletion.Options{Observer: obs})
			if err := e.Track(pu); err != nil {
				t.Fatal(err)
			}
			e.Sweep(t.Context())
			if e.Len() != 1 {
				t.Errorf("a GetPod that panicked with %T lost the PU of a live pod", v)
			}
		})
	}
}
