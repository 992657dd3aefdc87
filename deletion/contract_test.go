package deletion_test

// Tests of the engine's contract: the Confirmer, retries that hold,
// Untrack, Status, HealthCheck, the Inventory, and the engine's seams.
// Time-driven behaviour runs in testing/synctest bubbles: time.Sleep moves
// the fake clock once every goroutine of the bubble is blocked.

import (
	"bytes"
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
	"unsafe"
	"weak"

	"github.com/golang/mock/gomock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/mocks"
	"github.com/podsweeper/podsweeper/ports"
)

// podAt is a live pod of the node at key, with that UID.
func podAt(key types.NamespacedName, uid string) *corev1.Pod {
	p := livePod(uid, testNode)
	p.Namespace, p.Name = key.Namespace, key.Name
	return p
}

func getterOf(pod *corev1.Pod, err error) ports.PodGetter {
	return ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return pod, err })
}

// TestConfirmerVetoesACachedNotFound: a cache that says NotFound while the
// API server has the pod destroys nothing; the veto is told to the
// Observer and shown in Status; the PU is checked again later.
func TestConfirmerVetoesACachedNotFound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMockPorts(t)
		confirmer := mocks.NewMockPodGetter(gomock.NewController(t))
		rec := &deletiontest.Events{}
		c := m.newEngine(t, false, deletion.Options{Confirmer: confirmer, Observer: rec, SweepInterval: 10 * time.Second, NodeName: testNode})
		m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(nil, ports.ErrPodNotFound).Times(2)
		confirmer.EXPECT().GetPod(gomock.Any(), testKey).Return(livePod(testUID, testNode), nil).Times(2)
		require.NoError(t, c.Track(entryWith("")))
		deletiontest.Start(t, c)

		time.Sleep(20 * time.Second) // two periodic checks, both vetoed
		synctest.Wait()

		assert.Equal(t, 1, c.Len())
		vetoes := rec.Of(deletion.EventVetoed)
		require.Len(t, vetoes, 2)
		assert.Equal(t, ports.ReasonPodGone, vetoes[0].Reason, "the reason the PodGetter's answer gave")
		assert.Equal(t, 5, vetoes[0].Verdict.Row, "the Confirmer's answer: same pod, no extractor")
		st := c.Status()
		require.Len(t, st, 1)
		assert.True(t, st[0].Vetoed)
		assert.Equal(t, deletion.Keep, st[0].LastVerdict.Action)
	})
}

// TestConfirmerDecidesTheReason: when the Confirmer agrees the PU must go,
// the destroy carries the reason of its answer; when the PodGetter keeps
// the PU, the Confirmer is never read.
func TestConfirmerDecidesTheReason(t *testing.T) {
	m := newMockPorts(t)
	confirmer := mocks.NewMockPodGetter(gomock.NewController(t))
	c := m.newEngine(t, false, deletion.Options{Confirmer: confirmer, NodeName: testNode})
	gomock.InOrder(
		m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(livePod(testUID, testNode), nil), // kept: no Confirmer
		m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(livePod("uid-2", testNode), nil),
	)
	confirmer.EXPECT().GetPod(gomock.Any(), testKey).Return(nil, ports.ErrPodNotFound)
	m.policy.EXPECT().DestroyPU(gomock.Any(), destroyEvent("", ports.ReasonPodGone)).Return(nil)
	require.NoError(t, c.Track(entryWith("")))
	c.Sweep(context.Background())
	require.Equal(t, 1, c.Len())
	c.Sweep(context.Background())
	assert.Zero(t, c.Len())
}

// TestConfirmerFailureKeeps: a Confirmer that fails keeps the PU, and the
// failure reaches the Observer with the veto.
func TestConfirmerFailureKeeps(t *testing.T) {
	rec := &deletiontest.Events{}
	c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), &deletiontest.Policy{}, deletion.Options{
		Confirmer: getterOf(nil, errBoom), Observer: rec,
	})
	require.NoError(t, c.Track(entryWith("")))
	c.Sweep(context.Background())
	require.Equal(t, 1, c.Len(), "a Confirmer that fails keeps the PU")
	vetoes := rec.Of(deletion.EventVetoed)
	require.Len(t, vetoes, 1)
	assert.ErrorIs(t, vetoes[0].Err, errBoom)
	assert.Equal(t, 2, vetoes[0].Verdict.Row)
	assert.ErrorIs(t, c.Status()[0].LastErr, errBoom)
}

// TestConfirmerSeesASandboxChange: the PodGetter says gone, the Confirmer
// sees the pod alive in a new sandbox: the PU goes for that reason, and the
// Confirmer's pod is requeued. A sandbox change decided on the PodGetter's
// answer (row 10) is not confirmed.
func TestConfirmerSeesASandboxChange(t *testing.T) {
	m := newMockPorts(t)
	confirmer := mocks.NewMockPodGetter(gomock.NewController(t))
	c := m.newEngine(t, true, deletion.Options{Confirmer: confirmer})
	live := livePod(testUID, testNode)
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(nil, ports.ErrPodNotFound)
	confirmer.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
	m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb2", nil)
	m.policy.EXPECT().DestroyPU(gomock.Any(), destroyEvent("sb1", ports.ReasonSandboxChanged)).Return(nil)
	m.requeuer.EXPECT().Requeue(gomock.Any(), live).Return(nil)
	require.NoError(t, c.Track(entryWith("sb1")))
	c.Sweep(context.Background())
	assert.Zero(t, c.Len())

	// Row 10 straight from the PodGetter: the Confirmer is not asked (the
	// strict mock fails the test if it is).
	require.NoError(t, c.Track(entryWith("sb1")))
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
	m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb3", nil)
	m.policy.EXPECT().DestroyPU(gomock.Any(), destroyEvent("sb1", ports.ReasonSandboxChanged)).Return(nil)
	m.requeuer.EXPECT().Requeue(gomock.Any(), live).Return(nil)
	c.Sweep(context.Background())
	assert.Zero(t, c.Len())
}

// TestDestroyTerminated: a finished pod's PU goes with DestroyTerminated,
// and stays without it.
func TestDestroyTerminated(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprint(on), func(t *testing.T) {
			rec := &deletiontest.Policy{}
			c := deletiontest.NewEngine(t, getterOf(finishedPod(corev1.PodSucceeded), nil), rec, deletion.Options{DestroyTerminated: on})
			require.NoError(t, c.Track(entryWith("")))
			c.Sweep(context.Background())
			if !on {
				assert.Equal(t, 1, c.Len())
				assert.Empty(t, rec.Destroyed())
				return
			}
			assert.Zero(t, c.Len())
			assert.Equal(t, []ports.DestroyEvent{destroyEvent("", ports.ReasonPodTerminated)}, rec.Destroyed())
		})
	}
}

