package deletion_test

// An audit of the engine's documented promises, from outside: each test
// drives the public API only (in a testing/synctest bubble where time
// matters) and names the promise it holds the engine to.

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
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
	"k8s.io/utils/clock"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// auditJournal is an Inventory and an Observer over one set of PUs, as
// adapters/bolt's journal is: Track's event records a PU, a destroy, an
// abandon or an Untrack forgets it, and ListPUs reads what is recorded. A
// forget of a PUID in hold waits, as a journal's commit does, until that
// channel is closed. The first failFirst lists fail.
type auditJournal struct {
	mu        sync.Mutex
	pus       map[string]ports.PU
	hold      map[string]chan struct{}
	failFirst int
	lists     int
	// read is closed once a list that answers has read the journal.
	read chan struct{}
}

func newAuditJournal(failFirst int) *auditJournal {
	return &auditJournal{pus: map[string]ports.PU{}, hold: map[string]chan struct{}{}, failFirst: failFirst, read: make(chan struct{})}
}

func (j *auditJournal) ListPUs(context.Context) ([]ports.PU, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lists++
	if j.lists <= j.failFirst {
		return nil, errors.New("journal unavailable")
	}
	out := make([]ports.PU, 0, len(j.pus))
	for _, pu := range j.pus {
		out = append(out, pu)
	}
	select {
	case <-j.read:
	default:
		close(j.read)
	}
	return out, nil
}

func (j *auditJournal) Observe(ev deletion.Event) {
	switch ev.Kind {
	case deletion.EventTracked:
		j.mu.Lock()
		j.pus[ev.PU.PUID] = ev.PU
		j.mu.Unlock()
	case deletion.EventDestroyed, deletion.EventAbandoned, deletion.EventUntracked:
		j.mu.Lock()
		hold := j.hold[ev.PU.PUID]
		j.mu.Unlock()
		if hold != nil {
			<-hold // the commit of the forget is under way
		}
		j.mu.Lock()
		delete(j.pus, ev.PU.PUID)
		j.mu.Unlock()
	}
}

// TestAnUntrackedPUIsNotRestoredFromAListMadeBeforeItsJournalForgotIt:
// Untrack promises that "once it returns, no DestroyPU of that PU starts",
// and Options.Inventory that a list is taken insert-only with the PUs
// removed while it was under way skipped. With a journal as both Inventory
// and Observer (README, Restarts), Untrack returns once the journal has
// forgotten the PU, and a list may read the journal while that forget is
// being committed. Start's first list fails, so checks begin and the list
// is retried a second later; Untrack of a PU whose pod is gone is called
// half a second before the retry and its forget commits while the retry
// reads the journal. Once Untrack has returned the PU must stay untracked,
// and no DestroyPU of it may start.
func TestAnUntrackedPUIsNotRestoredFromAListMadeBeforeItsJournalForgotIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := newAuditJournal(1)
		j.hold["x"] = j.read // the forget commits once the retried list has read the journal
		policy := newDestroyLog()
		c := newQuiet(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			Inventory: j, Observer: j, SweepInterval: time.Hour, RetryMinDelay: time.Second, CheckTimeout: 10 * time.Second})
		require.NoError(t, c.Track(pu("x")))
		startEngine(t, c)
		time.Sleep(500 * time.Millisecond) // the first list failed; the retry comes at 1s
		var untracked time.Duration
		done := make(chan struct{})
		go func() {
			defer close(done)
			require.True(t, c.Untrack("x"))
			untracked = policy.since()
		}()
		<-done
		time.Sleep(2 * time.Hour) // every PU tracked is checked
		synctest.Wait()

		for _, at := range policy.of("x") {
			assert.Fail(t, "a DestroyPU of an untracked PU started after Untrack returned",
				"DestroyPU of x at %v; Untrack returned at %v", at, untracked)
		}
		assert.Zero(t, c.Len(), "the untracked PU is tracked again from a list read before the journal forgot it")
	})
}

