package deletiontest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
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

var (
	web     = types.NamespacedName{Namespace: "shop", Name: "web-0"}
	errBoom = errors.New("boom")
)

// TestAMissingPodIsNotFound: every answer about a pod the cluster does not
// hold reads as not found, for errors.Is and for the engine.
func TestAMissingPodIsNotFound(t *testing.T) {
	c := deletiontest.NewCluster()
	_, err := c.GetPod(context.Background(), web)
	assert.ErrorIs(t, err, ports.ErrPodNotFound)
	assert.True(t, deletion.IsNotFound(err))
	_, err = c.RecreatePod(web, "")
	assert.ErrorIs(t, err, ports.ErrPodNotFound)
	assert.ErrorIs(t, c.MovePod(web, "node-b"), ports.ErrPodNotFound)
	assert.ErrorIs(t, c.SetSandbox(web, "sb"), ports.ErrPodNotFound)
	assert.ErrorIs(t, c.KillSandbox(web), ports.ErrPodNotFound)
	assert.ErrorIs(t, c.SetPhase(web, corev1.PodFailed), ports.ErrPodNotFound)
	assert.False(t, c.DeletePod(web))
	_, ok := c.PU(web)
	assert.False(t, ok)
}

// TestAPodIsCreatedMovedRecreatedAndDeleted: CreatePod answers the PU of
// the pod GetPod then reads; MovePod keeps the UID; RecreatePod keeps the
// name and node with a new UID; DeletePod removes it.
func TestAPodIsCreatedMovedRecreatedAndDeleted(t *testing.T) {
	ctx := context.Background()
	c := deletiontest.NewCluster()
	pu := c.CreatePod(web, "node-a", "sb-1")
	assert.Equal(t, ports.PU{PUID: "uid-1", Pod: web, SandboxID: "sb-1"}, pu)
	p, err := c.GetPod(ctx, web)
	require.NoError(t, err)
	assert.Equal(t, types.UID("uid-1"), p.UID)
	assert.Equal(t, "node-a", p.Spec.NodeName)
	assert.Equal(t, corev1.PodRunning, p.Status.Phase)
	id, err := c.SandboxID(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, "sb-1", id)

	require.NoError(t, c.MovePod(web, "node-b"))
	p, err = c.GetPod(ctx, web)
	require.NoError(t, err)
	assert.Equal(t, "node-b", p.Spec.NodeName)
	assert.Equal(t, types.UID("uid-1"), p.UID)

	again, err := c.RecreatePod(web, "sb-2")
	require.NoError(t, err)
	assert.Equal(t, ports.PU{PUID: "uid-2", Pod: web, SandboxID: "sb-2"}, again)
	p, err = c.GetPod(ctx, web)
	require.NoError(t, err)
	assert.Equal(t, "node-b", p.Spec.NodeName, "recreated on the node it was on")
	id, err = c.SandboxID(ctx, deletiontest.Pod(web, "uid-1", "node-b"))
	require.NoError(t, err)
	assert.Empty(t, id, "the old pod's UID runs in no sandbox")

	assert.True(t, c.DeletePod(web))
	_, err = c.GetPod(ctx, web)
	assert.ErrorIs(t, err, ports.ErrPodNotFound)
	assert.Equal(t, 4, c.Reads(web))
	assert.Equal(t, 4, c.AllReads())
}

// TestAddPodKeepsThePodItIsGiven: AddPod stores a copy of the pod as given
// (its UID and phase), and GetPod answers copies the caller may modify.
func TestAddPodKeepsThePodItIsGiven(t *testing.T) {
	c := deletiontest.NewCluster()
	pod := deletiontest.Pod(web, "mine", "node-a")
	pod.Status.Phase = corev1.PodSucceeded
	pu := c.AddPod(pod, "sb")
	assert.Equal(t, ports.PU{PUID: "mine", Pod: web, SandboxID: "sb"}, pu)
	pod.Spec.NodeName = "changed by the caller"

	got, err := c.GetPod(context.Background(), web)
	require.NoError(t, err)
	assert.Equal(t, "node-a", got.Spec.NodeName)
	assert.Equal(t, corev1.PodSucceeded, got.Status.Phase)
	got.Spec.NodeName = "changed by a reader"
	again, err := c.GetPod(context.Background(), web)
	require.NoError(t, err)
	assert.Equal(t, "node-a", again.Spec.NodeName)

	assert.Equal(t, "uid-1", c.AddPod(deletiontest.Pod(types.NamespacedName{Namespace: "shop", Name: "db-0"}, "", "n"), "").PUID,
		"a pod without a UID is given one")
	assert.Len(t, c.PUs(), 2)
}

