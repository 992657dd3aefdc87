package deletion_test

// The destroy rate's line keeps its order: turns go to the PUs in the order
// they were found to go, and a PU that waits for its turn is not overtaken
// by one behind it. It keeps its place through a trigger or a check that
// learns nothing (GetPod or the SandboxExtractor failing, a port hung at
// its turn), with Start running or in a Sweep alone; once seen alive or
// untracked it leaves the line, and the turn it did not use goes to the
// next in line.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// TestTheLastInTheRateLineDoesNotOvertakeOneAheadOfIt: a turn every 1.3s;
// a is destroyed at once, and b, c, d, found gone in that order, wait for
// their turns at about 1.3, 2.6 and 3.9s. b's pod turns out alive, so its
// turn goes unused, and d is triggered at 1.5s: c, ahead of d, is still
// destroyed before it, and the rate holds.
func TestTheLastInTheRateLineDoesNotOvertakeOneAheadOfIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = 1300 * time.Millisecond
		w := deletiontest.NewCluster() // no pods: every pod is gone
		policy := newDestroyLog()
		c := deletiontest.NewEngine(t, w, policy, deletion.Options{DestroyRate: rate.Limit(1 / every.Seconds()), DestroyBurst: 1,
			Workers: 1, SweepInterval: time.Hour})
		for _, name := range []string{"a", "b", "c", "d"} {
			require.NoError(t, c.Track(pu(name)))
		}
		deletiontest.Start(t, c)
		synctest.Wait()
		c.TriggerPod(pu("a").Pod)
		synctest.Wait()
		require.Equal(t, []string{"a"}, policy.puids(), "a takes the burst")
		for _, name := range []string{"b", "c", "d"} {
			c.TriggerPod(pu(name).Pod)
		}
		synctest.Wait()
		require.Equal(t, 3, c.Backlog().RateLimited, "b, c and d wait for their turns")

		time.Sleep(time.Second)
		w.AddPod(podAt(pu("b").Pod, "b"), "") // b's pod is alive after all
		time.Sleep(500 * time.Millisecond)
		c.TriggerPod(pu("d").Pod)
		time.Sleep(5 * time.Second)
		synctest.Wait()

		assert.Equal(t, []string{"a", "c", "d"}, policy.puids(), "c waited ahead of d; DestroyPU started at %v", policy.starts())
		assertRateBound(t, policy.starts(), 1/every.Seconds(), 1)
	})
}

// TestAFailedCheckKeepsAPUsPlaceInTheRateLine: DestroyRate 0.1 (a turn
// every 10s), burst 1, one worker; four PUs are found gone; one is
// destroyed and three wait for turns at about 10, 20 and 30s. A trigger at
// 5s of the first in line, b, meets one GetPod error: a check that learns
// nothing does not take b out of the line, so b is still destroyed at
// about its turn, and Backlog still counts three waiting until then.
func TestAFailedCheckKeepsAPUsPlaceInTheRateLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var failing atomic.Value
		failing.Store("")
		getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			if key.Name == failing.Load() && failing.CompareAndSwap(key.Name, "") {
				return nil, errors.New("API server unavailable")
			}
			return nil, ports.ErrPodNotFound
		})
		policy := newDestroyLog()
		c := deletiontest.NewEngine(t, getter, policy, deletion.Options{DestroyRate: 0.1, Workers: 1, SweepInterval: time.Hour})
		for _, pu := range goneKeys("pu", 4) {
			require.NoError(t, c.Track(pu))
		}
		deletiontest.Start(t, c)
		c.TriggerAll()
		synctest.Wait()
		require.Len(t, policy.starts(), 1, "one destroy at once; three wait for their turns")
		require.Equal(t, 3, c.Backlog().RateLimited)
		var b deletion.PUStatus
		for _, s := range c.Status() {
			if b.PUID == "" || s.NextAttempt.Before(b.NextAttempt) {
				b = s
			}
		}
		require.Equal(t, "waiting for its turn", b.State)

		time.Sleep(5 * time.Second)
		failing.Store(b.Pod.Name)
		c.TriggerPod(b.Pod)
		synctest.Wait()
		require.Empty(t, failing.Load(), "the trigger's check met the error")
		assert.Equal(t, 3, c.Backlog().RateLimited, "b still waits for its turn")

		time.Sleep(time.Until(b.NextAttempt) + 2*time.Second)
		synctest.Wait()
		assert.Len(t, policy.of(b.PUID), 1, "b is destroyed at about its turn, %v", b.NextAttempt.Sub(policy.t0))
		time.Sleep(40 * time.Second)
		synctest.Wait()
		assert.Len(t, policy.starts(), 4, "all four are destroyed within 45s")
		assertRateBound(t, policy.starts(), 0.1, 1)
	})
}