// TestADestroyedPUIsNotRestoredFromAListMadeBeforeItsJournalForgotIt:
// Options.Inventory: "a PU destroyed by a check cannot come back from a
// list that answered after it". With a journal as both Inventory and
// Observer, the journal forgets a destroyed PU when the Observer is told
// (EventDestroyed), a commit after DestroyPU returned. Start's first list
// fails, checks begin, and the list is retried a second later; a trigger
// half a second before the retry destroys a PU whose pod is gone, and the
// journal's forget commits while the retry reads the journal. The retry
// answers after the destroy: the PU must be destroyed once, and not tracked
// again.
func TestADestroyedPUIsNotRestoredFromAListMadeBeforeItsJournalForgotIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := newAuditJournal(1)
		j.hold["x"] = j.read
		policy := newDestroyLog()
		c := newQuiet(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			Inventory: j, Observer: j, SweepInterval: time.Hour, RetryMinDelay: time.Second, CheckTimeout: 10 * time.Second})
		require.NoError(t, c.Track(pu("x")))
		startEngine(t, c)
		time.Sleep(500 * time.Millisecond) // the first list failed; the retry comes at 1s
		c.TriggerPod(pu("x").Pod)
		synctest.Wait()
		require.Len(t, policy.of("x"), 1, "the trigger's check destroys x")
		time.Sleep(2 * time.Hour)
		synctest.Wait()

		assert.Len(t, policy.of("x"), 1, "x is destroyed once; DestroyPU started at %v", policy.of("x"))
		assert.Zero(t, c.Len(), "x is tracked again from a list that answered after its destroy")
	})
}

// TestAPUTrackedAgainWhileAListIsUnderWayIsANewPU: "A later Track of the
// same PUID is a new PU" (Untrack), and a list of the Inventory skips "the
// PUs removed while the list was under way". Start's first list is under
// way (a journal that recorded PU x with sandbox s1); meanwhile the agent
// tracks x without a sandbox (a pod informer's add), tears it down
// (Untrack) and tracks a new PU under the same PUID for the pod's current
// sandbox s2, without a sandbox as the informer does. When the list
// answers, the new PU must not take the old PU's sandbox: its pod is live
// in s2, so its first check records s2 (row 7), and no DestroyPU of x
// starts, neither of the untracked PU's sandbox s1 nor of the live pod's.
func TestAPUTrackedAgainWhileAListIsUnderWayIsANewPU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newPodWorld()
		key := w.put("x", "x", testNode, "s2", corev1.PodRunning)
		answer := make(chan struct{})
		inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
			select {
			case <-answer:
				return []ports.PU{{PUID: "x", Pod: key, SandboxID: "s1"}}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
		policy := newDestroyLog()
		c := newQuiet(t, w, policy, deletion.Options{
			Inventory: inv, SandboxExtractor: w, NodeName: testNode, SweepInterval: time.Second, CheckTimeout: 10 * time.Second})
		startEngine(t, c)
		synctest.Wait() // the list is under way
		require.NoError(t, c.Track(ports.PU{PUID: "x", Pod: key}))
		require.True(t, c.Untrack("x"))
		untracked := policy.since()
		require.NoError(t, c.Track(ports.PU{PUID: "x", Pod: key})) // a new PU
		close(answer)
		time.Sleep(5 * time.Second)
		synctest.Wait()

		for _, call := range policy.of("x") {
			assert.Fail(t, "DestroyPU of x after it was untracked and tracked again as a new PU of a live pod",
				"at %v (Untrack returned at %v)", call, untracked)
		}
		if st := c.Status(); assert.Len(t, st, 1) {
			assert.Equal(t, "s2", st[0].SandboxID, "the new PU records its pod's current sandbox")
		}
	})
}

