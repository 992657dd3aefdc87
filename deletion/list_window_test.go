package deletion_test

// The Inventory's lists: "a list never brings back a PU removed while it
// was under way", however long tracking its answer takes, whether a journal
// or the engine removed it, and whether the list is the first or a retry; a
// list that hangs or misses its deadline keeps neither Start nor the checks
// waiting (it delays the first check by its deadline and a second, and is
// retried), nor a record of removals for long; a PU untracked before Start
// is not listed back by a journal; and a PU a trigger queued, or the
// informer tracked, before Start still takes the sandbox the list gives it.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
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

// slowTrackingList runs the scenario where tracking a list's answer
// outlasts the list's deadline: x is tracked before Start and its pod is
// gone; the first list answers at once with 40 PUs of live pods and then
// x; the Observer takes 100ms an event, with one worker and a CheckTimeout
// of 1s, so that the list's 41 PUs take over 4s to track while checks have
// begun (at 2s, the first list's deadline and a second). remove removes x
// at 3s, before the list's x is tracked, and before x's periodic check
// (SweepInterval 1m).
func slowTrackingList(t *testing.T, remove func(c *deletion.Engine, x ports.PU)) (*destroyLog, *deletion.Engine, ports.PU) {
	t.Helper()
	w := deletiontest.NewCluster()
	x := ports.PU{PUID: "x", Pod: types.NamespacedName{Namespace: "ns", Name: "x"}} // its pod is gone
	listed := make([]ports.PU, 0, 41)
	for i := range 40 {
		name := fmt.Sprintf("live-%d", i)
		listed = append(listed, ports.PU{PUID: name, Pod: addPod(w, name, name, testNode, "", corev1.PodRunning)})
	}
	listed = append(listed, x)
	policy := newDestroyLog()
	slow := deletion.ObserverFunc(func(deletion.Event) { time.Sleep(100 * time.Millisecond) })
	inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) { return listed, nil })
	c := deletiontest.NewEngine(t, w, policy, deletion.Options{Workers: 1, CheckTimeout: time.Second, SweepInterval: time.Minute, Inventory: inv, Observer: slow})
	require.NoError(t, c.Track(x))
	deletiontest.Start(t, c)
	time.Sleep(3*time.Second - 100*time.Millisecond) // Track's event took 100ms
	remove(c, x)
	time.Sleep(3 * time.Minute)
	synctest.Wait()
	return policy, c, x
}

// TestAListNeverBringsBackAPUDestroyedWhileItsAnswerIsTracked: x is
// destroyed by a trigger while the list's answer, which holds x, is still
// being tracked; the list does not track x again, so it is destroyed once.
func TestAListNeverBringsBackAPUDestroyedWhileItsAnswerIsTracked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy, c, x := slowTrackingList(t, func(c *deletion.Engine, x ports.PU) {
			c.TriggerPod(x.Pod)
			synctest.Wait()
		})
		assert.Len(t, policy.of(x.PUID), 1, "x is destroyed once: the list does not bring it back")
		assert.Equal(t, 40, c.Len(), "the 40 PUs of live pods are tracked; x is not")
	})
}

// TestAListNeverBringsBackAPUUntrackedWhileItsAnswerIsTracked: the same,
// with Untrack(x) in place of the trigger: no DestroyPU of x ever starts.
func TestAListNeverBringsBackAPUUntrackedWhileItsAnswerIsTracked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy, c, x := slowTrackingList(t, func(c *deletion.Engine, x ports.PU) {
			require.True(t, c.Untrack(x.PUID))
		})
		assert.Empty(t, policy.of(x.PUID), "no DestroyPU of x starts after Untrack returned")
		assert.Equal(t, 40, c.Len())
	})
}

// TestAPUTriggeredBeforeStartTakesItsListedSandbox: Options.Inventory
// promises that a PU tracked without a sandbox and not yet checked takes
// the sandbox listed for it, so that a sandbox replaced while the agent was
// down is destroyed as changed (row 10), not recorded (row 7). That holds
// for a PU a trigger queued before Start too.
func TestAPUTriggeredBeforeStartTakesItsListedSandbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := deletiontest.NewCluster()
		key := addPod(w, "web", "web", testNode, "s2", corev1.PodRunning) // replaced s1 while the agent was down
		policy := newDestroyLog()
		var got []ports.DestroyEvent
		rec := ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
			got = append(got, ev)
			return policy.DestroyPU(ctx, ev)
		})
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) {
			return []ports.PU{{PUID: "web", Pod: key, SandboxID: "s1"}}, nil
		})
		c := deletiontest.NewEngine(t, w, rec, deletion.Options{SandboxExtractor: w, Inventory: inv, NodeName: testNode})
		require.NoError(t, c.Track(ports.PU{PUID: "web", Pod: key})) // an informer's add, without a sandbox
		c.TriggerPod(key)
		deletiontest.Start(t, c)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		require.Len(t, got, 1, "the PU of the replaced sandbox is destroyed")
		assert.Equal(t, ports.ReasonSandboxChanged, got[0].Reason)
		assert.Equal(t, "s1", got[0].SandboxID)
	})
}

