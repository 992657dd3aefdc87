package deletion_test

// The engine's documented promises for Sweep's own checks, checks stuck in
// ports whoever runs them, and Start's first list of the Inventory (see
// promises_test.go for the destroy rate's).

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
	"github.com/podsweeper/podsweeper/ports"
)

// stuckPort is a PodGetter that answers a live pod of the node for every
// pod but one, stuck: its GetPod ignores its context and returns only once
// release is closed (then an error, which keeps the PU).
type stuckPort struct {
	stuck   types.NamespacedName
	release chan struct{}
	entered atomic.Int32
}

func newStuckPort(name string) *stuckPort {
	return &stuckPort{stuck: types.NamespacedName{Namespace: "ns", Name: name}, release: make(chan struct{})}
}

func (p *stuckPort) GetPod(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	if key == p.stuck {
		p.entered.Add(1)
		<-p.release // ignores its context, on purpose
		return nil, errBoom
	}
	return podAt(key, key.Name), nil
}

// pu is the PU of the pod of that name in namespace ns, its PUID the name.
func pu(name string) ports.PU {
	return ports.PU{PUID: name, Pod: types.NamespacedName{Namespace: "ns", Name: name}}
}

// sweepFor runs c.Sweep under a context that ends after limit, and returns
// how long it took.
func sweepFor(c *deletion.Engine, limit time.Duration) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	began := time.Now()
	c.Sweep(ctx)
	return time.Since(began)
}

// TestASweepWaitsForItsOwnChecksOnly: Sweep "returns when all are done or
// ctx is". A first Sweep (no Start, two workers) is cancelled while the
// check of PU p is inside a port that ignores its context, and p is
// untracked meanwhile; a second Sweep then checks q, whose GetPod blocks.
// When p's old check ends, the second Sweep must go on waiting for its own
// check of q, and return once that check has ended and been observed.
func TestASweepWaitsForItsOwnChecksOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		releaseP, releaseQ := make(chan struct{}), make(chan struct{})
		var qCalls atomic.Int32
		getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			switch {
			case key.Name == "p":
				<-releaseP // ignores its context
			case key.Name == "q" && qCalls.Add(1) == 2:
				<-releaseQ // the second Sweep's check of q
			}
			return podAt(key, key.Name), nil
		})
		rec := &events{}
		c := newQuiet(t, getter, newDestroyLog(), deletion.Options{Workers: 2, Observer: rec})
		require.NoError(t, c.Track(pu("p")))
		require.NoError(t, c.Track(pu("q")))

		ctx, cancel := context.WithCancel(context.Background())
		first := make(chan struct{})
		go func() {
			defer close(first)
			c.Sweep(ctx)
		}()
		synctest.Wait() // p's check is in GetPod, q's is done
		require.True(t, c.Untrack("p"))
		cancel()
		<-first

		second := make(chan struct{})
		go func() {
			defer close(second)
			c.Sweep(context.Background())
		}()
		synctest.Wait() // the second Sweep's check of q is in GetPod
		require.Equal(t, int32(2), qCalls.Load(), "the second Sweep checks q")
		close(releaseP) // p's old check ends
		synctest.Wait()
		early := false
		select {
		case <-second:
			early = true
			assert.Fail(t, "Sweep returned while its own check of q was still in GetPod",
				"the end of the check of p, which an earlier Sweep began and Untrack ended, counted as one of its own")
		default:
		}
		close(releaseQ)
		<-second
		if !early {
			var qChecked int
			for _, ev := range rec.kinds(deletion.EventChecked) {
				if ev.PU.PUID == "q" {
					qChecked++
				}
			}
			assert.Equal(t, 2, qChecked, "each Sweep's check of q was observed by the time it returned")
		}
	})
}

// TestASweepAfterStartReturnedLeavesAStuckCheckBehind: Sweep leaves behind
// a check stuck in a port past its deadline, returning "once every check it
// still waits for is held by a worker so stuck, or every worker is"; after
// Start has returned, Sweep alone checks PUs. Start (one worker,
// CheckTimeout 10s) leaves a check stuck in a port that ignores its
// context when it stops; a Sweep then waits for that PU and another, which
// no check can run for while the stuck one holds the only worker: it must
// return about when the stuck check passes its deadline, not when its own
// context ends an hour later.
func TestASweepAfterStartReturnedLeavesAStuckCheckBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		port := newStuckPort("stuck")
		c := newQuiet(t, port, newDestroyLog(), deletion.Options{Workers: 1, CheckTimeout: 10 * time.Second, SweepInterval: time.Hour})
		require.NoError(t, c.Track(pu("stuck")))
		require.NoError(t, c.Track(pu("other")))
		stop := startEngine(t, c)
		c.TriggerPod(port.stuck)
		synctest.Wait()
		require.Equal(t, int32(1), port.entered.Load(), "the check is stuck in GetPod")
		time.Sleep(time.Second)
		stop() // returns after ShutdownTimeout, leaving the stuck check behind

		took := sweepFor(c, time.Hour)
		assert.LessOrEqual(t, took, 15*time.Second,
			"Sweep waited %v for a check stuck in a port past its deadline of 10s", took)
		close(port.release)
		synctest.Wait()
	})
}