// TestATinyDestroyRateDelaysWithoutSpinning: Options.DestroyRate takes any
// rate of at least one a year (a smaller one is refused); a destroy beyond
// the budget waits "for about when its turn would come ... and is checked
// again then: nothing is lost, only delayed". At one destroy a year, two
// PUs are found gone: one is destroyed, the other waits for its turn. Over
// the next hour (SweepInterval 1h) it is checked about once, not in a loop
// that re-checks it without end, and Status says its next attempt is
// ahead, not in the past.
func TestATinyDestroyRateDelaysWithoutSpinning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var gets atomic.Int64
		getter := ports.PodGetterFunc(func(ctx context.Context, _ types.NamespacedName) (*corev1.Pod, error) {
			if gets.Add(1) > 1000 { // a loop: let time pass, so that the test ends
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return nil, ports.ErrPodNotFound
		})
		policy := newDestroyLog()
		_, err := deletion.New(getter, policy, deletion.Options{DestroyRate: 1e-10})
		require.ErrorIs(t, err, deletion.ErrInvalidOptions, "a turn every 317 years")
		yearly := rate.Limit(1 / deletion.MaxDuration.Seconds())
		c := newQuiet(t, getter, policy, deletion.Options{DestroyRate: yearly, SweepInterval: time.Hour, CheckTimeout: time.Second, Workers: 1})
		require.NoError(t, c.Track(pu("a")))
		require.NoError(t, c.Track(pu("b")))
		startEngine(t, c)
		c.TriggerAll()
		synctest.Wait()
		checked := policy.since()
		require.Len(t, policy.starts(), 1, "one destroy within the burst")
		time.Sleep(time.Hour)
		synctest.Wait()

		assert.LessOrEqual(t, gets.Load(), int64(4), "GetPod called %d times in the hour after two PUs were checked", gets.Load())
		if st := c.Status(); assert.Len(t, st, 1, "the other PU waits for its turn") {
			assert.Equal(t, "waiting for its turn", st[0].State)
			assert.Greater(t, time.Until(st[0].NextAttempt), time.Hour,
				"its next attempt is %v (%v from now), %v after the check", st[0].NextAttempt, time.Until(st[0].NextAttempt), checked)
		}
	})
}

// TestACheckTimeoutOfAYearIsNoStuckWorker: Options.CheckTimeout takes up to
// MaxDuration (more is refused), and LivenessCheck fails when every Workers
// slot "is held by a check stuck in a port past its deadline". With
// CheckTimeout a year, one worker, and a GetPod that takes a minute, the
// slot is busy, not past any deadline: LivenessCheck passes, and a Sweep
// waits for its check.
func TestACheckTimeoutOfAYearIsNoStuckWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			select {
			case <-time.After(time.Minute):
				return podAt(key, key.Name), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
		_, err := deletion.New(getter, newDestroyLog(), deletion.Options{CheckTimeout: math.MaxInt64})
		require.ErrorIs(t, err, deletion.ErrInvalidOptions)
		c := newQuiet(t, getter, newDestroyLog(), deletion.Options{CheckTimeout: deletion.MaxDuration, Workers: 1, SweepInterval: time.Hour})
		require.NoError(t, c.Track(pu("a")))
		startEngine(t, c)
		c.TriggerAll()
		time.Sleep(10 * time.Second)
		assert.NoError(t, c.LivenessCheck(nil), "a check 10s into a deadline of centuries")
		took := sweepFor(c, time.Hour)
		assert.GreaterOrEqual(t, took, 50*time.Second, "Sweep left a check that was not stuck behind after %v", took)
	})
}

// TestACheckTimeoutOfAYearListsTheInventoryFirst: Options.Inventory "is
// listed by Start before its first check", the first list delaying the
// first check "by as long as it takes, at most its deadline (CheckTimeout
// ...)". With CheckTimeout a year (MaxDuration) and a list that takes 10s,
// no check begins before the list has answered.
func TestACheckTimeoutOfAYearListsTheInventoryFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inv := slowInventory(10 * time.Second)
		rec := &events{}
		c := newQuiet(t, getterOf(nil, ports.ErrPodNotFound), newDestroyLog(), deletion.Options{
			Inventory: inv, Observer: rec, CheckTimeout: deletion.MaxDuration, SweepInterval: time.Second})
		require.NoError(t, c.Track(pu("a")))
		startEngine(t, c)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Empty(t, rec.kinds(deletion.EventChecked), "a check ran while the first list was under way")
		assert.NoError(t, c.LivenessCheck(nil), "during the first list")
	})
}

