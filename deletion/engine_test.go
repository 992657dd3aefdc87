package deletion_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/golang/mock/gomock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

func destroyEvent(sandbox string, r ports.Reason) ports.DestroyEvent {
	return ports.DestroyEvent{PUID: testUID, Pod: testKey, SandboxID: sandbox, Reason: r}
}

// TestSweepRows runs every row of the decision table end to end through
// Sweep, with the ports mocked.
func TestSweepRows(t *testing.T) {
	type row struct {
		name        string
		recorded    string // the entry's sandbox
		withSandbox bool   // SandboxExtractor and Requeuer configured
		expect      func(m *mockPorts, c **deletion.Engine)
		tracked     bool   // the entry is still tracked after Sweep
		sandbox     string // its sandbox then
	}
	live := livePod(testUID, testNode)
	rows := []row{
		{name: "1 pod gone: destroy PodGone", recorded: "sb1", withSandbox: true, expect: func(m *mockPorts, _ **deletion.Engine) {
			m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(nil, ports.ErrPodNotFound)
			m.policy.EXPECT().DestroyPU(gomock.Any(), destroyEvent("sb1", ports.ReasonPodGone)).Return(nil)
		}},
		{name: "2 get fails: keep", recorded: "sb1", withSandbox: true, tracked: true, sandbox: "sb1", expect: func(m *mockPorts, _ **deletion.Engine) {
			m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(nil, errBoom)
		}},
		{name: "3 another node: destroy NodeChanged", recorded: "sb1", withSandbox: true, expect: func(m *mockPorts, _ **deletion.Engine) {
			m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(livePod(testUID, "node-b"), nil)
			m.policy.EXPECT().DestroyPU(gomock.Any(), destroyEvent("sb1", ports.ReasonNodeChanged)).Return(nil)
		}},
		{name: "4 recreated: destroy UIDChanged", recorded: "sb1", withSandbox: true, expect: func(m *mockPorts, _ **deletion.Engine) {
			m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(livePod("uid-2", testNode), nil)
			m.policy.EXPECT().DestroyPU(gomock.Any(), destroyEvent("sb1", ports.ReasonUIDChanged)).Return(nil)
		}},
		{name: "5 no extractor: keep", recorded: "", tracked: true, expect: func(m *mockPorts, _ **deletion.Engine) {
			m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
		}},
		{name: "6 extractor fails: keep", recorded: "sb1", withSandbox: true, tracked: true, sandbox: "sb1", expect: func(m *mockPorts, _ **deletion.Engine) {
			m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
			m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("", errBoom)
		}},
		{name: "7 nothing recorded: adopt", recorded: "", withSandbox: true, tracked: true, sandbox: "sb1", expect: func(m *mockPorts, _ **deletion.Engine) {
			m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
			m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb1", nil)
		}},
		{name: "8 sandbox not known yet: keep", recorded: "sb1", withSandbox: true, tracked: true, sandbox: "sb1", expect: func(m *mockPorts, _ **deletion.Engine) {
			m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
			m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("", nil)
		}},
		{name: "9 same sandbox: keep", recorded: "sb1", withSandbox: true, tracked: true, sandbox: "sb1", expect: func(m *mockPorts, _ **deletion.Engine) {
			m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
			m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb1", nil)
		}},
		{name: "10 sandbox replaced: destroy SandboxChanged, then requeue", recorded: "sb1", withSandbox: true, expect: func(m *mockPorts, c **deletion.Engine) {
			m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
			m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb2", nil)
			destroy := m.policy.EXPECT().DestroyPU(gomock.Any(), destroyEvent("sb1", ports.ReasonSandboxChanged)).Return(nil)
			m.requeuer.EXPECT().Requeue(gomock.Any(), live).After(destroy).DoAndReturn(func(ctx context.Context, pod *corev1.Pod) error {
				assert.Zero(t, (*c).Len(), "the entry must be removed before the pod is requeued")
				_, hasDeadline := ctx.Deadline()
				assert.True(t, hasDeadline, "Requeue must get a deadline")
				return nil
			})
		}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			verifyNoLeaks(t)
			m := newMockPorts(t)
			c := m.newEngine(t, r.withSandbox, deletion.Options{NodeName: testNode})
			r.expect(m, &c)
			require.NoError(t, c.Track(entryWith(r.recorded)))

			c.Sweep(context.Background())

			if !r.tracked {
				assert.Empty(t, deletiontest.PUs(c))
				return
			}
			assert.Equal(t, []ports.PU{{PUID: testUID, Pod: testKey, SandboxID: r.sandbox}}, deletiontest.PUs(c))
		})
	}
}

// TestAdoptedSandboxIsTheOneDestroyed: a PU tracked before its sandbox was
// known adopts the first one seen, and that one is reported when it changes.
func TestAdoptedSandboxIsTheOneDestroyed(t *testing.T) {
	m := newMockPorts(t)
	c := m.newEngine(t, true, deletion.Options{})
	live := livePod(testUID, testNode)
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil).Times(2)
	gomock.InOrder(
		m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb1", nil),
		m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb2", nil),
	)
	m.policy.EXPECT().DestroyPU(gomock.Any(), destroyEvent("sb1", ports.ReasonSandboxChanged)).Return(nil)
	m.requeuer.EXPECT().Requeue(gomock.Any(), live).Return(nil)

	require.NoError(t, c.Track(entryWith("")))
	c.Sweep(context.Background())
	require.Len(t, deletiontest.PUs(c), 1)
	require.Equal(t, "sb1", deletiontest.PUs(c)[0].SandboxID)
	c.Sweep(context.Background())
	assert.Zero(t, c.Len())
}