// TestStatusTellsTheVerdictTheCheckCarriedOutWhenAListsSandboxCameAfter: PUStatus.LastVerdict is the verdict of the
// last check carried out, as its EventChecked tells it. A PU tracked without a sandbox has its first check record the
// runtime's (row 7, s2) while the retried first list answers with the sandbox it had before the restart (s1), which the
// PU then holds: Status tells row 7 recording s2, the PU s1, and the next check destroys s1's PU as changed.
func TestStatusTellsTheVerdictTheCheckCarriedOutWhenAListsSandboxCameAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := deletiontest.NewCluster()
		key := addPod(w, "web", "web", testNode, "s2", corev1.PodRunning) // replaced s1 while the agent was down
		inv := deletiontest.NewInventory(ports.PU{PUID: "web", Pod: key, SandboxID: "s1"})
		inv.FailNextLists(1, errors.New("the journal is not open yet"))
		var evs deletiontest.Events
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventAdopted && ev.Verdict.Row == 7 {
				time.Sleep(2 * time.Second) // the commit of s2, during which the retried list answers
			}
			evs.Observe(ev)
		})
		policy := newDestroyLog()
		c := deletiontest.NewEngine(t, w, policy, deletion.Options{SandboxExtractor: w, Inventory: inv, NodeName: testNode,
			Observer: obs, SweepInterval: time.Hour})
		require.NoError(t, c.Track(ports.PU{PUID: "web", Pod: key})) // an informer's add, without a sandbox
		deletiontest.Start(t, c)
		time.Sleep(10 * time.Millisecond) // the first list failed: the checks begin
		c.TriggerPod(key)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		checked := evs.Of(deletion.EventChecked)
		require.Len(t, checked, 1)
		require.Equal(t, "s2", checked[0].Verdict.SandboxID, "the check recorded the runtime's sandbox")
		st := c.Status()
		require.Len(t, st, 1)
		assert.Equal(t, checked[0].Verdict, st[0].LastVerdict, "Status tells the verdict the check carried out")
		assert.Equal(t, "s1", st[0].SandboxID, "the PU holds the listed sandbox")
		c.TriggerPod(key)
		time.Sleep(time.Second)
		synctest.Wait()
		require.Len(t, policy.CallsOf("web"), 1, "the listed sandbox's PU is destroyed as changed")
		destroyed := evs.Of(deletion.EventDestroyed)
		require.Len(t, destroyed, 1)
		assert.Equal(t, 10, destroyed[0].Verdict.Row)
		assert.Equal(t, "s1", destroyed[0].PU.SandboxID)
	})
}

// TestAWaitingPUTakesTheSandboxARetriedListGives: Options.Inventory: "A PU tracked without a sandbox takes the sandbox
// listed for it while no check has recorded one ... even when the list answers after checks began." The PU of a gone
// pod waits for the retry of its failed destroy, or for its turn under DestroyRate, when the retried first list
// answers with its sandbox: its next DestroyPU carries that sandbox.
func TestAWaitingPUTakesTheSandboxARetriedListGives(t *testing.T) {
	for _, waits := range []string{"for a retry", "for its turn"} {
		t.Run(waits, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				inv := deletiontest.NewInventory(ports.PU{PUID: "a", Pod: pu("a").Pod, SandboxID: "sb-a"},
					ports.PU{PUID: "b", Pod: pu("b").Pod, SandboxID: "sb-b"})
				inv.FailNextLists(1, errors.New("the journal is not open yet"))
				policy := newDestroyLog()
				opts := deletion.Options{Inventory: inv, Workers: 1, RetryMinDelay: time.Second, RetryMaxDelay: 4 * time.Second}
				if waits == "for a retry" {
					policy.FailNext(2, errors.New("the policy engine restarts"))
				} else {
					opts.DestroyRate, opts.DestroyBurst = 0.2, 1
				}
				c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, opts)
				require.NoError(t, c.Track(pu("a"))) // as an informer tracks them after a restart: no sandbox
				require.NoError(t, c.Track(pu("b")))
				deletiontest.Start(t, c) // its first list fails at once: the checks begin; it is retried at 1s
				time.Sleep(300 * time.Millisecond)
				c.TriggerAll() // the first attempts: their retries at 1.3s (and 3.3s), or a turn at 5.3s
				time.Sleep(500 * time.Millisecond)
				synctest.Wait()
				for _, st := range c.Status() {
					require.Contains(t, []string{"waiting for a retry", "waiting for its turn"}, st.State)
				}
				time.Sleep(time.Second) // the list answered at 1s, while they wait
				synctest.Wait()
				require.True(t, c.InventoryListed())
				time.Sleep(10 * time.Second)
				synctest.Wait()
				after := 0 // the DestroyPU calls begun once the list answered, at 1s
				for _, call := range policy.Calls() {
					if call.At.Sub(policy.t0) >= time.Second {
						after++
						assert.Equal(t, "sb-"+call.Event.PUID, call.Event.SandboxID, "%s's destroy after the list answered", call.Event.PUID)
					}
				}
				require.NotZero(t, after, "a PU waited %s past the list's answer", waits)
			})
		})
	}
}