// TestAnIntervalOfAYearIsLiveAndReady: Options.SweepInterval takes up to
// MaxDuration (150 years is refused), and LivenessCheck and ReadinessCheck
// fail only when the engine is wedged, stuck or behind. An idle engine with
// SweepInterval a year, started and with nothing to do, is neither.
func TestAnIntervalOfAYearIsLiveAndReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, err := deletion.New(getterOf(nil, ports.ErrPodNotFound), newDestroyLog(), deletion.Options{SweepInterval: math.MaxInt64 / 2})
		require.ErrorIs(t, err, deletion.ErrInvalidOptions)
		c := newQuiet(t, getterOf(nil, ports.ErrPodNotFound), newDestroyLog(), deletion.Options{SweepInterval: deletion.MaxDuration})
		startEngine(t, c)
		time.Sleep(time.Second)
		synctest.Wait()
		assert.NoError(t, c.LivenessCheck(nil))
		assert.NoError(t, c.ReadinessCheck(nil))
	})
}

// TestARetryAtAnIntervalOfHoursComesAfterItsBackoff: RetryMinDelay "is the
// wait after the first failed DestroyPU of a PU before it is tried again"
// (README: "A failed destroy is tried again after RetryMinDelay (1 s)");
// the scheduler rounds a retry up to its next tick, of at most a second
// (schedule.go). At SweepInterval 24h, a destroy that fails once is tried
// again a second later, give or take a tick, not at the next of 3,600 ticks
// of the day.
func TestARetryAtAnIntervalOfHoursComesAfterItsBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		policy := newDestroyLog()
		policy.fail = func(ports.DestroyEvent) error {
			if calls.Add(1) == 1 {
				return errBoom
			}
			return nil
		}
		c := newQuiet(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			SweepInterval: 24 * time.Hour, RetryMinDelay: time.Second, RetryMaxDelay: time.Second})
		require.NoError(t, c.Track(pu("a")))
		startEngine(t, c)
		c.TriggerAll()
		time.Sleep(time.Minute)
		synctest.Wait()

		got := policy.of("a")
		require.Len(t, got, 2, "the failed destroy is retried within a minute")
		assert.LessOrEqual(t, got[1]-got[0], 2*time.Second, "the retry came %v after the failure, its backoff 1s", got[1]-got[0])
	})
}

// TestASweepThatReturnedRetriesNothingBeforeItsBackoff: RetryMinDelay: "No
// periodic check or trigger tries a PU earlier; Sweep does", and Sweep
// "returns when all are done or ctx is". A PU's destroy failed (backoff
// 1m); with Start's one worker busy for 20s on another PU's slow check, a
// Sweep under a context of 1s returns at 1s, before it could check either.
// Once the Sweep has returned, only the PU's backoff may bring its retry:
// no DestroyPU of it starts before a minute after it failed.
func TestASweepThatReturnedRetriesNothingBeforeItsBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := make(chan struct{})
		getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			if key.Name == "slow" {
				select {
				case <-slow:
				case <-time.After(20 * time.Second):
				case <-ctx.Done():
				}
				return podAt(key, key.Name), nil
			}
			return nil, ports.ErrPodNotFound
		})
		policy := newDestroyLog()
		policy.fail = func(ports.DestroyEvent) error { return errBoom }
		c := newQuiet(t, getter, policy, deletion.Options{
			Workers: 1, SweepInterval: time.Hour, CheckTimeout: time.Minute, RetryMinDelay: time.Minute, RetryMaxDelay: time.Hour})
		require.NoError(t, c.Track(pu("a")))
		startEngine(t, c)
		c.TriggerAll()
		synctest.Wait()
		require.Len(t, policy.of("a"), 1, "a's destroy failed; its retry is a minute away")
		require.NoError(t, c.Track(pu("slow")))
		c.TriggerPod(pu("slow").Pod) // the one worker is busy for 20s
		synctest.Wait()
		took := sweepFor(c, time.Second)
		require.LessOrEqual(t, took, 2*time.Second, "the Sweep returns with its context")
		sweptAt := policy.since()
		time.Sleep(50 * time.Second)
		synctest.Wait()

		got := policy.of("a")
		if len(got) > 1 {
			assert.GreaterOrEqual(t, got[1]-got[0], time.Minute,
				"a's destroy was retried %v after it failed, before its backoff of 1m, %v after the Sweep had returned",
				got[1]-got[0], got[1]-sweptAt)
		}
	})
}