func TestTrackIsInsertOnly(t *testing.T) {
	m := newMockPorts(t)
	c := m.newEngine(t, false, deletion.Options{})
	require.NoError(t, c.Track(entryWith("sb1")))
	require.NoError(t, c.Track(ports.PU{PUID: testUID, Pod: types.NamespacedName{Namespace: "other", Name: "x"}, SandboxID: "sb2"}))
	assert.Equal(t, []ports.PU{entryWith("sb1")}, deletiontest.PUs(c))
	assert.Equal(t, 1, c.Len())
}

func TestTrackRejectsIncompleteEntries(t *testing.T) {
	m := newMockPorts(t)
	c := m.newEngine(t, false, deletion.Options{})
	for _, e := range []ports.PU{
		{Pod: testKey},
		{PUID: testUID, Pod: types.NamespacedName{Namespace: "default"}},
		{PUID: testUID, Pod: types.NamespacedName{Name: "web-0"}},
	} {
		err := c.Track(e)
		assert.ErrorIs(t, err, deletion.ErrInvalidPU, "%+v", e)
	}
	assert.Zero(t, c.Len())
}

func TestPendingIsSortedByPUID(t *testing.T) {
	m := newMockPorts(t)
	c := m.newEngine(t, false, deletion.Options{})
	for _, id := range []string{"c", "a", "b"} {
		require.NoError(t, c.Track(ports.PU{PUID: id, Pod: testKey}))
	}
	var ids []string
	for _, e := range deletiontest.PUs(c) {
		ids = append(ids, e.PUID)
	}
	assert.Equal(t, []string{"a", "b", "c"}, ids)
}

func TestNewRejectsNilPortsAndBadOptions(t *testing.T) {
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, nil })
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })

	_, err := deletion.New(nil, policy, deletion.Options{})
	assert.ErrorIs(t, err, deletion.ErrNilPort)
	_, err = deletion.New(getter, nil, deletion.Options{})
	assert.ErrorIs(t, err, deletion.ErrNilPort)

	for name, o := range map[string]deletion.Options{
		"negative SweepInterval":      {SweepInterval: -time.Second},
		"negative CheckTimeout":       {CheckTimeout: -1},
		"negative Workers":            {Workers: -1},
		"absurd Workers":              {Workers: deletion.MaxWorkers + 1},
		"negative MaxDestroyAttempts": {MaxDestroyAttempts: -2},
		"negative RetryMinDelay":      {RetryMinDelay: -1},
		"negative ShutdownTimeout":    {ShutdownTimeout: -1},
		"max delay below min delay":   {RetryMinDelay: time.Minute, RetryMaxDelay: time.Second},
	} {
		_, err := deletion.New(getter, policy, o)
		assert.ErrorIs(t, err, deletion.ErrInvalidOptions, name)
	}
	_, err = deletion.New(getter, policy, deletion.Options{})
	require.NoError(t, err)
}

// TestDestroyRetriesUpToMaxAttempts: a failing DestroyPU is retried on each
// check until MaxDestroyAttempts, then the entry is dropped, the loss logged
// at error level and reported as abandoned.
func TestDestroyRetriesUpToMaxAttempts(t *testing.T) {
	m := newMockPorts(t)
	logs := &logBuffer{}
	rec := &deletiontest.Events{}
	c := m.newEngine(t, false, deletion.Options{MaxDestroyAttempts: 3, Logger: logs.logger(), Observer: rec})
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(nil, ports.ErrPodNotFound).Times(3)
	m.policy.EXPECT().DestroyPU(gomock.Any(), destroyEvent("", ports.ReasonPodGone)).Return(errBoom).Times(3)
	require.NoError(t, c.Track(entryWith("")))

	c.Sweep(context.Background())
	c.Sweep(context.Background())
	require.Equal(t, 1, c.Len(), "kept after 2 of 3 failed attempts")
	c.Sweep(context.Background())
	assert.Zero(t, c.Len(), "dropped after the last attempt")
	c.Sweep(context.Background()) // nothing left: no call

	require.Len(t, rec.Of(deletion.EventDestroyFailed), 3)
	abandoned := rec.Of(deletion.EventAbandoned)
	require.Len(t, abandoned, 1)
	assert.Equal(t, 3, abandoned[0].DestroyCalls)
	assert.ErrorIs(t, abandoned[0].Err, errBoom)
	lost := logs.lines("for the last time")
	require.Len(t, lost, 1)
	assert.NotContains(t, lost[0], `"level"=`, "logged at error level, not info")
	assert.Contains(t, lost[0], `"error"="boom"`)
	assert.Contains(t, lost[0], `"puID"="uid-1"`)
}

