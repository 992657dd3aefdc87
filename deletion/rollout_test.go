package deletion_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
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

// TestDryRunReportsEachDestroyOnceAndDestroysNothing: in a dry run every
// destroying row of the table (1, 3, 4, 10, 11) is decided, confirmed and
// reported once per PU and reason, DestroyPU is never called (nor does any
// PU wait for a destroy, in the Backlog), a PU the
// Confirmer does not confirm is not reported, and a PU whose pod is gone
// for good is dropped from memory once reported while a live pod's stays,
// to be reported again when its reason changes.
func TestDryRunReportsEachDestroyOnceAndDestroysNothing(t *testing.T) {
	w := deletiontest.NewCluster()
	pu := func(name, uid, sandbox string) ports.PU {
		return ports.PU{PUID: uid, Pod: types.NamespacedName{Namespace: "ns", Name: name}, SandboxID: sandbox}
	}
	gone := pu("gone", "u-gone", "sb")                               // row 1
	moved := pu("moved", "u-moved", "sb")                            // row 3
	addPod(w, "moved", "u-moved", "node-b", "sb", corev1.PodRunning) //
	recreated := pu("recreated", "u-old", "sb")                      // row 4
	addPod(w, "recreated", "u-new", testNode, "sb", corev1.PodRunning)
	restarted := pu("restarted", "u-restarted", "sb-old") // row 10
	addPod(w, "restarted", "u-restarted", testNode, "sb-new", corev1.PodRunning)
	done := pu("done", "u-done", "sb") // row 11
	addPod(w, "done", "u-done", testNode, "sb", corev1.PodSucceeded)
	live := pu("live", "u-live", "sb") // row 9: kept
	addPod(w, "live", "u-live", testNode, "sb", corev1.PodRunning)
	cached := pu("cached", "u-cached", "sb") // the cache says gone, the API server disagrees
	addPod(w, "cached", "u-cached", testNode, "sb", corev1.PodRunning)

	getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		if key.Name == "cached" {
			return nil, ports.ErrPodNotFound
		}
		return w.GetPod(ctx, key)
	})
	policy := &deletiontest.Policy{}
	rec := &deletiontest.Events{}
	logs := &logBuffer{}
	c := deletiontest.NewEngine(t, getter, policy, deletion.Options{
		DryRun: true, NodeName: testNode, DestroyTerminated: true, Confirmer: w, SandboxExtractor: w,
		Observer: rec, Logger: logs.logger(),
	})
	for _, p := range []ports.PU{gone, moved, recreated, restarted, done, live, cached} {
		require.NoError(t, c.Track(p))
	}
	for range 3 {
		c.Sweep(context.Background())
	}

	assert.Zero(t, policy.CallCount(), "a dry run calls no DestroyPU")
	assert.True(t, c.Backlog().OldestGoneSince.IsZero(), "nothing waits for a destroy in a dry run")
	reported := map[string]ports.Reason{}
	for _, ev := range rec.Of(deletion.EventWouldDestroy) {
		_, twice := reported[ev.PU.PUID]
		assert.False(t, twice, "%s reported twice", ev.PU.PUID)
		reported[ev.PU.PUID] = ev.Reason
	}
	assert.Equal(t, map[string]ports.Reason{
		"u-gone": ports.ReasonPodGone, "u-moved": ports.ReasonNodeChanged, "u-old": ports.ReasonUIDChanged,
		"u-restarted": ports.ReasonSandboxChanged, "u-done": ports.ReasonPodTerminated,
	}, reported)
	assert.Len(t, logs.lines("dry run: PU would be destroyed"), 5, "one info line per report")
	assert.NotEmpty(t, rec.Of(deletion.EventVetoed), "the Confirmer was asked and disagreed about the cached pod")

	st := map[string]deletion.PUStatus{}
	for _, s := range c.Status() {
		st[s.PUID] = s
	}
	assert.ElementsMatch(t, []string{"u-restarted", "u-done", "u-live", "u-cached"}, keys(st),
		"the PUs of pods gone for good are dropped once reported; live pods' stay")
	assert.Equal(t, ports.ReasonSandboxChanged, st["u-restarted"].WouldDestroy)
	assert.Equal(t, 10, st["u-restarted"].LastVerdict.Row)
	assert.Equal(t, ports.ReasonPodTerminated, st["u-done"].WouldDestroy)
	assert.Empty(t, st["u-live"].WouldDestroy)
	assert.Empty(t, st["u-cached"].WouldDestroy)

	// The restarted pod goes away: its reason changes, it is reported again, and dropped.
	w.DeletePod(restarted.Pod)
	c.Sweep(context.Background())
	c.Sweep(context.Background())
	var again []ports.Reason
	for _, ev := range rec.Of(deletion.EventWouldDestroy) {
		if ev.PU.PUID == "u-restarted" {
			again = append(again, ev.Reason)
		}
	}
	assert.Equal(t, []ports.Reason{ports.ReasonSandboxChanged, ports.ReasonPodGone}, again)
	assert.Equal(t, 3, c.Len(), "done, live and cached remain")
	assert.Zero(t, policy.CallCount())
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestDestroyRateSpreadsDestroysAndLosesNone: 100 PUs found gone at once
// under a rate of 10 destroys a second are destroyed in about 10 s of fake
// time, each exactly once, never faster than the rate allows, with no check
// holding its worker past its deadline and the backlog visible meanwhile.
func TestDestroyRateSpreadsDestroysAndLosesNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := deletiontest.NewCluster()
		var mu sync.Mutex
		var at []time.Duration
		counts := map[string]int{}
		start := time.Now()
		policy := ports.PolicyHandlerFunc(func(_ context.Context, ev ports.DestroyEvent) error {
			mu.Lock()
			defer mu.Unlock()
			at = append(at, time.Since(start))
			counts[ev.PUID]++
			return nil
		})
		rec := &deletiontest.Events{}
		logs := &logBuffer{}
		const n = 100
		c := deletiontest.NewEngine(t, w, policy, deletion.Options{
			DestroyRate: 10, CheckTimeout: time.Second, SweepInterval: time.Hour, Workers: 4, Observer: rec, Logger: logs.logger(),
		})
		for i := range n {
			id := fmt.Sprint(i)
			require.NoError(t, c.Track(ports.PU{PUID: id, Pod: types.NamespacedName{Namespace: "ns", Name: id}}))
		}
		stop := deletiontest.Start(t, c)
		c.TriggerAll() // every pod is gone
		time.Sleep(3 * time.Second)
		synctest.Wait()
		mid := c.Backlog()
		assert.Greater(t, mid.RateLimited, 0, "PUs wait for their turn, visibly")
		assert.Zero(t, mid.Retrying, "waiting for the rate is no failed attempt")
		time.Sleep(20 * time.Second)
		synctest.Wait()
		stop()

		mu.Lock()
		defer mu.Unlock()
		require.Len(t, counts, n, "every PU destroyed")
		for id, k := range counts {
			assert.Equal(t, 1, k, "PU %s destroyed once", id)
		}
		last := slices.Max(at)
		assert.GreaterOrEqual(t, last, 9900*time.Millisecond, "no faster than 10 a second (burst 1)")
		assert.LessOrEqual(t, last, 11*time.Second, "and not much slower")
		slices.Sort(at)
		for i := 10; i < len(at); i++ {
			assert.GreaterOrEqual(t, at[i]-at[i-10], 990*time.Millisecond, "at most 10 destroys start in any second (destroy %d)", i)
		}
		most := 0 // the most destroys that start in any second
		for i := range at {
			j := i
			for j < len(at) && at[j]-at[i] < time.Second {
				j++
			}
			most = max(most, j-i)
		}
		t.Logf("destroy rate: %d destroys at 10/s, burst 1: the last starts at %v of fake time, at most %d start in any second", n, last, most)
		for _, ev := range rec.Of(deletion.EventChecked) {
			assert.LessOrEqual(t, ev.CheckDuration, time.Second, "no check held its worker past its deadline")
		}
		assert.Empty(t, logs.lines("ignored its check's deadline"))
		assert.Empty(t, rec.Of(deletion.EventDestroyFailed))
		assert.Zero(t, c.Backlog().RateLimited)
		assert.Zero(t, c.Len())
	})
}