// TestRetriesHoldTheirBackoff: a failed destroy is not tried again before
// its backoff delay, neither by the periodic checks (every 100ms here) nor
// by triggers; it is tried when the delay has passed.
func TestRetriesHoldTheirBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &deletiontest.Policy{}
		rec.Fail(errBoom)
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), rec, deletion.Options{
			SweepInterval: 100 * time.Millisecond, RetryMinDelay: time.Hour, RetryMaxDelay: time.Hour,
		})
		require.NoError(t, c.Track(entryWith("")))
		deletiontest.Start(t, c)
		c.TriggerPod(testKey)
		synctest.Wait()
		require.Equal(t, 1, rec.CallCount(), "the trigger's check")

		for range 600 { // ten minutes of periodic checks and triggers
			time.Sleep(time.Second)
			c.TriggerPod(testKey)
			c.TriggerAll()
		}
		synctest.Wait()
		assert.Equal(t, 1, rec.CallCount(), "no attempt before the backoff delay")
		require.Len(t, c.Status(), 1)
		st := c.Status()[0]
		assert.Equal(t, 1, st.Attempts)
		assert.Equal(t, "waiting for a retry", st.State)
		assert.False(t, st.NextAttempt.IsZero())

		rec.Fail(nil)
		time.Sleep(time.Until(st.NextAttempt) + time.Second)
		synctest.Wait()
		assert.Equal(t, 2, rec.CallCount(), "tried again once the delay passed")
		assert.Zero(t, c.Len())
	})
}

// TestRetryDelaysDouble: under Start the retries of a failing destroy
// follow RetryMinDelay doubling up to RetryMaxDelay (on the wheel's ticks
// of at most a second).
func TestRetryDelaysDouble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var at []time.Duration
		start := time.Now()
		policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error {
			mu.Lock()
			defer mu.Unlock()
			at = append(at, time.Since(start))
			return errBoom
		})
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{
			SweepInterval: time.Hour, RetryMinDelay: 2 * time.Second, RetryMaxDelay: 8 * time.Second,
		})
		require.NoError(t, c.Track(entryWith("")))
		deletiontest.Start(t, c)
		c.TriggerPod(testKey)
		time.Sleep(40 * time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		require.GreaterOrEqual(t, len(at), 5)
		for i, want := range []time.Duration{2, 4, 8, 8} {
			gap := at[i+1] - at[i]
			assert.GreaterOrEqual(t, gap, want*time.Second, "retry %d", i+1)
			assert.Less(t, gap, want*time.Second+time.Second, "retry %d: on the next tick", i+1)
		}
	})
}

// TestATransientFailureNeverGivesUp: with the default MaxDestroyAttempts, a
// policy engine that fails for an hour loses no PU, however short the retry
// delays.
func TestATransientFailureNeverGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &deletiontest.Policy{}
		rec.Fail(errBoom)
		evs := &deletiontest.Events{}
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), rec, deletion.Options{
			RetryMinDelay: time.Millisecond, RetryMaxDelay: 10 * time.Millisecond, Observer: evs,
		})
		for i := range 50 {
			require.NoError(t, c.Track(ports.PU{PUID: fmt.Sprint(i), Pod: types.NamespacedName{Namespace: "ns", Name: fmt.Sprint(i)}}))
		}
		deletiontest.Start(t, c)
		time.Sleep(time.Minute) // a retry every 10ms: 6,000 each
		synctest.Wait()
		assert.Equal(t, 50, c.Len(), "nothing given up")
		assert.Empty(t, evs.Of(deletion.EventAbandoned))
		assert.Greater(t, rec.CallCount(), 50*1000, "retried all along")

		rec.Fail(nil)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Zero(t, c.Len())
		assert.Len(t, rec.Destroyed(), 50)
	})
}

// TestUntrack: an untracked PU is never checked nor destroyed afterwards,
// whatever brings a check, while the PU that shares its wheel slot is still
// checked once per interval; Untrack reports whether it was tracked; a
// later Track of the same PUID is a new entry.
func TestUntrack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		other := ports.PU{PUID: wheelNeighbour(testUID), Pod: types.NamespacedName{Namespace: "default", Name: "web-1"}}
		gets := clusterOf(map[types.NamespacedName]string{other.Pod: other.PUID})
		rec := &deletiontest.Policy{}
		rec.Fail(errBoom) // first a failing destroy, waiting for its retry
		evs := &deletiontest.Events{}
		c := deletiontest.NewEngine(t, gets, rec, deletion.Options{SweepInterval: time.Second, Observer: evs})
		require.NoError(t, c.Track(entryWith("sb1")))
		require.NoError(t, c.Track(other)) // after it in their wheel slot
		deletiontest.Start(t, c)
		c.TriggerPod(testKey)
		synctest.Wait()
		require.Equal(t, 1, rec.CallCount())

		assert.True(t, c.Untrack(testUID))
		assert.False(t, c.Untrack(testUID), "no longer tracked")
		assert.False(t, c.Untrack("never-tracked"))
		checked := gets.Reads(testKey)
		rec.Fail(nil)
		c.TriggerPod(testKey)
		c.TriggerAll()
		c.Sweep(context.Background())
		synctest.Wait()
		before := gets.Reads(other.Pod)
		time.Sleep(5 * time.Minute) // past every retry and periodic check
		synctest.Wait()
		assert.Equal(t, 1, rec.CallCount(), "no DestroyPU after Untrack")
		assert.Equal(t, checked, gets.Reads(testKey), "no check of the untracked PU")
		assert.InDelta(t, before+300, gets.Reads(other.Pod), 1, "the other PU of the wheel slot is still checked once a second")
		assert.Equal(t, []ports.PU{other}, deletiontest.PUs(c))
		untracked := evs.Of(deletion.EventUntracked)
		require.Len(t, untracked, 1)
		assert.Equal(t, entryWith("sb1"), untracked[0].PU)

		require.NoError(t, c.Track(entryWith("sb2")))
		st := c.Status()
		require.Len(t, st, 2)
		require.Equal(t, testUID, st[1].PUID)
		assert.Zero(t, st[1].Attempts, "a new entry")
		c.TriggerPod(testKey)
		synctest.Wait()
		assert.Equal(t, []ports.DestroyEvent{destroyEvent("sb2", ports.ReasonPodGone)}, rec.Destroyed())
		assert.Equal(t, []ports.PU{other}, deletiontest.PUs(c))
	})
}

