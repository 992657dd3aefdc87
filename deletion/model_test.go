package deletion_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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
	// checks are the checks made since the last operation, for modelDone.
	checks []modelCheck
	// read are the planned faults the checks met, by slot, for modelDone.
	read [modelSlots]modelFaults
}

// modelFaults says which of a slot's planned faults a check met.
type modelFaults struct{ get, sandbox, destroy, confirm bool }

// modelCheck is one check the model made: why, of which PU, the row of the
// verdict carried out (and the PodGetter's, when the Confirmer was asked),
// and what came of it.
type modelCheck struct {
	why      string // "sweep", "trigger", "periodic" or "retry"
	puid     string
	row      int
	askedRow int  // the PodGetter's row the Confirmer was asked about; 0: not asked
	vetoed   bool // the Confirmer kept the PU the PodGetter's row destroys
	outcome  string
}

func (k modelCheck) String() string {
	s := fmt.Sprintf("%s check of %s: row %d", k.why, k.puid, k.row)
	switch {
	case k.vetoed:
		s = fmt.Sprintf("%s check of %s: row %d vetoed by the Confirmer's row %d", k.why, k.puid, k.askedRow, k.row)
	case k.askedRow == k.row:
		s += " (confirmed)"
	case k.askedRow != 0:
		s = fmt.Sprintf("%s check of %s: row %d, confirmed as row %d", k.why, k.puid, k.askedRow, k.row)
	}
	return s + ", " + k.outcome
}

// decide is the decision table on p, what a getter answered for e's pod
// (ok false for an answer that keeps the PU whatever it is): the row, and
// the reason to destroy or whether to adopt p's sandbox.
func (m *model) decide(e *modelEntry, p modelPod, ok bool, cl *modelCluster) (row int, reason ports.Reason, adopt bool) {
	switch {
	case !ok: // never destroy on a failed or nonsensical read
		return 2, "", false
	case !p.exists:
		return 1, ports.ReasonPodGone, false
	case p.node != "" && p.node != modelNode:
		return 3, ports.ReasonNodeChanged, false
	case p.uid != e.puid:
		return 4, ports.ReasonUIDChanged, false
	case cl.failSandbox[e.slot]:
		m.read[e.slot].sandbox = true
		return 6, "", false
	case e.sandbox == "" && p.sandbox != "":
		return 7, "", true
	case p.sandbox == "": // not known yet: the seed would destroy here
		return 8, "", false
	case p.sandbox != e.sandbox:
		return 10, ports.ReasonSandboxChanged, false
	}
	return 9, "", false
}

// check runs one check of e, as the engine does; why says what brought it.
func (m *model) check(e *modelEntry, cl *modelCluster, why string) {
	truth := cl.pods[e.slot]
	cached := truth
	switch cl.failGet[e.slot] {
	case 4:
		cached = modelPod{}
	}
	if cl.failGet[e.slot] != 0 {
		m.read[e.slot].get = true
	}
	row, reason, adopt := m.decide(e, cached, cl.failGet[e.slot] == 0 || cl.failGet[e.slot] == 4, cl)
	k := modelCheck{why: why, puid: e.puid, row: row}
	if reason != "" && reason != ports.ReasonSandboxChanged {
		if cl.failConfirm[e.slot] {
			m.read[e.slot].confirm = true
		}
		row, reason, adopt = m.decide(e, truth, !cl.failConfirm[e.slot], cl) // the Confirmer's verdict is carried out
		k.askedRow, k.row, k.vetoed = k.row, row, reason == ""
	}
	defer func() { m.checks = append(m.checks, k) }()
	e.retryAt = 0
	if adopt {
		e.sandbox = truth.sandbox
		k.outcome = "adopted " + e.sandbox
		return
	}
	if reason == "" {
		k.outcome = "kept"
		return
	}
	if cl.failDestroy[e.slot] != 0 {
		m.read[e.slot].destroy = true
	}
	switch cl.failDestroy[e.slot] {
	case 0:
		m.out.Destroyed = append(m.out.Destroyed, ports.DestroyEvent{PUID: e.puid, Pod: modelKey(e.slot), SandboxID: e.sandbox, Reason: reason})
		k.outcome = "destroyed (" + string(reason) + ")"
	case 1:
		if e.attempts++; e.attempts < modelMaxAttempts {
			e.retryAt = m.now + min(1<<(e.attempts-1), 4)
			k.outcome = fmt.Sprintf("destroy failed, retry at second %d", e.retryAt)
			return
		}
		m.out.Abandoned = append(m.out.Abandoned, e.puid)
		k.outcome = "destroy failed for the last time: abandoned"
	case 2:
		e.attempts++
		m.out.Abandoned = append(m.out.Abandoned, e.puid)
		k.outcome = "destroy refused: abandoned"
	}
	if reason == ports.ReasonSandboxChanged {
		m.out.Requeued = append(m.out.Requeued, truth.uid)
		k.outcome += ", requeued"
	}
	delete(m.entries, e.puid)
}

