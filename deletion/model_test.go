package deletion_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/internal/inspect"
	"github.com/podsweeper/podsweeper/ports"
)

// The model-based test: the fuzzer's bytes become operations on a tiny
// cluster of modelSlots pod names; the engine, running under Start in a
// testing/synctest bubble, and an obvious model of the decision table, its
// Confirmer, its wheel and its retries run side by side, and after every
// operation their destroys, abandons, requeues and remaining entries must
// match. Time moves only when an operation says so, a second at a time: the
// engine's wheel ticks once a second (SweepInterval modelInterval), a
// PUID's periodic check comes at the second its hash picks, and a failed
// destroy waits 1, 2, then 4 seconds.

const (
	modelSlots       = 4
	modelNode        = "node-a"
	modelMaxAttempts = 3
	modelMaxOps      = 256
	modelInterval    = 64 * time.Second // 64 one-second ticks
)

// Operations, one per pair of bytes (op, arg): arg&3 is the pod slot, the
// other bits of arg pick a variant. Their numbers are those of the committed
// corpus: new ones go at the end.
const (
	modelTrack = iota
	modelDelete
	modelRecreate
	modelChangeSandbox
	modelFailNextGet
	modelFailNextSandbox
	modelSweep
	modelMove
	modelFailNextDestroy
	modelTrigger
	modelAdvance
	modelUntrack
	modelFailNextConfirm
	modelOps
)

type modelPod struct {
	exists             bool
	uid, node, sandbox string
}

type modelEntry struct {
	puid     string
	slot     int
	sandbox  string
	attempts int
	retryAt  int // the second a failed destroy is retried; 0: not waiting
}

// modelCluster is the truth both sides read, and the faults planned for the
// next operation that checks. Checks read it only: their order cannot matter.
type modelCluster struct {
	pods        [modelSlots]modelPod
	failGet     [modelSlots]int // 0 none, 1 error, 2 nil pod and nil error, 3 another pod, 4 a cache that lags: not found
	failSandbox [modelSlots]bool
	failDestroy [modelSlots]int // 0 none, 1 transient, 2 permanent
	failConfirm [modelSlots]bool
}

func modelKey(slot int) types.NamespacedName {
	return types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("pod-%d", slot)}
}

func modelSlot(key types.NamespacedName) int {
	var slot int
	if _, err := fmt.Sscanf(key.Name, "pod-%d", &slot); err != nil || slot < 0 || slot >= modelSlots {
		panic("model: unknown pod " + key.String())
	}
	return slot
}

// modelPorts serves the cluster to the engine and records what it does. Its
// GetPod is a cache (it may lag); confirmer is the API server.
type modelPorts struct {
	// clMu guards cl: the test changes it between operations, the engine's
	// goroutines read it (synctest's fake time is no happens-before edge
	// for the race detector).
	clMu sync.RWMutex
	cl   *modelCluster

	mu        sync.Mutex
	destroyed []ports.DestroyEvent
	abandoned []string
	requeued  []string
}

func modelPodOf(key types.NamespacedName, p modelPod) (*corev1.Pod, error) {
	if !p.exists {
		return nil, fmt.Errorf("model: %s: %w", key, ports.ErrPodNotFound)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: types.UID(p.uid)},
		Spec:       corev1.PodSpec{NodeName: p.node},
	}, nil
}

func (m *modelPorts) GetPod(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	m.clMu.RLock()
	defer m.clMu.RUnlock()
	slot := modelSlot(key)
	p := m.cl.pods[slot]
	switch m.cl.failGet[slot] {
	case 1:
		return nil, errors.New("model: get failed")
	case 2:
		return nil, nil
	case 3:
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name + "-other", UID: types.UID(p.uid)}}, nil
	case 4:
		return nil, fmt.Errorf("model: cache: %w", ports.ErrPodNotFound)
	}
	return modelPodOf(key, p)
}

func (m *modelPorts) confirmer() ports.PodGetter {
	return ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		m.clMu.RLock()
		defer m.clMu.RUnlock()
		slot := modelSlot(key)
		if m.cl.failConfirm[slot] {
			return nil, errors.New("model: API server unavailable")
		}
		return modelPodOf(key, m.cl.pods[slot])
	})
}

