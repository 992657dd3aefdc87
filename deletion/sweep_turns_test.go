package deletion_test

// A Sweep without Start, where the destroy rate's line and a Start that comes and goes meet it: it runs its checks,
// and the turns it waits for come.

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

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

func swKey(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "ns", Name: name}
}
func swPU(name string) ports.PU { return ports.PU{PUID: "uid-" + name, Pod: swKey(name)} }
func swAlive(k types.NamespacedName) *corev1.Pod {
	return deletiontest.Pod(k, types.UID("uid-"+k.Name), "")
}

// deletion.Engine.Sweep doc (deletion/workers.go): "Its checks go through the one queue: Start's workers run
// them, or, while Start does not run, Sweep's own goroutines, at most Workers at a time. ... Sweep returns once every
// check it waits for, or every Workers slot, is held by one stuck in a port a second past its deadline
// (CheckTimeout)"; docs/sdk/engine.md "A check stuck in a port that ignores its context does not hold it for
// long".
//
// A Sweep runs without Start (Workers 2): its first check hangs in GetPod, ignoring its context; its second takes
// 500ms. Start begins meanwhile (its Inventory's first list still under way, so its workers wait) and stops again.
// Start no longer runs and one Workers slot is free, but the Sweep's two remaining checks are never run and the Sweep
// never returns: the goroutine that left the queue to Start is not replaced while the other is stuck.
func TestASweepRunsItsChecksAfterAStartThatCameAndWent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := make(chan struct{})
		var mu sync.Mutex
		reads := map[string]int{}
		calls := 0
		getter := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			mu.Lock()
			reads[k.Name]++
			calls++
			first := calls == 1
			mu.Unlock()
			if first {
				<-hang // a port that ignores its context
			}
			time.Sleep(500 * time.Millisecond)
			return swAlive(k), nil
		})
		inventory := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
		e := deletiontest.NewEngine(t, getter, &deletiontest.Policy{}, deletion.Options{Workers: 2,
			CheckTimeout: 100 * time.Millisecond, Inventory: inventory})
		for _, n := range []string{"a", "b", "c", "d"} {
			if err := e.Track(swPU(n)); err != nil {
				t.Fatal(err)
			}
		}
		sweepCtx, endSweep := context.WithCancel(context.Background())
		swept := make(chan struct{})
		go func() { e.Sweep(sweepCtx); close(swept) }()
		time.Sleep(100 * time.Millisecond)

		startCtx, stopStart := context.WithCancel(context.Background())
		started := make(chan error)
		go func() { started <- e.Start(startCtx) }()
		time.Sleep(500 * time.Millisecond)
		stopStart()
		if err := <-started; err != nil {
			t.Fatal(err)
		}

		t0 := time.Now()
		select {
		case <-swept:
		case <-time.After(time.Minute):
			mu.Lock()
			t.Errorf("Sweep has not returned %v after Start stopped, with Start not running and a Workers slot free; "+
				"GetPod reads per pod: %v", time.Since(t0), reads)
			mu.Unlock()
			for _, s := range e.Status() {
				t.Logf("  %s: %s", s.PUID, s.State)
			}
		}
		endSweep()
		close(hang)
		<-swept
		time.Sleep(2 * time.Second) // the hung check ends: its goroutine leaves
	})
}

