package deletion_test

// A Sweep whose context ends where a check meets it: between the destroy its check decided and the DestroyPU call
// (nothing attempted: the PU waits as it did before the check), or while a PU is checked at a turn the Sweep took
// ahead of its retry (the retry stands).

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// cutClock is the time package's clock that, once armed, runs cut at its next reading: the engine reads its Clock
// when it carries out a destroy its check decided, before DestroyPU, so that a Sweep's context ended there ends it
// between the two.
type cutClock struct {
	clock.RealClock
	cut atomic.Pointer[context.CancelFunc]
}

func (c *cutClock) Since(t time.Time) time.Duration {
	if f := c.cut.Swap(nil); f != nil {
		(*f)()
	}
	return c.RealClock.Since(t)
}

// cutGetter answers every pod gone; once armed for a pod, its answer of that pod arms the clock.
type cutGetter struct {
	clk    *cutClock
	target atomic.Value // types.NamespacedName
	cancel atomic.Pointer[context.CancelFunc]
}

func (g *cutGetter) GetPod(_ context.Context, k types.NamespacedName) (*corev1.Pod, error) {
	if t, _ := g.target.Load().(types.NamespacedName); t == k {
		if c := g.cancel.Swap(nil); c != nil {
			g.clk.cut.Store(c)
		}
	}
	return nil, ports.ErrPodNotFound
}

// armCut has cancel called once the next check of pod has decided its destroy, before DestroyPU.
func (g *cutGetter) armCut(pod types.NamespacedName, cancel context.CancelFunc) {
	g.target.Store(pod)
	g.cancel.Store(&cancel)
}

// Options.RetryMinDelay: "No periodic check or trigger tries a PU earlier; Sweep does." A Sweep that ended before it
// called DestroyPU tried nothing: the retry it came early for stands, and Start's checks wait for it.
func TestASweepCutBeforeDestroyPUKeepsTheRetrysBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &cutGetter{clk: &cutClock{}}
		var pol deletiontest.Policy
		pol.FailNext(1, errors.New("policy engine busy"))
		e := deletiontest.NewEngine(t, g, &pol, deletion.Options{Clock: g.clk, RetryMinDelay: time.Minute, SweepInterval: 2 * time.Second})
		p := swPU("a")
		require.NoError(t, e.Track(p))
		e.Sweep(t.Context())
		require.Equal(t, 1, pol.CallCount(), "the first destroy fails")
		failed := pol.Calls()[0].At
		next := e.Status()[0].NextAttempt
		require.Equal(t, failed.Add(time.Minute), next, "retried a minute on")

		deletiontest.Advance(5 * time.Second)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		g.armCut(p.Pod, cancel)
		e.Sweep(ctx) // without Start, the Sweep's own goroutines check under its context
		assert.Equal(t, 1, pol.CallCount(), "the cut Sweep called nothing")
		st := e.Status()
		require.Len(t, st, 1)
		assert.Equal(t, next, st[0].NextAttempt, "the cut Sweep left the retry where it was")
		assert.Equal(t, "waiting for a retry", st[0].State)

		deletiontest.Start(t, e)
		deletiontest.Advance(time.Until(failed.Add(time.Minute - time.Second)))
		assert.Equal(t, 1, pol.CallCount(), "no periodic check tries the PU before its backoff")
		deletiontest.Advance(5 * time.Second)
		assert.Equal(t, 2, pol.CallCount(), "the retry at its time")
		assert.Empty(t, e.Status())
	})
}

