package deletion_test

// The engine's documented promises where the destroy rate meets Untrack,
// retries, the backlog, dry runs and Sweep. Every test drives the public
// API in a testing/synctest bubble and asserts only what a user sees:
// DestroyPU calls and their (fake) times, Observer events, Backlog, Status,
// the health checks, and when Sweep and Start return.

import (
	"context"
	"fmt"
	"slices"
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
	"github.com/podsweeper/podsweeper/ports"
)

// destroyLog is a PolicyHandler that records when each DestroyPU call
// starts, on the time package's clock (fake in a synctest bubble), and
// answers fail's error, if fail is set (nil: success).
type destroyLog struct {
	t0    time.Time
	fail  func(ports.DestroyEvent) error
	mu    sync.Mutex
	calls []destroyCall
}

type destroyCall struct {
	puid string
	at   time.Duration // since t0
}

func newDestroyLog() *destroyLog { return &destroyLog{t0: time.Now()} }

func (d *destroyLog) DestroyPU(_ context.Context, ev ports.DestroyEvent) error {
	d.mu.Lock()
	d.calls = append(d.calls, destroyCall{ev.PUID, time.Since(d.t0)})
	d.mu.Unlock()
	if d.fail != nil {
		return d.fail(ev)
	}
	return nil
}

// since returns how long after the log was made now is.
func (d *destroyLog) since() time.Duration { return time.Since(d.t0) }

// starts returns when every DestroyPU call started, in order.
func (d *destroyLog) starts() []time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]time.Duration, 0, len(d.calls))
	for _, c := range d.calls {
		out = append(out, c.at)
	}
	slices.Sort(out)
	return out
}

// of returns when the DestroyPU calls of puid started, in order.
func (d *destroyLog) of(puid string) []time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []time.Duration
	for _, c := range d.calls {
		if c.puid == puid {
			out = append(out, c.at)
		}
	}
	return out
}

// puids returns the PUIDs of the calls, in the order they started.
func (d *destroyLog) puids() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, c := range d.calls {
		out = append(out, c.puid)
	}
	return out
}

// assertRateBound checks the destroy rate's promise on starts: in any
// window of length w, at most rate*w + burst DestroyPU calls start. It
// reports the window that exceeds it the most.
func assertRateBound(t *testing.T, starts []time.Duration, rate float64, burst int) bool {
	t.Helper()
	s := slices.Sorted(slices.Values(starts))
	worst, wi, wj := 0.0, 0, 0
	for i := range s {
		for j := i + burst; j < len(s); j++ {
			allowed := rate*(s[j]-s[i]).Seconds() + float64(burst)
			if excess := float64(j-i+1) - allowed; excess > worst+1e-6 {
				worst, wi, wj = excess, i, j
			}
		}
	}
	if worst == 0 {
		return true
	}
	return assert.Fail(t, "more DestroyPU calls than the destroy rate allows",
		"%d calls started from %v to %v: at %v a second with a burst of %d, at most %.2f may",
		wj-wi+1, s[wi], s[wj], rate, burst, rate*(s[wj]-s[wi]).Seconds()+float64(burst))
}

// trackLive tracks n PUs named prefix0, prefix1..., each with a live pod of
// the same name and UID in w, and returns them.
func trackLive(t *testing.T, c *deletion.Engine, w *podWorld, prefix string, n int) []ports.PU {
	t.Helper()
	pus := make([]ports.PU, n)
	for i := range pus {
		name := fmt.Sprintf("%s%d", prefix, i)
		pus[i] = ports.PU{PUID: name, Pod: w.put(name, name, testNode, "", corev1.PodRunning)}
		require.NoError(t, c.Track(pus[i]))
	}
	return pus
}

// blipGetter reads pods from w, but answers NotFound for every pod while
// blip is set: an API server or a cache that for a moment reads every pod
// as gone, the wave the destroy rate exists for.
func blipGetter(w *podWorld, blip *atomic.Bool) ports.PodGetter {
	return ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		if blip.Load() {
			return nil, ports.ErrPodNotFound
		}
		return w.GetPod(ctx, key)
	})
}