// checkEarly is Sweep's check of e, which may come before its retry: a
// check that destroys nothing leaves it waiting for that retry.
func (m *model) checkEarly(e *modelEntry, cl *modelCluster) {
	pending := e.retryAt
	m.check(e, cl, "sweep")
	if _, ok := m.entries[e.puid]; ok && e.retryAt == 0 && pending > m.now {
		e.retryAt = pending
	}
}

// tick is one second of the wheel: the entries of this second's slot that
// are not waiting, and the retries due.
func (m *model) tick(cl *modelCluster) {
	m.now++
	for _, e := range m.sorted() {
		switch {
		case e.retryAt == 0 && int(fnvSlot(e.puid)) == m.now%int(modelInterval/time.Second):
			m.check(e, cl, "periodic")
		case e.retryAt != 0 && e.retryAt <= m.now:
			m.check(e, cl, "retry")
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

// modelOp is one operation: its kind (modelTrack...), the pod slot it
// works on, and the variant, which the kind reads (see its methods).
type modelOp struct {
	kind, slot, variant int
}

// decodeModelOps turns the fuzzer's bytes into operations, one per pair of
// bytes (op, arg), at most modelMaxOps: arg&3 is the slot, the other bits
// of arg the variant.
func decodeModelOps(data []byte) []modelOp {
	var ops []modelOp
	for i := 0; i+1 < len(data) && len(ops) < modelMaxOps; i += 2 {
		arg := int(data[i+1])
		ops = append(ops, modelOp{kind: int(data[i]) % modelOps, slot: arg % modelSlots, variant: arg / modelSlots})
	}
	return ops
}

var modelOpNames = [...]string{
	modelTrack: "Track", modelDelete: "Delete", modelRecreate: "Recreate", modelChangeSandbox: "ChangeSandbox",
	modelFailNextGet: "FailNextGet", modelFailNextSandbox: "FailNextSandbox", modelSweep: "Sweep", modelMove: "Move",
	modelFailNextDestroy: "FailNextDestroy", modelTrigger: "Trigger", modelAdvance: "Advance", modelUntrack: "Untrack",
	modelFailNextConfirm: "FailNextConfirm",
}

// The variants, read the same way by apply and String.

// staleTrack: Track takes a PUID of a pod already gone (it does too when the pod does not exist).
func (o modelOp) staleTrack() bool { return o.variant%4 == 3 }

// trackSandbox: Track records the pod's sandbox (0), none (1), or one since replaced (2).
func (o modelOp) trackSandbox() int { return o.variant / 4 % 3 }

// noSandbox: Recreate, Move and ChangeSandbox leave the pod's sandbox not known yet ("").
func (o modelOp) noSandbox() bool { return o.variant%3 == 2 }

// moveTo is the node Move binds the new pod to: another one, or none yet.
func (o modelOp) moveTo() string { return []string{"node-b", ""}[o.variant%2] }

// getFault is modelCluster.failGet's value FailNextGet plans.
func (o modelOp) getFault() int { return 1 + o.variant%4 }

// destroyFault is modelCluster.failDestroy's value FailNextDestroy plans.
func (o modelOp) destroyFault() int { return 1 + o.variant%2 }

// seconds is how long Advance moves time on.
func (o modelOp) seconds() int { return 1 + o.variant%8 }

// fault names the fault a FailNextGet or FailNextDestroy plans, and move
// where a Move binds the new pod.
func (o modelOp) fault() string {
	switch o.kind {
	case modelFailNextGet:
		return []string{1: "error", 2: "nil pod and nil error", 3: "another pod", 4: "cache lags: not found"}[o.getFault()]
	case modelFailNextDestroy:
		return []string{1: "transient", 2: "permanent"}[o.destroyFault()]
	}
	return ""
}

func (o modelOp) move() string {
	return map[string]string{"node-b": "to node-b", "": "unbound"}[o.moveTo()]
}

func (o modelOp) String() string {
	name, pod := modelOpNames[o.kind], modelKey(o.slot).Name
	details := []string{pod}
	switch o.kind {
	case modelSweep:
		return name
	case modelAdvance:
		return fmt.Sprintf("%s(%ds)", name, o.seconds())
	case modelTrack:
		if o.staleTrack() {
			details = append(details, "stale PUID")
		}
		details = append(details, []string{"its sandbox", "no sandbox", "an old sandbox"}[o.trackSandbox()])
	case modelRecreate, modelMove, modelChangeSandbox:
		if o.kind == modelMove {
			details = append(details, o.move())
		}
		if o.noSandbox() {
			details = append(details, "sandbox not known yet")
		}
	case modelFailNextGet, modelFailNextDestroy:
		details = append(details, o.fault())
	case modelUntrack:
		details = append(details, fmt.Sprintf("its PU #%d, modulo their number", o.variant))
	}
	return fmt.Sprintf("%s(%s)", name, strings.Join(details, ", "))
}

// modelDone is what one operation did on the model's side: the checks it
// made, and what else it changed or showed. An operation with neither is
// a no-op.
type modelDone struct {
	checks []modelCheck
	note   string
}

func (d modelDone) noop() bool { return len(d.checks) == 0 && d.note == "" }

func (d modelDone) String() string {
	var parts []string
	if d.note != "" {
		parts = append(parts, d.note)
	}
	for _, k := range d.checks {
		parts = append(parts, k.String())
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, "; ")
}

// modelRun is the model's side of a run: the cluster, the model, and what
// each operation did.
type modelRun struct {
	cl   *modelCluster
	m    *model
	ids  int
	done []modelDone
	// faults are the operations that planned the faults not spent yet.
	faults []int
}

func newModelRun(cl *modelCluster) *modelRun {
	return &modelRun{cl: cl, m: &model{entries: map[string]*modelEntry{}}}
}

func (w *modelRun) id(prefix string) string { w.ids++; return fmt.Sprintf("%s%d", prefix, w.ids) }

// apply carries out op on the cluster and the model, records what it did
// there, and returns the engine's side of it (nil for none) and whether it
// checks PUs, which spends the planned faults (see spend).
func (w *modelRun) apply(op modelOp) (call func(t *testing.T, c *deletion.Engine), checked bool) {
	cl, m, slot := w.cl, w.m, op.slot
	p := &cl.pods[slot]
	var note string
	switch op.kind {
	case modelTrack:
		e := ports.PU{PUID: p.uid, Pod: modelKey(slot), SandboxID: p.sandbox}
		if !p.exists || op.staleTrack() {
			e.PUID = w.id("u-stale") // a PU of a pod that is already gone
		}
		switch op.trackSandbox() {
		case 1:
			e.SandboxID = "" // tracked before the sandbox was known
		case 2:
			e.SandboxID = w.id("s-old") // tracked with a sandbox since replaced
		}
		call = func(t *testing.T, c *deletion.Engine) { require.NoError(t, c.Track(e)) }
		if _, ok := m.entries[e.PUID]; !ok { // insert-only
			m.entries[e.PUID] = &modelEntry{puid: e.PUID, slot: slot, sandbox: e.SandboxID}
			note = fmt.Sprintf("tracked %s with sandbox %q", e.PUID, e.SandboxID)
		} else {
			note = fmt.Sprintf("%s already tracked: kept as it is", e.PUID)
		}
	case modelDelete:
		if p.exists {
			note = fmt.Sprintf("deleted %s (%s)", modelKey(slot).Name, p.uid)
		}
		*p = modelPod{}
	case modelRecreate, modelMove:
		node := modelNode
		if op.kind == modelMove {
			node = op.moveTo()
		}
		sb := w.id("s")
		if op.noSandbox() {
			sb = ""
		}
		*p = modelPod{exists: true, uid: w.id("u"), node: node, sandbox: sb}
		note = fmt.Sprintf("%s is %s on node %q in sandbox %q", modelKey(slot).Name, p.uid, p.node, p.sandbox)
	case modelChangeSandbox:
		if p.sandbox = w.id("s"); op.noSandbox() {
			p.sandbox = ""
		}
		note = fmt.Sprintf("%s's sandbox is %q", modelKey(slot).Name, p.sandbox)
	case modelFailNextGet:
		cl.failGet[slot] = op.getFault()
	case modelFailNextSandbox:
		cl.failSandbox[slot] = true
	case modelFailNextDestroy:
		cl.failDestroy[slot] = op.destroyFault()
	case modelFailNextConfirm:
		cl.failConfirm[slot] = true
	case modelSweep:
		for _, e := range m.sorted() {
			m.checkEarly(e, cl)
		}
		call = func(_ *testing.T, c *deletion.Engine) { c.Sweep(context.Background()) }
		checked = true
	case modelTrigger:
		var waiting []string
		for _, e := range m.sorted() {
			switch {
			case e.slot != slot:
			case e.retryAt == 0:
				m.check(e, cl, "trigger")
			default:
				waiting = append(waiting, e.puid)
			}
		}
		if len(waiting) > 0 {
			note = "waiting for a retry, not checked: " + strings.Join(waiting, ", ")
		}
		call = func(_ *testing.T, c *deletion.Engine) { c.TriggerPod(modelKey(slot)) }
		checked = true
	case modelAdvance:
		n := op.seconds()
		for range n {
			m.tick(cl)
		}
		if len(m.checks) == 0 && len(m.entries) > 0 {
			var due []string // what the engine must not have done yet
			for _, e := range m.sorted() {
				if e.retryAt != 0 {
					due = append(due, fmt.Sprintf("%s's retry at second %d", e.puid, e.retryAt))
				} else {
					due = append(due, fmt.Sprintf("%s's periodic check (second %d of each interval)", e.puid, fnvSlot(e.puid)))
				}
			}
			note = "not due yet: " + strings.Join(due, ", ")
		}
		call = func(*testing.T, *deletion.Engine) { time.Sleep(time.Duration(n) * time.Second) }
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
			e := mine[op.variant%len(mine)]
			puid, note = e.puid, "untracked "+e.puid
			if e.retryAt != 0 {
				note += ", which was waiting for a retry"
			}
		}
		_, tracked := m.entries[puid]
		delete(m.entries, puid)
		call = func(t *testing.T, c *deletion.Engine) {
			require.Equal(t, tracked, c.Untrack(puid), "Untrack(%s)", puid)
		}
	}
	switch op.kind {
	case modelFailNextGet, modelFailNextSandbox, modelFailNextDestroy, modelFailNextConfirm:
		w.faults = append(w.faults, len(w.done))
	}
	w.done = append(w.done, modelDone{checks: m.checks, note: note})
	m.checks = nil
	return call, checked
}

// spend ends the faults planned so far, once an operation checked: each
// operation that planned one is told whether a check met it.
func (w *modelRun) spend(ops []modelOp) {
	for _, i := range w.faults {
		op := ops[i]
		read := w.m.read[op.slot]
		if met := map[int]bool{modelFailNextGet: read.get, modelFailNextSandbox: read.sandbox,
			modelFailNextDestroy: read.destroy, modelFailNextConfirm: read.confirm}[op.kind]; met {
			w.done[i].note = "met by a check"
		}
	}
	w.faults = nil
	w.m.read = [modelSlots]modelFaults{}
	*w.cl = modelCluster{pods: w.cl.pods}
}

// runModel decodes data into operations and runs them on both sides, then
// a last Sweep.
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

	w := newModelRun(cl)
	ops := append(decodeModelOps(data), modelOp{kind: modelSweep})
	var trace []string
	for i, op := range ops {
		trace = append(trace, op.String())
		mp.clMu.Lock()
		call, checked := w.apply(op)
		mp.clMu.Unlock()
		if call != nil { // the engine's side, once the cluster is unlocked
			call(t, c)
		}

		// Both sides must agree; after an operation that checked, the
		// planned faults are spent.
		synctest.Wait()
		want := w.m.take()
		mp.mu.Lock()
		got := modelOutcome{Destroyed: mp.destroyed, Abandoned: mp.abandoned, Requeued: mp.requeued, Pending: inspect.PUs(c)}
		mp.destroyed, mp.abandoned, mp.requeued = nil, nil, nil
		mp.mu.Unlock()
		got.sort()
		require.Equal(t, want, got, "at second %d, after: %v", w.m.now, trace)
		if checked {
			mp.clMu.Lock()
			w.spend(ops[:i+1])
			mp.clMu.Unlock()
		}
	}
}

// FuzzModel checks the engine against the model on sequences of operations.
// CI runs the committed corpus (testdata/fuzz/FuzzModel); run the fuzzer
// with go test -fuzz=FuzzModel ./deletion/. A file added to the corpus is
// named after what it covers; TestFuzzModelCorpusCoversEveryOperation
// checks that the corpus reaches every operation, and go test -v -run
// TestFuzzModelCorpus ./deletion/ prints what each file does.
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
