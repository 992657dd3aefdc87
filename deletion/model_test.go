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
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// The model-based test: the fuzzer's bytes become operations on a tiny
// cluster of modelSlots pod names; the engine, running under Start in a
// testing/synctest bubble, and an obvious model of the decision table, its
// Confirmer, its wheel, its retries and, by mode, the dry run, the
// SandboxConfirmer and the destroy rate run side by side, and after every
// operation their destroys, reports, abandons, requeues and remaining
// entries, with what each waits for, must match. Time moves only when an
// operation says so, a second at a time: the engine's wheel ticks once a
// second (SweepInterval modelInterval), a PUID's periodic check comes at the
// second its hash picks, a failed destroy waits 1, 2, then 4 seconds, and
// under the destroy rate a turn comes once a second. Where the engine may
// choose (which of the destroys due at one instant gets the one turn there
// is, in what order the others join the line, and the turn a check of one
// in line tells, which depends on whether one ahead of it left the line
// before or after it), the model takes the engine's choice, from what it
// did and its line (modelOracle), once it has checked that the choice is
// one the rate allows: the line keeps its order, and a PU is told the turn
// of its place in it. Under the rate a Sweep waits for the turns
// of its destroys, which the model's ticks bring: it runs on until the next
// Sweep ends it with its context. FuzzPromises (promises_model_test.go)
// models what this one leaves out: the Inventory, Sweep without Start,
// restarts, hangs and nonsense from every port, by invariants. The ports check three invariants
// besides, at every DestroyPU: none after Untrack returned, none beyond
// the rate, and no retry before its backoff but for a Sweep's.

const (
	modelSlots       = 4
	modelNode        = "node-a"
	modelMaxAttempts = 3
	modelMaxOps      = 256
	modelInterval    = 64 * time.Second // 64 one-second ticks
)

// Modes, the fuzzer's first argument: the options the engine runs with.
const (
	// modeDryRun: Options.DryRun.
	modeDryRun = 1 << iota
	// modeSandboxList: the SandboxExtractor answers from a list of the
	// sandboxes refreshed at the end of each Advance, and the
	// SandboxConfirmer from the runtime (the truth).
	modeSandboxList
	// modeRate: Options.DestroyRate 1 a second, DestroyBurst 1.
	modeRate
	// modeBurst2: DestroyBurst 2, with modeRate.
	modeBurst2
	modelModes = 1<<iota - 1
)

// modeString names the options of mode.
func modeString(mode int) string {
	var parts []string
	for bit, name := range map[int]string{modeDryRun: "DryRun", modeSandboxList: "SandboxConfirmer over a list", modeRate: "DestroyRate 1/s"} {
		if mode&bit != 0 {
			parts = append(parts, name)
		}
	}
	if mode&modeRate != 0 && mode&modeBurst2 != 0 {
		parts = append(parts, "DestroyBurst 2")
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		return "defaults"
	}
	return strings.Join(parts, ", ")
}

// Operations, one per pair of bytes (op, arg): arg&3 is the pod slot, the
// other bits of arg pick a variant. Their numbers are those of the committed
// corpus: new ones go at the end, and the corpus's op bytes of modelOps or
// more (read modulo modelOps) are written anew modulo the old modelOps.
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
	modelKillSandbox
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
	turnAt   int // under the rate: the second its turn comes; 0: not waiting
	lineSeq  int // under the rate, while turnAt is set: its place in line (the lower, the nearer the head)
	lineRow  int // the row of the destroy it waits for its turn for
	// checked: a check ran; fresh: a trigger asked for the next check. A
	// first check and a triggered one ask the SandboxConfirmer.
	checked, fresh bool
	reported       int // in a dry run, the rows reported (bit 1<<row)
}

// waits says what e waits for, as the engine's Status says it.
func (e *modelEntry) waits() string {
	switch {
	case e.retryAt != 0:
		return fmt.Sprintf("%s: retry at second %d", e.puid, e.retryAt)
	case e.turnAt != 0:
		return fmt.Sprintf("%s: turn at second %d", e.puid, e.turnAt)
	}
	return ""
}

// modelCluster is the truth both sides read, and the faults planned for the
// next operation that checks. Checks read it only: their order cannot matter.
type modelCluster struct {
	pods        [modelSlots]modelPod
	failGet     [modelSlots]int // 0 none, 1 error, 2 nil pod and nil error, 3 another pod, 4 a cache that lags: not found
	failSandbox [modelSlots]bool
	failDestroy [modelSlots]int // 0 none, 1 transient, 2 permanent
	failConfirm [modelSlots]bool
	// listed is what the list of sandboxes says (modeSandboxList): the
	// truth as of the end of the last Advance.
	listed [modelSlots]string
	// dead holds the sandboxes that died (KillSandbox): the SandboxProber
	// says so.
	dead map[string]bool
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
	reported  []string // EventWouldDestroy: "PUID: reason"

	// The invariants' record: every DestroyPU call since the engine was
	// made (epoch), the PUIDs Untrack forgot (untracked), whether a Sweep
	// runs (sweeping), and what breaks an invariant (violations).
	epoch time.Time
	rate  float64
	burst int
	calls []modelCall
	seen  int // calls the oracle has read
	// since is, by PUID, the first call of the PU tracked last under it:
	// a PUID tracked again is a new PU.
	since      map[string]int
	untracked  map[string]bool
	sweeping   bool
	violations []string
}

