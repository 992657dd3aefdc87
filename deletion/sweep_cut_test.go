package deletion_test

// A Sweep whose context ends where a check meets it: between the destroy its check decided and the DestroyPU call
// (nothing attempted: the PU waits as it did before the check), or while a PU is checked at a turn the Sweep took
// ahead of its retry (the retry stands).

import (
	"context"
	"errors"
	"sync"
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

// cutGetter answers every pod gone; once armed for a pod, its answer of that pod arms the clock for its next
// reading: the engine reads its Clock when it carries out a destroy its check decided, before DestroyPU, so that a
// Sweep's context ended there ends it between the two.
type cutGetter struct {
	clk    *countClock
	target atomic.Value // types.NamespacedName
	cancel atomic.Pointer[context.CancelFunc]
}

func (g *cutGetter) GetPod(_ context.Context, k types.NamespacedName) (*corev1.Pod, error) {
	if t, _ := g.target.Load().(types.NamespacedName); t == k {
		if c := g.cancel.Swap(nil); c != nil {
			g.clk.arm(1, *c)
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
		g := &cutGetter{clk: &countClock{}}
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
		g := &cutGetter{clk: &countClock{}}
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

// EventChecked: a verdict is not carried out when "the check's context ended before DestroyPU was called: ... the PU
// waits as it did before the check". A PU that waited for nothing is not counted as waiting for a retry
// (Backlog.Retrying): no destroy failed; its next check destroys it.
func TestASweepCutBeforeAFirstDestroyLeavesThePUAsItWas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &cutGetter{clk: &countClock{}}
		events := &deletiontest.Events{}
		var pol deletiontest.Policy
		e := deletiontest.NewEngine(t, g, &pol, deletion.Options{Clock: g.clk, Observer: events})
		p := swPU("a")
		require.NoError(t, e.Track(p))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		g.armCut(p.Pod, cancel)
		e.Sweep(ctx)
		assert.Zero(t, pol.CallCount())
		st := e.Status()
		require.Len(t, st, 1)
		assert.Equal(t, "idle", st[0].State, "it waits for its next check, as before")
		assert.Zero(t, st[0].Attempts)
		assert.True(t, st[0].NextAttempt.IsZero())
		assert.Zero(t, e.Backlog().Retrying, "no destroy failed")
		assert.Zero(t, events.Count(deletion.EventDestroyFailed))

		e.Sweep(t.Context())
		assert.Equal(t, 1, pol.CallCount(), "the next check destroys it")
	})
}

// Options.DestroyRate: "A failed destroy used its turn: its retry, its backoff over, takes a place at the back of
// the line". A Sweep took a place for A ahead of A's retry; A's backoff ends, B is found to go meanwhile, and the
// Sweep ends before A's turn, having tried nothing: the place was the Sweep's alone, and A's retry goes behind B, as
// it does with no Sweep.
func TestAPlaceASweepTookAheadOfARetryDueSinceGoesBack(t *testing.T) {
	for _, sweep := range []bool{false, true} {
		t.Run(map[bool]string{false: "no Sweep", true: "a Sweep that ends before the turn"}[sweep], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				live := map[string]bool{"a": true, "b": true}
				var mu sync.Mutex
				g := ports.PodGetterFunc(func(_ context.Context, k types.NamespacedName) (*corev1.Pod, error) {
					mu.Lock()
					defer mu.Unlock()
					if live[k.Name] {
						return swAlive(k), nil
					}
					return nil, ports.ErrPodNotFound
				})
				gone := func(name string) { mu.Lock(); delete(live, name); mu.Unlock() }
				var pol deletiontest.Policy
				e := deletiontest.NewEngine(t, g, &pol, deletion.Options{DestroyRate: 0.1, Workers: 1, SweepInterval: time.Hour,
					RetryMinDelay: 3 * time.Second, RetryMaxDelay: 3 * time.Second})
				a, b := swPU("a"), swPU("b")
				require.NoError(t, e.Track(a))
				require.NoError(t, e.Track(b))
				deletiontest.Start(t, e)
				deletiontest.Advance(time.Second)
				t0 := time.Now() // A's failure
				pol.FailNext(1, errors.New("policy engine restarting"))
				gone("a")
				e.TriggerPod(a.Pod)
				deletiontest.Advance(time.Second) // A's destroy failed at t0 (its burst turn): its retry at t0+3
				done := make(chan struct{})
				if sweep {
					ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second) // ends at t0+4, before A's turn
					defer cancel()
					go func() { e.Sweep(ctx); close(done) }() // takes a place for A, its turn at t0+10
				} else {
					close(done)
				}
				deletiontest.Advance(time.Second) // t0+2: B is found to go
				gone("b")
				e.TriggerPod(b.Pod)
				deletiontest.Advance(2 * time.Second)
				<-done
				deletiontest.Advance(time.Minute)
				var order []string
				for _, c := range pol.Calls()[1:] {
					order = append(order, c.Event.Pod.Name)
				}
				assert.Equal(t, []string{"b", "a"}, order, "A's retry, due at t0+3, goes behind B, in line since t0+2")
				if calls := pol.Calls(); len(calls) == 3 {
					assert.GreaterOrEqual(t, calls[2].At.Sub(t0), 3*time.Second, "not before A's backoff")
				}
			})
		})
	}
}