// TestFailedReadsAnswerTheirErrorUntilUndone: FailReads fails one pod's
// reads, FailAllReads every read, each until set to nil.
func TestFailedReadsAnswerTheirErrorUntilUndone(t *testing.T) {
	ctx := context.Background()
	c := deletiontest.NewCluster()
	c.CreatePod(web, "node-a", "")
	other := c.CreatePod(types.NamespacedName{Namespace: "shop", Name: "db-0"}, "node-a", "").Pod

	c.FailReads(web, ports.ErrPodNotFound) // a lagging cache
	_, err := c.GetPod(ctx, web)
	assert.True(t, deletion.IsNotFound(err))
	_, err = c.GetPod(ctx, other)
	assert.NoError(t, err)
	c.FailAllReads(errBoom)
	_, err = c.GetPod(ctx, other)
	assert.ErrorIs(t, err, errBoom)
	c.FailAllReads(nil)
	c.FailReads(web, nil)
	_, err = c.GetPod(ctx, web)
	assert.NoError(t, err)

	c.FailSandboxIDs(errBoom)
	_, err = c.SandboxID(ctx, deletiontest.Pod(web, "uid-1", "node-a"))
	assert.ErrorIs(t, err, errBoom)
}

// TestAHungReadAnswersOnceReleasedOrItsContextEnds: HangReads and
// HangAllReads hold reads until released, then answer as the cluster
// stands; a read whose context ends answers its context's error.
func TestAHungReadAnswersOnceReleasedOrItsContextEnds(t *testing.T) {
	for _, all := range []bool{false, true} {
		t.Run(fmt.Sprintf("all=%v", all), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := deletiontest.NewCluster()
				hang := func() func() { return c.HangReads(web) }
				if all {
					hang = c.HangAllReads
				}
				release := hang()
				var got error
				answered := make(chan struct{})
				go func() {
					defer close(answered)
					_, got = c.GetPod(context.Background(), web)
				}()
				time.Sleep(time.Hour)
				synctest.Wait()
				select {
				case <-answered:
					t.Fatal("a hung read answered before its release")
				default:
				}
				c.CreatePod(web, "node-a", "")
				release()
				release()
				<-answered
				assert.NoError(t, got, "the read answers the pod created while it hung")

				hang()
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				_, err := c.GetPod(ctx, web)
				assert.ErrorIs(t, err, context.DeadlineExceeded)
			})
		})
	}
}

// TestASandboxIsDeadOnceNoPodRunsInIt: a sandbox a pod ran in is dead once
// it was killed, replaced or its pod deleted; the current one is not, nor
// one the cluster never saw.
func TestASandboxIsDeadOnceNoPodRunsInIt(t *testing.T) {
	ctx := context.Background()
	c := deletiontest.NewCluster()
	dead := func(id string) bool {
		d, err := c.SandboxDead(ctx, nil, id)
		require.NoError(t, err)
		return d
	}
	pu := c.CreatePod(web, "node-a", "sb-1")
	assert.False(t, dead("sb-1"))
	assert.False(t, dead("never-seen"))
	require.NoError(t, c.SetSandbox(web, "sb-2"))
	assert.True(t, dead("sb-1"))
	require.NoError(t, c.KillSandbox(web))
	assert.True(t, dead("sb-2"))
	id, err := c.SandboxID(ctx, deletiontest.Pod(web, types.UID(pu.PUID), "node-a"))
	require.NoError(t, err)
	assert.Empty(t, id, "a killed sandbox's pod runs in none")
	require.NoError(t, c.SetSandbox(web, "sb-3"))
	c.DeletePod(web)
	assert.True(t, dead("sb-3"))
}

// TestThePolicyAnswersAsAsked: FailNext's error for its n calls, then
// Fail's, then SetAnswer's, then success; every call is recorded with its
// answer, and Destroyed holds the successful ones.
func TestThePolicyAnswersAsAsked(t *testing.T) {
	ctx := context.Background()
	p := &deletiontest.Policy{}
	ev := func(puid string) ports.DestroyEvent {
		return ports.DestroyEvent{PUID: puid, Pod: web, Reason: ports.ReasonPodGone}
	}
	permanent := ports.Permanent(errBoom)
	p.FailNext(2, permanent)
	p.Fail(errors.New("fail"))
	assert.True(t, ports.IsPermanent(p.DestroyPU(ctx, ev("a"))))
	assert.True(t, ports.IsPermanent(p.DestroyPU(ctx, ev("b"))))
	assert.EqualError(t, p.DestroyPU(ctx, ev("a")), "fail")
	p.Fail(nil)
	p.SetAnswer(func(_ context.Context, ev ports.DestroyEvent) error {
		if ev.PUID == "b" {
			return errBoom
		}
		return nil
	})
	assert.ErrorIs(t, p.DestroyPU(ctx, ev("b")), errBoom)
	assert.NoError(t, p.DestroyPU(ctx, ev("a")))
	p.FailNext(1, nil)
	assert.NoError(t, p.DestroyPU(ctx, ev("b")), "FailNext(n, nil) succeeds, before SetAnswer's")
	p.SetAnswer(nil)
	assert.NoError(t, p.DestroyPU(ctx, ev("b")))

	assert.Equal(t, 7, p.CallCount())
	assert.Equal(t, 3, p.Count("a"))
	assert.Equal(t, []ports.DestroyEvent{ev("a"), ev("b"), ev("b")}, p.Destroyed())
	calls := p.Calls()
	require.Len(t, calls, 7)
	assert.True(t, calls[0].Done)
	assert.Equal(t, permanent, calls[0].Err)
	assert.Len(t, p.CallsOf("b"), 4)
}

