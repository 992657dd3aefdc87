package deletion_test

// The order the Observer is told in: Track returns once the Observer has the
// PU, and whatever happens to a PU during Track's commit (an Untrack, a
// destroy, an adoption) reaches the Observer after its EventTracked.

import (
	"context"
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
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// slowJournal is a deletiontest.Inventory (a journal: an Observer and an
// Inventory) whose commit of an EventTracked takes 10ms (fake time in a
// bubble) before it records the PU. It keeps the kinds of the events it
// committed, per PUID, in the order it committed them.
type slowJournal struct {
	*deletiontest.Inventory
	mu        sync.Mutex
	committed map[string][]deletion.EventKind
}

func newSlowJournal() *slowJournal {
	return &slowJournal{Inventory: deletiontest.NewInventory(), committed: map[string][]deletion.EventKind{}}
}

func (j *slowJournal) Observe(ev deletion.Event) {
	if ev.Kind == deletion.EventTracked {
		time.Sleep(10 * time.Millisecond)
	}
	j.Inventory.Observe(ev)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.committed[ev.PU.PUID] = append(j.committed[ev.PU.PUID], ev.Kind)
}

// holds returns the PU the journal records under puid, if any.
func (j *slowJournal) holds(puid string) (ports.PU, bool) {
	for _, p := range j.PUs() {
		if p.PUID == puid {
			return p, true
		}
	}
	return ports.PU{}, false
}

// kinds returns the kinds of the events of puid, in the order committed.
func (j *slowJournal) kinds(puid string) []deletion.EventKind {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.committed[puid])
}

// goneGetter answers that every pod is gone.
var goneGetter = ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
	return nil, ports.ErrPodNotFound
})

// TestAnUntrackDuringTracksCommitIsToldAfterTheTrack: Untrack of a PU whose
// Track the journal is still committing: the journal is told Tracked then
// Untracked, and ends without the PU.
func TestAnUntrackDuringTracksCommitIsToldAfterTheTrack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := newSlowJournal()
		c := deletiontest.NewEngine(t, deletiontest.NewCluster(), &deletiontest.Policy{}, deletion.Options{Observer: j})
		var wg sync.WaitGroup
		wg.Go(func() { assert.NoError(t, c.Track(pu("a"))) })
		synctest.Wait() // Track is in the journal's commit
		assert.True(t, c.Untrack("a"))
		wg.Wait()
		_, held := j.holds("a")
		assert.False(t, held, "the journal holds an untracked PU; it committed %v", j.kinds("a"))
	})
}

// TestADestroyDuringTracksCommitIsToldAfterTheTrack: the pod is gone and a
// trigger destroys the PU while the journal commits its Track: it is
// destroyed once, the journal is told Tracked first and ends empty, and an
// engine restarted on the journal destroys nothing again.
func TestADestroyDuringTracksCommitIsToldAfterTheTrack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := newSlowJournal()
		policy := &deletiontest.Policy{}
		c := deletiontest.NewEngine(t, goneGetter, policy, deletion.Options{Observer: j})
		stop := deletiontest.Start(t, c)
		synctest.Wait()
		var wg sync.WaitGroup
		wg.Go(func() { assert.NoError(t, c.Track(pu("a"))) })
		synctest.Wait() // Track is in the journal's commit
		c.TriggerPod(pu("a").Pod)
		wg.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Len(t, policy.Calls(), 1, "the PU is destroyed once")
		assert.Empty(t, j.PUs(), "the journal keeps a destroyed PU")
		kinds := j.kinds("a")
		require.Contains(t, kinds, deletion.EventTracked)
		tracked := slices.Index(kinds, deletion.EventTracked)
		for i, k := range kinds {
			if k == deletion.EventChecked || k == deletion.EventDestroyed {
				assert.Less(t, tracked, i, "the journal was told %v before EventTracked: %v", k, kinds)
			}
		}
		stop()

		again := &deletiontest.Policy{}
		c2 := deletiontest.NewEngine(t, goneGetter, again, deletion.Options{Inventory: j, Observer: j})
		deletiontest.Start(t, c2)
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Empty(t, again.Calls(), "a restarted engine destroys the PU again")
	})
}

// TestAnAdoptionDuringTracksCommitIsKept: a PU tracked without a sandbox,
// its pod in sandbox s1; a trigger's check records s1 while the journal
// commits the Track: the journal ends with the PU in s1.
func TestAnAdoptionDuringTracksCommitIsKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := deletiontest.NewCluster()
		key := addPod(w, "a", "a", testNode, "s1", corev1.PodRunning)
		j := newSlowJournal()
		c := deletiontest.NewEngine(t, w, &deletiontest.Policy{}, deletion.Options{SandboxExtractor: w, Observer: j})
		deletiontest.Start(t, c)
		synctest.Wait()
		var wg sync.WaitGroup
		wg.Go(func() { assert.NoError(t, c.Track(ports.PU{PUID: "a", Pod: key})) })
		synctest.Wait() // Track is in the journal's commit
		c.TriggerPod(key)
		wg.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		got, held := j.holds("a")
		require.True(t, held)
		assert.Equal(t, "s1", got.SandboxID, "the journal lost the sandbox recorded; it committed %v", j.kinds("a"))
	})
}