// modelCall is one DestroyPU call.
type modelCall struct {
	puid   string
	at     time.Duration // since the epoch
	failed bool
	sweep  bool // during a Sweep
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

// SandboxID is the runtime: the truth.
func (m *modelPorts) SandboxID(_ context.Context, pod *corev1.Pod) (string, error) {
	return m.sandbox(pod, func(slot int) string { return m.cl.pods[slot].sandbox })
}

// list is the SandboxExtractor of modeSandboxList: the list of sandboxes.
func (m *modelPorts) list() ports.SandboxExtractor {
	return ports.SandboxExtractorFunc(func(_ context.Context, pod *corev1.Pod) (string, error) {
		return m.sandbox(pod, func(slot int) string { return m.cl.listed[slot] })
	})
}

// SandboxDead is the SandboxProber: whether the sandbox died.
func (m *modelPorts) SandboxDead(_ context.Context, pod *corev1.Pod, id string) (bool, error) {
	dead, err := m.sandbox(pod, func(int) string {
		if m.cl.dead[id] {
			return "dead"
		}
		return ""
	})
	return dead != "", err
}

func (m *modelPorts) sandbox(pod *corev1.Pod, of func(slot int) string) (string, error) {
	m.clMu.RLock()
	defer m.clMu.RUnlock()
	slot := modelSlot(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
	if m.cl.failSandbox[slot] {
		return "", errors.New("model: sandbox lookup failed")
	}
	return of(slot), nil
}

func (m *modelPorts) DestroyPU(_ context.Context, ev ports.DestroyEvent) error {
	m.clMu.RLock()
	fail := m.cl.failDestroy[modelSlot(ev.Pod)]
	m.clMu.RUnlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.called(ev.PUID, fail != 0)
	switch fail {
	case 1:
		return errors.New("model: destroy failed")
	case 2:
		return ports.Permanent(errors.New("model: destroy refused"))
	}
	m.destroyed = append(m.destroyed, ev)
	return nil
}

// called records a DestroyPU call of puid and checks the invariants: no
// DestroyPU after Untrack returned, at most rate*w + burst calls in any
// window w, and a retry no earlier than its backoff (1, 2, then 4 seconds)
// after the failure, but for a Sweep's.
func (m *modelPorts) called(puid string, failed bool) {
	call := modelCall{puid: puid, at: time.Since(m.epoch), failed: failed, sweep: m.sweeping}
	if m.untracked[puid] {
		m.violations = append(m.violations, fmt.Sprintf("DestroyPU of %s at %v, after Untrack returned", puid, call.at))
	}
	failures := 0
	for _, p := range m.calls[m.since[puid]:] {
		if p.puid != puid || !p.failed {
			continue
		}
		failures++
		if backoff := time.Duration(min(1<<(failures-1), 4)) * time.Second; !call.sweep && call.at-p.at < backoff {
			m.violations = append(m.violations, fmt.Sprintf("DestroyPU of %s at %v, %v after its failure %d: before its backoff of %v",
				puid, call.at, call.at-p.at, failures, backoff))
		}
	}
	m.calls = append(m.calls, call)
	if m.rate == 0 {
		return
	}
	for i := len(m.calls) - 1; i >= 0; i-- {
		n, w := len(m.calls)-i, call.at-m.calls[i].at
		if float64(n) > m.rate*w.Seconds()+float64(m.burst)+1e-9 {
			m.violations = append(m.violations, fmt.Sprintf("%d DestroyPU calls from %v to %v: more than %v a second with a burst of %d",
				n, m.calls[i].at, call.at, m.rate, m.burst))
			break
		}
	}
}

func (m *modelPorts) Requeue(_ context.Context, pod *corev1.Pod) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requeued = append(m.requeued, string(pod.UID))
	return nil
}

func (m *modelPorts) Observe(ev deletion.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch ev.Kind {
	case deletion.EventAbandoned:
		m.abandoned = append(m.abandoned, ev.PU.PUID)
	case deletion.EventWouldDestroy:
		m.reported = append(m.reported, ev.PU.PUID+": "+string(ev.Reason))
	}
}

// modelOracle is what the engine did at one instant, where the model
// allows it a choice (see the top of this file).
type modelOracle struct {
	// called holds the PUIDs whose DestroyPU started.
	called map[string]bool
	// turnAt is the second each PU waiting for its turn waits for, from
	// Status.
	turnAt map[string]int
	// line holds the PUIDs in the rate's line, in its order.
	line []string
}

// oracle reads what the engine did since the last call.
func (m *modelPorts) oracle(c *deletion.Engine) *modelOracle {
	o := &modelOracle{called: map[string]bool{}, turnAt: map[string]int{}}
	m.mu.Lock()
	for _, call := range m.calls[m.seen:] {
		o.called[call.puid] = true
	}
	m.seen = len(m.calls)
	m.mu.Unlock()
	for _, s := range c.Status() {
		if s.State == "waiting for its turn" {
			o.turnAt[s.PUID] = int(s.NextAttempt.Sub(m.epoch) / time.Second)
		}
	}
	o.line = deletion.RateLine(c)
	return o
}

// modelOutcome is what the operations since the last comparison did, on
// either side.
type modelOutcome struct {
	Destroyed []ports.DestroyEvent
	Reported  []string
	Abandoned []string
	Requeued  []string
	Pending   []ports.PU
	// Waiting says what each PU waiting for a retry or a turn waits for.
	Waiting []string
}

func (o *modelOutcome) sort() {
	if len(o.Pending) == 0 {
		o.Pending = nil
	}
	slices.SortFunc(o.Destroyed, func(a, b ports.DestroyEvent) int { return cmp.Compare(a.PUID, b.PUID) })
	slices.Sort(o.Reported)
	slices.Sort(o.Abandoned)
	slices.Sort(o.Requeued)
	slices.SortFunc(o.Pending, func(a, b ports.PU) int { return cmp.Compare(a.PUID, b.PUID) })
	slices.Sort(o.Waiting)
}

// engineOutcome is the engine's side of a modelOutcome: what the ports saw
// since the last call, and what Status says now.
func engineOutcome(mp *modelPorts, c *deletion.Engine) modelOutcome {
	mp.mu.Lock()
	got := modelOutcome{Destroyed: mp.destroyed, Reported: mp.reported, Abandoned: mp.abandoned, Requeued: mp.requeued}
	mp.destroyed, mp.reported, mp.abandoned, mp.requeued = nil, nil, nil, nil
	mp.mu.Unlock()
	for _, s := range c.Status() {
		got.Pending = append(got.Pending, s.PU)
		at := int(s.NextAttempt.Sub(mp.epoch) / time.Second)
		switch s.State {
		case "waiting for a retry":
			got.Waiting = append(got.Waiting, fmt.Sprintf("%s: retry at second %d", s.PUID, at))
		case "waiting for its turn":
			got.Waiting = append(got.Waiting, fmt.Sprintf("%s: turn at second %d", s.PUID, at))
		}
	}
	got.sort()
	return got
}

// model is the obvious implementation of the decision table, the
// Confirmer, the wheel, the retries, and by mode the dry run, the
// SandboxConfirmer and the destroy rate.
type model struct {
	mode    int
	entries map[string]*modelEntry
	now     int // seconds since the engine was made
	out     modelOutcome
	// checks are the checks made since the last operation, for modelDone.
	checks []modelCheck
	// read are the planned faults the checks met, by slot, for modelDone.
	read [modelSlots]modelFaults

	// Under the destroy rate: the turns at hand at second tokensAt, and
	// what the checks of the current instant did with them (instant).
	tokens, tokensAt, burst int
	instant                 modelInstant
	// lineSeq is the place in line of the last PU that joined it.
	lineSeq int
	// oracle is what the engine did at this instant, where the rate lets
	// it choose; nil: the model chooses (the first in PUID order takes a
	// turn at hand, and a newcomer waits right behind those waiting).
	oracle *modelOracle
	// errs are the engine's choices the rate does not allow.
	errs []string
}

// modelInstant is what the checks of one instant did under the rate.
type modelInstant struct {
	checked   map[string]bool // the PUs checked
	waited    map[string]int  // the PUs waiting for their turn when it began, and their places in line
	newcomers []*modelEntry   // PUs that joined the line, with the turn the engine gave them
	// estimated are the PUs in line before that a check found still to wait:
	// the turn the engine gives them anew, and the one they waited for.
	estimated []modelEstimate
	// passed: a PU left the line, or took a turn: the head's turn may be
	// sooner (passTurn).
	passed bool
}

// modelEstimate is a PU in line whose check found it still to wait, and the
// second it waited for before.
type modelEstimate struct {
	e   *modelEntry
	old int
}

// modelFaults says which of a slot's planned faults a check met.
type modelFaults struct{ get, sandbox, destroy, confirm bool }

// modelCheck is one check the model made: why, of which PU, the row of the
// verdict carried out (and the PodGetter's, when the Confirmer was asked),
// and what came of it.
type modelCheck struct {
	why      string // "sweep", "trigger", "periodic", "retry" or "turn"
	puid     string
	row      int
	askedRow int  // the PodGetter's row the Confirmer was asked about; 0: not asked
	vetoed   bool // the Confirmer kept the PU the PodGetter's row destroys
	// listRow is the row of the list's answer the SandboxConfirmer was
	// asked about (modeSandboxList); 0: not asked.
	listRow int
	outcome string
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
	if k.listRow != 0 {
		s += fmt.Sprintf(" (the list's row %d, asked of the SandboxConfirmer)", k.listRow)
	}
	return s + ", " + k.outcome
}

// decide is the decision table on p, what a getter answered for e's pod
// (ok false for an answer that keeps the PU whatever it is), with sandbox
// the sandbox the check reads for it: the row, and the reason to destroy
// or whether to adopt that sandbox.
func (m *model) decide(e *modelEntry, p modelPod, ok bool, cl *modelCluster, sandbox string) (row int, reason ports.Reason, adopt bool) {
	switch {
	case !ok: // never destroy on a failed or nonsensical read
		return 2, "", false
	case !p.exists:
		return 1, ports.ReasonPodGone, false
	case p.node != "" && p.node != modelNode:
		return 3, ports.ReasonNodeChanged, false
	case p.uid != e.puid:
		return 4, ports.ReasonUIDChanged, false
	}
	return m.decideSandbox(e, cl, sandbox)
}

// decideSandbox is rows 6 to 10 and 12, on the sandbox a check reads.
func (m *model) decideSandbox(e *modelEntry, cl *modelCluster, sandbox string) (row int, reason ports.Reason, adopt bool) {
	switch {
	case cl.failSandbox[e.slot]:
		m.read[e.slot].sandbox = true
		return 6, "", false
	case e.sandbox == "" && sandbox != "":
		return 7, "", true
	case sandbox == "" && e.sandbox != "" && cl.dead[e.sandbox]: // the SandboxProber's row
		return 12, ports.ReasonSandboxDead, false
	case sandbox == "": // not known yet: the seed would destroy here
		return 8, "", false
	case sandbox != e.sandbox:
		return 10, ports.ReasonSandboxChanged, false
	}
	return 9, "", false
}

// check runs one check of e, as the engine does; why says what brought it.
// A Sweep's check of a PU waiting for a retry that destroys nothing leaves
// the retry where it was.
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
	// The sandbox the check reads: the list's, but a first or a triggered
	// check asks the SandboxConfirmer (the truth).
	sandbox, listed := truth.sandbox, m.mode&modeSandboxList != 0 && e.checked && !e.fresh
	if listed {
		sandbox = cl.listed[e.slot]
	}
	e.checked, e.fresh = true, false
	row, reason, adopt := m.decide(e, cached, cl.failGet[e.slot] == 0 || cl.failGet[e.slot] == 4, cl, sandbox)
	k := modelCheck{why: why, puid: e.puid, row: row}
	if reason != "" && reason != ports.ReasonSandboxChanged && reason != ports.ReasonSandboxDead {
		if cl.failConfirm[e.slot] {
			m.read[e.slot].confirm = true
		}
		row, reason, adopt = m.decide(e, truth, !cl.failConfirm[e.slot], cl, sandbox) // the Confirmer's verdict is carried out
		k.askedRow, k.row, k.vetoed = k.row, row, reason == ""
	}
	if listed && (row == 7 || row == 10) { // the SandboxConfirmer's verdict is carried out
		k.listRow = row
		row, reason, adopt = m.decideSandbox(e, cl, truth.sandbox)
		k.row = row
	}
	if m.instant.checked != nil {
		m.instant.checked[e.puid] = true
	}
	pending := e.retryAt
	defer func() {
		if _, ok := m.entries[e.puid]; ok && e.retryAt == 0 && e.turnAt == 0 && pending > m.now {
			e.retryAt = pending
		}
		m.checks = append(m.checks, k)
	}()
	e.retryAt = 0
	if adopt {
		e.sandbox = truth.sandbox
		k.outcome = "adopted " + e.sandbox
		return
	}
	if reason == "" {
		switch {
		case e.turnAt != 0 && (row == 2 || row == 6 && (e.lineRow == 10 || e.lineRow == 12)): // it learned nothing of why it waits
			e.turnAt = max(e.turnAt, m.now+1)
			m.instant.passed = m.instant.checked != nil // its check ended: the head's turn may be sooner
			k.outcome = fmt.Sprintf("kept, a read failed: keeps its place, its turn at second %d", e.turnAt)
		case e.turnAt != 0:
			k.outcome = "kept: leaves the line"
			e.turnAt = 0
			m.passTurn()
		default:
			k.outcome = "kept"
		}
		return
	}
	if m.mode&modeDryRun != 0 {
		k.outcome = m.wouldDestroy(e, row, reason)
		return
	}
	if m.mode&modeRate != 0 && !m.turn(e, pending) {
		e.lineRow = row
		k.outcome = fmt.Sprintf("no turn at hand: waits for its turn at second %d", e.turnAt)
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
	if reason == ports.ReasonSandboxChanged || reason == ports.ReasonSandboxDead {
		m.out.Requeued = append(m.out.Requeued, truth.uid)
		k.outcome += ", requeued"
	}
	delete(m.entries, e.puid)
}

// wouldDestroy is a destroy in a dry run: reported once per row, and the PU
// dropped when its pod is gone for good.
func (m *model) wouldDestroy(e *modelEntry, row int, reason ports.Reason) string {
	out := "would destroy, reported already"
	if e.reported&(1<<row) == 0 { // once per PU and reason
		e.reported |= 1 << row
		m.out.Reported = append(m.out.Reported, e.puid+": "+string(reason))
		out = "would destroy (" + string(reason) + "): reported"
	}
	if reason != ports.ReasonSandboxChanged && reason != ports.ReasonSandboxDead {
		delete(m.entries, e.puid)
		out += ", dropped"
	}
	return out
}

// turn is the destroy rate for e's destroy, which a check decided (pending
// is the retry e waited for before it): it reports whether a turn is at
// hand for it. If not, e waits: one whose turn has not come keeps its
// place; one whose turn came takes the next; any other (a Sweep's early
// check of a retry too) joins the line, behind those waiting.
func (m *model) turn(e *modelEntry, pending int) bool {
	goes := m.tokens > 0
	if m.oracle != nil {
		goes = m.oracle.called[e.puid]
	}
	if goes {
		if m.tokens <= 0 {
			m.errs = append(m.errs, fmt.Sprintf("DestroyPU of %s at second %d: no turn was at hand", e.puid, m.now))
		}
		m.tokens--
		e.turnAt = 0
		m.passTurn() // the next in line is at the head
		return true
	}
	switch {
	case e.turnAt != 0: // keeps its place: a new estimate only brings its turn nearer
		old := e.turnAt
		if e.turnAt <= m.now {
			e.turnAt = m.now + 1
		}
		if m.oracle != nil {
			e.turnAt = m.oracle.turnAt[e.puid]
			m.instant.estimated = append(m.instant.estimated, modelEstimate{e, old})
		}
	default:
		e.turnAt = m.now + 1 + m.waitingForTurns()
		m.lineSeq++
		e.lineSeq = m.lineSeq
		if m.oracle != nil {
			e.turnAt = m.oracle.turnAt[e.puid]
			m.instant.newcomers = append(m.instant.newcomers, e)
		}
	}
	return false
}

// passTurn is a PU leaving the line, with its turn or without: the next in
// line is at the head, and is checked at the next turn if it waited for a
// later one. During an instant, the head is known once the engine's order of
// the PUs that joined the line is (endInstant).
func (m *model) passTurn() {
	if m.instant.checked != nil {
		m.instant.passed = true
		return
	}
	if line := m.line(); len(line) > 0 {
		line[0].turnAt = min(line[0].turnAt, m.now+1)
	}
}

// line returns the PUs waiting for their turn, in the line's order.
func (m *model) line() []*modelEntry {
	var out []*modelEntry
	for _, e := range m.entries {
		if e.turnAt != 0 {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *modelEntry) int { return cmp.Compare(a.lineSeq, b.lineSeq) })
	return out
}

// waitingForTurns returns how many PUs wait for their turn.
func (m *model) waitingForTurns() int {
	n := 0
	for _, e := range m.entries {
		if e.turnAt != 0 {
			n++
		}
	}
	return n
}

// beginInstant starts an instant of the rate: the turns that came since
// the last one are at hand, up to the burst.
func (m *model) beginInstant() {
	m.tokens = min(m.burst, m.tokens+m.now-m.tokensAt)
	m.tokensAt = m.now
	m.instant = modelInstant{checked: map[string]bool{}, waited: map[string]int{}}
	for _, e := range m.entries {
		if e.turnAt != 0 {
			m.instant.waited[e.puid] = e.lineSeq
		}
	}
}

// endInstant checks the engine's choices of the instant: the line holds
// those in it before, in their order, then those that joined it, in an
// order the engine chose, which the model takes; and each PU whose check
// found it to wait has no fewer PUs ahead of it than turns at hand (a turn
// at hand may be for one ahead whose check learned nothing) and was told
// the turn of its place in line: that of its place at the end of the
// instant at the earliest, and at the latest that of its place when the
// instant began (for one in line before, never later than the turn it
// waited for) or, for one that joined, behind every other PU in line at
// some moment of the instant (its check may end before one ahead of it
// leaves the line). Then the head of the line is checked at the next turn
// if it waited for a later one.
func (m *model) endInstant() {
	joined := map[*modelEntry]bool{}
	for _, e := range m.instant.newcomers {
		joined[e] = true
	}
	var before, newcomers []string
	for _, e := range m.line() {
		if joined[e] {
			newcomers = append(newcomers, e.puid)
		} else {
			before = append(before, e.puid)
		}
	}
	if m.oracle != nil {
		got := m.oracle.line
		if len(got) != len(before)+len(newcomers) || !slices.Equal(got[:len(before)], before) ||
			!slices.Equal(slices.Sorted(slices.Values(got[len(before):])), slices.Sorted(slices.Values(newcomers))) {
			m.errs = append(m.errs, fmt.Sprintf("at second %d, the line is %v; it must hold %v, then %v in any order",
				m.now, got, before, newcomers))
		} else {
			newcomers = got[len(before):] // the engine's order
			for _, puid := range newcomers {
				m.lineSeq++
				m.entries[puid].lineSeq = m.lineSeq
			}
		}
	}
	line := m.line()
	place := map[*modelEntry]int{}
	for i, e := range line {
		place[e] = i
	}
	aheadAtBegin := func(e *modelEntry) int {
		n := 0
		for _, seq := range m.instant.waited {
			if seq < e.lineSeq {
				n++
			}
		}
		return n
	}
	check := func(e *modelEntry, hi int) {
		i, ok := place[e]
		if !ok {
			return // it left the line, or took its turn, within the instant
		}
		if i < m.tokens {
			m.errs = append(m.errs, fmt.Sprintf("at second %d, %s waits with %d PUs ahead of it and %d turns at hand", m.now, e.puid, i, m.tokens))
			return
		}
		if lo, hi := m.now+1+i-m.tokens, hi-m.tokens; e.turnAt < lo || e.turnAt > hi {
			m.errs = append(m.errs, fmt.Sprintf("at second %d, %s waits for second %d; by its place in line (%d, with %d turns at hand), it waits for second %d to %d",
				m.now, e.puid, e.turnAt, i, m.tokens, lo, hi))
		}
	}
	for _, e := range m.instant.newcomers {
		check(e, m.now+1+len(m.instant.waited)+max(0, slices.Index(newcomers, e.puid)))
	}
	for _, k := range m.instant.estimated {
		hi := m.now + 1 + aheadAtBegin(k.e)
		if k.old > m.now {
			hi = min(hi, k.old+m.tokens)
		}
		check(k.e, hi)
	}
	if len(line) > 0 && (m.instant.passed || len(m.instant.newcomers)+len(m.instant.estimated) > 0) {
		line[0].turnAt = min(line[0].turnAt, m.now+1)
	}
	m.instant = modelInstant{}
}

// tick is one second of the wheel: the entries of this second's slot that
// are not waiting for a retry, and the retries and turns due.
func (m *model) tick(cl *modelCluster) {
	m.now++
	m.beginInstant()
	for _, e := range m.sorted() {
		switch {
		case e.retryAt == 0 && int(fnvSlot(e.puid)) == m.now%int(modelInterval/time.Second):
			m.check(e, cl, "periodic")
		case e.retryAt != 0 && e.retryAt <= m.now:
			m.check(e, cl, "retry")
		case e.turnAt != 0 && e.turnAt <= m.now:
			m.check(e, cl, "turn")
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
		if w := e.waits(); w != "" {
			out.Waiting = append(out.Waiting, w)
		}
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
	modelFailNextConfirm: "FailNextConfirm", modelKillSandbox: "KillSandbox",
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
	// endSweep ends the Sweep that still waits for turns, if any;
	// sweepRuns: one does, and its destroys are a Sweep's.
	endSweep  func()
	sweepRuns bool
}

func newModelRun(cl *modelCluster, mode int) *modelRun {
	m := &model{mode: mode, entries: map[string]*modelEntry{}, burst: 1}
	if mode&modeBurst2 != 0 {
		m.burst = 2
	}
	m.tokens = m.burst
	return &modelRun{cl: cl, m: m, endSweep: func() {}}
}

func (w *modelRun) id(prefix string) string { w.ids++; return fmt.Sprintf("%s%d", prefix, w.ids) }

// sweep runs a Sweep on c. Under the destroy rate, a Sweep waits for the
// turns of the destroys its checks decide, as Start's scheduler brings them
// (the model's ticks): it runs on, and the next Sweep, or the end of the
// run, ends it with its context first (which changes nothing else).
func (w *modelRun) sweep(c *deletion.Engine) {
	w.endSweep()
	if w.m.mode&modeRate == 0 {
		c.Sweep(context.Background())
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Sweep(ctx)
	}()
	w.sweepRuns = true
	w.endSweep = func() {
		cancel()
		<-done
		w.endSweep, w.sweepRuns = func() {}, false
	}
}

// modelStep is one instant of an operation: the engine's side (nil for
// none), then the model's, which may read what the engine did (the oracle).
type modelStep struct {
	engine func(t *testing.T, c *deletion.Engine)
	model  func()
	// tracks is the PUID the engine's side tracks anew, untracks the one it
	// untracks: DestroyPU of the latter breaks an invariant once Untrack
	// has returned, until the former tracks it again.
	tracks, untracks string
}

// apply carries out op on the cluster, and returns its instants and whether
// it checks PUs, which spends the planned faults (see spend). Once its
// steps have run, done records what it did on the model's side.
func (w *modelRun) apply(op modelOp) (steps []modelStep, checked bool, done func()) {
	cl, m, slot := w.cl, w.m, op.slot
	p := &cl.pods[slot]
	var note string
	now := func(engine func(*testing.T, *deletion.Engine), model func()) *modelStep {
		steps = append(steps, modelStep{engine: engine, model: func() {
			m.beginInstant()
			if model != nil {
				model()
			}
		}})
		return &steps[len(steps)-1]
	}
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
		step := now(func(t *testing.T, c *deletion.Engine) { require.NoError(t, c.Track(e)) }, nil)
		if _, ok := m.entries[e.PUID]; !ok { // insert-only
			step.tracks = e.PUID
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
	case modelKillSandbox:
		if p.exists && p.sandbox != "" {
			cl.dead[p.sandbox] = true
			note = fmt.Sprintf("%s's sandbox %s died: it waits for a new one", modelKey(slot).Name, p.sandbox)
			p.sandbox = ""
		}
	case modelFailNextGet:
		cl.failGet[slot] = op.getFault()
	case modelFailNextSandbox:
		cl.failSandbox[slot] = true
	case modelFailNextDestroy:
		cl.failDestroy[slot] = op.destroyFault()
	case modelFailNextConfirm:
		cl.failConfirm[slot] = true
	case modelSweep:
		now(func(_ *testing.T, c *deletion.Engine) { w.sweep(c) }, func() {
			for _, e := range m.sorted() {
				m.check(e, cl, "sweep")
			}
		})
		checked = true
	case modelTrigger:
		now(func(_ *testing.T, c *deletion.Engine) { c.TriggerPod(modelKey(slot)) }, func() {
			var waiting []string
			for _, e := range m.sorted() {
				switch {
				case e.slot != slot:
				case e.retryAt == 0:
					e.fresh = true
					m.check(e, cl, "trigger")
				default:
					e.fresh = true // its next check asks the SandboxConfirmer
					waiting = append(waiting, e.puid)
				}
			}
			if len(waiting) > 0 {
				note = "waiting for a retry, not checked: " + strings.Join(waiting, ", ")
			}
		})
		checked = true
	case modelAdvance:
		n := op.seconds()
		for range n {
			steps = append(steps, modelStep{
				engine: func(*testing.T, *deletion.Engine) { time.Sleep(time.Second) },
				model:  func() { m.tick(cl) },
			})
		}
		steps = append(steps, modelStep{model: func() {
			if len(m.checks) == 0 && len(m.entries) > 0 {
				var due []string // what the engine must not have done yet
				for _, e := range m.sorted() {
					if w := e.waits(); w != "" {
						due = append(due, w)
					} else {
						due = append(due, fmt.Sprintf("%s's periodic check (second %d of each interval)", e.puid, fnvSlot(e.puid)))
					}
				}
				note = "not due yet: " + strings.Join(due, ", ")
			}
			for slot := range cl.listed { // the list is made anew
				cl.listed[slot] = cl.pods[slot].sandbox
			}
		}})
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
			switch {
			case e.retryAt != 0:
				note += ", which was waiting for a retry"
			case e.turnAt != 0:
				note += ", which was waiting for its turn"
			}
		}
		_, tracked := m.entries[puid]
		left := tracked && m.entries[puid].turnAt != 0
		delete(m.entries, puid)
		if left {
			m.passTurn()
		}
		now(func(t *testing.T, c *deletion.Engine) {
			require.Equal(t, tracked, c.Untrack(puid), "Untrack(%s)", puid)
		}, nil).untracks = puid
	}
	switch op.kind {
	case modelFailNextGet, modelFailNextSandbox, modelFailNextDestroy, modelFailNextConfirm:
		w.faults = append(w.faults, len(w.done))
	}
	return steps, checked, func() {
		w.done = append(w.done, modelDone{checks: m.checks, note: note})
		m.checks = nil
	}
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
	*w.cl = modelCluster{pods: w.cl.pods, listed: w.cl.listed, dead: w.cl.dead}
}

// runModel decodes data into operations and runs them on both sides, then
// a last Sweep, with the engine's options that mode picks.
func runModel(t *testing.T, mode int, data []byte) {
	cl := &modelCluster{dead: map[string]bool{}}
	mp := &modelPorts{cl: cl, untracked: map[string]bool{}, since: map[string]int{}}
	opts := deletion.Options{
		SandboxExtractor:   mp,
		SandboxProber:      mp,
		Requeuer:           mp,
		Confirmer:          mp.confirmer(),
		NodeName:           modelNode,
		Workers:            2,
		MaxDestroyAttempts: modelMaxAttempts,
		RetryMinDelay:      time.Second,
		RetryMaxDelay:      4 * time.Second,
		SweepInterval:      modelInterval,
		DryRun:             mode&modeDryRun != 0,
		Observer:           mp,
		Logger:             deletiontest.Discard(),
	}
	if mode&modeSandboxList != 0 {
		opts.SandboxExtractor, opts.SandboxConfirmer = mp.list(), mp
	}
	w := newModelRun(cl, mode)
	if mode&modeRate != 0 {
		opts.DestroyRate, opts.DestroyBurst = 1, w.m.burst
		mp.rate, mp.burst = 1, w.m.burst
	}
	c, err := deletion.New(mp, mp, opts)
	require.NoError(t, err)
	mp.epoch = time.Now() // the engine's epoch: no time passes in a bubble meanwhile
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	defer func() {
		w.endSweep()
		cancel()
		require.NoError(t, <-done)
	}()
	synctest.Wait()

	ops := append(decodeModelOps(data), modelOp{kind: modelSweep})
	trace := []string{"mode: " + modeString(mode)}
	for i, op := range ops {
		trace = append(trace, op.String())
		mp.clMu.Lock()
		steps, checked, finish := w.apply(op)
		mp.clMu.Unlock()
		for _, step := range steps {
			if step.engine != nil { // the engine's side, once the cluster is unlocked
				mp.mu.Lock()
				mp.sweeping = op.kind == modelSweep || w.sweepRuns // a Sweep under the rate runs on (sweep)
				if step.tracks != "" {
					delete(mp.untracked, step.tracks)
					mp.since[step.tracks] = len(mp.calls)
				}
				mp.mu.Unlock()
				step.engine(t, c)
				if step.untracks != "" {
					mp.mu.Lock()
					mp.untracked[step.untracks] = true
					mp.mu.Unlock()
				}
			}
			synctest.Wait()
			oracle := mp.oracle(c)
			mp.clMu.Lock()
			w.m.oracle = oracle
			step.model()
			if mode&modeRate != 0 {
				w.m.endInstant()
			}
			w.m.oracle = nil
			mp.clMu.Unlock()
			require.Empty(t, w.m.errs, "at second %d, after: %v", w.m.now, trace)
			mp.mu.Lock()
			violations := mp.violations
			mp.mu.Unlock()
			require.Empty(t, violations, "at second %d, after: %v", w.m.now, trace)
		}
		finish()

		// Both sides must agree; after an operation that checked, the
		// planned faults are spent.
		want, got := w.m.take(), engineOutcome(mp, c)
		require.Equal(t, want, got, "at second %d, after: %v", w.m.now, trace)
		if checked {
			mp.clMu.Lock()
			w.spend(ops[:i+1])
			mp.clMu.Unlock()
		}
	}
}

// FuzzModel checks the engine against the model on sequences of operations,
// with the options mode picks (modeDryRun...). CI runs the committed corpus
// (testdata/fuzz/FuzzModel); run the fuzzer with go test -fuzz=FuzzModel
// ./deletion/. A file added to the corpus is named after what it covers;
// TestFuzzModelCorpusCoversEveryOperation checks that the corpus reaches
// every operation and mode, and go test -v -run TestFuzzModelCorpus
// ./deletion/ prints what each file does.
func FuzzModel(f *testing.F) {
	f.Add(byte(0), []byte{modelRecreate, 0, modelTrack, 0, modelSweep, 0, modelDelete, 0, modelSweep, 0})
	// A cache that lags: the Confirmer vetoes, then the pod really goes.
	f.Add(byte(0), []byte{modelRecreate, 0, modelTrack, 0, modelFailNextGet, 12, modelTrigger, 0, modelDelete, 0, modelTrigger, 0})
	// A failed destroy waits for its retry through triggers and time.
	f.Add(byte(0), []byte{modelRecreate, 1, modelTrack, 1, modelDelete, 1, modelFailNextDestroy, 1, modelTrigger, 1,
		modelTrigger, 1, modelAdvance, 0, modelTrigger, 1, modelAdvance, 4})
	// Untrack before and after a failed destroy.
	f.Add(byte(0), []byte{modelRecreate, 2, modelTrack, 2, modelUntrack, 2, modelTrack, 6, modelDelete, 2,
		modelFailNextDestroy, 2, modelTrigger, 2, modelUntrack, 2, modelAdvance, 28})
	// The Confirmer fails, then the periodic checks find the pod gone.
	f.Add(byte(0), []byte{modelRecreate, 3, modelTrack, 3, modelDelete, 3, modelFailNextConfirm, 3, modelTrigger, 3,
		modelAdvance, 28, modelAdvance, 28, modelAdvance, 28, modelAdvance, 28, modelAdvance, 28, modelAdvance, 28,
		modelAdvance, 28, modelAdvance, 28, modelAdvance, 28})
	// Four pods deleted at once under the rate: one destroy a second.
	f.Add(byte(modeRate), []byte{modelRecreate, 0, modelRecreate, 1, modelRecreate, 2, modelRecreate, 3,
		modelTrack, 0, modelTrack, 1, modelTrack, 2, modelTrack, 3, modelDelete, 0, modelDelete, 1, modelDelete, 2, modelDelete, 3,
		modelSweep, 0, modelAdvance, 4, modelAdvance, 4})
	f.Fuzz(func(t *testing.T, mode byte, data []byte) {
		synctest.Test(t, func(t *testing.T) { runModel(t, int(mode)&modelModes, data) })
	})
}
