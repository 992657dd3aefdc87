package deletion_test

// The dry run's promises: each PU is reported once per reason, however its
// sandbox flaps, and a long dry run holds bounded memory, even while the
// Inventory fails.

import (
	"context"
	"encoding/json"
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

// TestADryRunReportsAFlappingSandboxOncePerReason: with a SandboxProber
// that says the PU's sandbox is dead, the extractor answers s2, "", s3, ""
// in four Sweeps: rows 10, 12, 10, 12. SandboxChanged and SandboxDead are
// each reported once.
func TestADryRunReportsAFlappingSandboxOncePerReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		key := types.NamespacedName{Namespace: "ns", Name: "web"}
		answers := []string{"s2", "", "s3", ""}
		var mu sync.Mutex
		extractor := ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			return answers[0], nil
		})
		prober := ports.SandboxProberFunc(func(context.Context, *corev1.Pod, string) (bool, error) { return true, nil })
		rec := &deletiontest.Events{}
		c := deletiontest.NewEngine(t, getterOf(podAt(key, "web"), nil), newDestroyLog(), deletion.Options{DryRun: true,
			SandboxExtractor: extractor, SandboxProber: prober, Observer: rec, NodeName: testNode})
		require.NoError(t, c.Track(ports.PU{PUID: "web", Pod: key, SandboxID: "s1"}))
		for range 4 {
			c.Sweep(context.Background())
			mu.Lock()
			answers = answers[1:]
			mu.Unlock()
		}
		var reasons []ports.Reason
		for _, ev := range rec.Of(deletion.EventWouldDestroy) {
			reasons = append(reasons, ev.Reason)
		}
		assert.Equal(t, []ports.Reason{ports.ReasonSandboxChanged, ports.ReasonSandboxDead}, reasons)
		require.Len(t, c.Status(), 1, "the PU of a live pod stays tracked")
		assert.Equal(t, ports.ReasonSandboxDead, c.Status()[0].WouldDestroy, "the reason reported last")
		rows := c.Status()[0].ReportedRows
		assert.Equal(t, []int{10, 12}, rows.Rows(), "the rows it reported, each once")
		b, err := json.Marshal(rows)
		require.NoError(t, err)
		assert.JSONEq(t, `[10, 12]`, string(b), "a status page's reportedRows")
		var back deletion.RowSet
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, rows, back)
		assert.Error(t, json.Unmarshal([]byte(`[32]`), &back), "a row out of range")
		assert.Contains(t, fmt.Sprintf("%+v", c.Status()[0]), "ReportedRows:[10 12]", "a PUStatus printed tells its rows")
	})
}

// TestALongDryRunIsBoundedWhileTheInventoryFails: a dry run drops the PUs
// of pods gone for good "so that a long dry run does not grow", and
// remembers them so that the Inventory's list to come does not report
// them again; while that list keeps failing, what it remembers is bounded
// by what it tracks (and a few more), not by how many it has
// dropped. 20,000 PUs with PUIDs of 1,000 bytes are tracked, a thousand at
// a time, reported and dropped: the heap grows by far less than they take.
func TestALongDryRunIsBoundedWhileTheInventoryFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) { return nil, errors.New("journal unavailable") })
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), newDestroyLog(), deletion.Options{DryRun: true,
			Inventory: inv, CheckTimeout: time.Second, SweepInterval: time.Hour, Workers: 8})
		stop := deletiontest.Start(t, c)
		time.Sleep(3 * time.Second) // the checks begin without the list
		synctest.Wait()
		before := liveHeap()
		const n, size = 20_000, 1000
		for i := range n {
			id := strings.Repeat("x", size-8) + num8(i)
			require.NoError(t, c.Track(ports.PU{PUID: id, Pod: types.NamespacedName{Namespace: "ns", Name: "p"}}))
			if i%1000 == 999 {
				c.TriggerAll()
				synctest.Wait()
			}
		}
		require.Zero(t, c.Len(), "every PU was reported and dropped")
		grew := int64(liveHeap()) - int64(before)
		assert.Less(t, grew, int64(n*size/4),
			"the dry run holds %d KB more after %d PUs of %d-byte PUIDs were reported and dropped", grew/1024, n, size)
		runtime.KeepAlive(c)
		stop()
	})
}