// TestTrackAfterStartHasReturnedFails: once Start has returned nothing
// checks a PU any more, so Track says so with an error wrapping
// ErrNotRunning instead of nil.
func TestTrackAfterStartHasReturnedFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := deletiontest.NewEngine(t, goneGetter, &deletiontest.Policy{}, deletion.Options{})
		stop := deletiontest.Start(t, c)
		synctest.Wait()
		stop()
		assert.ErrorIs(t, c.Track(pu("a")), deletion.ErrNotRunning)
	})
}

// TestARequeuerThatTracksTheNewSandboxAtOnceIsNotHeldUp: row 10 destroys
// the PU of a replaced sandbox and requeues the pod; an agent whose Requeuer
// tracks the PU of the new sandbox at once, under the same PUID, gets it
// tracked (its EventTracked after the old PU's EventDestroyed) without
// waiting for the check that called it.
func TestARequeuerThatTracksTheNewSandboxAtOnceIsNotHeldUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := deletiontest.NewCluster()
		key := addPod(w, "a", "a", testNode, "s2", corev1.PodRunning)
		j := newSlowJournal()
		var c *deletion.Engine
		tracked := make(chan error, 1)
		requeuer := ports.RequeuerFunc(func(ctx context.Context, pod *corev1.Pod) error {
			tracked <- c.Track(ports.PU{PUID: string(pod.UID), Pod: key, SandboxID: "s2"})
			return nil
		})
		c = deletiontest.NewEngine(t, w, &deletiontest.Policy{}, deletion.Options{SandboxExtractor: w, Requeuer: requeuer, Observer: j})
		require.NoError(t, c.Track(ports.PU{PUID: "a", Pod: key, SandboxID: "s1"}))
		c.Sweep(t.Context())
		select {
		case err := <-tracked:
			require.NoError(t, err)
		default:
			t.Fatal("the Requeuer did not track the new sandbox's PU")
		}
		got, held := j.holds("a")
		require.True(t, held, "the journal holds the new PU")
		assert.Equal(t, "s2", got.SandboxID)
		assert.Equal(t, []deletion.EventKind{deletion.EventTracked, deletion.EventDestroyed, deletion.EventTracked, deletion.EventChecked},
			j.kinds("a"), "the old PU's destroy, then the new PU")
	})
}

// TestAVetoIsToldWithItsPU: EventVetoed's PU is the PU whose destroy the
// Confirmer did not confirm.
func TestAVetoIsToldWithItsPU(t *testing.T) {
	w := deletiontest.NewCluster() // the cache: the pod is gone
	live := deletiontest.NewCluster()
	key := addPod(live, "a", "a", testNode, "", corev1.PodRunning)
	events := &deletiontest.Events{}
	c := deletiontest.NewEngine(t, w, &deletiontest.Policy{}, deletion.Options{Confirmer: live, Observer: events})
	require.NoError(t, c.Track(ports.PU{PUID: "a", Pod: key}))
	c.Sweep(t.Context())
	vetoes := events.Of(deletion.EventVetoed)
	require.Len(t, vetoes, 1)
	assert.Equal(t, ports.PU{PUID: "a", Pod: key}, vetoes[0].PU)
}

// TestAPUTrackedAgainWhileItsCheckEndsIsToldAfterIt: the check that
// destroyed the PU of a replaced sandbox is still requeueing its pod when the
// agent tracks the PUID again from another goroutine: the two PUs' events
// reach a slow Observer (a journal) one at a time, in the order of the moves.
func TestAPUTrackedAgainWhileItsCheckEndsIsToldAfterIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := deletiontest.NewCluster()
		key := addPod(w, "a", "a", testNode, "s2", corev1.PodRunning)
		var mu sync.Mutex
		var order []deletion.EventKind
		telling, overlaps := 0, 0
		var slow atomic.Bool
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			mu.Lock()
			if telling++; telling > 1 {
				overlaps++
			}
			order = append(order, ev.Kind)
			mu.Unlock()
			if ev.Kind == deletion.EventTracked && slow.Load() {
				time.Sleep(time.Second) // a journal's slow commit
			}
			mu.Lock()
			telling--
			mu.Unlock()
		})
		requeuer := ports.RequeuerFunc(func(context.Context, *corev1.Pod) error {
			time.Sleep(500 * time.Millisecond) // the agent's queue is slow to take it
			return nil
		})
		c := deletiontest.NewEngine(t, w, &deletiontest.Policy{}, deletion.Options{SandboxExtractor: w, Requeuer: requeuer, Observer: obs})
		require.NoError(t, c.Track(ports.PU{PUID: "a", Pod: key, SandboxID: "s1"}))
		slow.Store(true)
		go c.Sweep(t.Context())
		time.Sleep(200 * time.Millisecond)                                                         // a is destroyed (row 10), and its pod is being requeued
		go func() { assert.NoError(t, c.Track(ports.PU{PUID: "a", Pod: key, SandboxID: "s2"})) }() // the agent, from its informer
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Zero(t, overlaps, "two events of one PUID told at once: %v", order)
		assert.Equal(t, []deletion.EventKind{deletion.EventTracked, deletion.EventDestroyed, deletion.EventTracked, deletion.EventChecked},
			order, "in the order of the moves: the new Track came before the old check ended")
	})
}