// TestUntrackKeepsNothingOfThePU: once Untrack has returned, the engine
// holds nothing of the PU (a node agent that tears its PUs down itself must
// not grow with them), while the PU that shares its wheel slot is still
// tracked and checked.
func TestUntrackKeepsNothingOfThePU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const puid = "untracked-0000000000000000000000000000000000000000000000000000000000000000"
		other := ports.PU{PUID: wheelNeighbour(puid), Pod: types.NamespacedName{Namespace: "default", Name: "web-1"}}
		gets := clusterOf(map[types.NamespacedName]string{testKey: puid, other.Pod: other.PUID})
		c := deletiontest.NewEngine(t, gets, &deletiontest.Policy{}, deletion.Options{SweepInterval: time.Second})
		deletiontest.Start(t, c)

		// The untracked PU's PUID is a string of its own, which only the
		// engine can hold once Untrack has returned.
		untracked := func() weak.Pointer[byte] {
			id := strings.Clone(puid)
			require.NoError(t, c.Track(ports.PU{PUID: id, Pod: testKey}))
			require.NoError(t, c.Track(other)) // after it in their wheel slot
			time.Sleep(2 * time.Second)        // both checked, twice
			synctest.Wait()
			require.GreaterOrEqual(t, gets.Reads(testKey), 2, "checked before it is untracked")
			require.True(t, c.Untrack(id))
			return weak.Make(unsafe.StringData(id))
		}()
		checked := gets.Reads(testKey)
		before := gets.Reads(other.Pod)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		runtime.GC()
		assert.Nil(t, untracked.Value(), "the engine still holds the untracked PU")
		assert.Equal(t, checked, gets.Reads(testKey), "no check of the untracked PU")
		assert.InDelta(t, before+10, gets.Reads(other.Pod), 1, "the other PU of the wheel slot is still checked once a second")
		assert.Equal(t, []ports.PU{other}, deletiontest.PUs(c))
	})
}

// TestUntrackDuringDestroy: a DestroyPU already inside the port when
// Untrack is called may finish; its failure is not retried, and the PU is
// never checked again, while the PU that shares its wheel slot still is.
func TestUntrackDuringDestroy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		other := ports.PU{PUID: wheelNeighbour(testUID), Pod: types.NamespacedName{Namespace: "default", Name: "web-1"}}
		gets := clusterOf(map[types.NamespacedName]string{other.Pod: other.PUID})
		entered, release := make(chan struct{}), make(chan struct{})
		var calls atomic.Int32
		policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error {
			calls.Add(1)
			close(entered)
			<-release
			return errBoom
		})
		c := deletiontest.NewEngine(t, gets, policy, deletion.Options{SweepInterval: time.Second, RetryMinDelay: time.Second})
		require.NoError(t, c.Track(entryWith("")))
		require.NoError(t, c.Track(other)) // after it in their wheel slot
		deletiontest.Start(t, c)
		c.TriggerPod(testKey)
		<-entered
		assert.True(t, c.Untrack(testUID))
		require.Equal(t, []ports.PU{other}, deletiontest.PUs(c))
		close(release)
		synctest.Wait()
		before := gets.Reads(other.Pod)
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, int32(1), calls.Load(), "the failed destroy is not retried")
		assert.Equal(t, 1, gets.Reads(testKey), "no check of the untracked PU")
		assert.InDelta(t, before+60, gets.Reads(other.Pod), 1, "the other PU of the wheel slot is still checked once a second")
		assert.Equal(t, []ports.PU{other}, deletiontest.PUs(c))
	})
}

// TestStatus: what Status says of entries never checked, kept, and waiting
// for a retry.
func TestStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		live := livePod("b", testNode)
		live.Name = "b"
		getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			if key.Name == "a" {
				return nil, ports.ErrPodNotFound
			}
			return live, nil
		})
		rec := &deletiontest.Policy{}
		rec.Fail(errBoom)
		c := deletiontest.NewEngine(t, getter, rec, deletion.Options{RetryMinDelay: 10 * time.Second, RetryMaxDelay: time.Minute})
		require.NoError(t, c.Track(ports.PU{PUID: "c", Pod: types.NamespacedName{Namespace: "default", Name: "c"}}))
		time.Sleep(time.Second)
		require.NoError(t, c.Track(ports.PU{PUID: "b", Pod: types.NamespacedName{Namespace: "default", Name: "b"}}))
		require.NoError(t, c.Track(ports.PU{PUID: "a", Pod: types.NamespacedName{Namespace: "default", Name: "a"}}))
		deletiontest.Start(t, c)
		c.TriggerPod(types.NamespacedName{Namespace: "default", Name: "a"})
		c.TriggerPod(types.NamespacedName{Namespace: "default", Name: "b"})
		synctest.Wait()

		st := c.Status()
		require.Len(t, st, 3)
		assert.Equal(t, []string{"a", "b", "c"}, []string{st[0].PUID, st[1].PUID, st[2].PUID}, "sorted by PUID")

		a := st[0]
		assert.Equal(t, "waiting for a retry", a.State)
		assert.Equal(t, 1, a.Attempts)
		assert.ErrorIs(t, a.LastErr, errBoom)
		assert.Equal(t, 1, a.LastVerdict.Row)
		assert.Equal(t, ports.ReasonPodGone, a.LastVerdict.Reason)
		assert.True(t, a.NextAttempt.Sub(t0) >= 11*time.Second && a.NextAttempt.Sub(t0) <= 12*time.Second, "next attempt %v", a.NextAttempt.Sub(t0))
		assert.Equal(t, t0.Add(time.Second), a.TrackedAt)

		b := st[1]
		assert.Equal(t, "idle", b.State)
		assert.Equal(t, 5, b.LastVerdict.Row)
		assert.Equal(t, "same pod, sandbox not checked", b.LastVerdict.Why())
		assert.Equal(t, t0.Add(time.Second), b.LastChecked)
		assert.Zero(t, b.Attempts)
		assert.NoError(t, b.LastErr)
		assert.True(t, b.NextAttempt.IsZero())

		cc := st[2]
		assert.Equal(t, t0, cc.TrackedAt)
		assert.True(t, cc.LastChecked.IsZero(), "never checked")
		assert.Zero(t, cc.LastVerdict)
	})
}