// TestAListNeverBringsBackAPUUntrackedBeforeItIsTracked: the agent tears
// down a PU and Untracks it while Start's first list, which holds it, is
// under way: Untrack returns false (it is not tracked yet), and the list
// does not bring it back, so no DestroyPU of it starts.
func TestAListNeverBringsBackAPUUntrackedBeforeItIsTracked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := ports.PU{PUID: "x", Pod: types.NamespacedName{Namespace: "ns", Name: "x"}} // its pod is gone
		inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
			time.Sleep(500 * time.Millisecond)
			return []ports.PU{x}, nil
		})
		policy := newDestroyLog()
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{Inventory: inv, SweepInterval: time.Second})
		deletiontest.Start(t, c)
		time.Sleep(100 * time.Millisecond)
		require.False(t, c.Untrack(x.PUID), "not tracked yet")
		time.Sleep(10 * time.Second)
		synctest.Wait()
		assert.Empty(t, policy.of(x.PUID), "no DestroyPU of x starts after Untrack returned")
		assert.Zero(t, c.Len())
	})
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
		j := newHoldingJournal(1)
		j.hold["x"] = j.read // the forget commits once the retried list has read the journal
		policy := newDestroyLog()
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			Inventory: j, Observer: j, SweepInterval: time.Hour, RetryMinDelay: time.Second, CheckTimeout: 10 * time.Second})
		require.NoError(t, c.Track(pu("x")))
		deletiontest.Start(t, c)
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
		j := newHoldingJournal(1)
		j.hold["x"] = j.read
		policy := newDestroyLog()
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			Inventory: j, Observer: j, SweepInterval: time.Hour, RetryMinDelay: time.Second, CheckTimeout: 10 * time.Second})
		require.NoError(t, c.Track(pu("x")))
		deletiontest.Start(t, c)
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
		w := deletiontest.NewCluster()
		key := addPod(w, "x", "x", testNode, "s2", corev1.PodRunning)
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
		c := deletiontest.NewEngine(t, w, policy, deletion.Options{
			Inventory: inv, SandboxExtractor: w, NodeName: testNode, SweepInterval: time.Second, CheckTimeout: 10 * time.Second})
		deletiontest.Start(t, c)
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

// TestACheckTimeoutOfAYearListsTheInventoryFirst: Options.Inventory "is
// listed by Start before its first check", the first list delaying the
// first check "by as long as it takes, at most its deadline (CheckTimeout
// ...)". With CheckTimeout a year (MaxDuration) and a list that takes 10s,
// no check begins before the list has answered.
func TestACheckTimeoutOfAYearListsTheInventoryFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inv := slowInventory(10 * time.Second)
		rec := &deletiontest.Events{}
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), newDestroyLog(), deletion.Options{
			Inventory: inv, Observer: rec, CheckTimeout: deletion.MaxDuration, SweepInterval: time.Second})
		require.NoError(t, c.Track(pu("a")))
		deletiontest.Start(t, c)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Empty(t, rec.Of(deletion.EventChecked), "a check ran while the first list was under way")
		assert.NoError(t, c.LivenessCheck(nil), "during the first list")
	})
}

// TestTheTombstonesOfAHungListAreBounded: Start "returns within about
// ShutdownTimeout even when a port hangs, the Inventory included", and the
// checks begin without a list that ignores its deadline; the engine's
// memory follows the PUs it tracks. With every list hung for good (each
// left behind past its deadline and retried), 20,000 PUs (long PUIDs, 20 MB
// of them) are tracked and destroyed one after the other, a thousand a
// second; once they are gone, the engine holds what the list under way
// must not bring back (the removals of its deadline and a second) and
// nothing more of them.
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
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			Inventory: inv, CheckTimeout: time.Second, SweepInterval: time.Hour, Workers: 8})
		stop := deletiontest.Start(t, c)
		time.Sleep(3 * time.Second) // the checks begin without the list
		synctest.Wait()
		before := liveHeap()
		const n, size = 20_000, 1000
		for i := range n {
			id := strings.Repeat("x", size-8) + strings.Repeat("0", 8)
			id = id[:size-8] + num8(i)
			require.NoError(t, c.Track(ports.PU{PUID: id, Pod: types.NamespacedName{Namespace: "ns", Name: "p"}}))
			if i%1000 == 999 {
				c.TriggerAll()
				synctest.Wait()
				time.Sleep(time.Second)
			}
		}
		c.TriggerAll()
		synctest.Wait()
		require.Equal(t, int64(n), destroyed.Load())
		require.Zero(t, c.Len())
		grew := int64(liveHeap()) - int64(before)
		assert.Less(t, grew, int64(n*size/4),
			"the engine holds %d KB more after %d PUs of %d-byte PUIDs were tracked and destroyed", grew/1024, n, size)
		runtime.KeepAlive(c)
		close(release)
		stop()
	})
}

// TestChecksBeginWhenTheInventoryIgnoresItsDeadline: Start lists the
// Inventory before its first check, under a deadline of CheckTimeout. An
// Inventory that ignores its context hangs; once its deadline has passed
// (and a second more), the checks begin without it, and a PU whose pod is
// gone is destroyed.
func TestChecksBeginWhenTheInventoryIgnoresItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) {
			<-release // ignores its context, on purpose
			return nil, nil
		})
		policy := newDestroyLog()
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			Inventory: inv, CheckTimeout: 5 * time.Second, SweepInterval: time.Second})
		require.NoError(t, c.Track(entryWith("")))
		stop := deletiontest.Start(t, c)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Empty(t, policy.starts(), "no check within the list's deadline")
		time.Sleep(3 * time.Second)
		synctest.Wait()
		assert.Len(t, policy.starts(), 1, "the checks began once the list's deadline had passed")
		close(release)
		stop()
	})
}