// Options.RetryMinDelay: "a Sweep whose context ends before it calls DestroyPU tried nothing: the retry stands". A
// Sweep took a place for A ahead of A's retry, and queued A at its turn while its only worker was held by B's hung
// read; it ends there. The place was the Sweep's alone, queued or not: A waits for its retry, counted so.
func TestASweepsEndGivesBackAPlaceItQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := make(chan struct{})
		var hangB atomic.Bool
		g := ports.PodGetterFunc(func(_ context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			if k.Name == "b" && hangB.Load() {
				<-hang
			}
			return nil, ports.ErrPodNotFound
		})
		var pol deletiontest.Policy
		pol.FailNext(2, errors.New("policy engine down"))
		e := deletiontest.NewEngine(t, g, &pol, deletion.Options{Workers: 1, DestroyRate: 0.1, DestroyBurst: 2, CheckTimeout: time.Minute,
			RetryMinDelay: 30 * time.Second, RetryMaxDelay: 30 * time.Second})
		a, b := swPU("a"), swPU("b")
		require.NoError(t, e.Track(a))
		require.NoError(t, e.Track(b))
		e.Sweep(t.Context()) // both destroys fail at the burst's turns: retries 30 s on
		t0 := time.Now()
		require.Equal(t, 2, e.Backlog().Retrying)

		time.Sleep(2 * time.Second)
		hangB.Store(true)
		ctx, cancel := context.WithTimeout(t.Context(), 8500*time.Millisecond) // A's turn at t0+10, queued; ends at t0+10.5
		defer cancel()
		e.Sweep(ctx)
		close(hang)
		synctest.Wait()
		assert.Equal(t, 2, pol.CallCount(), "the Sweep tried nothing")
		bl := e.Backlog()
		assert.Equal(t, 2, bl.Retrying, "both wait for their retries")
		assert.Zero(t, bl.RateLimited)
		for _, s := range e.Status() {
			assert.Equal(t, "waiting for a retry", s.State, s.PUID)
			assert.Equal(t, t0.Add(30*time.Second), s.NextAttempt, "%s: its retry stands", s.PUID)
		}
	})
}

// countClock is the time package's clock that runs cut at its n-th reading from arm on.
type countClock struct {
	clock.RealClock
	mu   sync.Mutex
	left int
	cut  context.CancelFunc
}

func (c *countClock) arm(n int, cut context.CancelFunc) {
	c.mu.Lock()
	c.left, c.cut = n, cut
	c.mu.Unlock()
}

func (c *countClock) Since(t time.Time) time.Duration {
	c.mu.Lock()
	var cut context.CancelFunc
	if c.cut != nil {
		if c.left--; c.left == 0 {
			cut, c.cut = c.cut, nil
		}
	}
	c.mu.Unlock()
	if cut != nil {
		cut()
	}
	return c.RealClock.Since(t)
}

// Options.RetryMinDelay: "a Sweep whose context ends before it calls DestroyPU tried nothing". A Sweep, Start not
// running, whose context ends at once: the PU waiting for its retry waits as before, not "queued" for a check that
// no worker would run, and no queued check is told waiting (Backlog.OldestQueuedSince).
func TestASweepCutAtOnceLeavesNothingQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := &countClock{}
		var pol deletiontest.Policy
		pol.FailNext(1, errors.New("policy engine busy"))
		e := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), &pol, deletion.Options{Clock: clk, RetryMinDelay: time.Minute})
		require.NoError(t, e.Track(swPU("a")))
		require.NoError(t, e.Track(swPU("b")))
		pol.FailNext(2, errors.New("policy engine busy"))
		e.Sweep(t.Context()) // both fail: retries a minute on
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		clk.arm(1, cancel)
		e.Sweep(ctx)
		for _, s := range e.Status() {
			assert.Equal(t, "waiting for a retry", s.State, s.PUID)
		}
		assert.True(t, e.Backlog().OldestQueuedSince.IsZero(), "nothing waits for a worker")
		assert.Equal(t, 2, e.Backlog().Retrying)
	})
}