// TestAKeepBetweenTwoFailedDestroysBeginsNoNewRow: Options.MaxDestroyAttempts counts failed DestroyPU calls in a row,
// those since the PU was tracked: a check that keeps the PU between two of them (its pod read alive once) does not
// begin a new row, and the second failure of two gives up.
func TestAKeepBetweenTwoFailedDestroysBeginsNoNewRow(t *testing.T) {
	m := newMockPorts(t)
	rec := &deletiontest.Events{}
	c := m.newEngine(t, false, deletion.Options{MaxDestroyAttempts: 2, Observer: rec})
	gomock.InOrder(
		m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(nil, ports.ErrPodNotFound),
		m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(livePod(testUID, testNode), nil),
		m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(nil, ports.ErrPodNotFound),
	)
	m.policy.EXPECT().DestroyPU(gomock.Any(), destroyEvent("", ports.ReasonPodGone)).Return(errBoom).Times(2)
	require.NoError(t, c.Track(entryWith("")))

	c.Sweep(context.Background()) // fails: 1 of 2
	c.Sweep(context.Background()) // alive: kept
	require.Equal(t, 1, c.Len())
	c.Sweep(context.Background()) // fails: 2 of 2
	assert.Zero(t, c.Len(), "given up on at the second failure")
	abandoned := rec.Of(deletion.EventAbandoned)
	require.Len(t, abandoned, 1)
	assert.Equal(t, 2, abandoned[0].DestroyCalls)
}

// TestFireAndForget: MaxDestroyAttempts 1 drops the PU after one failed
// attempt, as trireme-lib's DeleteController did.
func TestFireAndForget(t *testing.T) {
	m := newMockPorts(t)
	c := m.newEngine(t, false, deletion.Options{MaxDestroyAttempts: 1})
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(nil, ports.ErrPodNotFound)
	m.policy.EXPECT().DestroyPU(gomock.Any(), gomock.Any()).Return(errBoom)
	require.NoError(t, c.Track(entryWith("")))
	c.Sweep(context.Background())
	assert.Zero(t, c.Len())
}

func TestPermanentErrorIsNotRetried(t *testing.T) {
	m := newMockPorts(t)
	rec := &deletiontest.Events{}
	c := m.newEngine(t, false, deletion.Options{MaxDestroyAttempts: 5, Observer: rec})
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(nil, ports.ErrPodNotFound)
	m.policy.EXPECT().DestroyPU(gomock.Any(), gomock.Any()).Return(fmt.Errorf("engine says: %w", ports.Permanent(errBoom)))
	require.NoError(t, c.Track(entryWith("")))
	c.Sweep(context.Background())
	assert.Zero(t, c.Len())
	require.Len(t, rec.Of(deletion.EventAbandoned), 1)
	assert.Equal(t, 1, rec.Of(deletion.EventAbandoned)[0].DestroyCalls)
}

// TestRequeueAfterAbandonedSandboxChange: the Requeue of row 10 also happens
// when the entry is dropped after its last failed attempt.
func TestRequeueAfterAbandonedSandboxChange(t *testing.T) {
	m := newMockPorts(t)
	c := m.newEngine(t, true, deletion.Options{MaxDestroyAttempts: 1})
	live := livePod(testUID, testNode)
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
	m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb2", nil)
	m.policy.EXPECT().DestroyPU(gomock.Any(), gomock.Any()).Return(errBoom)
	m.requeuer.EXPECT().Requeue(gomock.Any(), live).DoAndReturn(func(context.Context, *corev1.Pod) error {
		assert.Zero(t, c.Len())
		return nil
	})
	require.NoError(t, c.Track(entryWith("sb1")))
	c.Sweep(context.Background())
}

// Options.Requeuer: "Requeuer is told about a pod whose PU went for a sandbox change (rows 10 and 12): destroyed, or
// given up on (ports.Permanent, MaxDestroyAttempts), for the pod needs the PU of its new sandbox either way."
func TestAuditHoldsRequeueOnceTheOldSandboxsPUWentDestroyedOrGivenUpOn(t *testing.T) {
	for name, opts := range map[string]deletion.Options{
		"permanent error":        {},
		"MaxDestroyAttempts = 1": {MaxDestroyAttempts: 1},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cluster := deletiontest.NewCluster()
				policy := &deletiontest.Policy{}
				if opts.MaxDestroyAttempts == 0 {
					policy.Fail(ports.Permanent(errors.New("policy engine refuses")))
				} else {
					policy.Fail(errors.New("policy engine busy"))
				}
				var requeued atomic.Int32
				opts.SandboxExtractor = cluster
				opts.Requeuer = ports.RequeuerFunc(func(context.Context, *corev1.Pod) error { requeued.Add(1); return nil })
				engine := deletiontest.NewEngine(t, cluster, policy, opts)
				pu := cluster.CreatePod(nsKey("web"), "node-a", "sb-1")
				if err := engine.Track(pu); err != nil {
					t.Fatal(err)
				}
				if err := cluster.SetSandbox(pu.Pod, "sb-2"); err != nil {
					t.Fatal(err)
				}
				engine.Sweep(t.Context())
				if len(policy.Destroyed()) != 0 || policy.CallCount() != 1 {
					t.Fatalf("calls %v", policy.Calls())
				}
				if n := requeued.Load(); n != 1 {
					t.Errorf("the pod was requeued %d time(s) once its PU's destroy failed for good, want once: its new sandbox needs a PU", n)
				}
			})
		})
	}
}