// TestAPUDestroyedWhileARetriedListIsUnderWayIsNotRestored: a PU destroyed
// by a check cannot come back from a list that answered after it, for every
// list, not only Start's first. The first list fails, so checks begin and
// the list is retried; while the retry is under way, a check destroys a PU
// the retry's answer (read before that destroy) still lists. It is
// destroyed once and not tracked again.
func TestAPUDestroyedWhileARetriedListIsUnderWayIsNotRestored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gone := pu("gone")
		var mu sync.Mutex
		lists, destroyed := 0, false
		answer := make(chan struct{})
		inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
			mu.Lock()
			lists++
			first, list := lists == 1, []ports.PU{}
			if !destroyed {
				list = append(list, gone)
			}
			mu.Unlock()
			if first {
				return nil, errors.New("inventory unavailable")
			}
			select {
			case <-answer:
				return list, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
		policy := newDestroyLog()
		policy.SetAnswer(func(context.Context, ports.DestroyEvent) error {
			mu.Lock()
			destroyed = true
			mu.Unlock()
			return nil
		})
		rec := &deletiontest.Events{}
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			Inventory: inv, SweepInterval: time.Hour, RetryMinDelay: time.Second, CheckTimeout: time.Minute, Observer: rec})
		deletiontest.Start(t, c)
		time.Sleep(1500 * time.Millisecond) // the first list failed; the retry waits for its answer
		synctest.Wait()
		mu.Lock()
		require.Equal(t, 2, lists, "the list is retried")
		mu.Unlock()
		require.NoError(t, c.Track(gone)) // a pod informer's add
		c.TriggerPod(gone.Pod)
		synctest.Wait()
		require.Len(t, policy.of("gone"), 1, "a check destroyed it while the retry was under way")
		close(answer)
		synctest.Wait()
		c.TriggerAll()
		synctest.Wait()

		assert.Len(t, policy.of("gone"), 1, "destroyed once")
		assert.Zero(t, c.Len(), "not tracked again from a list made before its destroy")
		assert.Len(t, rec.Of(deletion.EventTracked), 1, "tracked once, by the informer's add")
	})
}

// TestStartReturnsWhenTheInventoryHangs: once ctx is done, "Start returns
// within about ShutdownTimeout even when a port hangs", the Inventory
// included. Start's first list of an Inventory that ignores its context
// hangs; Start's context ends a second later: Start must return within
// about ShutdownTimeout (2s) of it.
func TestStartReturnsWhenTheInventoryHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) {
			<-release // ignores its context, on purpose
			return nil, nil
		})
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), newDestroyLog(), deletion.Options{Inventory: inv})
		require.NoError(t, c.Track(entryWith("")))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		time.Sleep(time.Second)
		cancel()
		cancelled := time.Now()
		returned := false
		select {
		case err := <-done:
			returned = true
			assert.NoError(t, err)
		case <-time.After(time.Minute):
		}
		took := time.Since(cancelled)
		close(release)
		if !returned {
			<-done
		}
		if !returned {
			assert.Fail(t, "Start did not return while its Inventory hung", "%v after its context ended", took)
			return
		}
		assert.LessOrEqual(t, took, deletion.DefaultShutdownTimeout+2*time.Second, "Start returned %v after its context ended", took)
	})
}

// TestAPUDestroyedDuringTheFirstListIsNotRestored: listing the Inventory
// first "means that a PU destroyed by a check cannot come back from a list
// that answered after it". A Sweep without Start finds a PU gone and calls
// DestroyPU; Start begins meanwhile and lists the Inventory, which, read
// while that destroy is under way, lists the PU. The destroy ends before
// the list answers. The PU is destroyed exactly once and not tracked again.
func TestAPUDestroyedDuringTheFirstListIsNotRestored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gone := pu("gone")
		var mu sync.Mutex
		destroyed := false // the policy engine no longer holds the PU
		finish := make(chan struct{})
		policy := newDestroyLog()
		policy.SetAnswer(func(_ context.Context, ev ports.DestroyEvent) error {
			if len(policy.of(ev.PUID)) == 1 {
				<-finish
			}
			mu.Lock()
			destroyed = true
			mu.Unlock()
			return nil
		})
		answer := make(chan struct{})
		inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
			mu.Lock()
			var list []ports.PU // what still exists when the list is read
			if !destroyed {
				list = []ports.PU{gone}
			}
			mu.Unlock()
			select {
			case <-answer:
				return list, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
		rec := &deletiontest.Events{}
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{Inventory: inv, SweepInterval: time.Second, Observer: rec})
		require.NoError(t, c.Track(gone))
		swept := make(chan struct{})
		go func() {
			defer close(swept)
			c.Sweep(context.Background())
		}()
		synctest.Wait()
		require.Len(t, policy.of(gone.PUID), 1, "the Sweep's destroy is under way")
		stop := deletiontest.Start(t, c)
		synctest.Wait() // Start lists the Inventory
		close(finish)   // the destroy ends
		<-swept
		synctest.Wait()
		close(answer) // the list answers
		time.Sleep(5 * time.Second)
		synctest.Wait()
		stop()

		assert.Len(t, policy.of(gone.PUID), 1, "the PU is destroyed once; DestroyPU started at %v", policy.of(gone.PUID))
		assert.Zero(t, c.Len(), "the PU is not tracked again")
		assert.Equal(t, 1, len(rec.Of(deletion.EventTracked)), "tracked once, by Track")
	})
}