// docs/sdk/engine.md "Sweep runs one synchronous pass ...; under a destroy rate it waits for the turns of the
// destroys it decides, and for a PU in line whose check learns nothing (a port fails) until a check learns why (end it
// sooner with its context)"; deletion.Engine.Sweep doc: "Sweep checks every tracked PU once ... and returns when all
// are done or ctx is. ... Under DestroyRate, a destroy a check decides is one of Sweep's checks: Sweep waits for its
// turn"; deletion.Options.DestroyRate doc: "turns come ... at most DestroyRate*w + DestroyBurst" and go to the PUs in
// line in order.
//
// Rate one destroy per 10 s, burst 1, Start running. PU a is destroyed (the burst). A Sweep begins while s's check
// is under way (its GetPod fails once); n is tracked and triggered meanwhile: n's check finds its pod gone and takes
// the line first, then the Sweep's recheck of s finds s's pod gone and takes the line behind n. Start stops. Every
// port answers from then on, and the rate gives a turn every 10 s; but n, not one of the Sweep's checks, is never
// checked again without Start and keeps the line's head for good: s's turn never comes, no DestroyPU is made for ten
// minutes, and the Sweep never returns.
func TestASweepChecksTheHeadOfTheLineAtItsTurnOnceStartStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sReads atomic.Int32
		getter := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			if k.Name == "s" && sReads.Add(1) == 1 {
				time.Sleep(time.Second)
				return nil, errors.New("API server blip")
			}
			return nil, ports.ErrPodNotFound
		})
		policy := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, getter, policy, deletion.Options{DestroyRate: 0.1, DestroyBurst: 1, Workers: 1,
			SweepInterval: time.Hour, CheckTimeout: 5 * time.Second})
		startCtx, stopStart := context.WithCancel(context.Background())
		started := make(chan struct{})
		go func() { _ = e.Start(startCtx); close(started) }()

		for _, n := range []string{"a", "s"} {
			if err := e.Track(swPU(n)); err != nil {
				t.Fatal(err)
			}
			e.TriggerPod(swKey(n))
			synctest.Wait()
		}
		time.Sleep(100 * time.Millisecond) // s's check is under way
		sweepCtx, endSweep := context.WithCancel(context.Background())
		swept := make(chan struct{})
		go func() { e.Sweep(sweepCtx); close(swept) }()
		time.Sleep(100 * time.Millisecond)
		if err := e.Track(swPU("n")); err != nil {
			t.Fatal(err)
		}
		e.TriggerPod(swKey("n"))
		time.Sleep(2 * time.Second)
		if b := e.Backlog(); policy.CallCount() != 1 || b.RateLimited != 2 {
			t.Fatalf("want a destroyed and n, s in line; got %d calls, backlog %+v", policy.CallCount(), b)
		}
		stopStart()
		<-started

		select {
		case <-swept:
		case <-time.After(10 * time.Minute):
			t.Errorf("10 min after Start stopped, at one turn every 10 s, the Sweep has not returned and DestroyPU was "+
				"called %d times in all (s's destroy never got its turn)", policy.CallCount())
			for _, s := range e.Status() {
				t.Logf("  %s: %s, next %v", s.PUID, s.State, s.NextAttempt.Format(time.TimeOnly))
			}
		}
		endSweep()
		<-swept
		time.Sleep(time.Second)
	})
}

// The same break without Start ever running: rate one destroy per 10 s, burst 1. A first Sweep destroys a (the
// burst). A second Sweep checks s (GetPod takes 1 s) and p (alive); meanwhile n is tracked and TriggerPod asked for it:
// the Sweep's own goroutine, free after p, runs n's check, which finds its pod gone and takes the head of the line;
// s then takes the line behind it. n is none of the Sweep's checks and nothing runs it without Start, so s's turn
// never comes and the Sweep never returns.
func TestASweepThatNeverHadStartChecksTheHeadOfTheLineAtItsTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		getter := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			switch k.Name {
			case "p":
				return swAlive(k), nil
			case "s":
				time.Sleep(time.Second)
			}
			return nil, ports.ErrPodNotFound
		})
		policy := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, getter, policy, deletion.Options{DestroyRate: 0.1, DestroyBurst: 1, CheckTimeout: 5 * time.Second})
		if err := e.Track(swPU("a")); err != nil {
			t.Fatal(err)
		}
		e.Sweep(context.Background()) // a is destroyed: the burst's turn
		for _, n := range []string{"s", "p"} {
			if err := e.Track(swPU(n)); err != nil {
				t.Fatal(err)
			}
		}
		sweepCtx, endSweep := context.WithCancel(context.Background())
		swept := make(chan struct{})
		go func() { e.Sweep(sweepCtx); close(swept) }()
		time.Sleep(100 * time.Millisecond)
		if err := e.Track(swPU("n")); err != nil {
			t.Fatal(err)
		}
		e.TriggerPod(swKey("n"))
		select {
		case <-swept:
		case <-time.After(10 * time.Minute):
			t.Errorf("10 min on, at one turn every 10 s, the Sweep has not returned and DestroyPU was called %d times "+
				"in all (s's destroy never got its turn)", policy.CallCount())
			for _, s := range e.Status() {
				t.Logf("  %s: %s, next %v", s.PUID, s.State, s.NextAttempt.Format(time.TimeOnly))
			}
		}
		endSweep()
		<-swept
		time.Sleep(time.Second)
	})
}