// TestTrackFromInsideRequeue: the main controller's reaction to a requeue
// is to Track the new PU, from inside Requeue; that must not deadlock, and
// the new entry (same pod UID, new sandbox) must be accepted.
func TestTrackFromInsideRequeue(t *testing.T) {
	verifyNoLeaks(t)
	m := newMockPorts(t)
	c := m.newEngine(t, true, deletion.Options{})
	live := livePod(testUID, testNode)
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
	m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb2", nil)
	m.policy.EXPECT().DestroyPU(gomock.Any(), destroyEvent("sb1", ports.ReasonSandboxChanged)).Return(nil)
	m.requeuer.EXPECT().Requeue(gomock.Any(), live).DoAndReturn(func(_ context.Context, pod *corev1.Pod) error {
		return c.Track(ports.PU{PUID: string(pod.UID), Pod: testKey, SandboxID: "sb2"})
	})
	require.NoError(t, c.Track(entryWith("sb1")))

	done := make(chan struct{})
	go func() { c.Sweep(context.Background()); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Sweep deadlocked on a Track from inside Requeue")
	}
	assert.Equal(t, []ports.PU{entryWith("sb2")}, deletiontest.PUs(c))
}

// TestPeriodicSweep: under Start, every entry is checked once per
// SweepInterval, the first time within one interval of Track, and the
// checks are spread over the interval.
func TestPeriodicSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 1000
		interval := 6400 * time.Millisecond
		var mu sync.Mutex
		checks := map[string]int{}
		getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			mu.Lock()
			defer mu.Unlock()
			checks[key.Name]++
			return podAt(key, key.Name), nil
		})
		total := func() int {
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			sum := 0
			for _, k := range checks {
				sum += k
			}
			return sum
		}
		policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error {
			t.Error("nothing is gone: no destroy expected")
			return nil
		})
		c := deletiontest.NewEngine(t, getter, policy, deletion.Options{SweepInterval: interval})
		stop := deletiontest.Start(t, c)
		for i := range n {
			id := fmt.Sprint(i)
			require.NoError(t, c.Track(ports.PU{PUID: id, Pod: types.NamespacedName{Namespace: "ns", Name: id}}))
		}

		time.Sleep(interval / 2)
		half := total()
		assert.GreaterOrEqual(t, half, n*35/100, "checks spread over the interval")
		assert.LessOrEqual(t, half, n*65/100, "not all at once")

		time.Sleep(interval / 2)
		assert.Equal(t, n, total(), "first check within one interval")
		time.Sleep(2 * interval)
		assert.Equal(t, 3*n, total(), "once per interval")
		mu.Lock()
		for id, k := range checks {
			require.Equal(t, 3, k, "entry %s", id)
		}
		mu.Unlock()
		stop()
	})
}

// TestTriggerPodChecksOnlyThatPod: TriggerPod checks that pod's entries,
// at once, and no other.
func TestTriggerPodChecksOnlyThatPod(t *testing.T) {
	verifyNoLeaks(t)
	m := newMockPorts(t)
	c := m.newEngine(t, false, deletion.Options{SweepInterval: time.Hour})
	gone := types.NamespacedName{Namespace: "default", Name: "gone"}
	for i := range 50 {
		require.NoError(t, c.Track(ports.PU{PUID: fmt.Sprintf("live-%d", i), Pod: types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("live-%d", i)}}))
	}
	require.NoError(t, c.Track(ports.PU{PUID: "g1", Pod: gone}))
	require.NoError(t, c.Track(ports.PU{PUID: "g2", Pod: gone}))
	destroyed := make(chan string, 2)
	m.getter.EXPECT().GetPod(gomock.Any(), gone).Return(nil, ports.ErrPodNotFound).Times(2)
	m.policy.EXPECT().DestroyPU(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, ev ports.DestroyEvent) error {
		destroyed <- ev.PUID
		return nil
	}).Times(2)
	deletiontest.Start(t, c)

	c.TriggerPod(gone)
	got := []string{<-destroyed, <-destroyed}
	assert.ElementsMatch(t, []string{"g1", "g2"}, got)
	c.TriggerPod(types.NamespacedName{Namespace: "default", Name: "never-tracked"}) // no entry: no call
	require.Eventually(t, func() bool { return c.Len() == 50 }, 5*time.Second, time.Millisecond)
}

// TestTriggersBeforeStartRunWhenItStarts.
func TestTriggersBeforeStartRunWhenItStarts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trigger func(c *deletion.Engine)
	}{
		{"TriggerPod", func(c *deletion.Engine) { c.TriggerPod(testKey) }},
		{"TriggerAll", func(c *deletion.Engine) { c.TriggerAll() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := newMockPorts(t)
				c := m.newEngine(t, false, deletion.Options{SweepInterval: time.Hour})
				require.NoError(t, c.Track(entryWith("")))
				tc.trigger(c)
				synctest.Wait()
				require.Equal(t, 1, c.Len(), "nothing runs before Start")
				m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(nil, ports.ErrPodNotFound)
				m.policy.EXPECT().DestroyPU(gomock.Any(), gomock.Any()).Return(nil)
				stop := deletiontest.Start(t, c)
				synctest.Wait()
				assert.Zero(t, c.Len(), "checked at once, not at the periodic check an hour away")
				stop()
			})
		})
	}
}

