package summaries_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

type recRequeuer struct {
	mu    sync.Mutex
	calls []string
	done  []string
	delay time.Duration
	hang  map[string]bool
	rel   chan struct{}
}

func (r *recRequeuer) Requeue(ctx context.Context, pod *corev1.Pod) error {
	r.mu.Lock()
	r.calls = append(r.calls, pod.Name)
	h := r.hang[pod.Name]
	r.mu.Unlock()
	if h {
		<-r.rel // ignores its context
	}
	select {
	case <-time.After(r.delay):
	case <-ctx.Done():
		return ctx.Err()
	}
	r.mu.Lock()
	r.done = append(r.done, pod.Name)
	r.mu.Unlock()
	return nil
}

func (r *recRequeuer) doneN() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.done) }

// docs/sdk/engine.md:26-28: "a Sweep waits for the calls of the pods its own checks requeued, and of those queued ahead
// of them, CheckTimeout and a second at most; never for the pods Start's checks queue".
func TestAuditHoldsSweepWaitsForOwnRequeue(t *testing.T) {
	for _, withStart := range []bool{false, true} {
		name := "noStart"
		if withStart {
			name = "start"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cl := deletiontest.NewCluster()
				rq := &recRequeuer{delay: 200 * time.Millisecond}
				e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{SandboxExtractor: cl, Requeuer: rq})
				pu := cl.CreatePod(key("a"), "node", "sb1")
				if err := e.Track(pu); err != nil {
					t.Fatal(err)
				}
				if withStart {
					deletiontest.Start(t, e)
				}
				deletiontest.Advance(0)
				cl.SetSandbox(pu.Pod, "sb2")
				e.Sweep(context.Background())
				if rq.doneN() != 1 {
					t.Errorf("Sweep returned before the requeue of its own check ended: %d done", rq.doneN())
				}
			})
		})
	}
}

func TestAuditHoldsSweepDoesNotWaitForStartsRequeue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		rq := &recRequeuer{delay: 20 * time.Second}
		e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{SandboxExtractor: cl, Requeuer: rq})
		a := cl.CreatePod(key("a"), "node", "sb1")
		b := cl.CreatePod(key("b"), "node", "sb1b")
		for _, pu := range []ports.PU{a, b} {
			if err := e.Track(pu); err != nil {
				t.Fatal(err)
			}
		}
		deletiontest.Start(t, e)
		deletiontest.Advance(0)
		cl.SetSandbox(a.Pod, "sb2")
		e.TriggerPod(a.Pod)
		time.Sleep(time.Millisecond)
		synctest.Wait()
		t0 := time.Now()
		e.Sweep(context.Background())
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("Sweep with nothing to requeue waited %v, for the requeue of Start's check", d)
		}
		time.Sleep(time.Minute)
	})
}

func TestAuditHoldsSweepRequeueWaitBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		rq := &recRequeuer{delay: time.Millisecond, hang: map[string]bool{"a": true}, rel: make(chan struct{})}

		e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{SandboxExtractor: cl, Requeuer: rq, CheckTimeout: time.Second})
		a := cl.CreatePod(key("a"), "node", "sb1")
		b := cl.CreatePod(key("b"), "node", "sb1b")
		for _, pu := range []ports.PU{a, b} {
			if err := e.Track(pu); err != nil {
				t.Fatal(err)
			}
		}
		deletiontest.Start(t, e)
		deletiontest.Advance(0)
		cl.SetSandbox(a.Pod, "sb2")
		e.TriggerPod(a.Pod)
		time.Sleep(time.Millisecond)
		synctest.Wait()
		cl.SetSandbox(b.Pod, "sb3")
		t0 := time.Now()
		e.Sweep(context.Background())
		if d := time.Since(t0); d > 2*time.Second+10*time.Millisecond {
			t.Errorf("Sweep waited %v, past CheckTimeout and a second", d)
		}
		close(rq.rel)
		time.Sleep(time.Minute)
	})
}