// decision-table.md: "A failed destroy is tried again after RetryMinDelay ... and not before, whatever brings the PU
// up (its periodic check, a trigger); only Sweep checks it earlier"; Options.DestroyRate: a Sweep waits for the turns
// its checks took. A Sweep that checks a PU waiting for its retry takes a place in the rate's line for it and waits;
// ended by its context before that turn, it gives the turn back, and the PU waits for its retry again: no destroy of
// it before the retry, with Start running.
//
// The same when a trigger checks a again while the Sweep waits (decision-table.md: a failed destroy is tried again
// after its backoff "whatever brings the PU up (its periodic check, a trigger); only Sweep checks it earlier"): the
// trigger's check keeps a in line, the Sweep's end still gives its retry back.
func TestASweepEndedBeforeItsTurnLeavesTheRetryWhereItWas(t *testing.T) {
	for _, trigger := range []bool{false, true} {
		t.Run(map[bool]string{false: "alone", true: "a trigger during the Sweep"}[trigger], func(t *testing.T) {
			sweepEndedBeforeItsTurn(t, trigger)
		})
	}
}

func sweepEndedBeforeItsTurn(t *testing.T, trigger bool) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		calls := map[string][]time.Duration{}
		start := time.Now()
		policy := ports.PolicyHandlerFunc(func(_ context.Context, ev ports.DestroyEvent) error {
			mu.Lock()
			defer mu.Unlock()
			calls[ev.PUID] = append(calls[ev.PUID], time.Since(start))
			if ev.PUID == "uid-a" {
				return errors.New("policy engine down")
			}
			return nil
		})
		getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound })
		eng, err := deletion.New(getter, policy, deletion.Options{NodeName: "node-a", DestroyRate: 1, DestroyBurst: 1,
			RetryMinDelay: time.Minute, RetryMaxDelay: time.Minute, SweepInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go func() { _ = eng.Start(ctx) }()
		if err := eng.Track(swPU("a")); err != nil {
			t.Fatal(err)
		}
		eng.TriggerPod(swKey("a"))
		synctest.Wait() // a's destroy fails at 0s, on the burst's turn: its retry at 60s
		for _, n := range []string{"b", "c", "d"} {
			if err := eng.Track(swPU(n)); err != nil {
				t.Fatal(err)
			}
			eng.TriggerPod(swKey(n))
		}
		synctest.Wait() // b, c and d wait for their turns at 1s, 2s and 3s
		sctx, scancel := context.WithTimeout(t.Context(), time.Second)
		swept := make(chan struct{})
		go func() { eng.Sweep(sctx); close(swept) }() // checks a early: its turn, after d's, is past the Sweep's end
		if trigger {
			time.Sleep(500 * time.Millisecond)
			eng.TriggerPod(swKey("a"))
		}
		<-swept
		scancel()
		time.Sleep(58 * time.Second)
		synctest.Wait()
		mu.Lock()
		early := len(calls["uid-a"])
		mu.Unlock()
		if early != 1 {
			t.Errorf("DestroyPU of a called %d times before its retry at 60s (at %v), Start running: want once", early, calls["uid-a"])
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(calls["uid-a"]) != 2 {
			t.Errorf("DestroyPU of a called at %v: want its retry at 60s", calls["uid-a"])
		}
	})
}