// TestNoDestroyStartsAfterUntrackReturnsDuringARateWait: Untrack promises
// that once it returns, no DestroyPU of that PU starts. Under DestroyRate 10
// (a turn every 100ms) with one worker, two PUs are found gone at once: the
// first is destroyed, and the second's check waits the 100ms for its turn,
// a wait short enough to be spent inside the check. Untrack of that PU
// returns during the wait, and the agent tracks a new PU under the same
// PUID, for a live pod. No DestroyPU of that PUID may start after Untrack
// returned, whether Start's worker or a Sweep (without Start) runs the
// check, and the new PU stays tracked.
func TestNoDestroyStartsAfterUntrackReturnsDuringARateWait(t *testing.T) {
	for _, runner := range []string{"Start", "Sweep"} {
		t.Run(runner, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newPodWorld()
				policy := newDestroyLog()
				c := newQuiet(t, w, policy, deletion.Options{DestroyRate: 10, Workers: 1, SweepInterval: time.Hour})
				pus := map[string]ports.PU{}
				for _, id := range []string{"a", "b"} {
					pus[id] = ports.PU{PUID: id, Pod: types.NamespacedName{Namespace: "ns", Name: id}} // no pod: gone
					require.NoError(t, c.Track(pus[id]))
				}
				swept := make(chan struct{})
				if runner == "Start" {
					close(swept)
					startEngine(t, c)
					c.TriggerAll()
				} else {
					go func() {
						defer close(swept)
						c.Sweep(context.Background())
					}()
				}
				synctest.Wait()
				first := policy.puids()
				require.Len(t, first, 1, "one destroy at once, the other waits 100ms for its turn")
				waiting := pus["a"]
				if first[0] == "a" {
					waiting = pus["b"]
				}

				require.True(t, c.Untrack(waiting.PUID))
				untracked := policy.since()
				w.put(waiting.Pod.Name, waiting.PUID, testNode, "", corev1.PodRunning)
				require.NoError(t, c.Track(waiting)) // a new PU under the same PUID
				time.Sleep(time.Second)
				synctest.Wait()
				<-swept

				for _, at := range policy.of(waiting.PUID) {
					assert.Fail(t, "a DestroyPU started after Untrack returned",
						"DestroyPU of %s started at %v; Untrack returned at %v, during its rate wait", waiting.PUID, at, untracked)
				}
				assert.Equal(t, []ports.PU{waiting}, puList(c), "the new PU of that PUID stays tracked")
			})
		})
	}
}

// puList returns the PUs c tracks, by PUID.
func puList(c *deletion.Engine) []ports.PU {
	var out []ports.PU
	for _, s := range c.Status() {
		out = append(out, s.PU)
	}
	return out
}

// afterABlip runs the destroy rate's blip: DestroyRate 1 (burst 1), 10 PUs
// of live pods tracked and Start running; a blip reads every pod as gone
// for the checks TriggerAll asks for, so that one PU is destroyed and nine
// wait for their turns (1 to 9 s away: with CheckTimeout 1s, beyond half
// of a check's time left, so that no check waits for its turn and destroys
// on its own read); then the blip ends, and 30s pass, three SweepIntervals,
// in which the nine are checked again and kept.
func afterABlip(t *testing.T) (*deletion.Engine, *podWorld, *destroyLog, []ports.PU) {
	t.Helper()
	w := newPodWorld()
	var blip atomic.Bool
	policy := newDestroyLog()
	c := newQuiet(t, blipGetter(w, &blip), policy, deletion.Options{DestroyRate: 1, CheckTimeout: time.Second, SweepInterval: 10 * time.Second})
	pus := trackLive(t, c, w, "pu", 10)
	startEngine(t, c)
	synctest.Wait()
	blip.Store(true)
	c.TriggerAll()
	synctest.Wait()
	blip.Store(false)
	require.Len(t, policy.starts(), 1, "one destroy within the burst; nine wait for their turns")
	b := c.Backlog()
	require.Equal(t, 9, b.RateLimited, "nine wait for their turns")
	require.False(t, b.OldestGoneSince.IsZero())
	time.Sleep(30 * time.Second)
	synctest.Wait()
	require.Len(t, policy.starts(), 1, "their pods live: the checks at or before their turns keep them")
	require.Equal(t, 9, c.Len())
	var kept []ports.PU
	for _, pu := range pus {
		if len(policy.of(pu.PUID)) == 0 {
			kept = append(kept, pu)
		}
	}
	return c, w, policy, kept
}

