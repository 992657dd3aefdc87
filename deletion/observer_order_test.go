package deletion_test

// The order the Observer is told in: the events of one PU reach it one at a
// time, in the order of the moves that made them. Whatever happens to a PU
// during Track's commit (an Untrack, a destroy, an adoption) reaches the
// Observer after its EventTracked; EventUntracked comes after every earlier
// event of the PU (a veto made before the Untrack); and a Requeuer that
// tracks the new sandbox at once leaves the new PU alone, in the engine and
// in a journal.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr/funcr"
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

// TestARequeuerThatTracksTheNewSandboxAtOnceIsNotHeldUp: row 10 destroys
// the PU of a replaced sandbox and requeues the pod; an agent whose Requeuer
// tracks the PU of the new sandbox at once, under the same PUID, gets it
// tracked (its EventTracked after the old PU's EventDestroyed and
// EventChecked: the Requeuer is called once the check is over), and the
// Sweep returns once it was.
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
		assert.Equal(t, []deletion.EventKind{deletion.EventTracked, deletion.EventDestroyed, deletion.EventChecked, deletion.EventTracked},
			j.kinds("a"), "the old PU's destroy and check, then the new PU")
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

// TestAVetoIsToldBeforeAnUntrackWhileTheLoggerWritesIt: the veto's place in
// the PU's line is the moment it is decided, not the end of its log line: a
// Logger (someone else's code) that takes a second to write "destroy not
// confirmed" lets an Untrack made meanwhile be told after the veto.
func TestAVetoIsToldBeforeAnUntrackWhileTheLoggerWritesIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := deletiontest.NewCluster() // the cache: the pod is gone
		live := deletiontest.NewCluster()
		key := addPod(live, "a", "a", testNode, "", corev1.PodRunning)
		slow := funcr.New(func(_, args string) {
			if strings.Contains(args, "destroy not confirmed") {
				time.Sleep(time.Second)
			}
		}, funcr.Options{Verbosity: 1})
		j := newSlowJournal()
		c := deletiontest.NewEngine(t, w, &deletiontest.Policy{}, deletion.Options{Confirmer: live, Observer: j, Logger: slow})
		require.NoError(t, c.Track(ports.PU{PUID: "a", Pod: key}))
		swept := make(chan struct{})
		go func() { c.Sweep(t.Context()); close(swept) }()
		time.Sleep(500 * time.Millisecond) // the veto is decided; its line is being written
		require.True(t, c.Untrack("a"))
		<-swept
		got := j.kinds("a")
		assert.Less(t, slices.Index(got, deletion.EventVetoed), slices.Index(got, deletion.EventUntracked),
			"the veto, decided before the Untrack, told after it: %v", got)
		assert.Contains(t, got, deletion.EventVetoed)
	})
}

// TestAPUTrackedAgainWhileItsCheckEndsIsToldAfterIt: the pod of a PU
// destroyed for a replaced sandbox is still being requeued when the agent
// tracks the PUID again from another goroutine: the two PUs' events reach a
// slow Observer (a journal) one at a time, in the order of the moves.
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
		assert.Equal(t, []deletion.EventKind{deletion.EventTracked, deletion.EventDestroyed, deletion.EventChecked, deletion.EventTracked},
			order, "in the order of the moves: the old check ended before the Requeuer was called")
	})
}

// Untrack (doc: "It reports whether the PU was tracked, once the Observer has been told (EventUntracked, after every
// earlier event of the PU)"; Observer: "The events of one PU reach it one at a time, in the order of the moves that
// made them"). A check's Confirmer vetoes the cache's destroy; while the check then asks the SandboxConfirmer, the PU
// is untracked. The veto came before the Untrack, so its EventVetoed must reach the Observer before EventUntracked.
func TestAuditUntrackToldAfterEveryEarlierEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		pu := cluster.CreatePod(nsKey("web"), "node-a", "") // no sandbox yet
		var cacheLost atomic.Bool
		cache := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			if cacheLost.Load() {
				return nil, fmt.Errorf("cache: %w", ports.ErrPodNotFound) // a lagging cache
			}
			return cluster.GetPod(ctx, k)
		})
		var armed atomic.Bool
		asked, release := make(chan struct{}), make(chan struct{})
		runtime := ports.SandboxExtractorFunc(func(ctx context.Context, pod *corev1.Pod) (string, error) {
			if armed.Load() {
				close(asked)
				<-release
			}
			return cluster.SandboxID(ctx, pod)
		})
		events := &deletiontest.Events{}
		engine := deletiontest.NewEngine(t, cache, &deletiontest.Policy{}, deletion.Options{
			NodeName: "node-a", Confirmer: cluster.APIServer(), SandboxExtractor: cluster, SandboxConfirmer: runtime,
			Observer: events,
		})
		if err := engine.Track(pu); err != nil {
			t.Fatal(err)
		}
		engine.Sweep(t.Context()) // first check: no sandbox yet, row 8
		if err := cluster.SetSandbox(pu.Pod, "sb-1"); err != nil {
			t.Fatal(err)
		}
		cacheLost.Store(true)
		armed.Store(true)
		swept := make(chan struct{})
		go func() { engine.Sweep(t.Context()); close(swept) }()
		<-asked // the Confirmer has vetoed the destroy; the SandboxConfirmer is asked about row 7
		if !engine.Untrack(pu.PUID) {
			t.Fatal("not tracked")
		}
		close(release)
		<-swept
		var kinds []deletion.EventKind
		for _, ev := range events.All() {
			kinds = append(kinds, ev.Kind)
		}
		vetoed, untracked := -1, -1
		for i, k := range kinds {
			switch k {
			case deletion.EventVetoed:
				vetoed = i
			case deletion.EventUntracked:
				untracked = i
			}
		}
		if vetoed < 0 {
			t.Fatalf("no EventVetoed: %v", kinds)
		}
		if vetoed > untracked {
			t.Errorf("the Observer heard %v: the veto made before Untrack after its EventUntracked", kinds)
		}
	})
}