func (m *modelPorts) SandboxID(_ context.Context, pod *corev1.Pod) (string, error) {
	m.clMu.RLock()
	defer m.clMu.RUnlock()
	slot := modelSlot(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
	if m.cl.failSandbox[slot] {
		return "", errors.New("model: sandbox lookup failed")
	}
	return m.cl.pods[slot].sandbox, nil
}

func (m *modelPorts) DestroyPU(_ context.Context, ev ports.DestroyEvent) error {
	m.clMu.RLock()
	fail := m.cl.failDestroy[modelSlot(ev.Pod)]
	m.clMu.RUnlock()
	switch fail {
	case 1:
		return errors.New("model: destroy failed")
	case 2:
		return ports.Permanent(errors.New("model: destroy refused"))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.destroyed = append(m.destroyed, ev)
	return nil
}

func (m *modelPorts) Requeue(_ context.Context, pod *corev1.Pod) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requeued = append(m.requeued, string(pod.UID))
	return nil
}

func (m *modelPorts) Observe(ev deletion.Event) {
	if ev.Kind == deletion.EventAbandoned {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.abandoned = append(m.abandoned, ev.PU.PUID)
	}
}

// modelOutcome is what the operations since the last comparison did, on
// either side.
type modelOutcome struct {
	Destroyed []ports.DestroyEvent
	Abandoned []string
	Requeued  []string
	Pending   []ports.PU
}

func (o *modelOutcome) sort() {
	if len(o.Pending) == 0 {
		o.Pending = nil
	}
	slices.SortFunc(o.Destroyed, func(a, b ports.DestroyEvent) int { return cmp.Compare(a.PUID, b.PUID) })
	slices.Sort(o.Abandoned)
	slices.Sort(o.Requeued)
	slices.SortFunc(o.Pending, func(a, b ports.PU) int { return cmp.Compare(a.PUID, b.PUID) })
}

// model is the obvious implementation of the decision table, the
// Confirmer, the wheel and the retries.
type model struct {
	entries map[string]*modelEntry
	now     int // seconds since the engine was made
	out     modelOutcome
}

// view is what a getter sees of the pod of slot: ok false for an answer
// that keeps the PU whatever it is.
func (m *model) decide(e *modelEntry, p modelPod, ok bool, cl *modelCluster) (reason ports.Reason, adopt bool) {
	switch {
	case !ok: // never destroy on a failed or nonsensical read
	case !p.exists:
		return ports.ReasonPodGone, false
	case p.node != "" && p.node != modelNode:
		return ports.ReasonNodeChanged, false
	case p.uid != e.puid:
		return ports.ReasonUIDChanged, false
	case cl.failSandbox[e.slot]:
	case e.sandbox == "":
		return "", p.sandbox != ""
	case p.sandbox == "": // not known yet: the seed would destroy here
	case p.sandbox != e.sandbox:
		return ports.ReasonSandboxChanged, false
	}
	return "", false
}

// check runs one check of e, as the engine does.
func (m *model) check(e *modelEntry, cl *modelCluster) {
	truth := cl.pods[e.slot]
	cached := truth
	switch cl.failGet[e.slot] {
	case 4:
		cached = modelPod{}
	}
	reason, adopt := m.decide(e, cached, cl.failGet[e.slot] == 0 || cl.failGet[e.slot] == 4, cl)
	if reason != "" && reason != ports.ReasonSandboxChanged {
		reason, adopt = m.decide(e, truth, !cl.failConfirm[e.slot], cl) // the Confirmer's verdict is carried out
	}
	e.retryAt = 0
	if adopt {
		e.sandbox = truth.sandbox
	}
	if reason == "" {
		return
	}
	switch cl.failDestroy[e.slot] {
	case 0:
		m.out.Destroyed = append(m.out.Destroyed, ports.DestroyEvent{PUID: e.puid, Pod: modelKey(e.slot), SandboxID: e.sandbox, Reason: reason})
	case 1:
		if e.attempts++; e.attempts < modelMaxAttempts {
			e.retryAt = m.now + min(1<<(e.attempts-1), 4)
			return
		}
		m.out.Abandoned = append(m.out.Abandoned, e.puid)
	case 2:
		e.attempts++
		m.out.Abandoned = append(m.out.Abandoned, e.puid)
	}
	if reason == ports.ReasonSandboxChanged {
		m.out.Requeued = append(m.out.Requeued, truth.uid)
	}
	delete(m.entries, e.puid)
}

// checkEarly is Sweep's check of e, which may come before its retry: a
// check that destroys nothing leaves it waiting for that retry.
func (m *model) checkEarly(e *modelEntry, cl *modelCluster) {
	pending := e.retryAt
	m.check(e, cl)
	if _, ok := m.entries[e.puid]; ok && e.retryAt == 0 && pending > m.now {
		e.retryAt = pending
	}
}

// tick is one second of the wheel: the entries of this second's slot that
// are not waiting, and the retries due.
func (m *model) tick(cl *modelCluster) {
	m.now++
	for _, e := range m.sorted() {
		periodic := e.retryAt == 0 && int(fnvSlot(e.puid)) == m.now%int(modelInterval/time.Second)
		if periodic || (e.retryAt != 0 && e.retryAt <= m.now) {
			m.check(e, cl)
		}
	}
}

func (m *model) sorted() []*modelEntry {
	out := make([]*modelEntry, 0, len(m.entries))
	for _, e := range m.entries {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *modelEntry) int { return cmp.Compare(a.puid, b.puid) })
	return out
}