// TestTheTombstonesOfAHungListAreBounded: Start "returns within about
// ShutdownTimeout even when a port hangs, the Inventory included", and the
// checks begin without a list that ignores its deadline; the engine's
// memory follows the PUs it tracks. With Start's first list hung for good,
// 20,000 PUs (long PUIDs, 20 MB of them) are tracked and destroyed one
// after the other; once they are gone, the engine holds nothing of them.
func TestTheTombstonesOfAHungListAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) {
			<-release // ignores its context, on purpose
			return nil, nil
		})
		var destroyed atomic.Int64
		policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error {
			destroyed.Add(1)
			return nil
		})
		c := newQuiet(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			Inventory: inv, CheckTimeout: time.Second, SweepInterval: time.Hour, Workers: 8})
		stop := startEngine(t, c)
		time.Sleep(3 * time.Second) // the checks begin without the list
		synctest.Wait()
		before := auditHeap()
		const n, size = 20_000, 1000
		for i := range n {
			id := strings.Repeat("x", size-8) + strings.Repeat("0", 8)
			id = id[:size-8] + auditNum(i)
			require.NoError(t, c.Track(ports.PU{PUID: id, Pod: types.NamespacedName{Namespace: "ns", Name: "p"}}))
			if i%1000 == 999 {
				c.TriggerAll()
				synctest.Wait()
			}
		}
		c.TriggerAll()
		synctest.Wait()
		require.Equal(t, int64(n), destroyed.Load())
		require.Zero(t, c.Len())
		grew := int64(auditHeap()) - int64(before)
		assert.Less(t, grew, int64(n*size/4),
			"the engine holds %d KB more after %d PUs of %d-byte PUIDs were tracked and destroyed", grew/1024, n, size)
		runtime.KeepAlive(c)
		close(release)
		stop()
	})
}

// auditHeap returns the live heap after a collection.
func auditHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// auditNum is i in 8 decimal digits.
func auditNum(i int) string {
	b := []byte("00000000")
	for k := 7; k >= 0 && i > 0; k-- {
		b[k] = byte('0' + i%10)
		i /= 10
	}
	return string(b)
}

// TestANaNDestroyRateIsRejected: "values out of range are rejected by New"
// (Options), and DestroyRate "bounds how many DestroyPU calls start per
// second"; 0 is the only "no limit" besides rate.Inf. A NaN rate (what
// strconv.ParseFloat makes of a flag set to "NaN") is no rate: New must
// reject it with ErrInvalidOptions, not run without a limit.
func TestANaNDestroyRateIsRejected(t *testing.T) {
	_, err := deletion.New(getterOf(nil, ports.ErrPodNotFound), newDestroyLog(), deletion.Options{DestroyRate: rate.Limit(math.NaN()), Logger: quiet()})
	assert.ErrorIs(t, err, deletion.ErrInvalidOptions)
}

// TestRateLimitedCountsEveryPUWaitingForItsTurn: Backlog().RateLimited "is
// how many PUs wait for their turn under the destroy rate" (the metric
// podsweeper_pus_waiting_for_destroy_rate, which README's rollout reads as
// "the queue"). DestroyRate 0.01 (a turn every 100s): ten PUs are found
// gone, one is destroyed and nine wait for turns 100 to 900 s away, checked
// meanwhile by their periodic checks (SweepInterval 5s), each taking 400ms
// of a GetPod, within the one worker's means. For the minute that follows
// no turn comes, so nine PUs wait for theirs at every instant, whether one
// of them is being checked or queued for its periodic check or not.
func TestRateLimitedCountsEveryPUWaitingForItsTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		getter := ports.PodGetterFunc(func(ctx context.Context, _ types.NamespacedName) (*corev1.Pod, error) {
			select {
			case <-time.After(400 * time.Millisecond):
				return nil, ports.ErrPodNotFound
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
		policy := newDestroyLog()
		c := newQuiet(t, getter, policy, deletion.Options{DestroyRate: 0.01, Workers: 1, CheckTimeout: time.Second, SweepInterval: 5 * time.Second})
		for i := range 10 {
			require.NoError(t, c.Track(pu(auditNum(i))))
		}
		startEngine(t, c)
		c.TriggerAll()
		time.Sleep(5 * time.Second) // ten checks of 400ms
		require.Len(t, policy.starts(), 1, "one destroy within the burst")
		minimum, off, samples := 9, 0, 0
		for range 240 { // a minute
			time.Sleep(250 * time.Millisecond)
			n := c.Backlog().RateLimited
			samples++
			if n != 9 {
				off++
				minimum = min(minimum, n)
			}
		}
		require.Len(t, policy.starts(), 1, "no turn came in that minute")
		assert.Zero(t, off, "Backlog().RateLimited was not 9 in %d of %d samples (as low as %d) while nine PUs waited for their turns",
			off, samples, minimum)
	})
}