// TestHealthCheck: it fails before Start, after Start returns, when every
// worker is stuck in a port, and when checks fall three intervals behind.
func TestHealthCheck(t *testing.T) {
	t.Run("lifecycle", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := deletiontest.NewEngine(t, getterOf(livePod(testUID, testNode), nil), &deletiontest.Policy{}, deletion.Options{})
			require.NoError(t, c.Track(entryWith("")))
			assert.ErrorIs(t, c.ReadinessCheck(nil), deletion.ErrNotRunning)
			stop := deletiontest.Start(t, c)
			synctest.Wait()
			assert.NoError(t, c.ReadinessCheck(nil))
			time.Sleep(time.Hour) // idle, checks on time
			assert.NoError(t, c.ReadinessCheck(nil))
			stop()
			assert.ErrorIs(t, c.ReadinessCheck(nil), deletion.ErrNotRunning)
		})
	})
	t.Run("every worker stuck", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
				<-release // ignores its context
				return nil, errBoom
			})
			c := deletiontest.NewEngine(t, getter, &deletiontest.Policy{}, deletion.Options{Workers: 2, CheckTimeout: 10 * time.Second, ShutdownTimeout: time.Second})
			for _, id := range []string{"a", "b"} {
				require.NoError(t, c.Track(ports.PU{PUID: id, Pod: types.NamespacedName{Namespace: "ns", Name: id}}))
			}
			stop := deletiontest.Start(t, c)
			c.TriggerAll()
			synctest.Wait()
			assert.NoError(t, c.ReadinessCheck(nil), "within their deadline")
			time.Sleep(12 * time.Second)
			assert.ErrorIs(t, c.ReadinessCheck(nil), deletion.ErrWorkersStuck)
			close(release)
			synctest.Wait()
			assert.NoError(t, c.ReadinessCheck(nil), "the ports returned")
			stop()
		})
	})
	t.Run("one worker stuck is not every worker", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
				if key.Name == "hung" {
					<-release
				}
				return livePod(key.Name, testNode), nil
			})
			c := deletiontest.NewEngine(t, getter, &deletiontest.Policy{}, deletion.Options{Workers: 2, CheckTimeout: 10 * time.Second})
			require.NoError(t, c.Track(ports.PU{PUID: "hung", Pod: types.NamespacedName{Namespace: "ns", Name: "hung"}}))
			stop := deletiontest.Start(t, c)
			c.TriggerAll()
			time.Sleep(time.Minute)
			assert.NoError(t, c.ReadinessCheck(nil))
			close(release)
			stop()
		})
	})
	t.Run("checks fall behind", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
				time.Sleep(time.Second) // a slow API server: one worker checks one pod a second
				return livePod(key.Name, testNode), nil
			})
			c := deletiontest.NewEngine(t, getter, &deletiontest.Policy{}, deletion.Options{Workers: 1, SweepInterval: 10 * time.Second})
			for i := range 60 { // 6 checks a second to do
				id := fmt.Sprint(i)
				require.NoError(t, c.Track(ports.PU{PUID: id, Pod: types.NamespacedName{Namespace: "ns", Name: id}}))
			}
			stop := deletiontest.Start(t, c)
			time.Sleep(10 * time.Second)
			assert.NoError(t, c.ReadinessCheck(nil), "a little behind")
			time.Sleep(2 * time.Minute)
			assert.ErrorIs(t, c.ReadinessCheck(nil), deletion.ErrBehind)
			stop()
		})
	})
}

// TestRequeueWaitingForItsDeadlineIsNoHungPort: a Requeuer that blocks
// until its own deadline (a channel nobody reads) holds no worker: the ten
// sandbox changes are destroyed at once, while their pods wait for the
// Requeuer one at a time, off the workers; and it is not taken for a port
// ignoring its context: nothing is logged as such.
func TestRequeueWaitingForItsDeadlineIsNoHungPort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cc := &concurrency{perPUID: map[string]int{}}
		getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			cc.enter("get")
			defer cc.leave("get")
			time.Sleep(10 * time.Millisecond)
			return podAt(key, key.Name), nil
		})
		extractor := ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) { return "sb-new", nil })
		requeuer := ports.RequeuerFunc(func(ctx context.Context, _ *corev1.Pod) error {
			cc.enter("requeue")
			defer cc.leave("requeue")
			<-ctx.Done() // nobody reads
			return ctx.Err()
		})
		logs := &logBuffer{}
		c := deletiontest.NewEngine(t, getter, &deletiontest.Policy{}, deletion.Options{
			Workers: 2, CheckTimeout: time.Second, SandboxExtractor: extractor, Requeuer: requeuer, Logger: logs.logger(),
		})
		for i := range 10 {
			id := fmt.Sprint(i)
			require.NoError(t, c.Track(ports.PU{PUID: id, Pod: types.NamespacedName{Namespace: "ns", Name: id}, SandboxID: "sb-old"}))
		}
		stop := deletiontest.Start(t, c)
		c.TriggerAll()
		time.Sleep(500 * time.Millisecond) // ten gets of 10 ms on two workers; a worker held by each requeue takes 5 s
		synctest.Wait()
		assert.Zero(t, c.Len(), "every sandbox change destroyed, whatever the Requeuer")
		time.Sleep(time.Minute)
		synctest.Wait()
		stop()
		cc.mu.Lock()
		defer cc.mu.Unlock()
		assert.LessOrEqual(t, cc.max, 3, "port calls at once: the workers', and the Requeuer's lane")
		assert.NotContains(t, cc.overlap, "requeue", "one Requeue call at a time")
		assert.Empty(t, logs.lines("ignored"), "a Requeuer honouring its own deadline ignores nothing")
		assert.Empty(t, logs.lines("stuck"))
	})
}

// TestASweepWaitsForItsOwnRequeuesOnly: docs/sdk/engine.md, "a Sweep waits for the calls of the pods it requeued".
// Start's checks requeue ten pods to a Requeuer that takes 2s a call (20s in all); a Sweep of a live pod, which
// requeues nothing, returns at once; a Sweep whose check requeues a pod waits for that pod's call (behind those
// queued before it), never for the pods Start's checks queue after.
func TestASweepWaitsForItsOwnRequeuesOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		var mu sync.Mutex
		var handed []string
		requeuer := ports.RequeuerFunc(func(_ context.Context, pod *corev1.Pod) error {
			time.Sleep(2 * time.Second)
			mu.Lock()
			defer mu.Unlock()
			handed = append(handed, pod.Name)
			return nil
		})
		c := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{NodeName: "node-a",
			SandboxExtractor: cl, Requeuer: requeuer, CheckTimeout: 30 * time.Second, SweepInterval: time.Hour})
		for i := range 10 {
			require.NoError(t, c.Track(cl.CreatePod(nsKey(fmt.Sprint("start-", i)), "node-a", "s1")))
		}
		require.NoError(t, c.Track(cl.CreatePod(nsKey("live"), "node-a", "s1")))
		deletiontest.Start(t, c)
		for i := range 10 {
			require.NoError(t, cl.SetSandbox(nsKey(fmt.Sprint("start-", i)), "s2"))
			c.TriggerPod(nsKey(fmt.Sprint("start-", i)))
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		began := time.Now()
		c.Sweep(context.Background())
		assert.Less(t, time.Since(began), time.Second, "a Sweep that requeued nothing waits for no one's requeue")

		require.NoError(t, c.Track(cl.CreatePod(nsKey("mine"), "node-a", "s1")))
		require.NoError(t, cl.SetSandbox(nsKey("mine"), "s2"))
		began = time.Now()
		c.Sweep(context.Background())
		mu.Lock()
		assert.Equal(t, "mine", handed[len(handed)-1], "the Sweep returns once its own pod is handed over")
		mu.Unlock()
		assert.Less(t, time.Since(began), 30*time.Second+2*time.Second)
	})
}