func (m *model) take() modelOutcome {
	out := m.out
	m.out = modelOutcome{}
	for _, e := range m.entries {
		out.Pending = append(out.Pending, ports.PU{PUID: e.puid, Pod: modelKey(e.slot), SandboxID: e.sandbox})
	}
	out.sort()
	return out
}

// fnvSlot is the engine's wheel slot of puid (FNV-1a), for the model's
// periodic checks.
func fnvSlot(puid string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(puid); i++ {
		h ^= uint32(puid[i])
		h *= 16777619
	}
	return h % uint32(modelInterval/time.Second)
}

// runModel decodes data into operations and runs them on both sides.
func runModel(t *testing.T, data []byte) {
	cl := &modelCluster{}
	mp := &modelPorts{cl: cl}
	c, err := deletion.New(mp, mp, deletion.Options{
		SandboxExtractor:   mp,
		Requeuer:           mp,
		Confirmer:          mp.confirmer(),
		NodeName:           modelNode,
		Workers:            2,
		MaxDestroyAttempts: modelMaxAttempts,
		RetryMinDelay:      time.Second,
		RetryMaxDelay:      4 * time.Second,
		SweepInterval:      modelInterval,
		Observer:           mp,
		Logger:             quiet(),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	synctest.Wait()

	m := &model{entries: map[string]*modelEntry{}}
	ids := 0
	id := func(prefix string) string { ids++; return fmt.Sprintf("%s%d", prefix, ids) }
	var trace []string

	// compare checks both sides; after an operation that checked, the
	// planned faults are spent.
	compare := func(checked bool) {
		synctest.Wait()
		want := m.take()
		mp.mu.Lock()
		got := modelOutcome{Destroyed: mp.destroyed, Abandoned: mp.abandoned, Requeued: mp.requeued, Pending: inspect.PUs(c)}
		mp.destroyed, mp.abandoned, mp.requeued = nil, nil, nil
		mp.mu.Unlock()
		got.sort()
		require.Equal(t, want, got, "at second %d, after: %v", m.now, trace)
		if checked {
			mp.clMu.Lock()
			*cl = modelCluster{pods: cl.pods}
			mp.clMu.Unlock()
		}
	}

	for i := 0; i+1 < len(data) && i/2 < modelMaxOps; i += 2 {
		op, arg := int(data[i])%modelOps, int(data[i+1])
		slot, variant := arg%modelSlots, arg/modelSlots
		p := &cl.pods[slot]
		trace = append(trace, fmt.Sprintf("op%d(slot %d, variant %d)", op, slot, variant))
		checked := false
		var call func() // the engine's side, run once the cluster is unlocked
		mp.clMu.Lock()
		switch op {
		case modelTrack:
			e := ports.PU{PUID: p.uid, Pod: modelKey(slot), SandboxID: p.sandbox}
			if !p.exists || variant%4 == 3 {
				e.PUID = id("u-stale") // a PU of a pod that is already gone
			}
			switch variant / 4 % 3 {
			case 1:
				e.SandboxID = "" // tracked before the sandbox was known
			case 2:
				e.SandboxID = id("s-old") // tracked with a sandbox since replaced
			}
			call = func() { require.NoError(t, c.Track(e)) }
			if _, ok := m.entries[e.PUID]; !ok { // insert-only
				m.entries[e.PUID] = &modelEntry{puid: e.PUID, slot: slot, sandbox: e.SandboxID}
			}
		case modelDelete:
			*p = modelPod{}
		case modelRecreate, modelMove:
			node := modelNode
			if op == modelMove {
				node = []string{"node-b", ""}[variant%2]
			}
			sb := id("s")
			if variant%3 == 2 {
				sb = ""
			}
			*p = modelPod{exists: true, uid: id("u"), node: node, sandbox: sb}
		case modelChangeSandbox:
			if p.sandbox = id("s"); variant%3 == 2 {
				p.sandbox = ""
			}
		case modelFailNextGet:
			cl.failGet[slot] = 1 + variant%4
		case modelFailNextSandbox:
			cl.failSandbox[slot] = true
		case modelFailNextDestroy:
			cl.failDestroy[slot] = 1 + variant%2
		case modelFailNextConfirm:
			cl.failConfirm[slot] = true
		case modelSweep:
			for _, e := range m.sorted() {
				m.checkEarly(e, cl)
			}
			call = func() { c.Sweep(context.Background()) }
			checked = true
		case modelTrigger:
			for _, e := range m.sorted() {
				if e.slot == slot && e.retryAt == 0 {
					m.check(e, cl)
				}
			}
			call = func() { c.TriggerPod(modelKey(slot)) }
			checked = true
		case modelAdvance:
			n := 1 + variant%8
			for range n {
				m.tick(cl)
			}
			call = func() { time.Sleep(time.Duration(n) * time.Second) }
			checked = true
		case modelUntrack:
			var mine []*modelEntry
			for _, e := range m.sorted() {
				if e.slot == slot {
					mine = append(mine, e)
				}
			}
			puid := "never-tracked"
			if len(mine) > 0 {
				puid = mine[variant%len(mine)].puid
			}
			_, tracked := m.entries[puid]
			delete(m.entries, puid)
			call = func() { require.Equal(t, tracked, c.Untrack(puid), "Untrack(%s)", puid) }
		}
		mp.clMu.Unlock()
		if call != nil {
			call()
		}
		compare(checked)
	}
	for _, e := range m.sorted() {
		m.checkEarly(e, cl)
	}
	c.Sweep(context.Background())
	compare(true)
}

// FuzzModel checks the engine against the model on sequences of operations.
// CI runs the committed corpus (testdata/fuzz/FuzzModel); run the fuzzer
// with go test -fuzz=FuzzModel ./deletion/.
func FuzzModel(f *testing.F) {
	f.Add([]byte{modelRecreate, 0, modelTrack, 0, modelSweep, 0, modelDelete, 0, modelSweep, 0})
	// A cache that lags: the Confirmer vetoes, then the pod really goes.
	f.Add([]byte{modelRecreate, 0, modelTrack, 0, modelFailNextGet, 12, modelTrigger, 0, modelDelete, 0, modelTrigger, 0})
	// A failed destroy waits for its retry through triggers and time.
	f.Add([]byte{modelRecreate, 1, modelTrack, 1, modelDelete, 1, modelFailNextDestroy, 1, modelTrigger, 1,
		modelTrigger, 1, modelAdvance, 0, modelTrigger, 1, modelAdvance, 4})
	// Untrack before and after a failed destroy.
	f.Add([]byte{modelRecreate, 2, modelTrack, 2, modelUntrack, 2, modelTrack, 6, modelDelete, 2,
		modelFailNextDestroy, 2, modelTrigger, 2, modelUntrack, 2, modelAdvance, 28})
	// The Confirmer fails, then the periodic checks find the pod gone.
	f.Add([]byte{modelRecreate, 3, modelTrack, 3, modelDelete, 3, modelFailNextConfirm, 3, modelTrigger, 3,
		modelAdvance, 28, modelAdvance, 28, modelAdvance, 28, modelAdvance, 28, modelAdvance, 28, modelAdvance, 28,
		modelAdvance, 28, modelAdvance, 28, modelAdvance, 28})
	f.Fuzz(func(t *testing.T, data []byte) {
		synctest.Test(t, func(t *testing.T) { runModel(t, data) })
	})
}