// An Inventory that observes the engine may still hold a PU the engine
// destroyed before any list answered (a journal's record has the sandbox
// the engine, which tracked the PU without one, never learnt): the list
// that answers at last does not bring it back to be destroyed again.
func TestAListDoesNotBringBackAPUDestroyedBeforeAnyListAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		web := cluster.CreatePod(types.NamespacedName{Namespace: "shop", Name: "web-0"}, "node-a", "sb-1")
		stale := deletiontest.NewInventory(web) // never forgets: the worst an Inventory may do
		stale.FailLists(errors.New("disk busy"))
		inv := ports.InventoryFunc(stale.ListPUs)
		policy := &deletiontest.Policy{}
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{NodeName: "node-a", SandboxExtractor: cluster, Inventory: inv})
		require.NoError(t, engine.Track(ports.PU{PUID: web.PUID, Pod: web.Pod})) // no sandbox, as an informer tracks
		cluster.DeletePod(web.Pod)
		deletiontest.Start(t, engine)
		deletiontest.Advance(time.Minute)
		require.Equal(t, 1, policy.Count(web.PUID), "destroyed while the lists fail")

		stale.FailLists(nil)
		deletiontest.Advance(time.Hour) // the list answers, with web-0
		assert.Equal(t, 1, policy.Count(web.PUID), "destroyed once")
		assert.Zero(t, engine.Len())
	})
}

// Options.Inventory: "A list never brings back a PU removed from when it began until its answer is tracked". The
// informer tracked A; the first list is slow; A is untracked meanwhile; the list answers A.
func TestAuditHoldsListAnsweringAfterUntrack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		a := cluster.CreatePod(key("a"), "node-a", "")
		inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
			time.Sleep(2 * time.Second)
			return []ports.PU{a}, nil
		})
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Inventory: inv, CheckTimeout: 5 * time.Second})
		_ = engine.Track(a)
		deletiontest.Start(t, engine)
		deletiontest.Advance(time.Second)
		engine.Untrack(a.PUID)
		cluster.DeletePod(a.Pod)
		deletiontest.Advance(time.Minute)
		if engine.Len() != 0 || policy.CallCount() != 0 {
			t.Errorf("tracked %d, destroys %d after the list brought back an untracked PU", engine.Len(), policy.CallCount())
		}
	})
}

// Untrack during a list that holds the PU: the list does not bring it back.
func TestAuditHoldsUntrackDuringListNotBroughtBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		pu := cluster.CreatePod(nsKey("web"), "node-a", "")
		release := make(chan struct{})
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) { <-release; return []ports.PU{pu}, nil })
		policy := &deletiontest.Policy{}
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Inventory: inv})
		if err := engine.Track(pu); err != nil {
			t.Fatal(err)
		}
		deletiontest.Start(t, engine)
		synctest.Wait()
		engine.Untrack(pu.PUID)
		close(release)
		cluster.DeletePod(pu.Pod)
		deletiontest.Advance(time.Minute)
		if engine.Len() != 0 || policy.CallCount() != 0 {
			t.Errorf("%d tracked, %d destroys", engine.Len(), policy.CallCount())
		}
	})
}

// Promise (go doc Engine.Untrack): "Once it returns, no DestroyPU of that PU starts, though the Inventory's list under
// way holds it ... the Inventory must no longer list it (a journal that observes EventUntracked does not)";
// docs/sdk/engine.md:31-34 says the same.
//
// After a restart, the journal (deletiontest.Inventory, as Inventory and Observer, as bolt.Journal is) holds P from the
// last run. Before Start, the agent tears P down itself and calls Untrack(P). P is not tracked yet, so Untrack tells
// the Observer nothing and the journal keeps P; Start's list brings P back and the engine destroys it: a DestroyPU of P
// starts after Untrack(P) returned. (That a journal is not told of such an Untrack, for a later run, is documented.)
func TestAuditUntrackBeforeStartKeepsJournalFromListing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		p := cluster.CreatePod(nsKey("web"), "node-a", "sb1")
		journal := deletiontest.NewInventory(p) // left by the last run
		cluster.DeletePod(p.Pod)                // the pod went while the agent was down

		policy := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Inventory: journal, Observer: journal})
		e.Untrack(p.PUID) // the agent tore P down itself
		deletiontest.Start(t, e)
		deletiontest.Advance(time.Minute)
		if n := policy.Count(p.PUID); n != 0 {
			t.Errorf("DestroyPU of %s called %d times after Untrack(%s) returned (the journal still listed it: %v)", p.PUID, n, p.PUID, journal.PUs())
		}
	})
}

// Options.Inventory: "nor one destroyed ... while no list had answered yet". A Sweep before Start destroys A; a stale
// journal still lists it.
func TestAuditHoldsStaleListAfterDestroyBeforeStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		a := cluster.CreatePod(key("a"), "node-a", "")
		inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) { return []ports.PU{a}, nil })
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Inventory: inv})
		_ = engine.Track(a)
		cluster.DeletePod(a.Pod)
		engine.Sweep(t.Context())
		deletiontest.Start(t, engine)
		deletiontest.Advance(time.Minute)
		if policy.CallCount() != 1 {
			t.Errorf("%d DestroyPU calls, want 1", policy.CallCount())
		}
	})
}

// Options.Inventory: "a failing or late list is retried with backoff until it answers, while checks go on."
// docs/sdk/ports.md:16: "The engine calls every port under a deadline ... and treats a port that hangs ... as a
// failure". The first ListPUs hangs past every deadline (it ignores its context); a second call would answer.
func TestAuditHungInventoryListIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		pu := cluster.CreatePod(key("web-0"), "node-a", "")
		cluster.DeletePod(pu.Pod) // gone while the agent was down
		release := make(chan struct{})
		var calls atomic.Int32
		inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
			if calls.Add(1) == 1 {
				<-release // hangs, ignoring ctx
			}
			return []ports.PU{pu}, nil
		})
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Inventory: inv, CheckTimeout: 5 * time.Second})
		stop := deletiontest.Start(t, engine)
		deletiontest.Advance(30 * time.Minute)

		n, destroyed := calls.Load(), len(policy.Destroyed())
		stop()
		close(release)
		synctest.Wait()
		if n < 2 || destroyed != 1 {
			t.Errorf("after 30 min with the first list hung past its %v deadline: %d ListPUs calls, %d destroys; "+
				"want the list retried (>=2 calls) and the PU of the gone pod destroyed", 5*time.Second, n, destroyed)
		}
	})
}