// TestAHungDestroyAnswersOnceReleasedOrItsContextEnds: a call under Hang
// is recorded at once, not Done, and answers once released, or its
// context's error when that ends first.
func TestAHungDestroyAnswersOnceReleasedOrItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &deletiontest.Policy{}
		release := p.Hang()
		answered := make(chan error, 1)
		go func() { answered <- p.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "a"}) }()
		synctest.Wait()
		calls := p.Calls()
		require.Len(t, calls, 1, "recorded as it starts")
		assert.False(t, calls[0].Done)
		assert.Equal(t, time.Now(), calls[0].At)
		release()
		assert.NoError(t, <-answered)
		assert.Len(t, p.Destroyed(), 1)

		p.Hang()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		assert.ErrorIs(t, p.DestroyPU(ctx, ports.DestroyEvent{PUID: "b"}), context.DeadlineExceeded)
	})
}

// TestTheInventoryKeepsWhatTheEngineRecords follows Options.Inventory's
// contract as adapters/bolt's Journal does: what Track and a check record
// is listed, what is destroyed, abandoned or untracked is not, a forgotten
// PU is never brought back by its EventAdopted, and a forget of a PU
// tracked again for another sandbox keeps the new one.
func TestTheInventoryKeepsWhatTheEngineRecords(t *testing.T) {
	bare := ports.PU{PUID: "a", Pod: web}
	withSandbox := ports.PU{PUID: "a", Pod: web, SandboxID: "sb-1"}
	inv := deletiontest.NewInventory()
	inv.Observe(deletion.Event{Kind: deletion.EventTracked, PU: bare})
	assert.Equal(t, []ports.PU{bare}, inv.PUs())
	inv.Observe(deletion.Event{Kind: deletion.EventAdopted, PU: withSandbox})
	assert.Equal(t, []ports.PU{withSandbox}, inv.PUs())
	inv.Observe(deletion.Event{Kind: deletion.EventTracked, PU: bare})
	assert.Equal(t, []ports.PU{withSandbox}, inv.PUs(), "a Track without a sandbox keeps the one recorded")
	inv.Observe(deletion.Event{Kind: deletion.EventWouldDestroy, PU: withSandbox})
	inv.Observe(deletion.Event{Kind: deletion.EventChecked, PU: withSandbox})
	assert.Equal(t, []ports.PU{withSandbox}, inv.PUs())

	for _, k := range []deletion.EventKind{deletion.EventDestroyed, deletion.EventAbandoned, deletion.EventUntracked} {
		inv.Observe(deletion.Event{Kind: deletion.EventTracked, PU: withSandbox})
		inv.Observe(deletion.Event{Kind: k, PU: withSandbox})
		assert.Empty(t, inv.PUs(), "%v forgets the PU", k)
		inv.Observe(deletion.Event{Kind: deletion.EventAdopted, PU: withSandbox})
		assert.Empty(t, inv.PUs(), "an EventAdopted does not bring back a PU %v forgot", k)
	}

	again := ports.PU{PUID: "a", Pod: web, SandboxID: "sb-2"}
	inv.Observe(deletion.Event{Kind: deletion.EventTracked, PU: again})
	inv.Observe(deletion.Event{Kind: deletion.EventDestroyed, PU: withSandbox})
	assert.Equal(t, []ports.PU{again}, inv.PUs(), "the forget of the old PU keeps the one tracked again")
}

// TestTheInventoryListsWhatItHoldsOrFails: ListPUs answers what is held,
// sorted, or FailNextLists' error for its n calls, then FailLists' until
// undone; every call is counted.
func TestTheInventoryListsWhatItHoldsOrFails(t *testing.T) {
	ctx := context.Background()
	b := ports.PU{PUID: "b", Pod: web}
	a := ports.PU{PUID: "a", Pod: web, SandboxID: "sb"}
	inv := deletiontest.NewInventory(b)
	inv.Add(a)
	inv.FailNextLists(1, errBoom)
	inv.FailLists(errors.New("down"))
	_, err := inv.ListPUs(ctx)
	assert.ErrorIs(t, err, errBoom)
	_, err = inv.ListPUs(ctx)
	assert.EqualError(t, err, "down")
	inv.FailLists(nil)
	got, err := inv.ListPUs(ctx)
	require.NoError(t, err)
	assert.Equal(t, []ports.PU{a, b}, got)
	assert.Equal(t, 3, inv.Lists())
}