// TestSweepLeavesAStuckCheckPastItsDeadline: Sweep does not wait a whole
// CheckTimeout of its own for a PU whose check is stuck in a port: it
// stops waiting once that check is past its deadline by the grace every
// stuck check is given, and not before.
func TestSweepLeavesAStuckCheckPastItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		entered := make(chan struct{}, 1)
		getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			if key == testKey {
				entered <- struct{}{}
				<-release // ignores its context
			}
			return livePod(key.Name, testNode), nil
		})
		c := deletiontest.NewEngine(t, getter, &deletiontest.Policy{}, deletion.Options{CheckTimeout: 10 * time.Second, SweepInterval: time.Hour})
		require.NoError(t, c.Track(entryWith("")))
		require.NoError(t, c.Track(ports.PU{PUID: "other", Pod: types.NamespacedName{Namespace: "ns", Name: "other"}}))
		stop := deletiontest.Start(t, c)
		c.TriggerPod(testKey)
		<-entered
		time.Sleep(9 * time.Second)
		began := time.Now()
		c.Sweep(context.Background())
		took := time.Since(began)
		// The check's deadline is 1s away; it counts as stuck 1s later, and
		// Sweep looks once a second.
		assert.LessOrEqual(t, took, 3*time.Second, "waited for the stuck check's deadline and grace at most")
		assert.GreaterOrEqual(t, took, 2*time.Second, "and for them at least")
		close(release)
		stop()
	})
}

// TestSweepReturnsWhenItsOwnCheckIsStuck: Sweep returns once its
// goroutines that have not finished are all stuck in ports past their
// deadline.
func TestSweepReturnsWhenItsOwnCheckIsStuck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var gets atomic.Int32
		getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			gets.Add(1)
			if key == testKey {
				<-release // ignores its context
			}
			return nil, ports.ErrPodNotFound
		})
		rec := &deletiontest.Policy{}
		c := deletiontest.NewEngine(t, getter, rec, deletion.Options{CheckTimeout: 10 * time.Second, Workers: 2})
		require.NoError(t, c.Track(entryWith("")))
		for i := range 5 {
			id := fmt.Sprint(i)
			require.NoError(t, c.Track(ports.PU{PUID: id, Pod: types.NamespacedName{Namespace: "ns", Name: id}}))
		}
		began := time.Now()
		c.Sweep(context.Background())
		assert.Less(t, time.Since(began), time.Minute)
		assert.Len(t, rec.Destroyed(), 5, "the other goroutine checked the rest")
		close(release)
		synctest.Wait()
		assert.Equal(t, 1, c.Len(), "an answer after the deadline destroys nothing")
		assert.Equal(t, int32(6), gets.Load())
	})
}

// TestTriggerDuringACheckChecksAgain: a trigger that comes while its entry
// is being checked gets a check of its own once that one ends.
func TestTriggerDuringACheckChecksAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		entered, release := make(chan struct{}, 2), make(chan struct{})
		var gets atomic.Int32
		getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			if gets.Add(1) == 1 {
				entered <- struct{}{}
				<-release
			}
			return livePod(testUID, testNode), nil
		})
		c := deletiontest.NewEngine(t, getter, &deletiontest.Policy{}, deletion.Options{SweepInterval: time.Hour})
		require.NoError(t, c.Track(entryWith("")))
		stop := deletiontest.Start(t, c)
		c.TriggerPod(testKey)
		<-entered
		c.TriggerPod(testKey) // the pod changed while it was being checked
		synctest.Wait()
		assert.Equal(t, int32(1), gets.Load(), "not twice at once")
		close(release)
		synctest.Wait()
		assert.Equal(t, int32(2), gets.Load(), "checked again after the first check")
		time.Sleep(10 * time.Minute)
		assert.Equal(t, int32(2), gets.Load(), "and only once again")
		stop()
	})
}

// TestADeleteDuringACheckIsNotMissed: the pod goes while its PU is being
// checked, after that check read it alive, and the delete's trigger
// (TriggerPod from the pod's informer, or a TriggerAll) comes before the
// check ends: the PU is destroyed as soon as the check ends, not at its
// periodic check an hour later.
func TestADeleteDuringACheckIsNotMissed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trigger func(c *deletion.Engine)
	}{
		{"TriggerPod", func(c *deletion.Engine) { c.TriggerPod(testKey) }},
		{"TriggerAll", func(c *deletion.Engine) { c.TriggerAll() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				entered, release := make(chan struct{}, 1), make(chan struct{})
				var gets atomic.Int32
				var gone atomic.Bool
				getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
					if gets.Add(1) == 1 { // it reads the pod before it goes, then takes its time
						entered <- struct{}{}
						<-release
						return livePod(testUID, testNode), nil
					}
					if gone.Load() {
						return nil, ports.ErrPodNotFound
					}
					return livePod(testUID, testNode), nil
				})
				rec := &deletiontest.Policy{}
				c := deletiontest.NewEngine(t, getter, rec, deletion.Options{SweepInterval: time.Hour})
				require.NoError(t, c.Track(entryWith("")))
				stop := deletiontest.Start(t, c)
				c.TriggerPod(testKey) // the pod's last update
				<-entered
				gone.Store(true)
				tc.trigger(c) // its delete
				synctest.Wait()
				assert.Empty(t, rec.Destroyed(), "nothing destroyed while the check that read the pod alive runs")
				close(release)
				synctest.Wait()
				assert.Equal(t, []ports.DestroyEvent{destroyEvent("", ports.ReasonPodGone)}, rec.Destroyed(),
					"destroyed once that check ended, not at the periodic check an hour away")
				assert.Zero(t, c.Len())
				assert.Equal(t, int32(2), gets.Load())
				stop()
			})
		})
	}
}