// Options.Inventory: "The first list delays the first check by at most its deadline (CheckTimeout, at least a second)
// and a second". LivenessCheck: a check due three intervals ago is not queued "(and since Start began, and its first
// list's deadline)" fails it: a slow first list does not. Start "returns within about ShutdownTimeout even when a port
// hangs, the Inventory included".
func TestAuditHoldsHungFirstListDelaysChecksByItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		release := make(chan struct{})
		inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
			<-release
			return nil, nil
		})
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Inventory: inv, CheckTimeout: 20 * time.Second, SweepInterval: time.Second})
		pu := cluster.CreatePod(key("a"), "node-a", "")
		_ = engine.Track(pu)
		cluster.DeletePod(pu.Pod)
		engine.TriggerPod(pu.Pod)
		t0 := time.Now()
		stop := deletiontest.Start(t, engine)
		for range 25 {
			deletiontest.Advance(time.Second)
			if err := engine.LivenessCheck(nil); err != nil {
				t.Errorf("at %v: LivenessCheck %v during the first list's deadline", time.Since(t0), err)
			}
		}
		calls := policy.Calls()
		if len(calls) != 1 || calls[0].At.Sub(t0) > 21*time.Second {
			t.Errorf("destroys %v; want one by 21s", calls)
		}
		began := time.Now()
		stop()
		if took := time.Since(began); took > 3*time.Second {
			t.Errorf("Start took %v to return with a hung Inventory", took)
		}
		close(release)
		synctest.Wait()
	})
}

// An Inventory that hangs past every deadline: Start checks after the list's deadline and a second, LivenessCheck
// holds meanwhile, and Start returns within about ShutdownTimeout.
func TestAuditHoldsHungInventory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		hang := make(chan struct{})
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) { <-hang; return nil, nil })
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Inventory: inv, SweepInterval: time.Second, CheckTimeout: 5 * time.Second})
		pu := cluster.CreatePod(nsKey("web"), "node-a", "")
		if err := engine.Track(pu); err != nil {
			t.Fatal(err)
		}
		cluster.DeletePod(pu.Pod)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- engine.Start(ctx) }()
		for range 5 {
			time.Sleep(time.Second)
			if err := engine.LivenessCheck(nil); err != nil {
				t.Errorf("LivenessCheck during the first list: %v", err)
			}
		}
		if policy.CallCount() != 0 {
			t.Errorf("a check before the first list's deadline")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if policy.CallCount() != 1 {
			t.Errorf("%d destroys 7s in, want 1 (list deadline 5s and a second)", policy.CallCount())
		}
		cancel()
		began := time.Now()
		<-done
		if took := time.Since(began); took > deletion.DefaultShutdownTimeout+time.Second {
			t.Errorf("Start took %v to return", took)
		}
		close(hang)
	})
}

// docs/sdk/restarts.md:50-56: after a restart, an entry tracked without a sandbox and not yet checked takes the sandbox
// the Inventory recorded, "A sandbox replaced while the agent was down is thus destroyed as changed (row 10, with the
// old sandbox)".
func TestAuditHoldsRestartDestroysSandboxReplacedWhileDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		inv := deletiontest.NewInventory()
		pol := &deletiontest.Policy{}
		opts := deletion.Options{SandboxExtractor: cluster, Inventory: inv, Observer: inv}
		e1 := deletiontest.NewEngine(t, cluster, pol, opts)
		pu := cluster.CreatePod(nsKey("a"), "", "sb-1")
		stop := deletiontest.Start(t, e1)
		_ = e1.Track(ports.PU{PUID: pu.PUID, Pod: pu.Pod}) // as adapters/k8s tracks: without a sandbox
		deletiontest.Advance(10 * time.Second)
		stop()
		_ = cluster.SetSandbox(pu.Pod, "sb-2") // while the agent is down
		e2 := deletiontest.NewEngine(t, cluster, pol, opts)
		_ = e2.Track(ports.PU{PUID: pu.PUID, Pod: pu.Pod}) // the informer's add comes first
		deletiontest.Start(t, e2)
		deletiontest.Advance(10 * time.Second)
		want := []ports.DestroyEvent{{PUID: pu.PUID, Pod: pu.Pod, SandboxID: "sb-1", Reason: ports.ReasonSandboxChanged}}
		if got := pol.Destroyed(); fmt.Sprint(got) != fmt.Sprint(want) || e2.Len() != 0 || len(inv.PUs()) != 0 {
			t.Errorf("destroyed %v, want %v; engine holds %d, journal %v", got, want, e2.Len(), inv.PUs())
		}
	})
}

