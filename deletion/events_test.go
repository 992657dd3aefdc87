package deletion_test

// What the Observer is told: each Event kind carries the fields its doc
// lists, and the others are zero; an Observer that panics on every event is
// recovered, keeps neither the other Observers from being told nor a PU
// from its destroy.

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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// TestAnAdoptedEventCarriesOnlyItsFields protects, from Event: "Which
// fields are set depends on Kind; the others are zero", with Verdict "the
// verdict of the check (EventChecked, EventVetoed, a check's
// EventAdopted)" and EventAdopted: "PU holds it". A check records a PU's
// first sandbox: its EventAdopted carries the PU and row 7's verdict, and
// nothing else.
func TestAnAdoptedEventCarriesOnlyItsFields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		key := types.NamespacedName{Namespace: "ns", Name: "a"}
		getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			return podAt(key, "a"), nil
		})
		extractor := ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) { return "s1", nil })
		var mu sync.Mutex
		var adopted []deletion.Event
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventAdopted {
				mu.Lock()
				adopted = append(adopted, ev)
				mu.Unlock()
			}
		})
		c := deletiontest.NewEngine(t, getter, newDestroyLog(), deletion.Options{SandboxExtractor: extractor, Observer: obs})
		require.NoError(t, c.Track(ports.PU{PUID: "a", Pod: key}))
		c.Sweep(context.Background())
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, adopted, 1)
		want := deletion.Event{Kind: deletion.EventAdopted, PU: ports.PU{PUID: "a", Pod: key, SandboxID: "s1"},
			Verdict: deletion.Verdict{Action: deletion.Adopt, SandboxID: "s1", Row: 7}}
		assert.Equal(t, want, adopted[0], "EventAdopted sets a field its Kind does not list")
	})
}

// Observer: "A panic in it is recovered and logged." Observers: "A panic in one does not keep the others from being
// told". docs/sdk/engine.md:12-13: "Ports that fail or panic cannot lose a PU". An Observer panics on every event.
func TestAuditHoldsPanickingObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		inv := deletiontest.NewInventory()
		boom := deletion.ObserverFunc(func(deletion.Event) { panic("metrics exploded") })
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Observer: deletion.Observers(boom, inv), Inventory: inv})
		pu := cluster.CreatePod(key("a"), "node-a", "")
		if err := engine.Track(pu); err != nil {
			t.Fatal(err)
		}
		if len(inv.PUs()) != 1 {
			t.Errorf("journal after Track: %v", inv.PUs())
		}
		deletiontest.Start(t, engine)
		cluster.DeletePod(pu.Pod)
		deletiontest.Advance(time.Minute)
		if policy.CallCount() != 1 || engine.Len() != 0 || len(inv.PUs()) != 0 {
			t.Errorf("%d destroys, %d tracked, journal %v", policy.CallCount(), engine.Len(), inv.PUs())
		}
	})
}

// TestAFailedReadAtARetryKeepsWhenThePUWasFoundGone: the pod is gone, the
// first DestroyPU fails, and GetPod fails at the retry (the API server is
// down) before the destroy succeeds. The failed read learned nothing:
// Backlog.OldestGoneSince stays the first finding through the outage, and
// EventDestroyed.DestroyDelay counts from it.
func TestAFailedReadAtARetryKeepsWhenThePUWasFoundGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var apiDown atomic.Bool
		getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			if apiDown.Load() {
				return nil, errors.New("API server unavailable")
			}
			return nil, ports.ErrPodNotFound
		})
		policy := &deletiontest.Policy{}
		policy.FailNext(1, errors.New("policy engine busy"))
		events := &deletiontest.Events{}
		c := deletiontest.NewEngine(t, getter, policy, deletion.Options{Observer: events, RetryMinDelay: time.Second})
		deletiontest.Start(t, c)
		require.NoError(t, c.Track(pu("a")))
		for policy.CallCount() == 0 {
			deletiontest.Advance(100 * time.Millisecond)
		}
		apiDown.Store(true)
		deletiontest.Advance(2 * time.Second) // the retry comes, and its GetPod fails
		assert.False(t, c.Backlog().OldestGoneSince.IsZero(), "the PU still waits for its destroy")
		assert.False(t, c.Backlog().OldestGoneSince.After(policy.Calls()[0].At), "since it was first found gone")
		apiDown.Store(false)
		for policy.CallCount() < 2 {
			deletiontest.Advance(100 * time.Millisecond)
		}
		deletiontest.Advance(time.Second)
		destroyed := events.Of(deletion.EventDestroyed)
		require.Len(t, destroyed, 1)
		calls := policy.Calls()
		assert.GreaterOrEqual(t, destroyed[0].DestroyDelay, calls[1].At.Sub(calls[0].At), "DestroyDelay counts from the first finding")
	})
}