// Promise (go doc deletion.Observer; docs/sdk/engine.md:6-9): "The events of one PU reach it one at a time, in the
// order of the moves that made them, whichever goroutines made them ... a PU tracked again while the EventUntracked of
// the one before is told is told after that."
//
// P's check is in DestroyPU. P is untracked, tracked again (sandbox sb2), untracked again, and tracked a third time
// (sb3), whose EventTracked the Observer takes a while to commit. The first check then returns: its EventChecked is
// told while the third Track's EventTracked is still being told: two events of PUID P at once, and the check's, a move
// of before the third Track, after it.
func TestAuditOnePUsEventsOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		inFlight := map[string]int{}
		var overlaps []string
		commit := make(chan struct{})
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			mu.Lock()
			inFlight[ev.PU.PUID]++
			if inFlight[ev.PU.PUID] > 1 {
				overlaps = append(overlaps, fmt.Sprintf("%s (%s) told while another event of %s is", ev.Kind, ev.PU.SandboxID, ev.PU.PUID))
			}
			mu.Unlock()
			if ev.Kind == deletion.EventTracked && ev.PU.SandboxID == "sb3" {
				<-commit // a slow journal commit
			}
			mu.Lock()
			inFlight[ev.PU.PUID]--
			mu.Unlock()
		})
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Observer: obs})
		p := cluster.CreatePod(nsKey("p"), "node-a", "sb1")
		if err := e.Track(p); err != nil {
			t.Fatal(err)
		}
		cluster.DeletePod(p.Pod)
		releaseDestroy := policy.Hang()
		go e.Sweep(context.Background())
		synctest.Wait() // the check of P is in DestroyPU
		if policy.CallCount() != 1 {
			t.Fatalf("setup: %d DestroyPU calls", policy.CallCount())
		}

		e.Untrack(p.PUID)
		p2 := p
		p2.SandboxID = "sb2"
		if err := e.Track(p2); err != nil {
			t.Fatal(err)
		}
		e.Untrack(p.PUID)
		p3 := p
		p3.SandboxID = "sb3"
		go func() { _ = e.Track(p3) }()
		synctest.Wait() // the third EventTracked is being committed

		releaseDestroy()
		synctest.Wait()
		close(commit)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(overlaps) > 0 {
			t.Errorf("events of one PUID told at once: %v", overlaps)
		}
	})
}

// docs/sdk/restarts.md and deletion/queue.go (tellEvents): a Requeuer that tracks the PU of the new sandbox at once,
// under the same PUID, leaves the engine and a journal with the new PU only.
func TestAuditHoldsRequeuerTracksNewSandbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		inv := deletiontest.NewInventory()
		var e *deletion.Engine
		req := ports.RequeuerFunc(func(_ context.Context, pod *corev1.Pod) error {
			pu, _ := cluster.PU(nsKey(pod.Name))
			return e.Track(pu)
		})
		e = deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{SandboxExtractor: cluster,
			Requeuer: req, Observer: inv, Inventory: inv})
		deletiontest.Start(t, e)
		pu := cluster.CreatePod(nsKey("a"), "", "sb-1")
		_ = e.Track(pu)
		deletiontest.Advance(10 * time.Second)
		_ = cluster.SetSandbox(pu.Pod, "sb-2")
		e.TriggerPod(pu.Pod)
		deletiontest.Advance(10 * time.Second)
		want := fmt.Sprint([]ports.PU{{PUID: pu.PUID, Pod: pu.Pod, SandboxID: "sb-2"}})
		if got, j := fmt.Sprint(deletiontest.PUs(e)), fmt.Sprint(inv.PUs()); got != want || j != want {
			t.Errorf("engine %s, journal %s, want %s", got, j, want)
		}
	})
}
