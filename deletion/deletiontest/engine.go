package deletiontest

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// StopTimeout is how long the stop function of Start waits for Engine.Start
// to return once its context is cancelled before it fails the test: well
// past deletion.DefaultShutdownTimeout. In a testing/synctest bubble it is
// fake time, and costs nothing.
const StopTimeout = time.Minute

// Discard returns a Logger that drops everything, for Options.Logger. The
// zero Logger (and logr.Discard()) cannot serve: the engine takes it for
// "log through klog", which would write to the test's output.
func Discard() logr.Logger { return logr.New(discardSink{}) }

type discardSink struct{}

func (discardSink) Init(logr.RuntimeInfo)            {}
func (discardSink) Enabled(int) bool                 { return false }
func (discardSink) Info(int, string, ...any)         {}
func (discardSink) Error(error, string, ...any)      {}
func (s discardSink) WithValues(...any) logr.LogSink { return s }
func (s discardSink) WithName(string) logr.LogSink   { return s }

// NewEngine returns deletion.New(getter, policy, opts), its Logger Discard
// when opts has none, and ends the test with t.Fatal when New fails.
func NewEngine(t testing.TB, getter ports.PodGetter, policy ports.PolicyHandler, opts deletion.Options) *deletion.Engine {
	t.Helper()
	if opts.Logger.GetSink() == nil {
		opts.Logger = Discard()
	}
	e, err := deletion.New(getter, policy, opts)
	if err != nil {
		t.Fatalf("deletion.New: %v", err)
	}
	return e
}

// Start runs e.Start in a goroutine of its own until the test ends, and
// returns stop, which ends it: stop cancels Start's context and returns
// once Start has returned. It marks the test failed when Start returns an
// error, or has not returned within StopTimeout. t.Cleanup calls stop;
// calling it earlier (to see what the engine does once stopped) is fine,
// and so is calling it more than once.
//
// Under testing/synctest, call Start inside the bubble with the bubble's t:
// the engine's goroutines and timers are then the bubble's, and the cleanup
// stops the engine before synctest.Test waits for them. Start does not wait
// for the engine to begin; synctest.Wait (or Advance) does.
func Start(t testing.TB, e *deletion.Engine) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Start(ctx) }()
	stop = sync.OnceFunc(func() {
		t.Helper()
		cancel()
		timer := time.NewTimer(StopTimeout)
		defer timer.Stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Engine.Start returned %v", err)
			}
		case <-timer.C:
			t.Errorf("Engine.Start did not return within %v of its context ending", StopTimeout)
		}
	})
	t.Cleanup(stop)
	return stop
}

// Advance waits until every goroutine of the testing/synctest bubble it is
// called in is blocked (synctest.Wait), lets d pass on the bubble's fake
// clock, and waits again: the engine has run every check, retry and destroy
// due by then. Called outside a bubble, it panics at once.
func Advance(d time.Duration) {
	synctest.Wait()
	time.Sleep(d)
	synctest.Wait()
}

// PUs returns the PUs e tracks, sorted by PUID, as Engine.Status has them.
func PUs(e *deletion.Engine) []ports.PU {
	st := e.Status()
	out := make([]ports.PU, 0, len(st))
	for _, s := range st {
		if s.State != deletion.StateLeaving { // its tracking has ended: the engine no longer tracks it
			out = append(out, s.PU)
		}
	}
	return out
}