// deletion.StateLeaving, Engine.Status: "a PU leaves Status only once the Observer has heard its end, even when its
// PUID is tracked again meanwhile (the one leaving is listed before the new one)"; deletiontest.PUs lists what the
// engine tracks, not what leaves. An Untrack whose EventUntracked the journal commits slowly, and a Track of the same
// PUID with another sandbox meanwhile: the first is leaving beside the second until the journal has heard.
func TestALeavingPUStaysBesideItsPUIDTrackedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		committing, commit := make(chan struct{}), make(chan struct{})
		var once sync.Once
		journal := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventUntracked {
				once.Do(func() { close(committing); <-commit })
			}
		})
		getter := ports.PodGetterFunc(func(_ context.Context, k types.NamespacedName) (*corev1.Pod, error) { return swAlive(k), nil })
		policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
		eng, err := deletion.New(getter, policy, deletion.Options{NodeName: "node-a", Observer: journal})
		if err != nil {
			t.Fatal(err)
		}
		first, second := swPU("a"), swPU("a")
		first.SandboxID, second.SandboxID = "sb1", "sb2"
		if err := eng.Track(first); err != nil {
			t.Fatal(err)
		}
		untracked := make(chan bool)
		go func() { untracked <- eng.Untrack(first.PUID) }()
		<-committing
		tracked := make(chan error)
		go func() { tracked <- eng.Track(second) }()
		synctest.Wait() // the second waits for the first's end to be told
		st := eng.Status()
		if len(st) != 2 || st[0].State != deletion.StateLeaving || st[0].SandboxID != "sb1" || st[1].SandboxID != "sb2" {
			t.Fatalf("Status lists %+v: want sb1 leaving, then sb2", st)
		}
		if got := deletiontest.PUs(eng); len(got) != 1 || got[0].SandboxID != "sb2" || eng.Len() != 1 {
			t.Errorf("deletiontest.PUs lists %v, Len %d: want the PU tracked, sb2, alone", got, eng.Len())
		}
		close(commit)
		if !<-untracked {
			t.Error("Untrack returned false")
		}
		if err := <-tracked; err != nil {
			t.Fatal(err)
		}
		if st := eng.Status(); len(st) != 1 || st[0].SandboxID != "sb2" || st[0].State == deletion.StateLeaving {
			t.Errorf("once the journal heard, Status lists %+v: want sb2 alone", st)
		}
	})
}

// PUStatus: "A PU leaving (StateLeaving) whose check ended it tells that check", its LastVerdict, LastErr ("the error
// of the last check, if it failed") and Vetoed. While a journal commits the end of a PU, its Status tells the check that
// ended it, not the one before: a retry that destroyed it (no error), a last attempt given up on (its error), a
// destroy confirmed after a veto (not vetoed).
func TestALeavingPUTellsTheCheckThatEndedIt(t *testing.T) {
	first, last := errors.New("the policy engine restarts"), ports.Permanent(errors.New("no such PU in the policy engine"))
	for _, tc := range []struct {
		name    string
		answers []error // DestroyPU's, in turn; then nil
		veto    bool    // the first check is vetoed by the Confirmer
		ends    deletion.EventKind
		wantErr error
	}{
		{name: "a retry destroyed it", answers: []error{first}, ends: deletion.EventDestroyed},
		{name: "its last attempt was given up on", answers: []error{first, last}, ends: deletion.EventAbandoned, wantErr: last},
		{name: "a destroy confirmed after a veto", veto: true, ends: deletion.EventDestroyed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cl := deletiontest.NewCluster()
				policy := &deletiontest.Policy{}
				var mu sync.Mutex
				answers := tc.answers
				policy.SetAnswer(func(context.Context, ports.DestroyEvent) error {
					mu.Lock()
					defer mu.Unlock()
					if len(answers) == 0 {
						return nil
					}
					err := answers[0]
					answers = answers[1:]
					return err
				})
				obs := deletion.ObserverFunc(func(ev deletion.Event) {
					if ev.Kind == tc.ends {
						time.Sleep(5 * time.Second) // the journal's commit of the end
					}
				})
				opts := deletion.Options{Observer: obs, RetryMinDelay: time.Second}
				if tc.veto {
					opts.Confirmer = cl.APIServer()
				}
				e := deletiontest.NewEngine(t, cl, policy, opts)
				p := cl.CreatePod(swKey("a"), "", "")
				require.NoError(t, e.Track(p))
				deletiontest.Start(t, e)
				if tc.veto {
					cl.FailReads(swKey("a"), ports.ErrPodNotFound) // the cache lags: the API server vetoes
					e.TriggerAll()
					time.Sleep(100 * time.Millisecond)
					synctest.Wait()
					require.True(t, e.Status()[0].Vetoed, "the first check was vetoed")
					cl.FailReads(swKey("a"), nil)
				}
				cl.DeletePod(swKey("a"))
				e.TriggerAll()
				time.Sleep(1500 * time.Millisecond) // the first attempt, and its retry at 1s
				synctest.Wait()
				st := e.Status()
				require.Len(t, st, 1)
				require.Equal(t, deletion.StateLeaving, st[0].State)
				assert.Equal(t, deletion.Destroy, st[0].LastVerdict.Action)
				assert.False(t, st[0].Vetoed, "the check that ended it was not vetoed")
				if tc.wantErr == nil {
					assert.NoError(t, st[0].LastErr, "the check that ended it did not fail")
				} else {
					assert.ErrorIs(t, st[0].LastErr, tc.wantErr, "the check that ended it failed so")
				}
				time.Sleep(6 * time.Second)
			})
		})
	}
}