// TestDestroyRateOptionsAreChecked: a negative rate or burst is refused.
func TestDestroyRateOptionsAreChecked(t *testing.T) {
	for name, o := range map[string]deletion.Options{
		"negative rate":  {DestroyRate: -1},
		"negative burst": {DestroyRate: 1, DestroyBurst: -1},
	} {
		_, err := deletion.New(getterOf(nil, ports.ErrPodNotFound), &deletiontest.Policy{}, o)
		assert.ErrorIs(t, err, deletion.ErrInvalidOptions, name)
	}
}

// TestABacklogFailsReadinessNotLiveness: a policy engine that takes 1 s per
// destroy while 100 pods are deleted puts the engine behind: ReadinessCheck
// fails with ErrBehind and Backlog shows how long the oldest waits, while
// LivenessCheck passes throughout, so that a liveness probe does not restart
// a busy agent in the middle of its work. Both pass once it is done.
func TestABacklogFailsReadinessNotLiveness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy := ports.PolicyHandlerFunc(func(ctx context.Context, _ ports.DestroyEvent) error {
			select {
			case <-time.After(time.Second):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{SweepInterval: time.Second, Workers: 4})
		for i := range 100 {
			id := fmt.Sprint(i)
			require.NoError(t, c.Track(ports.PU{PUID: id, Pod: types.NamespacedName{Namespace: "ns", Name: id}}))
		}
		stop := deletiontest.Start(t, c)
		c.TriggerAll()
		sawBehind := false
		// Half a second off the destroys' whole seconds: a probe at the
		// instant four destroys end and four checks begin would see no PU
		// found gone yet, the queue's wait alone.
		time.Sleep(500 * time.Millisecond)
		for range 25 { // 25 s: 100 destroys of 1 s on 4 workers
			time.Sleep(time.Second)
			assert.NoError(t, c.LivenessCheck(nil), "a backlog is no reason to restart")
			if err := c.ReadinessCheck(nil); err != nil {
				assert.ErrorIs(t, err, deletion.ErrBehind)
				assert.False(t, c.Backlog().OldestGoneSince.IsZero(), "the backlog shows")
				sawBehind = true
			}
		}
		synctest.Wait()
		assert.True(t, sawBehind, "the engine fell behind and said so")
		assert.Zero(t, c.Len(), "every PU destroyed once the backlog drained")
		assert.NoError(t, c.ReadinessCheck(nil))
		assert.NoError(t, c.LivenessCheck(nil))
		stop()
		assert.ErrorIs(t, c.LivenessCheck(nil), deletion.ErrNotRunning, "a stopped engine fails liveness")
	})
}