// TestATriggeredPUKeepsItsPlaceInTheRateLine protects, from TriggerPod:
// "one waiting for its turn is checked, and keeps its place", and from
// DestroyRate: "the PU waits [...] until about its turn, behind those
// waiting".
//
// Under 1 destroy/s: a is destroyed, then b and c enter the line in that
// order (b's turn at about 1s, c's at about 2s). c is triggered just
// before b's turn: its check takes b's turn, and b goes behind it.
func TestATriggeredPUKeepsItsPlaceInTheRateLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy := newDestroyLog()
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{DestroyRate: 1, DestroyBurst: 1, SweepInterval: time.Hour})
		for _, n := range []string{"a", "b", "c"} {
			require.NoError(t, c.Track(pu(n)))
		}
		deletiontest.Start(t, c)
		synctest.Wait()
		for _, n := range []string{"a", "b", "c"} {
			c.TriggerPod(pu(n).Pod)
			synctest.Wait()
		}
		require.Equal(t, []string{"a"}, policy.puids())
		require.Equal(t, 2, c.Backlog().RateLimited, "b and c wait for their turns, b first")

		time.Sleep(970 * time.Millisecond) // just before b's turn
		c.TriggerPod(pu("c").Pod)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"a", "b", "c"}, policy.puids(),
			"a trigger of c, which waited behind b, made c take b's turn")
	})
}

// Options.DestroyRate: "a PU destroys only when fewer PUs are ahead of it than turns are at hand; otherwise it waits
// ... until about its turn, and is checked again then. A trigger, or a check whose ports fail, keeps its place; a
// check that sees the pod alive ... takes it out of the line, and the turn it did not use goes to the next in line".
// Line a, x, y, b at one turn a second: y is seen alive (its 2s turn is b's), and b's own check fails while x takes
// its turn at 1s. b keeps its place, first in line, its turn at hand at 2s.
func TestAuditTurnAtHandIsTakenAfterAFailedCheck(t *testing.T) { turnAfterFailedCheck(t, true) }

// The same line, b's check not failing: b is nudged to its 2s turn.
func TestAuditHoldsTurnGoesToTheNextInLine(t *testing.T) { turnAfterFailedCheck(t, false) }

func turnAfterFailedCheck(t *testing.T, fail bool) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		var failB atomic.Bool
		b := key("b")
		getter := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			if k == b && failB.CompareAndSwap(true, false) {
				time.Sleep(200 * time.Millisecond)
				return nil, errors.New("API server: timeout")
			}
			return cluster.GetPod(ctx, k)
		})
		engine := deletiontest.NewEngine(t, getter, policy, deletion.Options{
			DestroyRate: 1, DestroyBurst: 1, SweepInterval: time.Hour,
		})
		pus := map[string]ports.PU{}
		for _, n := range []string{"a", "x", "y", "b"} {
			pus[n] = cluster.CreatePod(key(n), "node-a", "")
			_ = engine.Track(pus[n])
			cluster.FailReads(key(n), ports.ErrPodNotFound) // the cache says gone
		}
		deletiontest.Start(t, engine)
		synctest.Wait()
		t0 := time.Now()
		for _, n := range []string{"a", "x", "y", "b"} { // found to go in this order
			engine.TriggerPod(key(n))
			synctest.Wait()
		}
		deletiontest.Advance(500 * time.Millisecond)
		cluster.FailReads(key("y"), nil) // y lives: out of the line
		engine.TriggerPod(key("y"))
		deletiontest.Advance(400 * time.Millisecond) // 0.9s
		if fail {
			failB.Store(true)
			engine.TriggerPod(b)
		} // b's check: 0.9s to 1.1s, fails
		deletiontest.Advance(5 * time.Second)

		at := func(n string) time.Duration {
			c := policy.CallsOf(pus[n].PUID)
			if len(c) == 0 {
				return -1
			}
			return c[0].At.Sub(t0)
		}
		t.Logf("destroys: a %v, x %v, y %v, b %v", at("a"), at("x"), at("y"), at("b"))
		if at("x") != time.Second || at("y") != -1 {
			t.Fatalf("setup: x at %v, y at %v", at("x"), at("y"))
		}
		if got := at("b"); got < 0 || got > 2100*time.Millisecond {
			t.Errorf("b, first in line from 1s with its check failed, destroyed at %v; its turn was at hand at 2s and no one used it", got)
		}
	})
}