// engine.md: once Start's context is done "no check of its own starts", and "once Start's context is done,
// TriggerPod does nothing": a Clock that ends that context at the reading TriggerPod takes, or at the one a worker
// takes as it claims the check, ends them too.
func TestNoCheckStartsAfterStartsContextEndsAtAClockReading(t *testing.T) {
	for _, at := range []int{1, 2} { // TriggerPod's reading; the worker's
		t.Run(map[int]string{1: "TriggerPod's reading", 2: "the claim's reading"}[at], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clk := &countClock{}
				events := &deletiontest.Events{}
				var pol deletiontest.Policy
				e := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), &pol, deletion.Options{Clock: clk, Observer: events,
					SweepInterval: time.Hour})
				p := swPU("a")
				require.NoError(t, e.Track(p))
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- e.Start(ctx) }()
				synctest.Wait()
				clk.arm(at, cancel)
				e.TriggerPod(p.Pod)
				synctest.Wait()
				require.NoError(t, <-done)
				assert.Zero(t, events.Count(deletion.EventChecked), "no check started once the context was done")
				assert.Zero(t, events.Count(deletion.EventGetFailed))
				assert.Zero(t, pol.CallCount())
				if at == 1 {
					assert.Equal(t, "idle", e.Status()[0].State, "the trigger after the end did nothing")
				}
			})
		})
	}
}

// blockedGetter answers NotFound, but while block is set: then it waits for its context to end.
type blockedGetter struct{ block atomic.Bool }

func (g *blockedGetter) GetPod(ctx context.Context, _ types.NamespacedName) (*corev1.Pod, error) {
	if g.block.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return nil, ports.ErrPodNotFound
}

// TriggerPod: "Checks asked before Start run when it begins"; Start "runs triggers at once, those made before Start
// included". A Sweep that ends (its context cut) before it reaches a PU triggered before it, or as it checks one,
// leaves that PU's trigger standing: Start checks it as it begins, not at its place in the SweepInterval.
func TestATriggerBeforeStartOutlivesASweepThatEndsBeforeItsCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &blockedGetter{}
		g.block.Store(true)
		events := &deletiontest.Events{}
		e := deletiontest.NewEngine(t, g, &deletiontest.Policy{}, deletion.Options{Workers: 1, SweepInterval: time.Hour,
			CheckTimeout: 10 * time.Second, Observer: events})
		require.NoError(t, e.Track(swPU("a")))
		require.NoError(t, e.Track(swPU("b")))
		e.TriggerPod(swKey("a"))
		e.TriggerPod(swKey("b"))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		e.Sweep(ctx) // its one worker held by a's read: it ends before b's check
		synctest.Wait()
		g.block.Store(false)
		for _, s := range e.Status() {
			require.Equal(t, "queued", s.State, "%s's trigger stands: b's never checked, a's check cut short", s.PUID)
		}
		start, stop := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- e.Start(start) }()
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, 0, e.Len(), "both checked as Start began, and destroyed")
		stop()
		require.NoError(t, <-done)
	})
}

// Backlog.OldestQueuedSince is "since when the oldest queued check has waited for a worker". A Sweep cut while its
// checks were queued leaves no trace in it: a minute later, the PUs queued again by a trigger have waited since that
// trigger.
func TestOldestQueuedSinceCountsAPUQueuedAgainFromItsLatestQueueing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &blockedGetter{}
		g.block.Store(true)
		e := deletiontest.NewEngine(t, g, &deletiontest.Policy{}, deletion.Options{Workers: 1, SweepInterval: time.Hour,
			CheckTimeout: 10 * time.Second})
		require.NoError(t, e.Track(swPU("a")))
		require.NoError(t, e.Track(swPU("b")))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		e.Sweep(ctx)
		synctest.Wait()
		require.True(t, e.Backlog().OldestQueuedSince.IsZero(), "the cut Sweep left nothing queued")
		time.Sleep(time.Minute)
		g.block.Store(false)
		triggered := time.Now()
		e.TriggerAll()
		assert.Equal(t, triggered, e.Backlog().OldestQueuedSince, "queued since the trigger, not since the cut Sweep")
	})
}