// Options.Requeuer: "is told about a pod whose PU went for a sandbox change (rows 10 and 12): destroyed, or given up on
// (ports.Permanent, MaxDestroyAttempts)".
func TestAuditHoldsRequeueOnGiveUp(t *testing.T) {
	for _, mode := range []string{"permanent", "attempts", "dead"} {
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cl := deletiontest.NewCluster()
				rq := &recRequeuer{delay: time.Millisecond}
				pol := &deletiontest.Policy{}
				e := deletiontest.NewEngine(t, cl, pol, deletion.Options{SandboxExtractor: cl, SandboxProber: cl, Requeuer: rq, MaxDestroyAttempts: 2})
				pu := cl.CreatePod(key("a"), "node", "sb1")
				if err := e.Track(pu); err != nil {
					t.Fatal(err)
				}
				deletiontest.Start(t, e)
				deletiontest.Advance(time.Second)
				switch mode {
				case "permanent":
					pol.Fail(ports.Permanent(errors.New("no")))
					cl.SetSandbox(pu.Pod, "sb2")
				case "attempts":
					pol.Fail(errors.New("no"))
					cl.SetSandbox(pu.Pod, "sb2")
				case "dead":
					pol.Fail(errors.New("no"))
					cl.KillSandbox(pu.Pod)
				}
				deletiontest.Advance(time.Minute)
				if e.Len() != 0 || rq.doneN() != 1 {
					t.Errorf("len %d, requeues %d, destroy calls %d", e.Len(), rq.doneN(), pol.CallCount())
				}
			})
		})
	}
}

type orderRequeuer struct {
	mu    sync.Mutex
	order []string
	slow  string
}

func (r *orderRequeuer) Requeue(ctx context.Context, pod *corev1.Pod) error {
	r.mu.Lock()
	r.order = append(r.order, pod.Name)
	r.mu.Unlock()
	if pod.Name == r.slow {
		select {
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
		}
	}
	return nil
}

// engine.md:25-26: the Requeuer "is called off the workers, one pod at a time in the order the checks requeued them (a
// pod requeued again while it waits goes once, at its latest place)".
func TestAuditHoldsRequeueOrderAndDedupe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		rq := &orderRequeuer{slow: "w"}
		e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{SandboxExtractor: cl, Requeuer: rq, SweepInterval: time.Hour})
		pus := map[string]ports.PU{}
		for _, n := range []string{"w", "x", "y", "z"} {
			pus[n] = cl.CreatePod(key(n), "node", "sb-"+n)
			if err := e.Track(pus[n]); err != nil {
				t.Fatal(err)
			}
		}
		deletiontest.Start(t, e)
		deletiontest.Advance(time.Second)
		change := func(n, sb string) {
			cl.SetSandbox(pus[n].Pod, sb)
			e.TriggerPod(pus[n].Pod)
			deletiontest.Advance(0)
		}
		change("w", "w2")
		change("x", "x2")
		change("y", "y2")
		change("z", "z2")
		p, _ := cl.PU(pus["x"].Pod)
		if err := e.Track(p); err != nil {
			t.Fatal(err)
		}
		deletiontest.Advance(0)
		change("x", "x3")
		deletiontest.Advance(time.Minute)
		rq.mu.Lock()
		defer rq.mu.Unlock()
		if fmt.Sprint(rq.order) != "[w y z x]" {
			t.Errorf("requeue order %v, want [w y z x]", rq.order)
		}
	})
}

type timedRequeuer struct {
	mu    sync.Mutex
	delay map[string]time.Duration
	ended map[string][]time.Time
}

func (r *timedRequeuer) Requeue(ctx context.Context, pod *corev1.Pod) error {
	r.mu.Lock()
	d := r.delay[pod.Name]
	r.mu.Unlock()
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return ctx.Err()
	}
	r.mu.Lock()
	r.ended[pod.Name] = append(r.ended[pod.Name], time.Now())
	r.mu.Unlock()
	return nil
}