// lineRun sets up a destroy line under a rate of 1/s: A takes the turn at hand, B (its sandbox dead, row 12) is first
// in line, C (its pod gone) second. Then a triggered check of B learns nothing of why B waits, because fail makes the
// SandboxExtractor or the SandboxProber fail. It returns who was destroyed, in order.
func lineRun(t *testing.T, failExtractor bool) []ports.DestroyEvent {
	cluster := deletiontest.NewCluster()
	pol := &deletiontest.Policy{}
	var failing atomic.Bool
	extractor := ports.SandboxExtractorFunc(func(ctx context.Context, pod *corev1.Pod) (string, error) {
		if failExtractor && failing.Load() {
			return "", errors.New("runtime unreachable")
		}
		return cluster.SandboxID(ctx, pod)
	})
	prober := ports.SandboxProberFunc(func(ctx context.Context, pod *corev1.Pod, id string) (bool, error) {
		if !failExtractor && failing.Load() {
			return false, errors.New("runtime unreachable")
		}
		return cluster.SandboxDead(ctx, pod, id)
	})
	e := deletiontest.NewEngine(t, cluster, pol, deletion.Options{SandboxExtractor: extractor, SandboxProber: prober,
		DestroyRate: rate.Limit(1), SweepInterval: time.Hour})
	a := cluster.CreatePod(nsKey("a"), "", "sb-a")
	b := cluster.CreatePod(nsKey("b"), "", "sb-b")
	c := cluster.CreatePod(nsKey("c"), "", "sb-c")
	for _, pu := range []ports.PU{a, b, c} {
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
	}
	deletiontest.Start(t, e)
	deletiontest.Advance(100 * time.Millisecond)

	cluster.DeletePod(a.Pod)
	e.TriggerPod(a.Pod) // A takes the one turn at hand
	deletiontest.Advance(100 * time.Millisecond)
	if err := cluster.KillSandbox(b.Pod); err != nil {
		t.Fatal(err)
	}
	e.TriggerPod(b.Pod) // B: SandboxDead, first in line
	deletiontest.Advance(100 * time.Millisecond)
	cluster.DeletePod(c.Pod)
	e.TriggerPod(c.Pod) // C: PodGone, second in line
	deletiontest.Advance(100 * time.Millisecond)

	failing.Store(true)
	e.TriggerPod(b.Pod) // a trigger, and a check that learns nothing of why B waits
	deletiontest.Advance(100 * time.Millisecond)
	failing.Store(false)
	deletiontest.Advance(5 * time.Second)
	e.TriggerPod(b.Pod) // B is seen again (its periodic check is an hour away)
	deletiontest.Advance(5 * time.Second)
	return pol.Destroyed()
}

// deletion/options.go:115-120 (go doc Options.DestroyRate): "The PUs whose checks decide a destroy form a line in the
// order they were found to go, and turns go to them in that order ... A trigger, or a check that learns nothing of why
// it waits (GetPod fails; or, for a destroy of its sandbox, the SandboxExtractor fails), keeps its place; a check that
// sees the pod alive, or Untrack, takes it out of the line, and the turn it did not use goes to the next in line,
// never to a later arrival." ports/ports.go:48-49 (SandboxProber): "An error means the answer is not known".
//
// A PU in line for SandboxDead (row 12, decided by the SandboxProber) whose triggered check finds the prober failing
// (row 8: nothing learnt of its sandbox, the prober's answer "not known") is taken out of the line as if its pod had
// been seen alive: C, found to go after it, takes its turn, and B goes last. The same check with the
// SandboxExtractor failing keeps B's place (TestAuditHoldsExtractorFailureKeepsPlaceInLine).
func TestAuditProberFailureKeepsPlaceInLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := lineRun(t, false)
		if len(got) != 3 || got[1].PUID != "uid-2" || got[2].PUID != "uid-3" {
			t.Errorf("destroys %v: want A, then B (first in line, SandboxDead), then C (PodGone, found after B)", got)
		}
	})
}