// TestAPUKeptAfterARateWaitLeavesTheBacklog: Backlog().RateLimited "is how
// many PUs wait for their turn under the destroy rate", and OldestGoneSince
// is since when the oldest PU found to go has waited for its destroy, "zero
// when none waits". After a blip (see afterABlip), the nine PUs that waited
// for their turns are checked again and kept: none waits any more, so
// RateLimited is 0 and OldestGoneSince is zero.
func TestAPUKeptAfterARateWaitLeavesTheBacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _, _, _ := afterABlip(t)
		b := c.Backlog()
		assert.Zero(t, b.RateLimited, "the PUs kept no longer wait for a turn")
		assert.True(t, b.OldestGoneSince.IsZero(), "no PU waits for its destroy, yet OldestGoneSince is %v old",
			time.Since(b.OldestGoneSince))
		assert.Zero(t, b.Retrying)
	})
}

// TestTheDestroyRateHoldsForPodsDeletedAfterABlip: DestroyRate "bounds how
// many DestroyPU calls start per second, with DestroyBurst at once". After
// a blip (see afterABlip), in which nine PUs waited for turns they never
// used, their pods are really deleted: the nine destroys must still be
// spread at one a second (at most rate*w + burst in any window w), not all
// start at once on turns left over from the blip.
func TestTheDestroyRateHoldsForPodsDeletedAfterABlip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, w, policy, kept := afterABlip(t)
		for _, pu := range kept {
			w.remove(pu.Pod)
		}
		c.TriggerAll()
		time.Sleep(30 * time.Second)
		synctest.Wait()
		assert.Zero(t, c.Len(), "every PU destroyed once its pod was deleted")
		assertRateBound(t, policy.starts(), 1, 1)
	})
}

// TestTurnsThatNoDestroyUsedAreGivenBack: a turn reserved for a destroy
// that a later check does not carry out (the PU is kept) is given back, so
// that it does not delay the destroys that follow. DestroyRate 1 (burst 1),
// SweepInterval 5s, which re-checks every entry, CheckTimeout 1s (see
// afterABlip): 30 PUs are read gone in a blip (one destroyed, 29 waiting for
// turns up to 29 s away); the blip ends,
// and two intervals later, when every one of the 29 has been checked again
// and kept, one pod is really deleted. Its destroy is the only one the
// engine has to make, and the last started 12 s earlier: it must start
// within a couple of seconds, not wait behind the 29 turns nobody used.
func TestTurnsThatNoDestroyUsedAreGivenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newPodWorld()
		var blip atomic.Bool
		policy := newDestroyLog()
		c := newQuiet(t, blipGetter(w, &blip), policy, deletion.Options{DestroyRate: 1, CheckTimeout: time.Second, SweepInterval: 5 * time.Second})
		trackLive(t, c, w, "blip", 30)
		startEngine(t, c)
		synctest.Wait()
		blip.Store(true)
		c.TriggerAll()
		synctest.Wait()
		blip.Store(false)
		require.Len(t, policy.starts(), 1)
		late := trackLive(t, c, w, "late", 1)[0]

		time.Sleep(12 * time.Second)
		synctest.Wait()
		require.Len(t, policy.starts(), 1, "the blip's PUs are kept")
		w.remove(late.Pod)
		deleted := policy.since()
		c.TriggerPod(late.Pod)
		time.Sleep(30 * time.Second)
		synctest.Wait()

		got := policy.of(late.PUID)
		require.Len(t, got, 1, "the PU of the deleted pod is destroyed")
		assert.LessOrEqual(t, got[0]-deleted, 2*time.Second,
			"its destroy started %v after its pod was deleted, behind turns that no destroy used", got[0]-deleted)
		assertRateBound(t, policy.starts(), 1, 1)
	})
}