// TestTriggersAfterStartReturnedDoNothing: triggers after Start has returned
// neither check nor pile up (see also TestTriggersAfterStopKeepNothing).
func TestTriggersAfterStartReturnedDoNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var gets atomic.Int32
		getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			gets.Add(1)
			return nil, ports.ErrPodNotFound
		})
		c := deletiontest.NewEngine(t, getter, &deletiontest.Policy{}, deletion.Options{SweepInterval: time.Hour})
		require.NoError(t, c.Track(entryWith("")))
		stop := deletiontest.Start(t, c)
		stop()
		for range 1000 {
			c.TriggerPod(testKey)
			c.TriggerAll()
		}
		synctest.Wait()
		assert.Zero(t, gets.Load())
		assert.Equal(t, 1, c.Len())
		c.Sweep(context.Background()) // Sweep still works
		assert.Zero(t, c.Len())
	})
}

// TestNewRejectsNilFuncsAndTypedNils: a nil XxxFunc or a typed nil pointer
// is a nil port, as a plain nil is, for required and optional ports alike.
func TestNewRejectsNilFuncsAndTypedNils(t *testing.T) {
	getter := getterOf(nil, ports.ErrPodNotFound)
	policy := &deletiontest.Policy{}
	for name, tc := range map[string]struct {
		g    ports.PodGetter
		p    ports.PolicyHandler
		opts deletion.Options
	}{
		"nil PodGetterFunc":        {g: ports.PodGetterFunc(nil), p: policy},
		"nil PolicyHandlerFunc":    {g: getter, p: ports.PolicyHandlerFunc(nil)},
		"typed nil PolicyHandler":  {g: getter, p: (*deletiontest.Policy)(nil)},
		"nil SandboxExtractorFunc": {g: getter, p: policy, opts: deletion.Options{SandboxExtractor: ports.SandboxExtractorFunc(nil)}},
		"nil RequeuerFunc":         {g: getter, p: policy, opts: deletion.Options{Requeuer: ports.RequeuerFunc(nil)}},
		"nil Confirmer":            {g: getter, p: policy, opts: deletion.Options{Confirmer: ports.PodGetterFunc(nil)}},
		"nil InventoryFunc":        {g: getter, p: policy, opts: deletion.Options{Inventory: ports.InventoryFunc(nil)}},
		"nil ObserverFunc":         {g: getter, p: policy, opts: deletion.Options{Observer: deletion.ObserverFunc(nil)}},
		"typed nil Observer":       {g: getter, p: policy, opts: deletion.Options{Observer: (*deletiontest.Events)(nil)}},
	} {
		_, err := deletion.New(tc.g, tc.p, tc.opts)
		assert.ErrorIs(t, err, deletion.ErrNilPort, name)
	}
}

// TestOptionsLowerBounds: an interval or a deadline too short to be meant
// is an error, not a node's CPU.
func TestOptionsLowerBounds(t *testing.T) {
	getter, policy := getterOf(nil, ports.ErrPodNotFound), &deletiontest.Policy{}
	for name, o := range map[string]deletion.Options{
		"1ns SweepInterval":      {SweepInterval: time.Nanosecond},
		"just below the minimum": {SweepInterval: deletion.MinSweepInterval - 1},
		"1ns CheckTimeout":       {CheckTimeout: time.Nanosecond},
	} {
		_, err := deletion.New(getter, policy, o)
		assert.ErrorIs(t, err, deletion.ErrInvalidOptions, name)
	}
	_, err := deletion.New(getter, policy, deletion.Options{SweepInterval: deletion.MinSweepInterval, CheckTimeout: deletion.MinCheckTimeout})
	assert.NoError(t, err)
}

// TestObserversTellsEveryOne: Observers fans an event out in order, skips
// nil ones, and a panicking one does not keep the next from being told.
func TestObserversTellsEveryOne(t *testing.T) {
	var got []string
	o := deletion.Observers(
		deletion.ObserverFunc(func(ev deletion.Event) { got = append(got, "first "+ev.Kind.String()) }),
		nil,
		deletion.ObserverFunc(func(deletion.Event) { panic("bug") }),
		deletion.ObserverFunc(func(ev deletion.Event) { got = append(got, "last "+ev.Kind.String()) }),
	)
	assert.PanicsWithValue(t, "bug", func() { o.Observe(deletion.Event{Kind: deletion.EventTracked}) })
	assert.Equal(t, []string{"first Tracked", "last Tracked"}, got)

	// In the engine, the panic is logged and the PU kept track of.
	c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), &deletiontest.Policy{}, deletion.Options{Observer: o})
	require.NoError(t, c.Track(entryWith("")))
	assert.Equal(t, 1, c.Len())
}

// TestAdoptedIsObserved: recording a PU's first sandbox is an event, for
// journals.
func TestAdoptedIsObserved(t *testing.T) {
	m := newMockPorts(t)
	rec := &deletiontest.Events{}
	c := m.newEngine(t, true, deletion.Options{Observer: rec})
	live := livePod(testUID, testNode)
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
	m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb1", nil)
	require.NoError(t, c.Track(entryWith("")))
	c.Sweep(context.Background())
	adopted := rec.Of(deletion.EventAdopted)
	require.Len(t, adopted, 1)
	assert.Equal(t, entryWith("sb1"), adopted[0].PU)
}

// TestInventoryRestores: Start tracks what the Inventory lists, skips what
// cannot be tracked, keeps what is tracked already, reports the count, and
// the usual checks then destroy the PUs of gone pods.
func TestInventoryRestores(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			if key.Name == "live" || key.Name == "tracked" {
				return podAt(key, key.Name), nil
			}
			return nil, ports.ErrPodNotFound
		})
		inv := deletiontest.NewInventory(
			ports.PU{PUID: "live", Pod: types.NamespacedName{Namespace: "default", Name: "live"}, SandboxID: "sb-live"},
			ports.PU{PUID: "gone", Pod: types.NamespacedName{Namespace: "default", Name: "gone"}, SandboxID: "sb-gone"},
			ports.PU{PUID: "tracked", Pod: types.NamespacedName{Namespace: "default", Name: "live"}, SandboxID: "from-inventory"},
			ports.PU{PUID: "", Pod: types.NamespacedName{Namespace: "default", Name: "x"}},
			ports.PU{PUID: "no-name", Pod: types.NamespacedName{Namespace: "default"}},
			ports.PU{PUID: "no-namespace", Pod: types.NamespacedName{Name: "x"}},
		)
		inv.FailNextLists(2, errBoom)
		rec, evs, logs := &deletiontest.Policy{}, &deletiontest.Events{}, &logBuffer{}
		c := deletiontest.NewEngine(t, getter, rec, deletion.Options{
			Inventory: inv, Observer: evs, Logger: logs.logger(), SweepInterval: 5 * time.Second,
			RetryMinDelay: time.Second, RetryMaxDelay: time.Minute,
		})
		require.NoError(t, c.Track(ports.PU{PUID: "tracked", Pod: types.NamespacedName{Namespace: "default", Name: "tracked"}, SandboxID: "from-track"}))
		stop := deletiontest.Start(t, c)
		synctest.Wait()
		assert.Equal(t, 1, inv.Lists())
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, 2, inv.Lists(), "retried after RetryMinDelay")
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, 2, inv.Lists(), "then after twice that")
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, 3, inv.Lists())

		restored := evs.Of(deletion.EventRestored)
		require.Len(t, restored, 1)
		assert.Equal(t, 2, restored[0].Count)
		assert.Equal(t, 3, restored[0].ListCalls)
		assert.Len(t, logs.lines("skipping a PU the Inventory listed"), 3)

		time.Sleep(5 * time.Second) // one interval: every entry checked
		synctest.Wait()
		assert.Equal(t, []ports.DestroyEvent{{PUID: "gone", Pod: types.NamespacedName{Namespace: "default", Name: "gone"}, SandboxID: "sb-gone", Reason: ports.ReasonPodGone}},
			rec.Destroyed())
		pending := deletiontest.PUs(c)
		require.Len(t, pending, 2)
		assert.Equal(t, "live", pending[0].PUID)
		assert.Equal(t, "tracked", pending[1].PUID)
		assert.Equal(t, "from-track", pending[1].SandboxID, "insert-only: the tracked entry keeps what it has")
		stop()
	})
}