// The same line, B's check learning nothing because the SandboxExtractor fails (row 6): B keeps its place.
func TestAuditHoldsExtractorFailureKeepsPlaceInLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := lineRun(t, true)
		if len(got) != 3 || got[1].PUID != "uid-2" || got[2].PUID != "uid-3" {
			t.Errorf("destroys %v: want A, then B, then C", got)
		}
	})
}

// docs/sdk/engine.md:27-29: "`Sweep` runs one synchronous pass, for tests and custom schedules; under a destroy rate it
// waits for the turns of the destroys it decides (end it sooner with its context)." deletion/options.go:118-120 (go doc
// Options.DestroyRate): "a check that learns nothing of why it waits (GetPod fails ...) keeps its place, or its turn
// come, the next tick ... a Sweep waits for them."
//
// A Sweep without Start, under a rate of 1/s: three PUs' pods are gone; one is destroyed at once, the two others wait
// in line. The head's check at its turn meets one transient GetPod failure: it keeps its place (as documented), but
// nothing checks it again, "the next tick" never comes without Start, and the Sweep waits for the second one's turn,
// which can only come after the head's. The Sweep never ends on its own: it re-reads the second PU's pod every
// second until its context ends (an hour here, forever with context.Background()), and destroys nothing more.
func TestAuditSweepUnderRateEndsAfterATransientFailure(t *testing.T) { sweepLine(t) }

func sweepLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		pol := &deletiontest.Policy{}
		var mu sync.Mutex
		reads := map[types.NamespacedName]int{}
		failed := false
		getter := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			mu.Lock()
			reads[k]++
			fail := reads[k] == 2 && !failed // the first read at a PU's turn fails, once
			failed = failed || fail
			mu.Unlock()
			if fail {
				return nil, errors.New("transient: connection reset")
			}
			return cluster.GetPod(ctx, k)
		})
		e := deletiontest.NewEngine(t, getter, pol, deletion.Options{DestroyRate: rate.Limit(1)})
		for i := range 3 {
			pu := cluster.CreatePod(nsKey(fmt.Sprint("p", i)), "", "")
			if err := e.Track(pu); err != nil {
				t.Fatal(err)
			}
			cluster.DeletePod(pu.Pod)
		}

		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		start := time.Now()
		e.Sweep(ctx)
		took := time.Since(start)

		if took > time.Minute || len(pol.Destroyed()) != 3 {
			mu.Lock()
			defer mu.Unlock()
			t.Errorf("Sweep under a rate of 1/s over 3 gone pods returned after %v (its context's end), with %d destroyed, "+
				"%d still tracked, pods read %v; want it to end within seconds, all 3 destroyed",
				took, len(pol.Destroyed()), e.Len(), reads)
		}
	})
}

// The same transient failure at the head's turn while Start runs: deletion/options.go:118-120 holds: the head keeps
// its place, is checked again the next tick and destroyed before the PU found to go after it.
func TestAuditHoldsHeadKeepsPlaceAfterTransientFailureWithStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pol := &deletiontest.Policy{}
		_, a, b, c, _ := lineOfThree(t, pol, func() error { return errors.New("transient: connection reset") })
		deletiontest.Advance(10 * time.Second)
		got := pol.Destroyed()
		if len(got) != 3 || got[0].PUID != a.PUID || got[1].PUID != b.PUID || got[2].PUID != c.PUID {
			t.Errorf("destroys %v, want a, b, c", got)
		}
	})
}