// Options.DestroyRate: turns go to PUs in the order their checks found them to go. A Sweep cut at a PU's turn, after
// its check decided the destroy and before DestroyPU, spent no turn: the PU keeps its place ahead of those found
// after it, and the turn is still there for it.
func TestASweepCutAtATurnKeepsThePUsPlaceInTheRateLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &cutGetter{clk: &cutClock{}}
		var pol deletiontest.Policy
		e := deletiontest.NewEngine(t, g, &pol, deletion.Options{Clock: g.clk, Workers: 1, DestroyRate: 0.1})
		for _, n := range []string{"a", "b", "c"} {
			require.NoError(t, e.Track(swPU(n)))
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { e.Sweep(ctx); close(done) }()
		synctest.Wait()
		require.Equal(t, 1, pol.CallCount(), "the burst's turn at once")
		var second, third deletion.PUStatus
		for _, s := range e.Status() {
			switch {
			case s.State != "waiting for its turn":
			case second.PUID == "" || s.NextAttempt.Before(second.NextAttempt):
				second, third = s, second
			default:
				third = s
			}
		}
		require.NotEmpty(t, third.PUID, "two wait for their turns: %+v", e.Status())
		g.armCut(second.Pod, cancel) // the Sweep ends where its check at the second's turn decided the destroy
		<-done
		assert.Equal(t, 1, pol.CallCount(), "the cut Sweep called DestroyPU at no other turn")
		st := e.Status()
		require.Len(t, st, 2)
		for _, s := range st {
			assert.Equal(t, "waiting for its turn", s.State, "%s waits for its turn again", s.PUID)
		}

		e.Sweep(t.Context())
		calls := pol.Calls()
		require.Len(t, calls, 3)
		assert.Equal(t, []string{second.PUID, third.PUID}, []string{calls[1].Event.PUID, calls[2].Event.PUID},
			"the PU cut at its turn keeps its place ahead of the one found after it")
		assert.GreaterOrEqual(t, calls[2].At.Sub(calls[1].At), 10*time.Second, "the turn given back is one turn: the rate's bound holds")
	})
}

// Options.DestroyRate: "a failed destroy used its turn: ... so that one failing PU never holds the turns of the
// others". A Sweep took a turn for A ahead of A's retry; it ends while A is checked at that turn and A's read fails.
// The turn was the Sweep's alone: A waits for its retry, and B, found to go after A, has its turn meanwhile.
func TestASweepEndedAsItsTurnsCheckFailsLeavesTheRetryAndTheLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var aFails atomic.Bool
		g := ports.PodGetterFunc(func(_ context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			if k.Name == "a" && aFails.Load() {
				time.Sleep(3 * time.Second) // the Sweep's context ends meanwhile
				return nil, errors.New("API server unreachable")
			}
			return nil, ports.ErrPodNotFound
		})
		var pol deletiontest.Policy
		pol.FailNext(1, errors.New("policy engine busy"))
		e := deletiontest.NewEngine(t, g, &pol, deletion.Options{DestroyRate: 0.2, RetryMinDelay: 5 * time.Minute,
			RetryMaxDelay: time.Hour, SweepInterval: time.Hour})
		a, b := swPU("a"), swPU("b")
		require.NoError(t, e.Track(a))
		deletiontest.Start(t, e)
		e.TriggerPod(a.Pod)
		synctest.Wait()
		require.Equal(t, 1, pol.CallCount(), "A's destroy fails at its burst turn")
		failed := pol.Calls()[0].At

		ctx, cancel := context.WithTimeout(t.Context(), 6*time.Second)
		defer cancel()
		done := make(chan struct{})
		go func() { e.Sweep(ctx); close(done) }() // checks A early: A waits for a turn, 5 s on
		synctest.Wait()
		require.NoError(t, e.Track(b))
		e.TriggerPod(b.Pod) // B's turn after A's
		synctest.Wait()
		aFails.Store(true)
		<-done

		deletiontest.Advance(30 * time.Second)
		require.Len(t, pol.CallsOf(b.PUID), 1, "B has its turn while A's reads fail: %+v", e.Status())
		assert.Len(t, pol.CallsOf(a.PUID), 1, "A is not tried again before its retry")
		for _, s := range e.Status() {
			if s.PUID == a.PUID {
				assert.Equal(t, "waiting for a retry", s.State, "A waits for its retry")
				assert.Equal(t, failed.Add(5*time.Minute), s.NextAttempt, "at its backoff")
			}
		}
	})
}