// TestInventoryGivesItsSandboxToAnUncheckedEntry: a PU tracked without a
// sandbox before Start (a pod informer's add after an agent restart) takes
// the sandbox the Inventory recorded, so that a sandbox replaced while the
// agent was down is destroyed as changed, with the old sandbox, and the pod
// requeued. An entry with a sandbox, of another pod, or listed without a
// sandbox keeps what it has.
func TestInventoryGivesItsSandboxToAnUncheckedEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "default", Name: name} }
		getter := ports.PodGetterFunc(func(_ context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			return podAt(k, k.Name), nil
		})
		extractor := ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) { return "sb-new", nil })
		var requeued []string
		var mu sync.Mutex
		requeuer := ports.RequeuerFunc(func(_ context.Context, pod *corev1.Pod) error {
			mu.Lock()
			defer mu.Unlock()
			requeued = append(requeued, pod.Name)
			return nil
		})
		inv := deletiontest.NewInventory(
			ports.PU{PUID: "restarted", Pod: key("restarted"), SandboxID: "sb-old"},
			ports.PU{PUID: "has-one", Pod: key("has-one"), SandboxID: "sb-old"},
			ports.PU{PUID: "moved", Pod: key("elsewhere"), SandboxID: "sb-old"},
			ports.PU{PUID: "none", Pod: key("none")},
		)
		rec, evs := &deletiontest.Policy{}, &deletiontest.Events{}
		c := deletiontest.NewEngine(t, getter, rec, deletion.Options{
			Inventory: inv, Observer: evs, SweepInterval: 5 * time.Second,
			SandboxExtractor: extractor, Requeuer: requeuer,
		})
		for _, e := range []ports.PU{
			{PUID: "restarted", Pod: key("restarted")},
			{PUID: "has-one", Pod: key("has-one"), SandboxID: "sb-new"},
			{PUID: "moved", Pod: key("moved")},
			{PUID: "none", Pod: key("none")},
		} {
			require.NoError(t, c.Track(e))
		}
		stop := deletiontest.Start(t, c)
		synctest.Wait()
		restored := evs.Of(deletion.EventRestored)
		require.Len(t, restored, 1)
		assert.Equal(t, 1, restored[0].Count, "one entry took its sandbox from the Inventory")

		time.Sleep(5 * time.Second) // one interval: every entry checked
		synctest.Wait()
		assert.Equal(t, []ports.DestroyEvent{{PUID: "restarted", Pod: key("restarted"), SandboxID: "sb-old", Reason: ports.ReasonSandboxChanged}},
			rec.Destroyed(), "the sandbox replaced while the agent was down")
		mu.Lock()
		assert.Equal(t, []string{"restarted"}, requeued, "its pod is requeued for the new sandbox's PU")
		mu.Unlock()
		got := map[string]string{}
		for _, e := range deletiontest.PUs(c) {
			got[e.PUID] = e.SandboxID
		}
		assert.Equal(t, map[string]string{"has-one": "sb-new", "moved": "sb-new", "none": "sb-new"}, got,
			"the others kept what they had, then recorded the current sandbox")
		stop()
	})
}

// TestInventoryListStopsWithStart: a list that keeps failing is retried
// until Start's context ends, and checks go on meanwhile.
func TestInventoryListStopsWithStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inv := deletiontest.NewInventory()
		inv.FailLists(errBoom)
		rec := &deletiontest.Policy{}
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), rec, deletion.Options{Inventory: inv})
		require.NoError(t, c.Track(entryWith("")))
		stop := deletiontest.Start(t, c)
		time.Sleep(10 * time.Minute)
		assert.Len(t, rec.Destroyed(), 1, "checks go on while the list fails")
		calls := inv.Lists()
		assert.Greater(t, calls, 10)
		assert.Less(t, calls, 30, "with backoff up to RetryMaxDelay")
		stop()
		synctest.Wait()
	})
}

// TestInventoryListedBeforeTheFirstCheck: Start lists the Inventory before
// it runs any check, so that a PU a check destroys cannot come back from a
// list that answers after the destroy and be destroyed a second time (a new
// leader that tracks the live pods and lists the PUs of the gone ones).
func TestInventoryListedBeforeTheFirstCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gone := entryWith("sb1")
		release := make(chan struct{})
		inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return []ports.PU{gone}, nil
		})
		rec := &deletiontest.Policy{}
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), rec, deletion.Options{Inventory: inv, SweepInterval: time.Second})
		require.NoError(t, c.Track(gone))
		c.TriggerPod(gone.Pod)
		stop := deletiontest.Start(t, c)
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		assert.Empty(t, rec.Destroyed(), "no check before the Inventory answers")
		close(release)
		time.Sleep(3 * time.Second) // three intervals
		synctest.Wait()
		assert.Equal(t, 1, rec.CallCount(), "destroyed once")
		assert.Zero(t, c.Len())
		stop()
	})
}