// lateClock is the real clock (fake in a synctest bubble), but its Now
// call number lateCall returns late by late: the time it read, once late
// has passed. It stands for a goroutine that reads the clock and is then
// held up (a lock the engine's Status, Backlog or TriggerAll holds over
// every PU, a preemption) before using what it read.
type lateClock struct {
	clock.RealClock
	calls    atomic.Int32
	lateCall int32
	late     time.Duration
}

func (c *lateClock) Now() time.Time {
	now := time.Now()
	if c.calls.Add(1) == c.lateCall {
		time.Sleep(c.late)
	}
	return now
}

// TestTheDestroyRateHoldsWhenAReservationIsLate: DestroyRate: "in any
// window of w seconds, at most DestroyRate*w + DestroyBurst start".
// DestroyRate 1, burst 1, two workers, PUs found gone by triggers at 0s,
// 0.5s, 1s and 1.5s. The check of the second reads the clock at 0.5s for
// its turn and is held up until 1.2s (see lateClock); meanwhile the third's
// check takes the turn of 1s. A turn asked for with an old time must not
// hand out the time between twice: the fourth PU's destroy may not start
// before 2s.
func TestTheDestroyRateHoldsWhenAReservationIsLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Now's calls: New's epoch, then one per turn asked for.
		clk := &lateClock{lateCall: 3, late: 700 * time.Millisecond}
		policy := newDestroyLog()
		c := newQuiet(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			Clock: clk, DestroyRate: 1, Workers: 2, SweepInterval: time.Hour, CheckTimeout: 10 * time.Second})
		for _, name := range []string{"a", "b", "c", "d"} {
			require.NoError(t, c.Track(pu(name)))
		}
		startEngine(t, c)
		for _, name := range []string{"a", "b", "c", "d"} {
			c.TriggerPod(pu(name).Pod)
			time.Sleep(500 * time.Millisecond)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		require.Zero(t, c.Len(), "every PU is destroyed")
		require.Len(t, policy.of("c"), 1)
		if d := policy.of("d"); assert.Len(t, d, 1) {
			assert.GreaterOrEqual(t, d[0], 2*time.Second, "d's destroy started at %v, c's at %v", d[0], policy.of("c")[0])
		}
		assertRateBound(t, policy.starts(), 1, 1)
	})
}