func TestTriggerAllChecksEveryEntry(t *testing.T) {
	verifyNoLeaks(t)
	m := newMockPorts(t)
	c := m.newEngine(t, false, deletion.Options{SweepInterval: time.Hour})
	deletiontest.Start(t, c)
	for i := range 20 {
		require.NoError(t, c.Track(ports.PU{PUID: fmt.Sprint(i), Pod: types.NamespacedName{Namespace: "ns", Name: fmt.Sprint(i)}}))
	}
	m.getter.EXPECT().GetPod(gomock.Any(), gomock.Any()).Return(nil, ports.ErrPodNotFound).Times(20)
	m.policy.EXPECT().DestroyPU(gomock.Any(), gomock.Any()).Return(nil).Times(20)
	c.TriggerAll()
	require.Eventually(t, func() bool { return c.Len() == 0 }, 5*time.Second, time.Millisecond)
}

func TestSecondStartFails(t *testing.T) {
	verifyNoLeaks(t)
	m := newMockPorts(t)
	c := m.newEngine(t, false, deletion.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	results := make(chan error, 2)
	for range 2 {
		go func() { results <- c.Start(ctx) }()
	}
	select {
	case err := <-results:
		assert.ErrorIs(t, err, deletion.ErrAlreadyStarted, "the second Start returns at once")
	case <-time.After(5 * time.Second):
		t.Fatal("neither Start returned")
	}
	cancel()
	assert.NoError(t, <-results)
}

// concurrency records how many checks run at once, in all and per PUID.
type concurrency struct {
	mu      sync.Mutex
	now     int
	max     int
	perPUID map[string]int
	overlap []string
}

func (cc *concurrency) enter(puid string) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.now++
	cc.max = max(cc.max, cc.now)
	cc.perPUID[puid]++
	if cc.perPUID[puid] > 1 {
		cc.overlap = append(cc.overlap, puid)
	}
}

func (cc *concurrency) leave(puid string) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.now--
	cc.perPUID[puid]--
}

// TestConcurrencyIsBounded: with Start's workers, TriggerAll and Sweep calls
// all running at once, at most Workers checks run together and never two
// of one PUID.
func TestConcurrencyIsBounded(t *testing.T) {
	verifyNoLeaks(t)
	const workers = 3
	cc := &concurrency{perPUID: map[string]int{}}
	var checks atomic.Int64
	getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		cc.enter(key.Name)
		defer cc.leave(key.Name)
		checks.Add(1)
		time.Sleep(time.Millisecond)
		return livePod(key.Name, testNode), nil
	})
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error {
		t.Error("nothing is gone: no destroy expected")
		return nil
	})
	c, err := deletion.New(getter, policy, deletion.Options{Workers: workers, SweepInterval: deletion.MinSweepInterval, Logger: deletiontest.Discard()})
	require.NoError(t, err)
	for i := range 30 {
		id := fmt.Sprint(i)
		require.NoError(t, c.Track(ports.PU{PUID: id, Pod: types.NamespacedName{Namespace: "ns", Name: id}}))
	}
	deletiontest.Start(t, c)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5 {
				c.TriggerAll()
				c.Sweep(context.Background())
			}
		})
	}
	wg.Wait()
	require.Greater(t, checks.Load(), int64(4*5*30), "every Sweep checked every entry")
	cc.mu.Lock()
	defer cc.mu.Unlock()
	assert.LessOrEqual(t, cc.max, workers)
	assert.Equal(t, workers, cc.max, "the workers were all used")
	assert.Empty(t, cc.overlap, "PUIDs checked twice at once")
}

// TestSweepChecksEveryEntryEvenInBackoff: Sweep ignores retry schedules.
func TestSweepChecksEveryEntryEvenInBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMockPorts(t)
		c := m.newEngine(t, false, deletion.Options{RetryMinDelay: time.Hour, RetryMaxDelay: time.Hour})
		m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(nil, ports.ErrPodNotFound).Times(2)
		gomock.InOrder(
			m.policy.EXPECT().DestroyPU(gomock.Any(), gomock.Any()).Return(errBoom),
			m.policy.EXPECT().DestroyPU(gomock.Any(), gomock.Any()).Return(nil),
		)
		require.NoError(t, c.Track(entryWith("")))
		c.TriggerPod(testKey)
		stop := deletiontest.Start(t, c)
		synctest.Wait()
		require.Len(t, c.Status(), 1)
		require.Equal(t, "waiting for a retry", c.Status()[0].State)
		c.Sweep(context.Background())
		assert.Zero(t, c.Len())
		stop()
	})
}