// lineOfThree makes, with Start running, a line under a rate of one destroy a second: the pods of a, b and c, first
// checked alive, go in that order, each triggered: a is destroyed at once, b is first in line and c second. GetPod's
// read of b at its turn (its third) calls atBsTurn first, and answers its error if any. reads tells how many times
// GetPod read a pod.
func lineOfThree(t *testing.T, pol *deletiontest.Policy, atBsTurn func() error) (e *deletion.Engine, a, b, c ports.PU, reads func(types.NamespacedName) int) {
	cluster := deletiontest.NewCluster()
	var mu sync.Mutex
	readsOf := map[types.NamespacedName]int{}
	getter := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
		mu.Lock()
		readsOf[k]++
		turn := k.Name == "b" && readsOf[k] == 3 // B's read at its turn
		mu.Unlock()
		if turn {
			if err := atBsTurn(); err != nil {
				return nil, err
			}
		}
		return cluster.GetPod(ctx, k)
	})
	e = deletiontest.NewEngine(t, getter, pol, deletion.Options{DestroyRate: rate.Limit(1), SweepInterval: time.Hour})
	a, b, c = cluster.CreatePod(nsKey("a"), "", ""), cluster.CreatePod(nsKey("b"), "", ""), cluster.CreatePod(nsKey("c"), "", "")
	for _, pu := range []ports.PU{a, b, c} {
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
	}
	deletiontest.Start(t, e)
	for _, pu := range []ports.PU{a, b, c} {
		e.TriggerPod(pu.Pod) // their first checks: alive
	}
	deletiontest.Advance(200 * time.Millisecond)
	for _, pu := range []ports.PU{a, b, c} { // found to go in the order a, b, c
		cluster.DeletePod(pu.Pod)
		e.TriggerPod(pu.Pod)
		deletiontest.Advance(10 * time.Millisecond)
	}
	reads = func(k types.NamespacedName) int {
		mu.Lock()
		defer mu.Unlock()
		return readsOf[k]
	}
	return e, a, b, c, reads
}

// docs/sdk/engine.md:16-19: "each has a deadline of `CheckTimeout` (30 s). Ports that fail or panic cannot lose a PU;
// a port that ignores its context keeps one worker until it returns, and `LivenessCheck` fails once every worker is
// stuck so." docs/sdk/migrating-from-trireme.md:71: "each check under its own deadline; a port that hangs or panics
// costs one check, not the loop" (against trireme-lib, where "one hung API call stalled all others").
//
// Under a destroy rate of 1/s, A is destroyed at once, B is first in line and C second. At B's turn, one GetPod of B
// hangs, ignoring its context. B, being checked, keeps the head of the line for as long as the port hangs, so C,
// whose pod is gone and whose turns are at hand, is re-read every second and never destroyed: one hung call stalls
// every destroy behind it, while three of the four workers are idle and LivenessCheck passes.
func TestAuditHungPortCostsOneCheckNotEveryDestroy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pol := &deletiontest.Policy{}
		release := make(chan struct{})
		defer close(release)
		e, _, _, c, reads := lineOfThree(t, pol, func() error {
			<-release // ignores its context
			return nil
		})
		deletiontest.Advance(10 * time.Minute)

		if n := len(pol.CallsOf(c.PUID)); n == 0 {
			t.Errorf("10 minutes after C's pod went, with B's GetPod hung (one worker of 4): C destroyed %d times, "+
				"read %d times, LivenessCheck %v; want the hung call to cost B's check only", n, reads(c.Pod), e.LivenessCheck(nil))
		}
	})
}

// Options.DestroyRate: "a check that sees the pod alive, or Untrack, takes it out of the line, and the turn it did
// not use goes to the next in line". Sweep: "Under DestroyRate, a destroy a check decides is one of Sweep's
// checks: Sweep waits for its turn." A Sweep without Start: the second in line is seen alive at its turn; the
// third must get that turn.
func TestAuditSweepGivesAnUnusedTurnToTheNextInLine(t *testing.T) {
	unusedTurn(t, false)
}

// The same with Start running: the scheduler gives the unused turn to the next in line.
func TestAuditHoldsUnusedTurnGoesToTheNextInLineUnderStart(t *testing.T) {
	unusedTurn(t, true)
}