// TestWouldDestroyIsTheReasonReportedLast protects, from PUStatus:
// "WouldDestroy is the reason a dry run reported last" (and CHANGELOG:
// "PUStatus.WouldDestroy is the reason reported last").
//
// In a dry run, a PU's sandbox flaps: replaced (SandboxChanged, reported),
// then none and dead (SandboxDead, reported), then replaced again (not
// reported: once per reason). The reason reported last is SandboxDead;
// Status says SandboxChanged.
func TestWouldDestroyIsTheReasonReportedLast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		key := types.NamespacedName{Namespace: "ns", Name: "a"}
		getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			return podAt(key, "a"), nil
		})
		var sandbox atomic.Value
		sandbox.Store("s2")
		extractor := ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) {
			return sandbox.Load().(string), nil
		})
		prober := ports.SandboxProberFunc(func(context.Context, *corev1.Pod, string) (bool, error) { return true, nil })
		var mu sync.Mutex
		var reported []ports.Reason
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventWouldDestroy {
				mu.Lock()
				reported = append(reported, ev.Reason)
				mu.Unlock()
			}
		})
		c := deletiontest.NewEngine(t, getter, newDestroyLog(), deletion.Options{DryRun: true, SandboxExtractor: extractor,
			SandboxProber: prober, Observer: obs})
		require.NoError(t, c.Track(ports.PU{PUID: "a", Pod: key, SandboxID: "s1"}))
		ctx := context.Background()
		c.Sweep(ctx) // s2: SandboxChanged
		sandbox.Store("")
		c.Sweep(ctx) // none, s1 dead: SandboxDead
		sandbox.Store("s2")
		c.Sweep(ctx) // SandboxChanged again, not reported

		mu.Lock()
		got := append([]ports.Reason(nil), reported...)
		mu.Unlock()
		require.Equal(t, []ports.Reason{ports.ReasonSandboxChanged, ports.ReasonSandboxDead}, got)
		st := c.Status()
		require.Len(t, st, 1)
		assert.Equal(t, got[len(got)-1], st[0].WouldDestroy,
			"WouldDestroy is not the reason the dry run reported last")
	})
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
		inv := deletiontest.NewInventory(x)
		inv.FailNextLists(1, errBoom)
		rec := &deletiontest.Events{}
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), newDestroyLog(), deletion.Options{
			DryRun: true, Inventory: inv, Observer: rec, SweepInterval: time.Second, RetryMinDelay: time.Second})
		require.NoError(t, c.Track(x))
		deletiontest.Start(t, c)
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		require.Len(t, rec.Of(deletion.EventWouldDestroy), 1, "reported and dropped before the list's retry")
		time.Sleep(time.Minute)
		synctest.Wait()

		assert.Len(t, rec.Of(deletion.EventWouldDestroy), 1, "x is reported %d times in one run", len(rec.Of(deletion.EventWouldDestroy)))
	})
}

// TestADryRunLeavesNoDestroyPending: in a dry run no DestroyPU is ever
// called, so no PU waits for its destroy; Backlog().OldestGoneSince is
// "zero when none waits" (it is podsweeper_oldest_pending_destroy_seconds).
// A dry run with DestroyTerminated reports the PU of a finished pod (row
// 11) once and keeps it tracked; ten minutes later nothing is pending.
func TestADryRunLeavesNoDestroyPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := deletiontest.NewCluster()
		key := addPod(w, "done", "done", testNode, "", corev1.PodSucceeded)
		policy := newDestroyLog()
		rec := &deletiontest.Events{}
		c := deletiontest.NewEngine(t, w, policy, deletion.Options{DryRun: true, DestroyTerminated: true, NodeName: testNode, Observer: rec})
		require.NoError(t, c.Track(ports.PU{PUID: "done", Pod: key}))
		deletiontest.Start(t, c)
		time.Sleep(10 * time.Minute)
		synctest.Wait()

		reported := rec.Of(deletion.EventWouldDestroy)
		require.Len(t, reported, 1, "reported once")
		assert.Equal(t, ports.ReasonPodTerminated, reported[0].Reason)
		require.Len(t, c.Status(), 1, "a finished pod's PU stays tracked in a dry run")
		assert.Empty(t, policy.starts())
		b := c.Backlog()
		assert.True(t, b.OldestGoneSince.IsZero(), "no destroy waits in a dry run, yet OldestGoneSince is %v old",
			time.Since(b.OldestGoneSince))
	})
}

// deletion.Options.DryRun: "a PU that would go is reported once per reason (EventWouldDestroy, an info log line,
// PUStatus.WouldDestroy) and kept".
func TestDryRunReportsOncePerReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		pu := cl.CreatePod(nsKey(fmt.Sprintf("pod-%d", 1)), "node-a", "s1")
		var logs logBuffer
		events := &deletiontest.Events{}
		policy := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cl, policy, deletion.Options{NodeName: "node-a", DryRun: true, SandboxExtractor: cl,
			Observer: events, Logger: logs.logger(), SweepInterval: time.Second})
		if err := e.Track(pu); err != nil {
			t.Fatal(err)
		}
		deletiontest.Start(t, e)
		deletiontest.Advance(2 * time.Second)
		if err := cl.SetSandbox(nsKey(fmt.Sprintf("pod-%d", 1)), "s2"); err != nil {
			t.Fatal(err)
		}
		deletiontest.Advance(10 * time.Second)
		if err := cl.SetSandbox(nsKey(fmt.Sprintf("pod-%d", 1)), "s3"); err != nil {
			t.Fatal(err)
		}
		deletiontest.Advance(10 * time.Second)
		if n := events.Count(deletion.EventWouldDestroy); n != 1 {
			t.Errorf("%d EventWouldDestroy, want 1", n)
		}
		if n := len(logs.lines("dry run: PU would be destroyed")); n != 1 {
			t.Errorf("%d dry-run lines, want 1", n)
		}
		if st := e.Status(); len(st) != 1 || st[0].WouldDestroy != ports.ReasonSandboxChanged {
			t.Errorf("Status: %+v", st)
		}
		if policy.CallCount() != 0 {
			t.Errorf("a dry run called DestroyPU")
		}
	})
}