// InventoryListed: true once a list answered and all its PUs went in. A
// Start that stops while a list's PUs go in (its journal slow to commit
// one) leaves the rest in the Inventory for the next run: the engine does
// not know every PU its Inventory holds, and says so, after Start has
// returned too (adapters/k8s's status page answers 503 by it).
func TestAListCutShortByStopIsNotListed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pus := []ports.PU{entryWith("sb1"), {PUID: "b", Pod: types.NamespacedName{Namespace: "ns", Name: "b"}},
			{PUID: "c", Pod: types.NamespacedName{Namespace: "ns", Name: "c"}}}
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) { return pus, nil })
		committing, commit := make(chan struct{}), make(chan struct{})
		var once sync.Once
		slow := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventTracked {
				once.Do(func() { close(committing); <-commit })
			}
		})
		c := deletiontest.NewEngine(t, getterOf(nil, errors.New("api down")), &deletiontest.Policy{},
			deletion.Options{Inventory: inv, Observer: slow, Workers: 1})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		<-committing
		assert.False(t, c.InventoryListed(), "its first PU is going in")
		cancel()
		synctest.Wait()
		close(commit)
		require.NoError(t, <-done)
		assert.Equal(t, 1, c.Len(), "the PUs after the first are left for the next run")
		assert.False(t, c.InventoryListed(), "the engine does not know every PU its Inventory holds")
	})
}

// TestNoDestroyOnceStartIsDone: once Start's context is done, no DestroyPU
// starts, not even for a check already running whose pod read says gone
// (the lease of a leader-elected engine was lost meanwhile); the PU is kept
// for whoever runs next.
func TestNoDestroyOnceStartIsDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		for _, confirmer := range []bool{false, true} {
			ctx, cancel := context.WithCancel(ctx)
			var getter ports.PodGetter = ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
				cancel() // the context ends while the pod is read
				return nil, ports.ErrPodNotFound
			})
			opts := deletion.Options{}
			if confirmer {
				getter, opts.Confirmer = getterOf(nil, ports.ErrPodNotFound), getter
			}
			rec := &deletiontest.Policy{}
			c := deletiontest.NewEngine(t, getter, rec, opts)
			require.NoError(t, c.Track(entryWith("sb1")))
			c.TriggerPod(testKey)
			require.NoError(t, c.Start(ctx))
			synctest.Wait()
			assert.Zero(t, rec.CallCount(), "confirmer %v: no DestroyPU after the context ended", confirmer)
			assert.Equal(t, 1, c.Len())
		}
		cancel()
	})
}

// syncBuffer is a bytes.Buffer safe for klog's writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestClassifyIsTheTable: Classify, which adapters ask which pods to
// track, answers as Decide does for a PU of the same pod: PodElsewhere
// exactly when row 3 destroys it or, for an engine with a node, the pod is
// bound to none; PodFinished exactly when row 11 destroys it. It answers
// the same on the pod's SlimPod.
func TestClassifyIsTheTable(t *testing.T) {
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound })
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	for _, node := range []string{"", "node-a"} {
		for _, terminated := range []bool{false, true} {
			c, err := deletion.New(getter, policy, deletion.Options{NodeName: node, DestroyTerminated: terminated})
			require.NoError(t, err)
			for _, bound := range []string{"", "node-a", "node-b"} {
				for _, phase := range []corev1.PodPhase{"", corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown} {
					pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"},
						Spec: corev1.PodSpec{NodeName: bound}, Status: corev1.PodStatus{Phase: phase}}
					v := deletion.Decide(ports.PU{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "web"}},
						deletion.Observation{Pod: pod, NodeName: node, DestroyTerminated: terminated})
					want := deletion.PodLive
					switch {
					case v.Row == 3 || node != "" && bound == "":
						want = deletion.PodElsewhere
					case v.Row == 11:
						want = deletion.PodFinished
					}
					assert.Equal(t, want, c.Classify(pod), "engine node %q, DestroyTerminated %v, pod on %q in phase %q (%v)", node, terminated, bound, phase, v)
					assert.Equal(t, want, c.Classify(deletion.SlimPod(pod)), "slim pod: engine node %q, DestroyTerminated %v, pod on %q in phase %q", node, terminated, bound, phase)
				}
			}
			assert.Equal(t, deletion.PodElsewhere, c.Classify(nil))
		}
	}
}

// TestBacklog: the PUs waiting for a retry, and since when the oldest PU
// found gone waits for its destroy.
func TestBacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &deletiontest.Policy{}
		rec.Fail(errBoom)
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), rec, deletion.Options{RetryMinDelay: time.Minute, RetryMaxDelay: time.Minute})
		b := c.Backlog()
		assert.Zero(t, b.Retrying)
		assert.True(t, b.OldestGoneSince.IsZero())
		t0 := time.Now()
		require.NoError(t, c.Track(entryWith("")))
		c.Sweep(context.Background())
		time.Sleep(10 * time.Second)
		require.NoError(t, c.Track(ports.PU{PUID: "b", Pod: types.NamespacedName{Namespace: "ns", Name: "b"}}))
		c.Sweep(context.Background())
		b = c.Backlog()
		assert.Equal(t, 2, b.Retrying)
		assert.Equal(t, t0, b.OldestGoneSince, "the first PU found gone")
		rec.Fail(nil)
		c.Sweep(context.Background())
		b = c.Backlog()
		assert.Zero(t, b.Retrying)
		assert.True(t, b.OldestGoneSince.IsZero())
	})
}

// TestRequeuerGetsAPodOfItsOwn: a PodGetter may return its cache's own
// object (a cache read without a deep copy); the pod the Requeuer gets for
// row 10 is a copy, which it may modify without changing the getter's.
func TestRequeuerGetsAPodOfItsOwn(t *testing.T) {
	shared := livePod(testUID, testNode)
	var got *corev1.Pod
	requeuer := ports.RequeuerFunc(func(_ context.Context, pod *corev1.Pod) error {
		got = pod
		pod.Labels = map[string]string{"changed": "by the receiver"}
		pod.Spec.NodeName = "changed"
		return nil
	})
	extractor := ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) { return "sb2", nil })
	c := deletiontest.NewEngine(t, getterOf(shared, nil), &deletiontest.Policy{}, deletion.Options{
		NodeName: testNode, SandboxExtractor: extractor, Requeuer: requeuer,
	})
	require.NoError(t, c.Track(entryWith("sb1")))
	c.Sweep(context.Background())

	require.NotNil(t, got, "the pod of the replaced sandbox is requeued")
	assert.NotSame(t, shared, got)
	assert.Equal(t, testUID, string(got.UID))
	assert.Nil(t, shared.Labels, "the getter's pod is unchanged")
	assert.Equal(t, testNode, shared.Spec.NodeName)
}

// slowInventory lists no PU after d, or returns its context's error if that
// ends first.
func slowInventory(d time.Duration) ports.Inventory {
	return ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
		select {
		case <-time.After(d):
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
}