func unusedTurn(t *testing.T, start bool) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{
			Workers: 1, DestroyRate: 2, DestroyBurst: 1, SweepInterval: time.Hour,
		})
		var pus []ports.PU
		for _, n := range []string{"a", "b", "c", "d"} {
			pu := cluster.CreatePod(key(n), "node-a", "")
			pus = append(pus, pu)
			if err := engine.Track(pu); err != nil {
				t.Fatal(err)
			}
			cluster.FailReads(pu.Pod, ports.ErrPodNotFound) // a cache that says gone
		}
		if start {
			deletiontest.Start(t, engine)
			synctest.Wait()
		}
		t0 := time.Now()
		swept := make(chan struct{})
		go func() { engine.Sweep(t.Context()); close(swept) }()
		synctest.Wait()
		// One destroyed at once; the others wait in line, their turns 0.5s apart.
		turns := map[time.Duration]ports.PU{}
		for _, s := range engine.Status() {
			turns[s.NextAttempt.Sub(t0)] = s.PU
		}
		second, ok1 := turns[500*time.Millisecond]
		third, ok2 := turns[time.Second]
		if len(policy.Calls()) != 1 || !ok1 || !ok2 {
			t.Fatalf("after the first pass: %d calls, turns %v; want 1 call and turns at 0.5s, 1s, 1.5s", len(policy.Calls()), turns)
		}
		cluster.FailReads(second.Pod, nil) // the cache catches up: the pod lives
		deletiontest.Advance(500 * time.Millisecond)
		deletiontest.Advance(100 * time.Millisecond)
		if n := policy.Count(third.PUID); n != 1 {
			t.Errorf("at 0.6s: the third in line (turn at 1s) destroyed %d times; want it to have the 0.5s turn the second did not use", n)
		}
		for _, pu := range pus {
			cluster.FailReads(pu.Pod, nil)
			cluster.DeletePod(pu.Pod)
		}
		deletiontest.Advance(10 * time.Second)
		<-swept
	})
}

// Options.DestroyRate (doc: "a check that sees the pod alive, or Untrack, takes it out of the line, and the turn it
// did not use goes to the next in line"). B joined the line on a lagging cache (PodGone); its next check reads its
// pod alive, same UID, while the runtime cannot be reached (the SandboxExtractor fails, row 6). That check saw the pod
// alive: B must leave the line, and C, whose pod is really gone, take the turn B did not use, 10s after A's, not wait
// behind B for as long as the runtime is down.
func TestAuditPodSeenAliveLeavesTheLineWhileTheRuntimeIsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{
			DestroyRate: 0.1, SandboxExtractor: cluster, SweepInterval: time.Second,
		})
		var pus []ports.PU
		for _, n := range []string{"a", "b", "c"} {
			pu := cluster.CreatePod(nsKey(n), "node-a", "sb-"+n)
			pus = append(pus, pu)
			if err := engine.Track(pu); err != nil {
				t.Fatal(err)
			}
		}
		a, b, c := pus[0], pus[1], pus[2]
		deletiontest.Start(t, engine)
		deletiontest.Advance(2 * time.Second) // every PU checked: alive
		cluster.DeletePod(a.Pod)
		engine.TriggerPod(a.Pod)
		synctest.Wait() // a destroyed: the next turn in 10s
		began := time.Now()
		cluster.FailReads(b.Pod, fmt.Errorf("cache: %w", ports.ErrPodNotFound)) // a lagging cache
		engine.TriggerPod(b.Pod)
		synctest.Wait()
		cluster.DeletePod(c.Pod)
		engine.TriggerPod(c.Pod)
		synctest.Wait()
		if n := engine.Backlog().RateLimited; n != 2 {
			t.Fatalf("%d PUs in line, want b and c", n)
		}
		cluster.FailReads(b.Pod, nil)                              // the cache has b's pod again
		cluster.FailSandboxIDs(errors.New("runtime: unavailable")) // and the runtime is down
		deletiontest.Advance(2 * time.Minute)
		calls := policy.CallsOf(c.PUID)
		if len(calls) != 1 || calls[0].At.Sub(began) > 10*time.Second+time.Second {
			var st []string
			for _, s := range engine.Status() {
				st = append(st, fmt.Sprintf("%s %s row %d next %v", s.Pod.Name, s.State, s.LastVerdict.Row, s.NextAttempt.Sub(began)))
			}
			t.Errorf("c's DestroyPU calls %v two minutes after its pod went (want one, at b's unused turn 10s in); status %v", calls, st)
		}
	})
}