// refusingDryRunner is a PolicyHandler that refuses some destroys itself,
// and tells so in a dry run: refuse answers DryRunDestroyPU (and would
// answer DestroyPU).
type refusingDryRunner struct {
	refuse  atomic.Pointer[error]
	asked   atomic.Int32
	destroy atomic.Int32
}

func (p *refusingDryRunner) DestroyPU(context.Context, ports.DestroyEvent) error {
	p.destroy.Add(1)
	return nil
}

func (p *refusingDryRunner) DryRunDestroyPU(context.Context, ports.DestroyEvent) error {
	p.asked.Add(1)
	if err := p.refuse.Load(); err != nil {
		return *err
	}
	return nil
}

var _ ports.DryRunner = (*refusingDryRunner)(nil)

// TestADryRunReportsOnlyWhatTheDryRunnerWouldDestroy: in a dry run the
// engine asks a PolicyHandler that is a ports.DryRunner whether it would
// destroy the PU of a gone pod, never DestroyPU: while it refuses, nothing
// is reported and the refusal is retried as DestroyPU's failure would be;
// once it would destroy, the PU is reported (and dropped, its pod gone),
// once.
func TestADryRunReportsOnlyWhatTheDryRunnerWouldDestroy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound })
		policy := &refusingDryRunner{}
		running := errors.New("the sandbox runs")
		policy.refuse.Store(&running)
		events := &deletiontest.Events{}
		c := deletiontest.NewEngine(t, getter, policy, deletion.Options{DryRun: true, Observer: events, RetryMinDelay: time.Second})
		deletiontest.Start(t, c)
		require.NoError(t, c.Track(pu("a")))
		deletiontest.Advance(9 * time.Second) // its first check, then retries after 1 s and 2 s
		assert.Zero(t, events.Count(deletion.EventWouldDestroy), "nothing reported while the DryRunner refuses")
		assert.GreaterOrEqual(t, policy.asked.Load(), int32(2), "the refusal is retried")
		assert.Equal(t, 1, c.Len(), "the PU is kept")
		failed := events.Of(deletion.EventDestroyFailed)
		require.NotEmpty(t, failed)
		assert.ErrorIs(t, failed[0].Err, running, "the refusal is a failure of the destroy")

		policy.refuse.Store(nil)
		deletiontest.Advance(10 * time.Second)
		reported := events.Of(deletion.EventWouldDestroy)
		require.Len(t, reported, 1, "reported once the DryRunner would destroy")
		assert.Equal(t, ports.ReasonPodGone, reported[0].Reason)
		assert.True(t, reported[0].Dropped, "its pod gone: dropped from memory")
		assert.Zero(t, c.Len())
		assert.Zero(t, policy.destroy.Load(), "a dry run never calls DestroyPU")
		assert.Zero(t, events.Count(deletion.EventDestroyed))
	})
}

// Event.DestroyCalls: "the number of DestroyPU calls so far for this PU" (in a dry run, the DryRunner's calls). A
// DryRunner's "would destroy" ends the row of failures (MaxDestroyAttempts, PUStatus.Attempts), not the count.
func TestADryRunCountsEveryCallThoughAWouldDestroyEndsTheRow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		getter := ports.PodGetterFunc(func(_ context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			p := deletiontest.Pod(k, types.UID("uid-"+k.Name), "")
			p.Status.Phase = corev1.PodFailed // kept in memory once reported: its pod may still be read
			return p, nil
		})
		policy := &refusingDryRunner{}
		running := errors.New("the sandbox runs")
		policy.refuse.Store(&running)
		events := &deletiontest.Events{}
		c := deletiontest.NewEngine(t, getter, policy, deletion.Options{DryRun: true, DestroyTerminated: true, Observer: events,
			MaxDestroyAttempts: 2})
		require.NoError(t, c.Track(swPU("a")))
		c.Sweep(t.Context()) // refused: call 1
		policy.refuse.Store(nil)
		c.Sweep(t.Context()) // would destroy: call 2, the row ended
		policy.refuse.Store(&running)
		c.Sweep(t.Context()) // refused: call 3, the first of a new row
		require.Equal(t, int32(3), policy.asked.Load(), "%+v", events.All())
		var calls []int
		for _, ev := range events.Of(deletion.EventDestroyFailed) {
			calls = append(calls, ev.DestroyCalls)
		}
		assert.Equal(t, []int{1, 3}, calls, "DestroyCalls counts every call so far")
		assert.Zero(t, events.Count(deletion.EventAbandoned), "a would-destroy ended the row: two failures, not in a row")
		st := c.Status()
		require.Len(t, st, 1)
		assert.Equal(t, 1, st[0].Attempts, "the row of failures since the would-destroy")
	})
}