// TestASweepReturnsWithItsContextWhileAnotherSweepRuns: Sweep "returns when
// all are done or ctx is"; "One Sweep runs at a time"; a Sweep whose
// context is over before the call returns at once (as
// TestBadInputStartAndSweepWithDoneContexts holds). Without Start, a first Sweep waits for a GetPod that
// answers only when the test lets it, within its CheckTimeout; a second
// Sweep is called meanwhile under a context that is already done. It may
// not run while the first does, but it must return, not wait for the
// first to end. (Not in a synctest bubble: the second Sweep waits on a
// mutex, which a bubble does not count as blocked, so that its time would
// stand still. The test waits for nothing when the Sweep returns at once;
// the 10s bound only turns a hang into a failure.)
func TestASweepReturnsWithItsContextWhileAnotherSweepRuns(t *testing.T) {
	release := make(chan struct{})
	var entered atomic.Int32
	getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		entered.Add(1)
		select {
		case <-release:
			return podAt(key, key.Name), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	c := newQuiet(t, getter, newDestroyLog(), deletion.Options{CheckTimeout: time.Hour})
	require.NoError(t, c.Track(pu("slow")))
	first := make(chan struct{})
	go func() { defer close(first); c.Sweep(context.Background()) }()
	for entered.Load() == 0 {
		runtime.Gosched() // the first Sweep's check is in GetPod
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	second := make(chan struct{})
	go func() { defer close(second); c.Sweep(done) }()
	select {
	case <-second:
	case <-time.After(10 * time.Second):
		assert.Fail(t, "a Sweep whose context is done did not return while another Sweep ran",
			"it waits for the first Sweep, which waits for its check")
	}
	close(release)
	<-first
	<-second
}

// TestADryRunReportsAPUOnceThoughAListRestoresIt: DryRun: "the PU is
// reported once (EventWouldDestroy ...) and kept; it is reported again
// only if the reason changes. A PU whose pod is gone for good ... is
// dropped from memory once reported ...; an Inventory or journal still
// lists it, and a restart reports it once more." Without a restart: the
// first list of the Inventory fails, so checks begin, and a PU whose pod
// is gone is reported and dropped; the list's retry, a second later,
// lists it (nothing was destroyed, so the policy engine, or the journal,
// still holds it). Within that one run it is reported once.
func TestADryRunReportsAPUOnceThoughAListRestoresIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := pu("x")
		inv := &inventory{pus: []ports.PU{x}, fails: 1}
		rec := &events{}
		c := newQuiet(t, getterOf(nil, ports.ErrPodNotFound), newDestroyLog(), deletion.Options{
			DryRun: true, Inventory: inv, Observer: rec, SweepInterval: time.Second, RetryMinDelay: time.Second})
		require.NoError(t, c.Track(x))
		startEngine(t, c)
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		require.Len(t, rec.kinds(deletion.EventWouldDestroy), 1, "reported and dropped before the list's retry")
		time.Sleep(time.Minute)
		synctest.Wait()

		assert.Len(t, rec.kinds(deletion.EventWouldDestroy), 1, "x is reported %d times in one run", len(rec.kinds(deletion.EventWouldDestroy)))
	})
}

// TestASlowCheckDoesNotHoldBackTheRestOfItsBatch: Workers is "how many
// checks may run at once", and a port that ignores its context "keeps one
// worker until it returns" (README, The engine): the other workers go on.
// Four workers, two PUs whose periodic checks come at the same tick
// (SweepInterval 1s), and nothing else tracked. The first GetPod of the
// batch is slow (20s, within a CheckTimeout of 30s), or hangs past its
// deadline, ignoring its context; the other PU's pod is gone. Its check
// must not wait behind the slow one while three workers are idle: its
// destroy starts within a couple of seconds.
func TestASlowCheckDoesNotHoldBackTheRestOfItsBatch(t *testing.T) {
	for _, hang := range []bool{false, true} {
		t.Run(map[bool]string{false: "slow", true: "hung"}[hang], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				defer close(release)
				var calls atomic.Int32
				getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
					if calls.Add(1) == 1 { // the batch's first check
						if hang {
							<-release // ignores its context
						} else {
							select {
							case <-time.After(20 * time.Second):
							case <-ctx.Done():
							}
						}
						return podAt(key, key.Name), nil
					}
					return nil, ports.ErrPodNotFound
				})
				policy := newDestroyLog()
				c := newQuiet(t, getter, policy, deletion.Options{Workers: 4, SweepInterval: time.Second, CheckTimeout: 30 * time.Second})
				a, b := pu("a"), pu(wheelNeighbour("a")) // the same phase
				require.NoError(t, c.Track(a))
				require.NoError(t, c.Track(b))
				startEngine(t, c)
				time.Sleep(3 * time.Second) // the batch of both comes within the first second
				synctest.Wait()
				assert.Len(t, policy.starts(), 1,
					"the other PU of the batch waited %v in the queue behind a slow check, with three workers idle", time.Since(c.Backlog().OldestQueuedSince))
				assert.NoError(t, c.LivenessCheck(nil))
			})
		})
	}
}