// TestEventsRecordsEveryEventInOrder.
func TestEventsRecordsEveryEventInOrder(t *testing.T) {
	var e deletiontest.Events
	for _, k := range []deletion.EventKind{deletion.EventTracked, deletion.EventChecked, deletion.EventTracked} {
		e.Observe(deletion.Event{Kind: k})
	}
	assert.Len(t, e.All(), 3)
	assert.Equal(t, deletion.EventChecked, e.All()[1].Kind)
	assert.Len(t, e.Of(deletion.EventTracked), 2)
	assert.Len(t, e.Of(deletion.EventTracked, deletion.EventChecked), 3)
	assert.Equal(t, 1, e.Count(deletion.EventChecked))
}

// TestStartRunsTheEngineUntilTheTestEnds: Start's engine runs (ready) in
// the bubble, and is stopped (Start returned) once the test's cleanup ran.
func TestStartRunsTheEngineUntilTheTestEnds(t *testing.T) {
	var engine *deletion.Engine
	t.Run("bubble", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			engine = deletiontest.NewEngine(t, deletiontest.NewCluster(), &deletiontest.Policy{}, deletion.Options{})
			deletiontest.Start(t, engine)
			deletiontest.Advance(time.Second)
			require.NoError(t, engine.ReadinessCheck(nil))
		})
	})
	assert.ErrorContains(t, engine.LivenessCheck(nil), "Start has returned")
}

// TestStopReportsAnErrorOfStart: an engine started twice returns
// deletion.ErrAlreadyStarted from its second Start, and that stop marks
// the test failed.
func TestStopReportsAnErrorOfStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		engine := deletiontest.NewEngine(t, deletiontest.NewCluster(), &deletiontest.Policy{}, deletion.Options{})
		deletiontest.Start(t, engine)
		synctest.Wait()
		tb := &failures{TB: t}
		stop := deletiontest.Start(tb, engine)
		stop()
		stop()
		require.Len(t, tb.errors, 1, "reported once")
		assert.Contains(t, tb.errors[0], deletion.ErrAlreadyStarted.Error())
	})
}

// TestNewEngineFailsTheTestOnInvalidOptions.
func TestNewEngineFailsTheTestOnInvalidOptions(t *testing.T) {
	tb := &failures{TB: t}
	done := make(chan struct{})
	go func() { // Fatalf ends this goroutine
		defer close(done)
		deletiontest.NewEngine(tb, deletiontest.NewCluster(), &deletiontest.Policy{}, deletion.Options{Workers: -1})
	}()
	<-done
	require.Len(t, tb.errors, 1)
	assert.Contains(t, tb.errors[0], deletion.ErrInvalidOptions.Error())
}

// failures is a testing.TB that records the failures reported to it
// instead of failing the test.
type failures struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (f *failures) Helper() {}

func (f *failures) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func (f *failures) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}

// TestAUIDIsNeverGivenTwice: CreatePod gives "a UID of its own" and
// RecreatePod "a new UID", as the API server does: never the UID of a pod
// deleted since, whether the kit or the test (AddPod) chose it, so that
// the engine sees the pod created anew as another pod and destroys the
// deleted one's PU (UIDChanged).
func TestAUIDIsNeverGivenTwice(t *testing.T) {
	for _, recreate := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			c := deletiontest.NewCluster()
			first := c.AddPod(deletiontest.Pod(web, "uid-1", "node-a"), "")
			if recreate {
				first = c.CreatePod(web, "node-a", "") // uid-2, replacing uid-1
			}
			policy := &deletiontest.Policy{}
			e := deletiontest.NewEngine(t, c, policy, deletion.Options{})
			require.NoError(t, e.Track(first))
			deletiontest.Start(t, e)
			var again ports.PU
			if recreate {
				c.DeletePod(web)
				c.AddPod(deletiontest.Pod(web, "uid-1", "node-a"), "")
				var err error
				again, err = c.RecreatePod(web, "")
				require.NoError(t, err)
			} else {
				c.DeletePod(web)
				again = c.CreatePod(web, "node-a", "")
			}
			assert.NotEqual(t, first.PUID, again.PUID, "recreate %v", recreate)
			assert.NotEqual(t, "uid-1", again.PUID, "recreate %v", recreate)
			e.Sweep(context.Background())
			assert.Equal(t, 1, policy.CallCount(), "the deleted pod's PU is destroyed (recreate %v)", recreate)
		})
	}
}