// deletion.Options.Inventory: "The first list delays the first check by at most its deadline (CheckTimeout, at
// least a second) and a second"; deletion.Engine.Start: "Start returns within about ShutdownTimeout even when a port
// hangs, the Inventory included."
func TestHungFirstListDelaysChecksByItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		block := make(chan struct{})
		defer close(block)
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) { <-block; return nil, nil })
		cl := deletiontest.NewCluster()
		pu := cl.CreatePod(nsKey(fmt.Sprintf("pod-%d", 1)), "node-a", "")
		policy := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cl, policy, deletion.Options{NodeName: "node-a", Inventory: inv, CheckTimeout: 2 * time.Second})
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		cl.DeletePod(nsKey(fmt.Sprintf("pod-%d", 1)))
		e.TriggerPod(nsKey(fmt.Sprintf("pod-%d", 1)))
		stop := deletiontest.Start(t, e)
		deletiontest.Advance(2900 * time.Millisecond)
		if n := policy.CallCount(); n != 0 {
			t.Fatalf("destroyed %d before the first list's deadline", n)
		}
		if err := e.LivenessCheck(nil); err != nil {
			t.Errorf("LivenessCheck during the first list: %v", err)
		}
		deletiontest.Advance(200 * time.Millisecond)
		if n := policy.CallCount(); n != 1 {
			t.Errorf("%d destroys 3.1s after Start with a hung first list of deadline 2s, want 1", n)
		}
		begin := time.Now()
		stop()
		if d := time.Since(begin); d > deletion.DefaultShutdownTimeout+100*time.Millisecond {
			t.Errorf("Start returned %v after its context ended, with the Inventory hung", d)
		}
	})
}

// observer.go:98 (go doc EventListFailed) "EventListFailed: a list of the Inventory failed, or answered after its
// deadline"; options.go:100-101 "The first list delays the first check by at most its deadline (CheckTimeout, at
// least a second) and a second; a failing or late list is retried with backoff". A list that ignores its context and
// answers half a second past its deadline of 1s is taken as an answer (EventRestored), its PUs tracked.
func TestListAnsweredAfterDeadlineIsFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := deletiontest.NewCluster()
		stale := ports.PU{PUID: "old-1", Pod: nsKey("old")}
		calls := 0
		var mu sync.Mutex
		inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
			mu.Lock()
			calls++
			n := calls
			mu.Unlock()
			if n == 1 {
				time.Sleep(time.Second + 500*time.Millisecond) // deadline: CheckTimeout 1s
			}
			return []ports.PU{stale}, nil
		})
		evs := &deletiontest.Events{}
		e := deletiontest.NewEngine(t, c, &deletiontest.Policy{}, deletion.Options{NodeName: testNode, Observer: evs, Inventory: inv,
			CheckTimeout: time.Second})
		deletiontest.Start(t, e)
		deletiontest.Advance(1200 * time.Millisecond)
		deletiontest.Advance(400 * time.Millisecond) // the list has answered, 1.5s after it began
		got := kindsLine(evs.Of(deletion.EventListFailed, deletion.EventRestored))
		if got != "ListFailed() " {
			t.Fatalf("a list answering 0.5s after its deadline of 1s: events %q, want one ListFailed first", got)
		}
	})
}

// TestEventRestoredCountsEachPUOnce: EventRestored's Count "is the number of
// PUs restored: new, or given their sandbox"; a PU the Inventory lists
// twice, without its sandbox and then with it, is one PU restored, however
// many Workers track the list.
func TestEventRestoredCountsEachPUOnce(t *testing.T) {
	for _, workers := range []int{1, 4} {
		for range 10 {
			synctest.Test(t, func(t *testing.T) {
				w := deletiontest.NewCluster()
				ev := &deletiontest.Events{}
				a := ports.PU{PUID: "a", Pod: nsKey("a")}
				withSandbox := a
				withSandbox.SandboxID = "sb-1"
				inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) { return []ports.PU{a, withSandbox}, nil })
				e := deletiontest.NewEngine(t, w, &deletiontest.Policy{}, deletion.Options{NodeName: "node-a", Inventory: inv, Observer: ev,
					Workers: workers, SandboxExtractor: w})
				deletiontest.Start(t, e)
				deletiontest.Advance(0)
				restored := ev.Of(deletion.EventRestored)
				if assert.Len(t, restored, 1) {
					assert.Equal(t, 1, restored[0].Count, "Workers %d", workers)
				}
			})
		}
	}
}

// Options.Inventory and docs/sdk/restarts.md: "A sandbox replaced while the agent was down is thus destroyed as
// changed (row 10, with the old sandbox), not adopted as if it had always been there." The agent, started again,
// tracks a PU without its sandbox; the first list fails, and the PU's first check, before the list is retried,
// records the sandbox the runtime runs now. The retried list then gives the sandbox the PU had before: the PU takes
// it in place of the one its check recorded, and its next check destroys it as changed, with the old sandbox.
//
// So too with the Inventory a journal that observes the engine (restarts.md: "make your Inventory an Observer too"):
// the sandbox the check recorded before the list is in is told IfNone, which the journal does not write over the one
// from before, or the retried list would give the new one.
func TestAListRetriedAfterAFirstCheckStillGivesTheSandboxFromBefore(t *testing.T) {
	for _, journal := range []bool{false, true} {
		t.Run(fmt.Sprintf("the Inventory observes: %v", journal), func(t *testing.T) { testAListRetriedAfterAFirstCheck(t, journal) })
	}
}