// Untrack while a destroy waits its turn: no DestroyPU of it, and its turn goes to the next in line.
func TestAuditHoldsUntrackInLineGivesTurnToNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{DestroyRate: 0.1, SweepInterval: time.Second})
		var pus []ports.PU
		for _, n := range []string{"a", "b", "c"} {
			pu := cluster.CreatePod(nsKey(n), "node-a", "")
			pus = append(pus, pu)
			if err := engine.Track(pu); err != nil {
				t.Fatal(err)
			}
		}
		deletiontest.Start(t, engine)
		deletiontest.Advance(2 * time.Second)
		for _, pu := range pus {
			cluster.DeletePod(pu.Pod)
			engine.TriggerPod(pu.Pod)
			synctest.Wait()
		}
		deletiontest.Advance(2 * time.Second)
		if !engine.Untrack(pus[1].PUID) {
			t.Fatal("b not tracked")
		}
		began := policy.Calls()[0].At
		deletiontest.Advance(30 * time.Second)
		if n := policy.Count(pus[1].PUID); n != 0 {
			t.Errorf("%d DestroyPU of an untracked PU", n)
		}
		c := policy.CallsOf(pus[2].PUID)
		if len(c) != 1 || c[0].At.Sub(began) > 10*time.Second+time.Millisecond {
			t.Errorf("c's calls %v: want one, 10s after a's (b's turn)", c)
		}
	})
}

// A Sweep without Start under a destroy rate: it waits for the turns of its destroys; a turn left unused (the head's
// pod came back) goes to the next in line at once, and the Sweep returns at the last turn.
func TestAuditHoldsSweepWithoutStartTurnLeftUnused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{DestroyRate: 0.1, Workers: 1})
		var pus []ports.PU
		for _, n := range []string{"a", "b", "c"} {
			pu := cluster.CreatePod(nsKey(n), "node-a", "")
			pus = append(pus, pu)
			if err := engine.Track(pu); err != nil {
				t.Fatal(err)
			}
		}
		engine.Sweep(t.Context())
		byPUID := map[string]ports.PU{}
		for _, pu := range pus {
			byPUID[pu.PUID] = pu
			cluster.DeletePod(pu.Pod)
		}
		began := time.Now()
		done := make(chan struct{})
		go func() { engine.Sweep(t.Context()); close(done) }()
		synctest.Wait()
		first := policy.Calls()
		if len(first) != 1 {
			t.Fatalf("%d calls at once", len(first))
		}
		// The second in line: the one of the remaining two whose turn comes first.
		var second ports.PU
		for _, s := range engine.Status() {
			if s.State == "waiting for its turn" && s.NextAttempt.Sub(began) == 10*time.Second {
				second = byPUID[s.PUID]
			}
		}
		if second.PUID == "" {
			t.Fatalf("no PU waits for the turn at 10s: %+v", engine.Status())
		}
		time.Sleep(5 * time.Second)
		cluster.AddPod(deletiontest.Pod(second.Pod, "uid-x", "node-a"), "") // not its pod: still gone for its PU
		if err := engine.Untrack(second.PUID); !err {
			t.Fatal("not tracked")
		}
		<-done
		calls := policy.Calls()
		if len(calls) != 2 || calls[1].At.Sub(began) != 10*time.Second || time.Since(began) != 10*time.Second {
			t.Errorf("calls %v, Sweep took %v: want the third destroyed at the untracked one's turn, 10s in", calls, time.Since(began))
		}
	})
}

// docs/sdk/engine.md:28-29 and options.go:119-120: a Sweep under a rate waits for its destroys' turns; Untrack of the
// head gives its turn to the next in line; a failed destroy waits for its retry.
func TestAuditHoldsSweepRateUntrackHead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		pol := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cluster, pol, deletion.Options{DestroyRate: rate.Limit(1)})
		for i := range 4 {
			pu := cluster.CreatePod(nsKey(fmt.Sprint("p", i)), "", "")
			_ = e.Track(pu)
			cluster.DeletePod(pu.Pod)
		}
		pol.FailNext(1, errors.New("busy"))
		start := time.Now()
		done := make(chan struct{})
		go func() { e.Sweep(context.Background()); close(done) }()
		synctest.Wait()
		var head string
		var at time.Time
		for _, s := range e.Status() {
			if s.State == "waiting for its turn" && (head == "" || s.NextAttempt.Before(at)) {
				head, at = s.PUID, s.NextAttempt
			}
		}
		e.Untrack(head)
		<-done
		calls := pol.Calls()
		if len(calls) != 3 || calls[1].At.Sub(start) != time.Second || calls[2].At.Sub(start) != 2*time.Second || e.Len() != 1 {
			t.Errorf("calls %v, len %d", calls, e.Len())
		}
	})
}