// TestStartStopsPromptlyWithHangingPort: a GetPod that ignores its context
// and never returns cannot keep Start from returning; a port that honours
// its context returns at once and leaves nothing behind.
func TestStartStopsPromptlyWithHangingPort(t *testing.T) {
	t.Run("port ignores its context", func(t *testing.T) {
		verifyNoLeaks(t)
		release := make(chan struct{})
		entered := make(chan struct{}, 1)
		getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			entered <- struct{}{}
			<-release
			return nil, ports.ErrPodNotFound
		})
		var destroys atomic.Int32
		policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { destroys.Add(1); return nil })
		logs, rec := &logBuffer{}, &deletiontest.Events{}
		c, err := deletion.New(getter, policy, deletion.Options{ShutdownTimeout: 100 * time.Millisecond, Logger: logs.logger(), Observer: rec})
		require.NoError(t, err)
		require.NoError(t, c.Track(entryWith("")))
		c.TriggerAll()
		stop := deletiontest.Start(t, c)
		<-entered
		began := time.Now()
		stop()
		assert.Less(t, time.Since(began), 2*time.Second)
		assert.NotEmpty(t, logs.lines("stuck in ports"), "the stuck check is logged")
		close(release)
		require.Eventually(t, func() bool { return len(rec.Of(deletion.EventChecked)) == 1 }, 5*time.Second, time.Millisecond,
			"the check left behind ends when its port returns")
		assert.Zero(t, destroys.Load(), "a GetPod answer that came after the deadline destroys nothing")
		assert.Equal(t, 1, c.Len())
	})
	t.Run("port honours its context", func(t *testing.T) {
		verifyNoLeaks(t)
		entered := make(chan struct{}, 1)
		getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			entered <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		})
		policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
		c, err := deletion.New(getter, policy, deletion.Options{ShutdownTimeout: time.Minute})
		require.NoError(t, err)
		require.NoError(t, c.Track(entryWith("")))
		c.TriggerAll()
		stop := deletiontest.Start(t, c)
		<-entered
		began := time.Now()
		stop()
		assert.Less(t, time.Since(began), time.Second, "in-flight checks see a cancelled context")
		assert.Equal(t, 1, c.Len())
	})
}

// TestAHungCheckHoldsItsWorkerOnly: a check whose port hangs past
// CheckTimeout, ignoring its context, keeps its worker (and its entry: no
// second check of that PUID starts) while the other workers go on; when the
// port returns late, nothing is destroyed on its answer, and the port's
// lateness is logged.
func TestAHungCheckHoldsItsWorkerOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var calls atomic.Int32
		hung := types.NamespacedName{Namespace: "ns", Name: "hung"}
		getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			if key == hung {
				calls.Add(1)
				<-release // ignores ctx
			}
			return nil, ports.ErrPodNotFound
		})
		rec := &deletiontest.Policy{}
		logs := &logBuffer{}
		c := deletiontest.NewEngine(t, getter, rec, deletion.Options{Workers: 2, CheckTimeout: 50 * time.Millisecond, SweepInterval: time.Second, Logger: logs.logger()})
		require.NoError(t, c.Track(ports.PU{PUID: "hung", Pod: hung}))
		stop := deletiontest.Start(t, c)
		c.TriggerAll()
		synctest.Wait()
		for i := range 10 {
			require.NoError(t, c.Track(ports.PU{PUID: fmt.Sprint(i), Pod: types.NamespacedName{Namespace: "ns", Name: fmt.Sprint(i)}}))
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Len(t, rec.Destroyed(), 10, "the other worker went on")
		assert.Equal(t, int32(1), calls.Load(), "no second check of a PUID whose check is stuck")
		close(release)
		synctest.Wait()
		assert.Len(t, rec.Destroyed(), 10, "an answer after the deadline destroys nothing")
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Len(t, rec.Destroyed(), 11, "checked again once the port returned")
		assert.Len(t, logs.lines("past its check's deadline"), 1, "summed up in the interval's summary")
		stop()
	})
}

// TestPanickingPortsAreRecovered: a panic in any port is recovered and
// logged; GetPod and SandboxID panics keep the entry, a DestroyPU panic is a
// failed attempt, Requeue and Observer panics are logged.
func TestPanickingPortsAreRecovered(t *testing.T) {
	live := livePod(testUID, testNode)
	t.Run("GetPod", func(t *testing.T) {
		m := newMockPorts(t)
		logs := &logBuffer{}
		c := m.newEngine(t, false, deletion.Options{Logger: logs.logger()})
		m.getter.EXPECT().GetPod(gomock.Any(), testKey).Do(func(context.Context, types.NamespacedName) { panic(ports.ErrPodNotFound) })
		require.NoError(t, c.Track(entryWith("")))
		c.Sweep(context.Background())
		assert.Equal(t, 1, c.Len(), "a panic, even with ErrPodNotFound, is no proof the pod is gone")
		assert.NotEmpty(t, logs.lines("port panicked: GetPod"))
	})
	t.Run("SandboxID", func(t *testing.T) {
		m := newMockPorts(t)
		c := m.newEngine(t, true, deletion.Options{})
		m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
		m.extractor.EXPECT().SandboxID(gomock.Any(), live).Do(func(context.Context, *corev1.Pod) { panic("extractor bug") })
		require.NoError(t, c.Track(entryWith("sb1")))
		c.Sweep(context.Background())
		assert.Equal(t, []ports.PU{entryWith("sb1")}, deletiontest.PUs(c))
	})
	t.Run("DestroyPU", func(t *testing.T) {
		m := newMockPorts(t)
		rec := &deletiontest.Events{}
		c := m.newEngine(t, false, deletion.Options{MaxDestroyAttempts: 2, Observer: rec})
		m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(nil, ports.ErrPodNotFound).Times(2)
		m.policy.EXPECT().DestroyPU(gomock.Any(), gomock.Any()).Do(func(context.Context, ports.DestroyEvent) { panic("policy bug") }).Times(2)
		require.NoError(t, c.Track(entryWith("")))
		c.Sweep(context.Background())
		require.Equal(t, 1, c.Len(), "first panic: a failed attempt")
		c.Sweep(context.Background())
		assert.Zero(t, c.Len(), "second panic: the last attempt")
		failed := rec.Of(deletion.EventDestroyFailed)
		require.Len(t, failed, 2)
		assert.ErrorIs(t, failed[0].Err, deletion.ErrPortPanicked)
	})
	t.Run("Requeue and Observer", func(t *testing.T) {
		m := newMockPorts(t)
		logs := &logBuffer{}
		c := m.newEngine(t, true, deletion.Options{Logger: logs.logger(),
			Observer: deletion.ObserverFunc(func(deletion.Event) { panic("observer bug") })})
		m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
		m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb2", nil)
		m.policy.EXPECT().DestroyPU(gomock.Any(), gomock.Any()).Return(nil)
		m.requeuer.EXPECT().Requeue(gomock.Any(), live).Do(func(context.Context, *corev1.Pod) { panic("requeue bug") })
		require.NoError(t, c.Track(entryWith("sb1")))
		c.Sweep(context.Background())
		assert.Zero(t, c.Len())
		assert.NotEmpty(t, logs.lines("port panicked: Requeue"))
		assert.NotEmpty(t, logs.lines("observer panicked"))
	})
}