func testAListRetriedAfterAFirstCheck(t *testing.T, journal bool) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		a := cl.CreatePod(swKey("a"), "", "s-new") // its sandbox replaced while the agent was down
		inv := deletiontest.NewInventory(ports.PU{PUID: a.PUID, Pod: a.Pod, SandboxID: "s-old"})
		inv.FailNextLists(1, errors.New("the journal is not open yet"))
		events := &deletiontest.Events{}
		var obs deletion.Observer = events
		if journal {
			obs = deletion.Observers(inv, events)
		}
		var pol deletiontest.Policy
		c := deletiontest.NewEngine(t, cl, &pol, deletion.Options{Inventory: inv, SandboxExtractor: cl, Observer: obs,
			RetryMinDelay: 2 * time.Second, SweepInterval: time.Hour})
		require.NoError(t, c.Track(ports.PU{PUID: a.PUID, Pod: a.Pod})) // as the informer tracks it: no sandbox
		deletiontest.Start(t, c)                                        // its first list fails: the checks begin
		c.TriggerPod(a.Pod)
		synctest.Wait()
		st := c.Status()
		require.Len(t, st, 1)
		require.Equal(t, 7, st[0].LastVerdict.Row, "its first check recorded the runtime's sandbox")
		require.False(t, c.InventoryListed())

		deletiontest.Advance(3 * time.Second) // the list retried, and answered
		require.True(t, c.InventoryListed())
		c.TriggerPod(a.Pod)
		synctest.Wait()
		destroyed := pol.Destroyed()
		require.Len(t, destroyed, 1, "the PU of the sandbox from before is destroyed: %+v", c.Status())
		assert.Equal(t, "s-old", destroyed[0].SandboxID)
		assert.Equal(t, ports.ReasonSandboxChanged, destroyed[0].Reason)
		var adopted []string
		for _, ev := range events.Of(deletion.EventAdopted) {
			adopted = append(adopted, fmt.Sprintf("%s IfNone=%v", ev.PU.SandboxID, ev.IfNone))
		}
		assert.Equal(t, []string{"s-new IfNone=true", "s-old IfNone=false"}, adopted,
			"the sandbox the check recorded before the list was in is told IfNone (a journal keeps the one from before), then the list's")
	})
}

// restarts.md: "A sandbox replaced while the agent was down is thus destroyed as changed (row 10, with the old
// sandbox), not adopted as if it had always been there", with the Inventory a journal that observes the engine. A run
// tracks the PU bare and checks it before its Inventory's list is in: by a Sweep before Start, or while every list of
// the run fails (the journal's reads broken, its writes not) until it stops. The sandbox that check recorded never
// takes the place of one the journal holds from before (EventAdopted's IfNone), and fills it where the journal holds
// none: the PU of a sandbox replaced while the agent is down is destroyed as changed.
func TestASandboxRecordedBeforeTheListIsInNeverOverwritesTheJournals(t *testing.T) {
	type world struct {
		cl  *deletiontest.Cluster
		inv *deletiontest.Inventory
		pol *deletiontest.Policy
		a   ports.PU
	}
	newWorld := func() *world {
		cl := deletiontest.NewCluster()
		return &world{cl: cl, inv: deletiontest.NewInventory(), pol: &deletiontest.Policy{}, a: cl.CreatePod(swKey("a"), "", "s-1")}
	}
	run := func(t *testing.T, w *world) *deletion.Engine { // a run of the agent: the informer tracks the PU bare
		e := deletiontest.NewEngine(t, w.cl, w.pol, deletion.Options{Inventory: w.inv, Observer: w.inv,
			SandboxExtractor: w.cl, SweepInterval: time.Hour, RetryMinDelay: time.Second, RetryMaxDelay: time.Second})
		require.NoError(t, e.Track(ports.PU{PUID: w.a.PUID, Pod: w.a.Pod}))
		return e
	}
	destroysTheOld := func(t *testing.T, w *world, e *deletion.Engine) {
		e.TriggerPod(w.a.Pod)
		synctest.Wait()
		destroyed := w.pol.Destroyed()
		require.Len(t, destroyed, 1, "the PU of the old sandbox is destroyed: %+v", e.Status())
		assert.Equal(t, "s-1", destroyed[0].SandboxID)
		assert.Equal(t, ports.ReasonSandboxChanged, destroyed[0].Reason)
	}
	t.Run("a Sweep before Start", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := newWorld()
			e := run(t, w)
			stop := deletiontest.Start(t, e)
			e.TriggerPod(w.a.Pod)
			synctest.Wait()
			stop()
			require.Equal(t, []ports.PU{{PUID: w.a.PUID, Pod: w.a.Pod, SandboxID: "s-1"}}, w.inv.PUs(), "the first run's journal")
			require.NoError(t, w.cl.SetSandbox(w.a.Pod, "s-2")) // replaced while the agent is down
			e = run(t, w)
			e.Sweep(t.Context())
			require.Equal(t, []ports.PU{{PUID: w.a.PUID, Pod: w.a.Pod, SandboxID: "s-1"}}, w.inv.PUs(),
				"the Sweep's check wrote the runtime's sandbox over the journal's")
			deletiontest.Start(t, e)
			synctest.Wait()
			destroysTheOld(t, w, e)
		})
	})
	t.Run("a run whose lists all fail", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := newWorld()
			w.inv.FailLists(errors.New("the journal's reads fail"))
			e := run(t, w)
			stop := deletiontest.Start(t, e)
			e.TriggerPod(w.a.Pod)
			deletiontest.Advance(10 * time.Second)
			stop()
			require.Equal(t, []ports.PU{{PUID: w.a.PUID, Pod: w.a.Pod, SandboxID: "s-1"}}, w.inv.PUs(),
				"the journal holds the sandbox the run's checks recorded")
			require.NoError(t, w.cl.SetSandbox(w.a.Pod, "s-2")) // replaced while the agent is down
			w.inv.FailLists(nil)
			e = run(t, w)
			deletiontest.Start(t, e)
			synctest.Wait()
			destroysTheOld(t, w, e)
		})
	})
}