// deletion.Engine.Untrack: "Once it returns, no DestroyPU of that PU starts"; deletion.Options.DestroyRate: "Untrack
// takes it out of the line, and the turn it did not use goes to the next in line, never to a later arrival."
func TestUntrackInLineGivesTurnToNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cl, policy, deletion.Options{NodeName: "node-a", DestroyRate: 0.1, SweepInterval: time.Hour})
		var pus []ports.PU
		for i := range 3 {
			pu := cl.CreatePod(nsKey(fmt.Sprintf("pod-%d", i)), "node-a", "")
			pus = append(pus, pu)
			if err := e.Track(pu); err != nil {
				t.Fatal(err)
			}
		}
		deletiontest.Start(t, e)
		for i := range 3 { // found to go in this order
			cl.DeletePod(nsKey(fmt.Sprintf("pod-%d", i)))
			e.TriggerPod(nsKey(fmt.Sprintf("pod-%d", i)))
			deletiontest.Advance(100 * time.Millisecond)
		}
		late := cl.CreatePod(nsKey(fmt.Sprintf("pod-%d", 9)), "node-a", "")
		if err := e.Track(late); err != nil {
			t.Fatal(err)
		}
		deletiontest.Advance(2 * time.Second)
		if !e.Untrack(pus[1].PUID) { // the head of the line
			t.Fatal("not tracked")
		}
		cl.DeletePod(nsKey(fmt.Sprintf("pod-%d", 9))) // a later arrival
		e.TriggerPod(nsKey(fmt.Sprintf("pod-%d", 9)))
		deletiontest.Advance(9 * time.Second)
		calls := policy.Calls()
		if len(calls) != 2 || calls[0].Event.PUID != pus[0].PUID || calls[1].Event.PUID != pus[2].PUID {
			t.Fatalf("calls %v", calls)
		}
		if d := calls[1].At.Sub(calls[0].At); d > 10*time.Second+time.Millisecond {
			t.Errorf("the turn the untracked PU did not use came %v after the first", d)
		}
		deletiontest.Advance(time.Minute)
		for _, c := range policy.Calls() {
			if c.Event.PUID == pus[1].PUID {
				t.Errorf("DestroyPU of an untracked PU")
			}
		}
	})
}

// deletion.Options.DestroyRate: "one that learns nothing is checked again the next tick, until a check learns why, so
// that the line moves as soon as the port answers (while the API server fails, a PU in line is read once or twice a
// second, not once a SweepInterval)".
func TestLineReadWhilePortFails(t *testing.T) {
	for _, withStart := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			cl := deletiontest.NewCluster()
			policy := &deletiontest.Policy{}
			e := deletiontest.NewEngine(t, cl, policy, deletion.Options{NodeName: "node-a", DestroyRate: 0.1,
				SweepInterval: time.Minute})
			for i := range 3 {
				if err := e.Track(cl.CreatePod(nsKey(fmt.Sprintf("pod-%d", i)), "node-a", "")); err != nil {
					t.Fatal(err)
				}
				cl.DeletePod(nsKey(fmt.Sprintf("pod-%d", i)))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			done := make(chan struct{})
			if withStart {
				deletiontest.Start(t, e)
				e.TriggerAll()
				close(done)
			} else {
				go func() { e.Sweep(ctx); close(done) }()
			}
			deletiontest.Advance(time.Second) // one destroyed, two in line
			if policy.CallCount() != 1 {
				t.Fatalf("withStart %v: %d destroys", withStart, policy.CallCount())
			}
			st := e.Status() // the two in line: the head is the one whose turn comes first
			if len(st) != 2 {
				t.Fatalf("Status: %+v", st)
			}
			head := st[0]
			if st[1].NextAttempt.Before(head.NextAttempt) {
				head = st[1]
			}
			cl.FailAllReads(errors.New("API server down"))
			deletiontest.Advance(10 * time.Second) // the turn of the head comes: its check learns nothing
			before := cl.Reads(head.Pod)
			deletiontest.Advance(5 * time.Second)
			reads := cl.Reads(head.Pod) - before
			cl.FailAllReads(nil)
			if reads < 5 || reads > 10 {
				t.Errorf("withStart %v: the head of the line read %d times in 5s while the API server failed; want once or twice a second", withStart, reads)
			}
			deletiontest.Advance(25 * time.Second)
			if n := policy.CallCount(); n != 3 {
				t.Errorf("withStart %v: %d destroys", withStart, n)
			}
			<-done
		})
	}
}