// TestBlockedRequeuerCannotWedgeTheEngine: a Requeuer that never returns
// until its context ends is cut off by CheckTimeout.
func TestBlockedRequeuerCannotWedgeTheEngine(t *testing.T) {
	verifyNoLeaks(t)
	m := newMockPorts(t)
	c := m.newEngine(t, true, deletion.Options{CheckTimeout: 50 * time.Millisecond})
	live := livePod(testUID, testNode)
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
	m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb2", nil)
	m.policy.EXPECT().DestroyPU(gomock.Any(), gomock.Any()).Return(nil)
	blocked := make(chan *corev1.Pod) // nobody reads it
	m.requeuer.EXPECT().Requeue(gomock.Any(), live).DoAndReturn(func(ctx context.Context, pod *corev1.Pod) error {
		select {
		case blocked <- pod:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	require.NoError(t, c.Track(entryWith("sb1")))
	began := time.Now()
	c.Sweep(context.Background())
	assert.Less(t, time.Since(began), 2*time.Second)
	assert.Zero(t, c.Len())
}

// TestObserverEvents: the Observer hears of tracks, checks, get failures
// and destroys, with the delay from the first check that found the PU must
// go to the successful destroy.
func TestObserverEvents(t *testing.T) {
	m := newMockPorts(t)
	rec := &deletiontest.Events{}
	clk := testingclock.NewFakeClock(time.Now())
	c := m.newEngine(t, false, deletion.Options{Observer: rec, Clock: clk})
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(nil, errBoom)
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(nil, ports.ErrPodNotFound).Times(2)
	gomock.InOrder(
		m.policy.EXPECT().DestroyPU(gomock.Any(), gomock.Any()).Return(errBoom),
		m.policy.EXPECT().DestroyPU(gomock.Any(), gomock.Any()).Return(nil),
	)
	require.NoError(t, c.Track(entryWith("")))
	c.Sweep(context.Background()) // get fails
	c.Sweep(context.Background()) // destroy fails
	clk.Step(3 * time.Second)
	c.Sweep(context.Background()) // destroyed

	assert.Len(t, rec.Of(deletion.EventTracked), 1)
	assert.Len(t, rec.Of(deletion.EventChecked), 3)
	require.Len(t, rec.Of(deletion.EventGetFailed), 1)
	assert.ErrorIs(t, rec.Of(deletion.EventGetFailed)[0].Err, errBoom)
	require.Len(t, rec.Of(deletion.EventDestroyFailed), 1)
	destroyed := rec.Of(deletion.EventDestroyed)
	require.Len(t, destroyed, 1)
	assert.Equal(t, ports.ReasonPodGone, destroyed[0].Reason)
	assert.Equal(t, 3*time.Second, destroyed[0].DestroyDelay)
	assert.Empty(t, rec.Of(deletion.EventAbandoned))
	assert.Equal(t, "Destroyed", deletion.EventDestroyed.String())
}

// TestNilPodAndNilErrorKeeps: a getter answering nothing at all is an error.
func TestNilPodAndNilErrorKeeps(t *testing.T) {
	m := newMockPorts(t)
	rec := &deletiontest.Events{}
	c := m.newEngine(t, false, deletion.Options{Observer: rec})
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(nil, nil)
	require.NoError(t, c.Track(entryWith("")))
	c.Sweep(context.Background())
	assert.Equal(t, 1, c.Len())
	assert.Len(t, rec.Of(deletion.EventGetFailed), 1)
}

// TestSweepStopsWithItsContext.
func TestSweepStopsWithItsContext(t *testing.T) {
	verifyNoLeaks(t)
	getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	c, err := deletion.New(getter, policy, deletion.Options{Workers: 1})
	require.NoError(t, err)
	for i := range 100 {
		require.NoError(t, c.Track(ports.PU{PUID: fmt.Sprint(i), Pod: types.NamespacedName{Namespace: "ns", Name: fmt.Sprint(i)}}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	began := time.Now()
	c.Sweep(ctx)
	assert.Less(t, time.Since(began), 2*time.Second)
	assert.Equal(t, 100, c.Len())
}

// TestEntriesOfOnePod: several PUs of one pod name (recreations) are all
// checked by TriggerPod, and removing some keeps the others reachable.
func TestEntriesOfOnePod(t *testing.T) {
	verifyNoLeaks(t)
	var gets atomic.Int32
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
		gets.Add(1)
		return livePod("b", testNode), nil
	})
	var destroyed sync.Map
	policy := ports.PolicyHandlerFunc(func(_ context.Context, ev ports.DestroyEvent) error {
		destroyed.Store(ev.PUID, ev.Reason)
		return nil
	})
	c, err := deletion.New(getter, policy, deletion.Options{SweepInterval: time.Hour})
	require.NoError(t, err)
	for _, id := range []string{"a", "b", "c", "d"} {
		require.NoError(t, c.Track(ports.PU{PUID: id, Pod: testKey}))
	}
	c.Sweep(context.Background())
	assert.Equal(t, []ports.PU{{PUID: "b", Pod: testKey}}, deletiontest.PUs(c))
	for _, id := range []string{"a", "c", "d"} {
		r, ok := destroyed.Load(id)
		assert.True(t, ok, id)
		assert.Equal(t, ports.ReasonUIDChanged, r, id)
	}

	synctest.Test(t, func(t *testing.T) {
		require.NoError(t, c.Track(ports.PU{PUID: "e", Pod: testKey}))
		stop := deletiontest.Start(t, c)
		gets.Store(0)
		c.TriggerPod(testKey)
		synctest.Wait()
		assert.Equal(t, []ports.PU{{PUID: "b", Pod: testKey}}, deletiontest.PUs(c))
		assert.Equal(t, int32(2), gets.Load(), "b and e checked, nothing else")
		stop()
	})
}

// docs/sdk/engine.md:7-12 and docs/sdk/restarts.md: the events of one PU reach the Observer in the order of the
// moves; a Requeuer that tracks the PU of the new sandbox under the same PUID leaves the journal holding it.
func TestJournalAfterRequeueRetrack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		pu := cl.CreatePod(nsKey(fmt.Sprintf("pod-%d", 1)), "node-a", "s1")
		journal := deletiontest.NewInventory()
		var e *deletion.Engine
		requeuer := ports.RequeuerFunc(func(_ context.Context, pod *corev1.Pod) error {
			cur, _ := cl.PU(nsKey(fmt.Sprintf("pod-%d", 1)))
			return e.Track(cur)
		})
		e = deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{NodeName: "node-a", SandboxExtractor: cl,
			Requeuer: requeuer, Observer: journal, Inventory: journal})
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		deletiontest.Start(t, e)
		deletiontest.Advance(time.Second)
		if err := cl.SetSandbox(nsKey(fmt.Sprintf("pod-%d", 1)), "s2"); err != nil {
			t.Fatal(err)
		}
		e.TriggerPod(nsKey(fmt.Sprintf("pod-%d", 1)))
		deletiontest.Advance(time.Second)
		got := journal.PUs()
		if len(got) != 1 || got[0].SandboxID != "s2" {
			t.Errorf("journal after the re-track: %v, want the PU of s2", got)
		}
	})
}