// engine.md:25-28: the Requeuer is called "one pod at a time in the order the checks requeued them (a pod requeued
// again while it waits goes once, at its latest place) ... (a Sweep waits for the calls of the pods its own checks
// requeued, and of those queued ahead of them, CheckTimeout and a second at most; never for the pods Start's checks
// queue)". A pod a Sweep's check requeued, requeued again by Start's check while it waits, goes at its latest place:
// the Sweep must still wait for its call, but returns once the lane passes the pod's first place.
func TestAuditSweepWaitsForOwnRequeueMovedBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		rq := &timedRequeuer{delay: map[string]time.Duration{"w": 10 * time.Second, "q": 0, "p": 2 * time.Second},
			ended: map[string][]time.Time{}}
		e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{SandboxExtractor: cl, Requeuer: rq, SweepInterval: time.Hour})
		pus := map[string]ports.PU{}
		for _, n := range []string{"w", "q", "p"} {
			pus[n] = cl.CreatePod(key(n), "node", "sb-"+n)
			if err := e.Track(pus[n]); err != nil {
				t.Fatal(err)
			}
		}
		deletiontest.Start(t, e)
		deletiontest.Advance(time.Second)
		// Start's check requeues w: the lane is busy with it for 10s.
		cl.SetSandbox(pus["w"].Pod, "w2")
		e.TriggerPod(pus["w"].Pod)
		deletiontest.Advance(time.Second)
		// A Sweep whose check requeues p.
		cl.SetSandbox(pus["p"].Pod, "p2")
		swept := make(chan time.Time)
		go func() { e.Sweep(context.Background()); swept <- time.Now() }()
		deletiontest.Advance(time.Second)
		// Start's checks requeue q, then p again (its new PU's sandbox replaced too): p goes at its latest place.
		cl.SetSandbox(pus["q"].Pod, "q2")
		e.TriggerPod(pus["q"].Pod)
		deletiontest.Advance(0)
		p2, _ := cl.PU(pus["p"].Pod)
		if err := e.Track(p2); err != nil {
			t.Fatal(err)
		}
		deletiontest.Advance(0)
		cl.SetSandbox(pus["p"].Pod, "p3")
		e.TriggerPod(pus["p"].Pod)
		deletiontest.Advance(0)
		var at time.Time
		select {
		case at = <-swept:
		case <-time.After(time.Minute):
			t.Fatal("Sweep did not return")
		}
		rq.mu.Lock()
		ps, ws, qs := rq.ended["p"], rq.ended["w"], rq.ended["q"]
		rq.mu.Unlock()
		t.Logf("Sweep returned at %v; requeue calls ended: w %v, q %v, p %v", at.Format("05.000"), ws, qs, ps)
		if len(ps) == 0 || at.Before(ps[0]) {
			t.Errorf("Sweep returned at %v, before the call of the Requeuer for p, which its own check requeued (requeued again meanwhile by Start's check, at its latest place), had ended: %v",
				at.Format("05.000"), ps)
		}
		time.Sleep(time.Minute)
	})
}