// TestOldTurnsAreNotSpentAtOnceByTheNextSweep: DestroyRate bounds how many
// DestroyPU calls start per second, and Sweep checks every PU through the
// same rules. Without Start, DestroyRate 10 (a turn every 100ms) and
// CheckTimeout 100ms (no check waits for a turn over 50ms away): a Sweep
// whose context ends after 1s finds 50 PUs gone, destroys about ten and
// leaves the rest waiting for their turns; a minute later, Sweeps come
// again until every PU is destroyed.
// The turns of the first Sweep are long past by then: the later Sweeps'
// destroys must still start at most rate*w + burst in any window w, not 49
// in one instant.
func TestOldTurnsAreNotSpentAtOnceByTheNextSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy := newDestroyLog()
		c := newQuiet(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{DestroyRate: 10, CheckTimeout: 100 * time.Millisecond})
		for i := range 50 {
			id := fmt.Sprint(i)
			require.NoError(t, c.Track(ports.PU{PUID: id, Pod: types.NamespacedName{Namespace: "ns", Name: id}}))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c.Sweep(ctx)
		cancel()
		require.Less(t, len(policy.starts()), 50, "the first Sweep leaves destroys waiting for their turns")
		time.Sleep(time.Minute)
		for c.Len() > 0 && policy.since() < 3*time.Minute {
			c.Sweep(context.Background())
			time.Sleep(100 * time.Millisecond)
		}
		assert.Zero(t, c.Len(), "Sweeps destroy every PU in the end")
		assertRateBound(t, policy.starts(), 10, 1)
	})
}

// TestRetryHoldsItsBackoffAfterARateWait: RetryMinDelay "is the wait after
// the first failed DestroyPU of a PU before it is tried again"; no periodic
// check or trigger tries a PU earlier. DestroyRate 10, RetryMinDelay 1m: a
// Sweep (before Start) whose context ends after 50ms destroys one PU and
// leaves the other waiting for its turn, 100ms away; a second Sweep then
// checks it, its destroy waits out the rest of its turn in the check and
// fails. Start then runs, with no
// Sweep: the failed destroy is tried again no earlier than a minute after
// it failed, and is tried again once that minute is over.
func TestRetryHoldsItsBackoffAfterARateWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		policy := newDestroyLog()
		policy.fail = func(ports.DestroyEvent) error {
			if calls.Add(1) == 1 {
				return nil
			}
			return errBoom
		}
		c := newQuiet(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			DestroyRate: 10, Workers: 1, RetryMinDelay: time.Minute, RetryMaxDelay: time.Hour,
		})
		for _, id := range []string{"a", "b"} {
			require.NoError(t, c.Track(ports.PU{PUID: id, Pod: types.NamespacedName{Namespace: "ns", Name: id}}))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		c.Sweep(ctx)
		cancel()
		require.Len(t, policy.starts(), 1, "one destroy at once, the other waits for its turn")
		require.Equal(t, 1, c.Len())
		failing := c.Status()[0].PUID
		c.Sweep(context.Background())
		startEngine(t, c)
		time.Sleep(70 * time.Second)
		synctest.Wait()

		got := policy.of(failing)
		require.GreaterOrEqual(t, len(got), 2, "the failed destroy of %s is tried again within 70s (calls at %v)", failing, got)
		assert.GreaterOrEqual(t, got[1]-got[0], time.Minute,
			"the retry came %v after the failed destroy, before its backoff of 1m", got[1]-got[0])
		assert.LessOrEqual(t, got[1]-got[0], time.Minute+5*time.Second, "and soon after it")
	})
}

// TestADryRunLeavesNoDestroyPending: in a dry run no DestroyPU is ever
// called, so no PU waits for its destroy; Backlog().OldestGoneSince is
// "zero when none waits" (it is podsweeper_oldest_pending_destroy_seconds).
// A dry run with DestroyTerminated reports the PU of a finished pod (row
// 11) once and keeps it tracked; ten minutes later nothing is pending.
func TestADryRunLeavesNoDestroyPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newPodWorld()
		key := w.put("done", "done", testNode, "", corev1.PodSucceeded)
		policy := newDestroyLog()
		rec := &events{}
		c := newQuiet(t, w, policy, deletion.Options{DryRun: true, DestroyTerminated: true, NodeName: testNode, Observer: rec})
		require.NoError(t, c.Track(ports.PU{PUID: "done", Pod: key}))
		startEngine(t, c)
		time.Sleep(10 * time.Minute)
		synctest.Wait()

		reported := rec.kinds(deletion.EventWouldDestroy)
		require.Len(t, reported, 1, "reported once")
		assert.Equal(t, ports.ReasonPodTerminated, reported[0].Reason)
		require.Len(t, c.Status(), 1, "a finished pod's PU stays tracked in a dry run")
		assert.Empty(t, policy.starts())
		b := c.Backlog()
		assert.True(t, b.OldestGoneSince.IsZero(), "no destroy waits in a dry run, yet OldestGoneSince is %v old",
			time.Since(b.OldestGoneSince))
	})
}