// TestEachCheckHasAtLeast99PercentOfCheckTimeout: Options.CheckTimeout
// says a check's deadline is between 99% and 100% of it after the check
// begins (a worker's checks in quick succession share one). One worker
// runs two checks, the second 50ms after the first: the second still has
// at least 99% of CheckTimeout, and a read that takes 98.9% of it succeeds.
func TestEachCheckHasAtLeast99PercentOfCheckTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 10 * time.Second
		c := deletiontest.NewCluster()
		a, b := c.CreatePod(nsKey("a"), testNode, ""), c.CreatePod(nsKey("b"), testNode, "")
		delay := map[string]time.Duration{"a": 50 * time.Millisecond, "b": timeout - timeout/100 - 10*time.Millisecond}
		var mu sync.Mutex
		var deadlines []time.Duration
		g := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			if d, ok := ctx.Deadline(); ok {
				mu.Lock()
				deadlines = append(deadlines, time.Until(d))
				mu.Unlock()
			}
			select {
			case <-time.After(delay[k.Name]):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return c.GetPod(ctx, k)
		})
		evs := &deletiontest.Events{}
		e := deletiontest.NewEngine(t, g, &deletiontest.Policy{}, deletion.Options{NodeName: testNode, Workers: 1, CheckTimeout: timeout, Observer: evs})
		require.NoError(t, e.Track(a))
		require.NoError(t, e.Track(b))
		deletiontest.Start(t, e)
		e.TriggerPod(a.Pod) // one worker: a's check, then b's
		e.TriggerPod(b.Pod)
		deletiontest.Advance(timeout + time.Second)
		mu.Lock()
		defer mu.Unlock()
		require.GreaterOrEqual(t, len(deadlines), 2)
		for _, d := range deadlines {
			assert.GreaterOrEqual(t, d, timeout-timeout/100, "every check's deadline is at least 99%% of CheckTimeout: %v", deadlines)
		}
		assert.Zero(t, evs.Count(deletion.EventGetFailed), "a read within 99%% of CheckTimeout succeeds")
	})
}