// engine.md:27: "a Sweep waits for the calls of the pods its own checks requeued"; Sweep: "Under DestroyRate, a destroy
// a check decides is one of Sweep's checks: Sweep waits for its turn." The requeue after a destroy at its turn is the
// Sweep's check's too.
func TestAuditHoldsSweepWaitsForRequeueAfterTurn(t *testing.T) {
	for _, withStart := range []bool{false, true} {
		t.Run(fmt.Sprint("start=", withStart), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cl := deletiontest.NewCluster()
				rq := &timedRequeuer{delay: map[string]time.Duration{"a": 2 * time.Second, "b": 2 * time.Second}, ended: map[string][]time.Time{}}
				e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{SandboxExtractor: cl, Requeuer: rq,
					DestroyRate: 0.1, SweepInterval: time.Hour})
				a := cl.CreatePod(key("a"), "node", "sa")
				b := cl.CreatePod(key("b"), "node", "sb")
				for _, pu := range []ports.PU{a, b} {
					if err := e.Track(pu); err != nil {
						t.Fatal(err)
					}
				}
				stop := func() {}
				if withStart {
					stop = deletiontest.Start(t, e)
					deletiontest.Advance(time.Second)
				}
				cl.SetSandbox(a.Pod, "sa2")
				cl.SetSandbox(b.Pod, "sb2")
				t0 := time.Now()
				e.Sweep(context.Background())
				at := time.Now()
				rq.mu.Lock()
				ends := map[string][]time.Time{"a": rq.ended["a"], "b": rq.ended["b"]}
				rq.mu.Unlock()
				t.Logf("Sweep returned at +%v; requeues ended %v", at.Sub(t0), ends)
				for _, n := range []string{"a", "b"} {
					if len(ends[n]) == 0 || at.Before(ends[n][0]) {
						t.Errorf("Sweep returned at +%v before the requeue of %s, its own check's, ended", at.Sub(t0), n)
					}
				}
				stop()
				time.Sleep(time.Minute)
			})
		})
	}
}

// engine.md:24: "A Requeuer that nobody reads cannot block the engine"; Start "returns within about ShutdownTimeout even
// when a port hangs".
func TestAuditHoldsHungRequeuerBlocksNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		rel := make(chan struct{})
		rq := ports.RequeuerFunc(func(ctx context.Context, p *corev1.Pod) error { <-rel; return nil })
		pol := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cl, pol, deletion.Options{SandboxExtractor: cl, Requeuer: rq, Workers: 1})
		var pus []ports.PU
		for i := range 10 {
			pu := cl.CreatePod(key(fmt.Sprint("p", i)), "node", fmt.Sprint("sb", i))
			pus = append(pus, pu)
			if err := e.Track(pu); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { e.Start(ctx); close(done) }()
		deletiontest.Advance(time.Second)
		for i, pu := range pus {
			cl.SetSandbox(pu.Pod, fmt.Sprint("sbx", i))
		}
		e.TriggerAll()
		deletiontest.Advance(10 * time.Second)
		if pol.CallCount() != 10 || e.Len() != 0 {
			t.Errorf("destroys %d, left %d", pol.CallCount(), e.Len())
		}
		t0 := time.Now()
		cancel()
		<-done
		if d := time.Since(t0); d > 3*time.Second {
			t.Errorf("Start returned %v after its context ended", d)
		}
		close(rel)
		time.Sleep(time.Hour)
	})
}

// engine.md:26: the Requeuer is called "each call under a deadline of CheckTimeout" — of its own, whatever became of
// the context of the Sweep whose check requeued the pod.
func TestAuditHoldsRequeueOwnDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		type seen struct {
			left time.Duration
			err  error
		}
		got := make(chan seen, 4)
		rq := ports.RequeuerFunc(func(ctx context.Context, p *corev1.Pod) error {
			time.Sleep(2 * time.Second)
			dl, _ := ctx.Deadline()
			got <- seen{time.Until(dl), ctx.Err()}
			return nil
		})
		e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{SandboxExtractor: cl, Requeuer: rq, CheckTimeout: 10 * time.Second})
		a := cl.CreatePod(key("a"), "node", "s1")
		if err := e.Track(a); err != nil {
			t.Fatal(err)
		}
		cl.SetSandbox(a.Pod, "s2")
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		e.Sweep(ctx)
		s := <-got
		if s.err != nil || s.left < 7900*time.Millisecond || s.left > 8*time.Second {
			t.Errorf("Requeue's ctx after 2s: err %v, %v left (CheckTimeout 10s)", s.err, s.left)
		}
	})
}