// TestASecondSweepLeavesAStuckCheckBehind: a check stuck in a port past its
// deadline is left behind by every Sweep, not only by the one that began
// it. Without Start (one worker, CheckTimeout 10s), a first Sweep gives up
// on a check stuck in a port that ignores its context; a second Sweep,
// whose checks cannot run while that check holds the only worker, must
// return at once (within a few seconds), not wait as long as the port.
func TestASecondSweepLeavesAStuckCheckBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		port := newStuckPort("stuck")
		c := newQuiet(t, port, newDestroyLog(), deletion.Options{Workers: 1, CheckTimeout: 10 * time.Second})
		require.NoError(t, c.Track(pu("stuck")))
		require.NoError(t, c.Track(pu("other")))
		first := sweepFor(c, time.Hour)
		require.LessOrEqual(t, first, 15*time.Second, "the first Sweep leaves the stuck check behind")
		require.Equal(t, int32(1), port.entered.Load())

		took := sweepFor(c, time.Hour)
		assert.LessOrEqual(t, took, 5*time.Second,
			"the second Sweep waited %v behind a check already stuck past its deadline", took)
		close(port.release)
		synctest.Wait()
	})
}

// TestLivenessFailsWhenStuckChecksHoldEveryWorker: LivenessCheck fails
// "when every worker is stuck in a port past its deadline", and Workers is
// how many checks may run at once, whoever runs them. A Sweep before Start
// (one worker, CheckTimeout 10s) leaves behind a check stuck in a port that
// ignores its context; Start then runs for 30 intervals, and a PU whose pod
// is gone is tracked. Either Start's worker checks (and destroys) it, or no
// check can run and LivenessCheck says so with ErrWorkersStuck: an engine
// that runs no check for 30 intervals must not pass liveness.
func TestLivenessFailsWhenStuckChecksHoldEveryWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		port := newStuckPort("stuck")
		getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			if key.Name == "gone" {
				return nil, ports.ErrPodNotFound
			}
			return port.GetPod(ctx, key)
		})
		policy := newDestroyLog()
		c := newQuiet(t, getter, policy, deletion.Options{Workers: 1, CheckTimeout: 10 * time.Second, SweepInterval: time.Second})
		require.NoError(t, c.Track(pu("stuck")))
		require.LessOrEqual(t, sweepFor(c, time.Hour), 15*time.Second, "the Sweep leaves the stuck check behind")
		stop := startEngine(t, c)
		require.NoError(t, c.Track(pu("gone")))
		time.Sleep(30 * time.Second)
		synctest.Wait()

		err := c.LivenessCheck(nil)
		if len(policy.of("gone")) == 0 && !errors.Is(err, deletion.ErrWorkersStuck) {
			assert.Fail(t, "no check ran for 30 intervals, and liveness did not say so",
				"the PU of a gone pod was not checked while a check stuck past its deadline held the only worker; LivenessCheck: %v", err)
		}
		close(port.release)
		synctest.Wait()
		stop()
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
		c := newQuiet(t, getterOf(nil, ports.ErrPodNotFound), newDestroyLog(), deletion.Options{Inventory: inv})
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

// TestLivenessAllowsTheFirstListItsCheckTimeout: Start's first list "delays
// the first check by as long as it takes (at most CheckTimeout)", and
// LivenessCheck fails only when restarting could help. A PU is tracked
// before Start (a pod informer's add), and the Inventory takes 25s to
// answer, within its CheckTimeout of 30s, at SweepInterval 5s (the PU's
// first check is due 20s before the list answers, over three intervals):
// LivenessCheck passes throughout, and the PU is checked once the list has
// answered.
func TestLivenessAllowsTheFirstListItsCheckTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inv := slowInventory(25 * time.Second)
		rec := &events{}
		c := newQuiet(t, getterOf(livePod(testUID, testNode), nil), newDestroyLog(), deletion.Options{Inventory: inv, Observer: rec})
		require.NoError(t, c.Track(entryWith("")))
		began := time.Now()
		startEngine(t, c)
		var failed error
		var at time.Duration
		for range 60 { // 30s
			time.Sleep(500 * time.Millisecond)
			if err := c.LivenessCheck(nil); err != nil && failed == nil {
				failed, at = err, time.Since(began)
			}
		}
		if failed != nil {
			assert.Fail(t, "LivenessCheck failed while the first list was within its CheckTimeout",
				"at %v, the list taking 25s: %v", at, failed)
		}
		assert.NotEmpty(t, rec.kinds(deletion.EventChecked), "the PU is checked once the list has answered")
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
		policy.fail = func(ev ports.DestroyEvent) error {
			if len(policy.of(ev.PUID)) == 1 {
				<-finish
			}
			mu.Lock()
			destroyed = true
			mu.Unlock()
			return nil
		}
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
		rec := &events{}
		c := newQuiet(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{Inventory: inv, SweepInterval: time.Second, Observer: rec})
		require.NoError(t, c.Track(gone))
		swept := make(chan struct{})
		go func() {
			defer close(swept)
			c.Sweep(context.Background())
		}()
		synctest.Wait()
		require.Len(t, policy.of(gone.PUID), 1, "the Sweep's destroy is under way")
		stop := startEngine(t, c)
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
		assert.Equal(t, 1, len(rec.kinds(deletion.EventTracked)), "tracked once, by Track")
	})
}