// decision-table.md: a failed destroy is tried again after its backoff "and not before, whatever brings the PU up ...;
// only Sweep checks it earlier". A Sweep's early check puts a PU waiting for its retry in the rate's line; its turn
// comes while the only worker is busy, and the Sweep ends (its context) with the PU queued for that turn: Start's
// worker, once free, does not destroy it at that turn; it waits for its retry.
func TestATurnASweepTookAheadOfARetryIsNotUsedOnceTheSweepEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var slow atomic.Bool
		getter := ports.PodGetterFunc(func(_ context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			if k.Name != "z" {
				return nil, ports.ErrPodNotFound
			}
			if slow.Load() {
				time.Sleep(5 * time.Second)
			}
			return deletiontest.Pod(k, "uid-z", ""), nil
		})
		policy := &deletiontest.Policy{}
		policy.FailNext(1, errors.New("the policy engine is busy"))
		e := deletiontest.NewEngine(t, getter, policy, deletion.Options{Workers: 1, DestroyRate: 0.1, DestroyBurst: 1,
			SweepInterval: time.Hour, RetryMinDelay: time.Minute, RetryMaxDelay: time.Minute, CheckTimeout: 20 * time.Second})
		require.NoError(t, e.Track(swPU("a")))
		require.NoError(t, e.Track(swPU("z")))
		deletiontest.Start(t, e)
		t0 := time.Now()
		e.TriggerPod(swKey("a"))
		synctest.Wait() // a's destroy fails on the burst's turn: its retry at 60s; the next turn at 10s
		require.Equal(t, 1, policy.CallCount())
		time.Sleep(time.Second)
		ctx, cancel := context.WithTimeout(t.Context(), 11*time.Second) // the Sweep ends at 12s
		defer cancel()
		swept := make(chan struct{})
		go func() { e.Sweep(ctx); close(swept) }() // its early check of a takes the turn at 10s, ahead of the retry
		time.Sleep(8 * time.Second)
		slow.Store(true)
		e.TriggerPod(swKey("z")) // the only worker is busy until 14s: a is queued at its turn, 10s
		time.Sleep(3500 * time.Millisecond)
		synctest.Wait()
		select {
		case <-swept:
		default:
			t.Fatal("the Sweep did not end with its context")
		}
		slow.Store(false)
		time.Sleep(40 * time.Second)
		synctest.Wait()
		for _, c := range policy.CallsOf("uid-a")[1:] {
			assert.False(t, c.At.Before(t0.Add(time.Minute)), "DestroyPU of a at %v, after the Sweep ended at 12s, before its retry at 60s",
				c.At.Sub(t0))
		}
	})
}