// TestASweepThatSeesThePodAliveEndsTheWaitForARetry: a lagging cache says
// the pod is gone, the destroy fails and waits for its retry; a Sweep
// (which checks a PU waiting for a retry early) then sees the pod alive:
// the PU no longer waits for a destroy (Backlog, Status), as one waiting
// for its turn does not.
func TestASweepThatSeesThePodAliveEndsTheWaitForARetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		c := deletiontest.NewEngine(t, cluster, policy, deletion.Options{RetryMinDelay: time.Minute, RetryMaxDelay: time.Hour})
		p := cluster.CreatePod(types.NamespacedName{Namespace: "ns", Name: "web-0"}, "", "")
		require.NoError(t, c.Track(p))
		cluster.FailReads(p.Pod, ports.ErrPodNotFound) // a lagging cache
		policy.FailNext(1, errors.New("policy engine busy"))
		c.Sweep(context.Background())
		require.Equal(t, 1, c.Backlog().Retrying, "the PU waits for its retry")

		cluster.FailReads(p.Pod, nil) // the cache catches up: the pod lives
		time.Sleep(time.Second)
		c.Sweep(context.Background())
		b, st := c.Backlog(), c.Status()[0]
		assert.Zero(t, b.Retrying, "no PU waits for a retry")
		assert.True(t, b.OldestGoneSince.IsZero(), "no PU waits for a destroy")
		assert.Equal(t, "idle", st.State)
		assert.True(t, st.NextAttempt.IsZero())
		assert.Equal(t, 1, policy.CallCount())
	})
}

// TestTheFirstListIsTrackedBeforeAnyCheckHoweverLongItTakes: the Inventory
// answers at once, and tracking its answer takes longer than the list's
// deadline and a second (a journal's commit of 200 ms for each
// EventTracked, one worker). The PU the informer tracked without a sandbox
// before Start takes the sandbox the Inventory recorded before its first
// check, so that its sandbox, replaced while the agent was down, is
// destroyed as changed with the old one, not adopted.
func TestTheFirstListIsTrackedBeforeAnyCheckHoweverLongItTakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		var listed []ports.PU
		for i := range 20 {
			listed = append(listed, cluster.CreatePod(types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("p%02d", i)}, "", fmt.Sprintf("sb-%d", i)))
		}
		web := cluster.CreatePod(types.NamespacedName{Namespace: "ns", Name: "web-0"}, "", "sb-old") // as the last run recorded it
		listed = append(listed, web)
		require.NoError(t, cluster.SetSandbox(web.Pod, "sb-new")) // replaced while the agent was down
		inventory := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) { return listed, nil })
		journal := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventTracked {
				time.Sleep(200 * time.Millisecond) // a commit
			}
		})
		policy := &deletiontest.Policy{}
		c := deletiontest.NewEngine(t, cluster, policy, deletion.Options{SandboxExtractor: cluster, Inventory: inventory,
			Observer: journal, Workers: 1, CheckTimeout: time.Second})
		require.NoError(t, c.Track(ports.PU{PUID: web.PUID, Pod: web.Pod})) // the pod informer's add, without a sandbox
		c.TriggerPod(web.Pod)
		deletiontest.Start(t, c)
		deletiontest.Advance(time.Minute)
		calls := policy.CallsOf(web.PUID)
		require.Len(t, calls, 1)
		assert.Equal(t, ports.ReasonSandboxChanged, calls[0].Event.Reason)
		assert.Equal(t, "sb-old", calls[0].Event.SandboxID)
	})
}

// Observers "returns an Observer that tells each of obs but the nil ones": of none, or of nil ones only, it is an
// Observer that tells no one, which New takes (not a typed nil, which it refuses as a port not given).
func TestObserversOfNoneIsAnObserverNewTakes(t *testing.T) {
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound })
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	var nilFunc deletion.ObserverFunc
	for name, o := range map[string]deletion.Observer{"none": deletion.Observers(), "nil ones": deletion.Observers(nil, nilFunc)} {
		require.False(t, ports.IsNil(o), "%s: Observers is not a typed nil", name)
		_, err := deletion.New(getter, policy, deletion.Options{Observer: o})
		require.NoError(t, err, "%s", name)
		o.Observe(deletion.Event{Kind: deletion.EventTracked}) // tells no one, and does not panic
	}
}
