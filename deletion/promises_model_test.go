package deletion_test

// FuzzPromises is an invariant-based model of the engine, beside FuzzModel's
// lock-step one: the fuzzer's bytes become operations on a tiny cluster of
// pmSlots pod names, a policy engine (the set of PUs that exist) and one
// engine at a time, run in a testing/synctest bubble; no model predicts what
// the engine does, but the invariants below are checked as it goes: at every
// port call and Observer event, and at every step of time (at most a second
// apart). A violation fails with the operations so far, with their times.
// Only the public API of deletion and ports is used, and DryRunMemory
// (export_test.go) for invariant 7.
//
// The input: mode (uint16: the options, pmDecodeMode) and the operations,
// three bytes each (kind, a, b), at most pmMaxOps: Track (the pod's sandbox,
// none, an old one; a stale PUID; in a goroutine), Untrack (in a goroutine
// too), TriggerPod, TriggerAll, Sweep (in a goroutine too; with or without
// Start; its context ending after 1, 3 or 10 s, or at the engine's nth
// reading of its Clock, anywhere between two steps), Start, Stop (cancel Start's ctx and wait), Restart (a new engine
// over the same policy engine, Start or not), Delete, Recreate, Move,
// ChangeSandbox, KillSandbox, Advance (10ms to 60s), Fault (per port and pod
// slot, the next 1 to 8 calls: fail, hang ignoring ctx, panic, a typed nil
// (of each kind in turn: a *url.Error, whose reading panics, then a pointer,
// map, slice, func and chan whose Is says not found and whose Unwrap says
// permanent, reading no field, then an error of 2^60 errors that says not
// found, then one that panics when read a second time, or a Kubernetes status
// error whose status changes between two readings), nil pod, another pod, a lagging cache's
// NotFound, Permanent),
// ListFault (fail, hang, delay honouring ctx, panic, typed nil; up to
// always), SlowObserver (100ms per event; or, b%32 == 30, a Logger that
// takes 4s per info line, V(1) on; or, b%8 == 7, the Observer
// hangs ignoring everything, or panics, at the next event of a pod's PUs, or
// (a/4%2 == 1) of the lists), Seed (4 to 40 PUs of gone pods in
// the policy engine, as left by an earlier run), TrackMany (4 or 16 stale
// PUs), Join (wait for the goroutines). With a SandboxExtractor, the
// Requeuer is the agent's controller: it tracks the PU of the pod's new
// sandbox at once, under the same PUID. A "process" that restarted is dead:
// the old engine's ports answer errors and its DestroyPU has no effect.
// The Inventory lists the policy engine's set, or (a stale Inventory with a
// DryRunner and no dry run) is a journal: an Observer that keeps what it is
// told across restarts, as adapters/bolt does, and lists that (of the PUs
// the policy engine holds), so that an event told too early (a sandbox a
// check recorded, over the one the previous run journaled) loses a PU.
//
// Invariants and bounds, per engine (a restart makes a new one):
//  1. No DestroyPU of a PUID starts after Untrack(PUID) returned, true or
//     false (a list under way may hold it), until the user Tracks it again.
//  2. A successful DestroyPU of a PUID not in the policy engine's set when
//     it began is "destroyed twice".
//  3. At each DestroyPU and EventWouldDestroy, per the truth then: the pod
//     is gone, has another UID or is on another node, or (extractor) runs in
//     another sandbox than ev.SandboxID, or (prober) in none and
//     ev.SandboxID is dead. A dry run calls no DestroyPU.
//  4. DestroyRate r, burst b: in any window w, at most r*w + b calls start.
//  5. A retry starts no earlier than RetryMinDelay (1s; 20s in the long
//     retry mode) doubling up to RetryMaxDelay (4s; 1m) after the failed
//     call returned, unless a Sweep runs, or one Start ran beside ended
//     within CheckTimeout and a second (its check on Start's worker may
//     still decide): a Sweep that its context cut anywhere, a destroy
//     decided and not called included, tried nothing.
//  6. With no fault pending or in force (planned faults, hangs, a slow
//     Observer): (a) while Start runs, a PU whose pod is gone for good is
//     destroyed (dry run: reported and dropped) by base + SweepInterval +
//     RetryMaxDelay + 3s + (DestroyPU calls since base + gone PUs tracked +
//     burst + 1)/rate, base being the latest of: the pod went, the PU was
//     tracked, the last fault activity, Start (+ its first list's deadline
//     and a second, with an Inventory); (b) a Sweep that began after all
//     that returns with every gone PU it found tracked destroyed, reported,
//     untracked or abandoned, though Start began or stopped meanwhile;
//     (c) with a SandboxExtractor and an Inventory, and no dry run, a PU of
//     the policy engine's set recorded under a sandbox its live pod no
//     longer runs in (replaced while the agent ran, or while it was down)
//     is destroyed as changed within the same bound, from when it was so;
//     (d) one triggered on the engine after its pod went (tracked then,
//     its EventTracked told), with no failed
//     destroy and no port of its pod failing since (its check then learns
//     nothing, and the trigger is spent), goes within CheckTimeout + 3s (and the rate's turns) of the
//     trigger or of Start's beginning, whichever is later: checks asked
//     before Start run when it begins, a Sweep in between or not.
//  7. A dry run reports a (PU, reason) at most once per tracking of the PU,
//     and DryRunMemory(c) <= 32 + 4*max(MinDryRunMemory, the most PUs
//     tracked at once) + the removals during the latest list's deadline
//     window (what that list must not bring back): what it remembers of
//     its drops is bounded by what it tracks, not by how many it dropped.
//  8. LivenessCheck(nil) is nil while Start runs, no hang or slow Observer
//     is in force, and CheckTimeout + 2s have passed since the last ended.
//     And it fails once an Observer that hangs on an EventTracked of the
//     first list's answer (before EventRestored: no check begins before the
//     answer is in; not the answer of a list after one that failed, once
//     checks began) has held it for three SweepIntervals and 2s; once one
//     that hangs on an event of the lists (EventListFailed, EventRestored)
//     has held it as long; and once a PU has been queued CheckTimeout + 3s
//     with no EventChecked told since, Start running and its checks begun:
//     every worker is then held, in a port or the Observer, and seen; and
//     once one that hangs on a user's Track's EventTracked, Start running
//     and its first list done, has held it as long (8e). Backlog's
//     OldestQueuedSince is no earlier than the last time each PU queued was
//     seen in another state (8f).
//  9. No panic, no hang: Start returns nil within ShutdownTimeout + 1s of
//     its ctx's cancel, hangs or not; a Sweep returns within 2s + for each
//     hang it overlaps min(hang, CheckTimeout + 2s) (+ the first list's
//     deadline + 2s with an Inventory under Start, + (PUs + calls + burst +
//     2)/rate, + CheckTimeout + 1s with a Requeuer nobody reads) of its
//     start or the previous Sweep's end, or 2s after its ctx is cancelled;
//     every goroutine returns in the end. A Requeuer that nobody reads (each
//     call waits for its context) is no fault: 6 and 8 hold with it.
//  12. A list of the Inventory that hangs past its deadline (and a second)
//     is left behind: another follows within RetryMaxDelay (of the end of
//     an Observer's hold on the lists' events), while Start runs and no
//     list has answered.
//  11. The Observer hears one PU's events one at a time, and in order: its
//     EventTracked first, no other EventTracked while it is tracked, its
//     EventAdopted, and the one event that ends its tracking (EventUntracked,
//     EventDestroyed, EventAbandoned, a dropping EventWouldDestroy), in
//     between; an EventVetoed decided (the Confirmer answered) before an
//     Untrack of the PU was called is told before its EventUntracked,
//     however slow the Logger; Track returns nil only once an EventTracked
//     of the PU has been told (Observe returned).
//  13. The failures are summed up (docs/sdk/engine.md): a failure the
//     Observer is told of (EventChecked's Err, EventListFailed) is in a
//     summary line (a port's, or Start's first failed list's) written at
//     or after it, within SweepInterval (and a second) of it, whoever
//     drives the engine; not checked while an Observer is slow or hangs
//     (it hears the failures late).
//  10. Documented promises checked besides: a list never brings back a PU
//     removed while it was under way (Options.Inventory; an EventTracked not
//     from Track after a removal since the list began); a waiting PU keeps
//     its place in the rate's line (TriggerPod, Options.DestroyRate): one
//     of a pod gone for good, seen waiting for its turn at T, is never idle
//     before T while Start runs; and turns go in the order PUs were found
//     to go: one whose pod went after such a PU was seen waiting takes no
//     turn before T, nor, unless that PU's check was stuck in a port or the
//     Observer is slow, before that PU took its own; Untrack returns true only once
//     EventUntracked was told; EventDestroyed, EventDestroyFailed and
//     EventAbandoned tell the verdict of the check that decided the destroy
//     and DestroyCalls, the calls so far in the PU's tracking
//     (its row); EventDestroyed only after a successful
//     DestroyPU; EventWouldDestroy's Dropped iff PodGone, UIDChanged or
//     NodeChanged; a second Start returns ErrAlreadyStarted; Len() equals
//     the entries of Status() not leaving; a PU's Status().LastVerdict, out
//     of a check, is the verdict of its last EventChecked (of a PUID tracked
//     once); a PU whose EventTracked the
//     Observer heard is in Status() until it hears its end (StateLeaving);
//     no DestroyPU starts after Start's ctx is done (but
//     for a Sweep's), and, without a rate, none while Start does not run
//     of a PU first tracked after every running Sweep began; InventoryListed is true only once every PU of the list that answered is
//     tracked (or removed since); with Workers 1, the EventChecked of a check that met
//     a port's failure (a fault served, but a hang or a lagging cache's
//     NotFound) has an Err, and one whose Err blames a late port met a hang
//     or a slow Observer (a slow Logger is no port's lateness); once Start has returned, its Inventory's list tells
//     nothing (no EventTracked of a list, no EventRestored), though it
//     answers then.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	xrate "golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

const (
	pmSlots       = 4
	pmNode        = "node-a"
	pmMaxOps      = 128
	pmMaxAttempts = 3
	pmShutdown    = 2 * time.Second
	pmObsDelay    = 100 * time.Millisecond
	pmLogDelay    = 4 * time.Second // past the usual CheckTimeout (1s) and the second a stuck port is given
	pmMemSlack    = 32
)

// Mode bits.
const (
	pmModeDryRun    = 1 << iota
	pmModeRate      // bits 2-3 pick it: 1/s burst 1, 1/s burst 2, 0.1/s burst 1, 10/s burst 1
	pmModeRateA     //
	pmModeRateB     //
	pmModeSandbox   // SandboxExtractor + SandboxProber
	pmModeConfirmer //
	pmModeInventory //
	pmModeWorkers2  // else 1
	pmModeLongCheck // CheckTimeout 10s, else 1s
	pmModeIntervalA // bits 9-10: SweepInterval 1s, 5s, 20s, 60s
	pmModeIntervalB //
	pmModeAutoStart // Start before the first operation
	pmModeStaleList // with an Inventory: its lists keep the latest PUs destroyed while no list had answered
	pmModeDryRunner // in a dry run: the PolicyHandler is a ports.DryRunner, with DestroyPU's faults; with an
	// Inventory, a stale one and no dry run: the Inventory is a journal (pmOptions.journal)
	pmModeUnread    // the Requeuer's channel is never read: each Requeue waits for its context to end
	pmModeLongRetry // RetryMinDelay 20s, RetryMaxDelay 1m; else 1s and 4s
)

type pmOptions struct {
	dryRun, sandbox, confirmer, inventory, autoStart, staleList, dryRunner, unread bool
	// journal: the Inventory is a journal, an Observer of the engine (docs/sdk/restarts.md): it lists what the
	// Observer was told, across restarts (EventTracked adds a PU, EventAdopted records its sandbox, its end removes
	// it), of the PUs the policy engine holds (a re-destroy of one it no longer holds is idempotent).
	journal                                    bool
	rate                                       float64
	burst, workers                             int
	checkTimeout, interval, retryMin, retryMax time.Duration
}

func pmDecodeMode(m uint16) pmOptions {
	o := pmOptions{
		dryRun: m&pmModeDryRun != 0, sandbox: m&pmModeSandbox != 0, confirmer: m&pmModeConfirmer != 0,
		inventory: m&pmModeInventory != 0, autoStart: m&pmModeAutoStart != 0, burst: 1, workers: 1,
		dryRunner:    m&pmModeDryRun != 0 && m&pmModeDryRunner != 0,
		unread:       m&pmModeUnread != 0,
		checkTimeout: time.Second, retryMin: time.Second, retryMax: 4 * time.Second,
		interval: []time.Duration{time.Second, 5 * time.Second, 20 * time.Second, time.Minute}[m>>9&3],
	}
	// A stale Inventory with a DryRunner and no dry run (where it means nothing) is a journal.
	o.journal = o.inventory && m&pmModeStaleList != 0 && m&pmModeDryRunner != 0 && !o.dryRun
	o.staleList = m&pmModeStaleList != 0 && !o.journal
	if m&pmModeRate != 0 {
		o.rate, o.burst = []float64{1, 0.3, 0.1, 10}[m>>2&3], []int{1, 2, 1, 1}[m>>2&3]
	}
	if m&pmModeWorkers2 != 0 {
		o.workers = 2
	}
	if m&pmModeLongCheck != 0 {
		o.checkTimeout = 10 * time.Second
	}
	if m&pmModeLongRetry != 0 {
		o.retryMin, o.retryMax = 20*time.Second, time.Minute
	}
	return o
}

func (o pmOptions) String() string {
	s := fmt.Sprintf("Workers %d, CheckTimeout %v, SweepInterval %v, RetryMinDelay %v, RetryMaxDelay %v", o.workers, o.checkTimeout,
		o.interval, o.retryMin, o.retryMax)
	if o.rate > 0 {
		s += fmt.Sprintf(", DestroyRate %v/s burst %d", o.rate, o.burst)
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{o.dryRun, "DryRun"}, {o.dryRunner, "DryRunner"}, {o.sandbox, "SandboxExtractor+SandboxProber"}, {o.confirmer, "Confirmer"},
		{o.inventory, "Inventory"}, {o.staleList, "a stale Inventory"}, {o.journal, "a journal"}, {o.autoStart, "Start first"}, {o.unread, "a Requeuer nobody reads"}} {
		if f.on {
			s += ", " + f.name
		}
	}
	return s
}

func (o pmOptions) listTimeout() time.Duration { return max(o.checkTimeout, time.Second) }

// Operations.
const (
	pmTrack = iota
	pmUntrack
	pmTrigger
	pmTriggerAll
	pmSweep
	pmStart
	pmStop
	pmRestart
	pmDelete
	pmRecreate
	pmMove
	pmChangeSandbox
	pmKillSandbox
	pmAdvance
	pmFaultOp
	pmListFault
	pmSlowObserver
	pmSeed
	pmTrackMany
	pmJoin
	pmOps
)

var pmOpNames = [...]string{"Track", "Untrack", "TriggerPod", "TriggerAll", "Sweep", "Start", "Stop", "Restart",
	"Delete", "Recreate", "Move", "ChangeSandbox", "KillSandbox", "Advance", "Fault", "ListFault", "SlowObserver",
	"Seed", "TrackMany", "Join"}

var pmAdvances = []time.Duration{10 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond, time.Second,
	2 * time.Second, 3 * time.Second, 5 * time.Second, 8 * time.Second, 15 * time.Second, 30 * time.Second,
	45 * time.Second, time.Minute}

// Pod ports, and the faults planned on them.
const (
	pmPortGet = iota
	pmPortConfirm
	pmPortSandbox
	pmPortProber
	pmPortDestroy
	pmPodPorts
)

var pmPortNames = [...]string{"GetPod", "Confirmer", "SandboxID", "SandboxDead", "DestroyPU"}

const (
	pmFail = iota
	pmHang
	pmPanic
	pmTypedNil
	pmNilPod
	pmOtherPod
	pmLagNotFound
	pmPermanent
	pmDelay // ListPUs only: answers after dur, or when ctx is done
)

var pmKindNames = [...]string{"fail", "hang", "panic", "typed-nil error", "nil pod", "another pod",
	"cache lags: NotFound", "permanent", "delay"}

var pmHangs = []time.Duration{2 * time.Second, 5 * time.Second, 20 * time.Second, 500 * time.Millisecond}

type pmOp struct{ kind, a, b int }

func pmDecode(data []byte) []pmOp {
	var ops []pmOp
	for i := 0; i+2 < len(data) && len(ops) < pmMaxOps; i += 3 {
		ops = append(ops, pmOp{int(data[i]) % pmOps, int(data[i+1]), int(data[i+2])})
	}
	return ops
}

func (op pmOp) slot() int   { return op.a % pmSlots }
func (op pmOp) async() bool { return op.b%2 == 1 }

// fault is what a Fault op plans: port, kind, count and hang.
func (op pmOp) fault() (port, kind, count int, dur time.Duration) {
	return op.a / 4 % pmPodPorts, op.b % 8, []int{1, 1, 2, 8}[op.b/8%4], pmHangs[op.b/32%4]
}

// slowLogger: a SlowObserver op with b%32 == 30 makes the engine's Logger slow (or quick again) in place of the
// Observer.
func (op pmOp) slowLogger() bool { return op.b%32 == 30 }

// observerFault is what a SlowObserver op with b%8 == 7 plans: the next
// Observe of an event of the pod's PUs hangs (ignoring everything) or panics.
func (op pmOp) observerFault() (kind int, dur time.Duration, ok bool) {
	if op.b%8 != 7 {
		return 0, 0, false
	}
	return []int{pmHang, pmPanic}[op.b/8%2], pmHangs[op.b/16%4], true
}

// sweepLimit is how long a Sweep op's context lasts (0: as long as the engine's).
// sweepCut is the clock reading at which a Sweep op's context ends (0: none): the engine reads its Clock between
// its steps, so that the Sweep ends anywhere, a destroy decided and its DestroyPU not called included.
func (op pmOp) sweepCut() int {
	if op.a%4 != 3 {
		return 0
	}
	return 1 + op.a/4%16
}

func (op pmOp) sweepLimit() time.Duration {
	return []time.Duration{0, time.Second, 3 * time.Second, 10 * time.Second}[op.b/2%4]
}

// listEvents reports whether an ObserverFault op's fault is on the next event of the lists, not of a pod's PUs.
func (op pmOp) listEvents() bool { return op.a/pmSlots%2 == 1 }

// listFault is what a ListFault op plans (kind 5: none any more).
func (op pmOp) listFault() (kind, count int, dur time.Duration) {
	kind = []int{pmFail, pmHang, pmDelay, pmPanic, pmTypedNil, -1}[op.a%6]
	return kind, []int{1, 2, 4, 255}[op.b%4], []time.Duration{500 * time.Millisecond, 2 * time.Second, 5 * time.Second, 20 * time.Second}[op.b/4%4]
}

func (op pmOp) String() string {
	name, pod := pmOpNames[op.kind], pmKey(op.slot()).Name
	as := ""
	if op.async() {
		as = ", in a goroutine"
	}
	switch op.kind {
	case pmTrack:
		stale := ""
		if op.b/2%4 == 3 {
			stale = ", stale PUID"
		}
		return fmt.Sprintf("Track(%s, %s%s%s)", pod, []string{"its sandbox", "no sandbox", "an old sandbox"}[op.a/4%3], stale, as)
	case pmUntrack:
		return fmt.Sprintf("Untrack(%s, PU #%d%s)", pod, op.a/4, as)
	case pmTrigger, pmDelete, pmKillSandbox:
		return fmt.Sprintf("%s(%s)", name, pod)
	case pmSweep:
		if d := op.sweepLimit(); d > 0 {
			as += fmt.Sprintf(", its context ending after %v", d)
		}
		if n := op.sweepCut(); n > 0 {
			as += fmt.Sprintf(", its context ending at the Clock's reading #%d", n)
		}
		return "Sweep" + strings.TrimPrefix(as, ",")
	case pmRestart:
		return fmt.Sprintf("Restart(Start: %v)", op.a%2 == 0)
	case pmRecreate, pmChangeSandbox:
		return fmt.Sprintf("%s(%s, no sandbox yet: %v)", name, pod, op.a/4%3 == 2)
	case pmMove:
		return fmt.Sprintf("Move(%s to %q, no sandbox yet: %v)", pod, []string{"node-b", ""}[op.a/4%2], op.a/8%3 == 2)
	case pmAdvance:
		return fmt.Sprintf("Advance(%v)", pmAdvances[op.a%len(pmAdvances)])
	case pmFaultOp:
		port, kind, count, dur := op.fault()
		s := fmt.Sprintf("Fault(%s of %s: %s, next %d calls", pmPortNames[port], pod, pmKindNames[kind], count)
		if kind == pmHang {
			s += fmt.Sprintf(", %v", dur)
		}
		return s + ")"
	case pmListFault:
		kind, count, dur := op.listFault()
		if kind < 0 {
			return "ListFault(none)"
		}
		return fmt.Sprintf("ListFault(%s, next %d calls, %v)", pmKindNames[kind], count, dur)
	case pmSlowObserver:
		if kind, dur, ok := op.observerFault(); ok && op.listEvents() {
			return fmt.Sprintf("ObserverFault(the next event of the lists: %s)", map[bool]string{true: "panic", false: "hang " + dur.String()}[kind == pmPanic])
		} else if ok {
			if kind == pmPanic {
				return fmt.Sprintf("ObserverFault(the next event of %s's PUs: panic)", pod)
			}
			return fmt.Sprintf("ObserverFault(the next event of %s's PUs: hang %v)", pod, dur)
		}
		if op.slowLogger() {
			return fmt.Sprintf("SlowLogger(%v)", op.a%2 == 1)
		}
		return fmt.Sprintf("SlowObserver(%v)", op.a%2 == 1)
	case pmSeed:
		return fmt.Sprintf("Seed(%d PUs of gone pods of %s)", []int{4, 16, 40}[op.a%3], pmKey(op.b%pmSlots).Name)
	case pmTrackMany:
		return fmt.Sprintf("TrackMany(%s, %d stale PUs)", pod, []int{4, 16}[op.b%2])
	}
	return name
}

func pmKey(slot int) types.NamespacedName {
	return types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("pod-%d", slot)}
}

func pmSlotOf(name string) int {
	var slot int
	if _, err := fmt.Sscanf(name, "pod-%d", &slot); err != nil || slot < 0 || slot >= pmSlots || name != fmt.Sprintf("pod-%d", slot) {
		return -1
	}
	return slot
}

type pmPod struct {
	exists             bool
	uid, node, sandbox string
}

type pmFault struct {
	kind, left int
	dur        time.Duration
}

type pmPU struct {
	pu         ports.PU
	gen, order int
}

type pmHangRec struct {
	start, end, dur time.Duration // end -1: in flight
	pod             bool          // a pod port's (holds a Workers slot)
	observer        bool          // the Observer's: it holds its PU's line, in a slot or not, for as long
}

type pmSweepRec struct {
	start, end time.Duration
	// begun: the latest it may have begun checking (invariant 10): its call, or, for one called while another Sweep
	// of its engine ran ("One Sweep runs at a time"), the end of the last that ended before it returned.
	begun    time.Duration
	queued   bool
	shared   bool // Start ran at some time during it
	startSeq int64
	done     bool
	clean    bool
	slowAt   int
	snapN    int
	required []string
	flagged  bool
}

type pmPlace struct {
	tracked time.Time
	at      time.Time
	since   time.Duration
	slot    int // its pod's
}

type pmAsync struct {
	name string
	done chan struct{}
}

// pmWorld is the cluster, the policy engine, the faults, and what the
// invariants need; mu guards it all.
type pmWorld struct {
	typedNils atomic.Int64 // the typed nils answered: each is of the next kind (typedNil)
	panics    atomic.Int64 // the panics, whose values take turns (panicValue)
	mu        sync.Mutex
	o         pmOptions
	t0        time.Time
	seq       int64
	ids       int

	pods      [pmSlots]pmPod
	uidGoneAt map[string]time.Duration
	uidGoneOp map[string]int // the operation that made it gone (ops)
	ops       int            // the operations applied so far, this one included
	// replacedAt is when a PU of the policy engine's set was first seen recorded under a sandbox its live pod no
	// longer runs in (invariant 6c), by PUID.
	replacedAt map[string]time.Duration
	dead       map[string]bool
	set        map[string]pmPU
	// stale is what a stale Inventory (pmModeStaleList) still lists: the
	// latest PUs the running engine destroyed while none of its lists had
	// answered (a journal whose record has the sandbox that the engine, which
	// tracked the PU without one, never reported), as many as the engine
	// remembers at the least (MinDryRunMemory).
	stale []ports.PU
	order int
	gens  int

	// journal: a journal Inventory (pmOptions.journal), across restarts: the test kit's, which keeps what it is told
	// as adapters/bolt does.
	journal   *deletiontest.Inventory
	faults    [pmPodPorts][pmSlots]pmFault
	listFault pmFault
	slowObs   bool
	obsFault  [pmSlots]pmFault // the Observer's fault on the next event of a pod's PUs: hang or panic
	// obsListFault: the Observer's fault on the next event of the lists (EventListFailed, EventRestored).
	obsListFault pmFault
	// failedFor: a port answered a failure about the pod (a fault served, but a hang, which may end in time, and a
	// lagging cache's NotFound) since the last EventChecked of one of its PUs (Workers 1: one check at a time).
	failedFor [pmSlots]bool
	// lateFor: a hang was served on the pod's ports (it may make a port late) since the last EventChecked of one of its
	// PUs, or a slow Observer was told one of its events.
	lateFor [pmSlots]bool
	// slowLog: the engine's Logger (someone else's code) takes pmLogDelay to write each info line, V(1) enabled;
	// logSleeping counts the lines being written.
	slowLog     bool
	logSleeping int
	logLines    int           // the lines a slow Logger began to write
	lastLogEnd  time.Duration // when a slow Logger's line last ended
	obsSleeping int
	obsCount    int
	lastFault   time.Duration
	// confirmedSeq: the seq at which the Confirmer last answered each slot's pod (a veto is decided then).
	confirmedSeq [pmSlots]int64
	stuckAt      [pmSlots]time.Duration // when a hang past CheckTimeout was last served on each slot's pod; -1: never
	stuckEnd     [pmSlots]time.Duration // and when it ends
	failedAt     [pmSlots]time.Duration // when a fault that answers (not a hang, not a lagging cache) was last served on it; -1: never
	lastSlowEnd  time.Duration

	engines    []*pmEngine
	cur        *pmEngine
	async      []*pmAsync
	violations []string
	trace      []string
}

// pmEngine is one engine (one run of the agent) and what the invariants
// record of it.
type pmEngine struct {
	id        int
	c         *deletion.Engine
	ctx       context.Context
	ctxCancel context.CancelFunc
	dead      bool
	deadAt    time.Duration

	startCalled, running, startReturned bool
	startedAt, stopAt, lifecycle        time.Duration
	logLinesAtStop                      int // w.logLines at stopAt: Start's stop waits for the lines a slow Logger writes
	cancel                              context.CancelFunc
	// firstTrack: when the user first began to Track each PUID on this engine (invariant 10: a Sweep begun before it
	// holds no check of it).
	firstTrack map[string]time.Duration

	calls     []time.Duration
	untracked map[string]bool
	// untrackSeq: the world's seq at the latest Untrack call of each PUID.
	untrackSeq map[string]int64
	untrackEv  map[string]int
	permanent  map[string]bool // a DestroyPU of the PUID answered a Permanent error
	// Invariant 11: the Observer calls under way per PUID, the PUIDs whose EventTracked began a tracking that no
	// EventUntracked, EventDestroyed, EventAbandoned or dropping EventWouldDestroy has ended, and the EventTracked
	// calls that returned, per PUID.
	obsIn, toldTracked map[string]int
	obsLive            map[string]bool
	userTracking       map[string]int
	fails              map[string][]time.Duration
	lastOK             map[string]bool
	dryOK              map[string]bool // the DryRunner's last answer for each PUID was nil (pmDryRunner)
	// streak counts the failed DestroyPU (or DryRunDestroyPU) calls of each PUID since its last success: a destroy is
	// given up on after MaxDestroyAttempts of them in a row, a success (a dry run's "would destroy") ends the streak.
	streak      map[string]int
	tracksBegun map[string]int // the user's Tracks begun, per PUID
	// The first and the last DestroyPU call of each PUID since it was tracked: EventDestroyed's DestroyDelay
	// covers at least the time between them.
	firstCall, lastCall map[string]time.Duration
	sweepsActive        int
	lastSweepEnd        time.Duration
	// sharedSweepEnd: the end of the last Sweep during which Start ran (invariant 5): Start's workers may have run
	// its checks, which go on past its end under Start's context; a Sweep's own goroutines' checks do not.
	sharedSweepEnd time.Duration
	// destroyCalls: the DestroyCalls of the last destroy event of each PUID in its tracking (Event.DestroyCalls
	// counts every call so far).
	destroyCalls  map[string]int
	clock         *pmClock
	sweeps        []*pmSweepRec
	hangs         []*pmHangRec
	hangsInFlight int
	lastHangEnd   time.Duration
	listStartSeq  int64
	listStart     time.Duration
	lists         int
	listsInFlight int
	listEnd       time.Duration
	listOK        bool
	answered      bool // a list answered
	// listing is what the list under way lists of the policy engine's set; answer, of the first list that answered
	// (invariant 10: InventoryListed).
	listing, answer []string
	listN           int
	removedSeq      map[string]int64
	removals        []time.Duration
	resolved        map[string]int64
	reports         map[string]map[ports.Reason]int
	lastReport      map[string]ports.Reason // the reason reported last, by PUID
	places          map[string]pmPlace
	peak            int // the most PUs tracked at once
	// Invariant 7's memory: how many PUs the Observer holds tracked now and at most at once, and the PUIDs a dry run
	// dropped while no list had answered, oldest first (a Track of the PUID since takes it out).
	live, peakLive int
	drops          []string
	// Invariant 8b: an Observer hang that began on a list's EventTracked before EventRestored (the first answer
	// going in, which every check waits for): when it began and ends; restored: EventRestored was told.
	wedgeAt, wedgeEnd time.Duration
	wedging, restored bool
	begunAt           time.Duration // when Start began, then the first list's answer, or failure, was told: checks begin then (8d)
	// listFailed: an EventListFailed was heard; a later list's answer is not the first list's (invariant 8).
	listFailed bool
	// Invariant 8c: an Observer hang on an event of the lists: when it began and ends (listHolding: one is in force).
	listHoldAt, listHoldEnd time.Duration
	listHolding             bool
	// Invariant 8e: an Observer hang on a user's Track's EventTracked while Start runs, its first list done.
	trackHoldAt, trackHoldEnd time.Duration
	trackHolding              bool
	// Invariant 8d: when the Observer was last told an EventChecked (-1: never), and since when each PU has been seen
	// queued, its last check unchanged.
	lastCheckTold time.Duration
	queuedSince   map[string]pmQueued
	// seenUnqueued: when each PUID was last seen in Status in a state other than queued (invariant 8f).
	seenUnqueued map[string]time.Duration
	// triggered: the last TriggerPod of each slot's pod on this engine, a TriggerAll's included (invariant 6d).
	triggered [pmSlots]pmTriggered
	// Invariant 10: the verdict of the last EventChecked of each PU's tracking (PUStatus.LastVerdict), of the PUIDs
	// not tracked again (retracked).
	lastVerdict map[string]deletion.Verdict
	retracked   map[string]bool
	// Invariant 13: the failures the Observer was told of that no summary line written since has covered, and when
	// the latest summary line was written (-1: none).
	failsHeard  []time.Duration
	lastSummary time.Duration
}

// pmTriggered is when a trigger was asked, the operation that asked it (op 0: none), and the trackings whose
// EventTracked the Observer had heard then (toldTracked): a trigger asks checks of the PUs tracked when it comes.
type pmTriggered struct {
	at   time.Duration
	op   int
	told map[string]int
}

// pmQueued is since when a PU has been seen queued, and its last check then (invariant 8d).
type pmQueued struct {
	since       time.Duration
	lastChecked time.Time
}

// pmClock is an engine's Clock: the time package's (the bubble's), whose readings may end a Sweep's context at the
// nth (arm).
type pmClock struct {
	clock.RealClock
	mu   sync.Mutex
	left int
	cut  context.CancelFunc
}

// arm has cut called at the nth reading from now (n 0: never).
func (c *pmClock) arm(n int, cut context.CancelFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.left, c.cut = n, cut
	if n == 0 {
		c.cut = nil
	}
}

// Since is the time package's, after the armed cut if this reading is its.
func (c *pmClock) Since(t time.Time) time.Duration {
	c.mu.Lock()
	var cut context.CancelFunc
	if c.cut != nil {
		if c.left--; c.left <= 0 {
			cut, c.cut = c.cut, nil
		}
	}
	c.mu.Unlock()
	if cut != nil {
		cut()
	}
	return c.RealClock.Since(t)
}

// pmSummaries are the engine's lines that sum up its ports' failures (invariant 13).
var pmSummaries = []string{"port failing;", "answered past a check's deadline", "Sweep leaves checks stuck",
	"listing the Inventory failed;"}

// pmLog is an engine's logger: it notes when its summary lines are written (invariant 13), and drops the rest.
type pmLog struct {
	w *pmWorld
	e *pmEngine
}

func (pmLog) Init(logr.RuntimeInfo) {}

// Enabled: V(0), and V(1) while the Logger is slow (pmWorld.slowLog).
func (l pmLog) Enabled(level int) bool {
	if level == 0 {
		return true
	}
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	return l.w.slowLog
}

// Info takes pmLogDelay while the Logger is slow: a slow write is the engine's to absorb, neither a port's lateness
// nor a hole in the PU's line to the Observer.
func (l pmLog) Info(int, string, ...any) {
	l.w.mu.Lock()
	slow := l.w.slowLog
	if slow {
		l.w.logSleeping++
		l.w.logLines++
		l.w.obsCount++
	}
	l.w.mu.Unlock()
	if slow {
		time.Sleep(pmLogDelay)
		l.w.mu.Lock()
		l.w.logSleeping--
		l.w.lastFault, l.w.lastLogEnd = l.w.now(), l.w.now() // a slow Logger is no port: LivenessCheck holds meanwhile (invariant 8)
		l.w.mu.Unlock()
	}
}

func (l pmLog) WithValues(...any) logr.LogSink { return l }

func (l pmLog) WithName(string) logr.LogSink { return l }
func (l pmLog) Error(_ error, msg string, _ ...any) {
	for _, m := range pmSummaries {
		if strings.HasPrefix(msg, m) {
			l.w.mu.Lock()
			l.e.lastSummary = l.w.now()
			l.w.mu.Unlock()
			return
		}
	}
}

func (w *pmWorld) now() time.Duration { return time.Since(w.t0) }

// pmTraceEvents (PM_TRACE=events) has the trace tell the Observer's events among the operations.
var pmTraceEvents = os.Getenv("PM_TRACE") == "events"

// pmSkip (PM_SKIP, comma-separated) lets a fuzzing session go on past the
// defects it found: violations containing one of its words are ignored, and
// "typednil" plans plain failures in place of typed-nil errors.
var pmSkip = strings.FieldsFunc(os.Getenv("PM_SKIP"), func(r rune) bool { return r == ',' })

func pmSkipped(s string) bool {
	for _, k := range pmSkip {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

func (w *pmWorld) violateLocked(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if pmSkipped(msg) {
		return
	}
	w.violations = append(w.violations, fmt.Sprintf("at %v: ", w.now())+msg)
}

func (w *pmWorld) violate(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.violateLocked(format, args...)
}

func (w *pmWorld) failed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.violations) > 0
}

func (w *pmWorld) id(prefix string) string { w.ids++; return fmt.Sprintf("%s%d", prefix, w.ids) }

// aliveLocked reports whether the pod of UID puid runs on this node: once
// not, never again (UIDs are never reused).
func (w *pmWorld) aliveLocked(puid string) bool {
	for _, p := range w.pods {
		if p.exists && p.uid == puid && (p.node == pmNode || p.node == "") { // unbound: not elsewhere (Decide's row 3)
			return true
		}
	}
	return false
}

// triggerSpentLocked reports whether a check of the pod of slot met a port failing since at, the time of a trigger on
// e: a fault that answers, or a hang past CheckTimeout that no Sweep's end cut (a Sweep's own check, Start not yet
// running): the check learned nothing, and the trigger is spent (invariant 6d).
func (w *pmWorld) triggerSpentLocked(e *pmEngine, slot int, at time.Duration) bool {
	if w.failedAt[slot] >= at {
		return true
	}
	from, to := w.stuckAt[slot], w.stuckEnd[slot]
	if from < at {
		return false
	}
	cut := (!e.startCalled || e.startedAt > from) && slices.ContainsFunc(e.sweeps, func(s *pmSweepRec) bool {
		return s.end >= from && s.end <= to
	})
	return !cut
}

// allowedLocked is invariant 3: the truth orders a destroy of pu.
func (w *pmWorld) allowedLocked(pu ports.PU) bool {
	slot := pmSlotOf(pu.Pod.Name)
	if slot < 0 || pu.Pod.Namespace != "default" {
		return false
	}
	p := w.pods[slot]
	if !p.exists || p.uid != pu.PUID || (p.node != "" && p.node != pmNode) {
		return true
	}
	if w.o.sandbox && pu.SandboxID != "" {
		if p.sandbox != "" && p.sandbox != pu.SandboxID {
			return true
		}
		if p.sandbox == "" && w.dead[pu.SandboxID] {
			return true
		}
	}
	return false
}

// quietLocked: no fault planned and not spent, none in force.
func (w *pmWorld) quietLocked() bool {
	if w.slowObs || w.obsSleeping > 0 || w.slowLog || w.logSleeping > 0 || w.listFault.left > 0 || w.obsListFault.left > 0 {
		return false
	}
	for slot := range pmSlots {
		if w.obsFault[slot].left > 0 {
			return false
		}
		for port := range w.faults {
			if w.faults[port][slot].left > 0 {
				return false
			}
		}
	}
	for _, e := range w.engines {
		if e.hangsInFlight > 0 {
			return false
		}
	}
	return true
}

func (w *pmWorld) takeLocked(port, slot int) pmFault {
	f := &w.faults[port][slot]
	if f.left == 0 {
		return pmFault{kind: -1}
	}
	f.left--
	w.lastFault = w.now()
	if f.kind != pmHang && f.kind != pmLagNotFound && slot >= 0 {
		w.failedAt[slot] = w.lastFault // a check that learns nothing of its pod: a trigger it ran for is spent
	}
	if f.kind == pmHang && slot >= 0 {
		w.lateFor[slot] = true
	}
	if f.kind == pmHang && f.dur >= w.o.checkTimeout && slot >= 0 {
		// A check stuck in a port past its deadline: its ticket no longer holds the line, and it learns nothing.
		w.stuckAt[slot], w.stuckEnd[slot] = w.lastFault, w.lastFault+f.dur
	}
	if f.kind != pmHang && f.kind != pmLagNotFound {
		w.failedFor[slot] = true
	}
	return *f
}

func (w *pmWorld) addToSetLocked(pu ports.PU) {
	if _, ok := w.set[pu.PUID]; ok {
		return
	}
	w.gens++
	w.order++
	w.set[pu.PUID] = pmPU{pu: pu, gen: w.gens, order: w.order}
}

func pmPodOf(key types.NamespacedName, p pmPod) (*corev1.Pod, error) {
	if !p.exists {
		return nil, fmt.Errorf("pm: %s: %w", key, ports.ErrPodNotFound)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: types.UID(p.uid)},
		Spec:       corev1.PodSpec{NodeName: p.node},
	}, nil
}

var errPMDead = errors.New("pm: the agent restarted: this process is gone")

// pmPorts serves one engine every port but the Confirmer (pmConfirmer).
type pmPorts struct {
	w *pmWorld
	e *pmEngine
}

type pmConfirmer struct{ p *pmPorts }

// pmDryRunner is the PolicyHandler of a dry run in pmModeDryRunner: it tells whether it would destroy, with
// DestroyPU's faults; dryOK records its last answer per PUID, which an EventWouldDestroy needs.
type pmDryRunner struct{ *pmPorts }

func (p pmDryRunner) DryRunDestroyPU(_ context.Context, ev ports.DestroyEvent) error {
	w, e, puid := p.w, p.e, ev.PUID
	w.mu.Lock()
	if e.dead {
		w.mu.Unlock()
		return errPMDead
	}
	if e.untracked[puid] {
		w.violateLocked("1: DryRunDestroyPU(%s) starts after Untrack(%s) returned", ev, puid)
	}
	if !w.allowedLocked(ev.PU()) {
		w.violateLocked("3: DryRunDestroyPU(%s) that the table does not order: the pod is %+v", ev, w.pods[max(0, pmSlotOf(ev.Pod.Name))])
	}
	e.dryOK[puid] = false
	f := w.takeLocked(pmPortDestroy, max(0, pmSlotOf(ev.Pod.Name)))
	w.mu.Unlock()
	var err error
	switch f.kind {
	case pmHang:
		p.hang(f.dur, true)
	case pmPanic:
		w.mu.Lock()
		e.fails[puid] = append(e.fails[puid], w.now())
		e.streak[puid]++
		w.mu.Unlock()
		panic(w.panicValue("DryRunDestroyPU"))
	case pmTypedNil:
		err = w.typedNil()
	case pmPermanent:
		err = ports.Permanent(errors.New("pm: DryRunDestroyPU refused"))
		w.mu.Lock()
		e.permanent[puid] = true
		w.mu.Unlock()
	case -1:
	default:
		err = errors.New("pm: DryRunDestroyPU failed")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		e.fails[puid] = append(e.fails[puid], w.now())
		e.streak[puid]++
		return err
	}
	e.dryOK[puid] = true
	e.streak[puid] = 0
	return nil
}

func (c pmConfirmer) GetPod(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	return c.p.get(key, pmPortConfirm)
}

func (p *pmPorts) GetPod(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	return p.get(key, pmPortGet)
}

func (p *pmPorts) hang(d time.Duration, pod bool) { p.hangAs(&pmHangRec{dur: d, pod: pod}) }

// hangAs sleeps h.dur ignoring everything, recorded as h.
func (p *pmPorts) hangAs(h *pmHangRec) {
	w, d := p.w, h.dur
	w.mu.Lock()
	h.start, h.end = w.now(), -1
	p.e.hangs = append(p.e.hangs, h)
	p.e.hangsInFlight++
	w.mu.Unlock()
	time.Sleep(d) // ignoring ctx
	w.mu.Lock()
	h.end = w.now()
	p.e.hangsInFlight--
	p.e.lastHangEnd, w.lastFault = h.end, h.end
	w.mu.Unlock()
}

func (p *pmPorts) get(key types.NamespacedName, port int) (*corev1.Pod, error) {
	w := p.w
	slot := pmSlotOf(key.Name)
	if slot < 0 {
		w.violate("%s asked for an unknown pod %s", pmPortNames[port], key)
		return nil, errors.New("pm: unknown pod")
	}
	w.mu.Lock()
	if p.e.dead {
		w.mu.Unlock()
		return nil, errPMDead
	}
	f := w.takeLocked(port, slot)
	uid := w.pods[slot].uid
	w.mu.Unlock()
	switch f.kind {
	case pmHang:
		p.hang(f.dur, true)
	case pmFail:
		return nil, errors.New("pm: " + pmPortNames[port] + " failed")
	case pmPanic:
		panic(w.panicValue(pmPortNames[port]))
	case pmTypedNil:
		return nil, w.typedNil()
	case pmNilPod:
		return nil, nil
	case pmOtherPod:
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name + "-other", UID: types.UID(uid)}}, nil
	case pmLagNotFound:
		return nil, fmt.Errorf("pm: cache lags: %s: %w", key, ports.ErrPodNotFound)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if p.e.dead {
		return nil, errPMDead
	}
	if port == pmPortConfirm {
		w.seq++
		w.confirmedSeq[slot] = w.seq
	}
	return pmPodOf(key, w.pods[slot])
}

// sandboxFault serves a fault of SandboxID or SandboxDead; done: answered.
func (p *pmPorts) sandboxFault(port int, pod *corev1.Pod) (slot int, err error, done bool) {
	w := p.w
	if pod == nil || pmSlotOf(pod.Name) < 0 {
		w.violate("%s asked about a pod the PodGetter did not answer: %v", pmPortNames[port], pod)
		return -1, errors.New("pm: unknown pod"), true
	}
	slot = pmSlotOf(pod.Name)
	w.mu.Lock()
	if p.e.dead {
		w.mu.Unlock()
		return slot, errPMDead, true
	}
	f := w.takeLocked(port, slot)
	w.mu.Unlock()
	switch f.kind {
	case pmHang:
		p.hang(f.dur, true)
	case pmPanic:
		panic(w.panicValue(pmPortNames[port]))
	case pmTypedNil:
		return slot, w.typedNil(), true
	case -1:
	default:
		return slot, errors.New("pm: " + pmPortNames[port] + " failed"), true
	}
	return slot, nil, false
}

func (p *pmPorts) SandboxID(_ context.Context, pod *corev1.Pod) (string, error) {
	slot, err, done := p.sandboxFault(pmPortSandbox, pod)
	if done {
		return "", err
	}
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	return p.w.pods[slot].sandbox, nil
}

func (p *pmPorts) SandboxDead(_ context.Context, pod *corev1.Pod, id string) (bool, error) {
	_, err, done := p.sandboxFault(pmPortProber, pod)
	if done {
		return false, err
	}
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	return p.w.dead[id], nil
}

func (p *pmPorts) DestroyPU(_ context.Context, ev ports.DestroyEvent) error {
	w, e := p.w, p.e
	w.mu.Lock()
	if e.dead {
		w.mu.Unlock()
		return errPMDead
	}
	now, puid := w.now(), ev.PUID
	if w.o.dryRun {
		w.violateLocked("DestroyPU(%s) in a dry run", ev)
	}
	if e.untracked[puid] {
		w.violateLocked("1: DestroyPU(%s) starts after Untrack(%s) returned", ev, puid)
	}
	if !w.allowedLocked(ev.PU()) {
		w.violateLocked("3: DestroyPU(%s) that the table does not order: the pod is %+v", ev, w.pods[max(0, pmSlotOf(ev.Pod.Name))])
	}
	if !e.running && e.stopAt > 0 && e.sweepsActive == 0 && e.lastSweepEnd < e.stopAt {
		w.violateLocked("10: DestroyPU(%s) starts after Start's ctx was done, no Sweep since", ev)
	}
	if at, ok := e.firstTrack[puid]; ok && !e.running && e.sweepsActive > 0 && w.o.rate == 0 && !w.sweptSinceLocked(e, at) {
		// Without a rate a Sweep checks nothing but what it asked for: a PU first tracked after every running Sweep
		// began is Start's, whose checks and destroys no longer start (or, before Start, wait for it).
		w.violateLocked("10: DestroyPU(%s) starts while Start does not run, by a Sweep begun before the PU was first tracked (at %v)", ev, at)
	}
	if fs := e.fails[puid]; len(fs) > 0 {
		last, k := fs[len(fs)-1], len(fs)
		backoff := min(w.o.retryMin<<(k-1), w.o.retryMax)
		// Only a Sweep checks a PU before its retry: one running, or one whose check (bounded by CheckTimeout) began
		// before it ended on Start's worker; not Start's at a turn a Sweep that ended took (decision-table.md), nor
		// any once a Sweep that Start did not run beside ended: a check it cut before DestroyPU tried nothing.
		swept := e.sweepsActive > 0 || e.sharedSweepEnd >= last && now-e.sharedSweepEnd <= w.o.checkTimeout+time.Second
		if now-last < backoff && !swept {
			w.violateLocked("5: DestroyPU(%s) retried %v after its failure %d: before its backoff of %v, no Sweep since", ev, now-last, k, backoff)
		}
	}
	e.calls = append(e.calls, now)
	if _, ok := e.firstCall[puid]; !ok {
		e.firstCall[puid] = now
	}
	e.lastCall[puid] = now
	if w.o.rate > 0 && e.running && e.sweepsActive == 0 {
		// 10: turns go in the order PUs were found to go (Options.DestroyRate): a PU whose pod went after another was
		// seen waiting for its turn (its pod gone since before, for good, and still in the line) never takes a turn
		// before that one's, nor, unless that one's check was stuck in a port past its deadline since (it holds its
		// ticket, not the line) or the Observer is slow, before that one took its own.
		if went, ok := w.uidGoneAt[puid]; ok {
			quickObserver := !w.slowObs && w.obsSleeping == 0 && !w.slowLog && w.logSleeping == 0
			for y, p := range e.places {
				if wy, ok := w.uidGoneAt[y]; y == puid || !ok || wy > p.since || w.aliveLocked(y) || e.untracked[y] ||
					e.lifecycle >= p.since || went <= p.since {
					continue
				}
				stuck := p.slot < 0 || w.stuckAt[p.slot] >= p.since
				if now < p.at.Sub(w.t0)-time.Millisecond || quickObserver && !stuck {
					w.violateLocked("10: DestroyPU(%s), whose pod went at %v, takes a turn at %v ahead of %s, waiting for its turn at %v since %v",
						ev, went, now, y, p.at.Sub(w.t0), p.since)
				}
			}
		}
	}
	delete(e.places, puid) // it took a turn: if it fails, its next is a new place
	if w.o.rate > 0 {
		for i := len(e.calls) - 1; i >= 0; i-- {
			n, win := len(e.calls)-i, now-e.calls[i]
			// A microsecond's slack: golang.org/x/time/rate rounds its durations to the nanosecond.
			if float64(n) > w.o.rate*(win+time.Microsecond).Seconds()+float64(w.o.burst)+1e-9 {
				w.violateLocked("4: %d DestroyPU calls start from %v to %v: over %v/s with a burst of %d", n, e.calls[i], now, w.o.rate, w.o.burst)
				break
			}
		}
	}
	in, inSet := w.set[puid]
	slot := max(0, pmSlotOf(ev.Pod.Name))
	f := w.takeLocked(pmPortDestroy, slot)
	w.mu.Unlock()
	var err error
	switch f.kind {
	case pmHang:
		p.hang(f.dur, true)
	case pmPanic:
		w.mu.Lock()
		e.fails[puid] = append(e.fails[puid], w.now())
		e.lastOK[puid] = false
		e.streak[puid]++
		w.mu.Unlock()
		panic(w.panicValue("DestroyPU"))
	case pmTypedNil:
		err = w.typedNil()
	case pmPermanent:
		err = ports.Permanent(errors.New("pm: DestroyPU refused"))
		w.mu.Lock()
		e.permanent[puid] = true
		w.mu.Unlock()
	case -1:
	default:
		err = errors.New("pm: DestroyPU failed")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if e.dead {
		return errPMDead
	}
	if err != nil {
		e.fails[puid] = append(e.fails[puid], w.now())
		e.lastOK[puid] = false
		e.streak[puid]++
		return err
	}
	e.lastOK[puid] = true
	e.streak[puid] = 0
	switch {
	case !inSet:
		w.violateLocked("2: DestroyPU(%s) succeeded, but the policy engine did not hold it when the call began: destroyed twice", ev)
	case inSet && w.set[puid].gen == in.gen:
		delete(w.set, puid)
		w.seq++
		e.removedSeq[puid] = w.seq
		if w.o.staleList && !e.answered {
			w.stale = append(w.stale, in.pu)
			w.stale = w.stale[max(0, len(w.stale)-deletion.MinDryRunMemory):]
		}
	}
	return nil
}

func (p *pmPorts) ListPUs(ctx context.Context) (pus []ports.PU, err error) {
	w, e := p.w, p.e
	w.mu.Lock()
	e.listsInFlight++
	began := w.now()
	w.mu.Unlock()
	pus, err = p.list(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	e.listsInFlight--
	e.listEnd, e.listOK, e.listN = w.now(), err == nil, len(pus)
	if err == nil && w.now()-began <= w.o.listTimeout() { // an answer past its deadline is a failure
		e.answered, w.stale = true, nil // it catches up once a list is tracked
		if e.answer == nil {
			e.answer = e.listing // the answer that goes in: Start lists no more once one answered
		}
	}
	return pus, err
}

func (p *pmPorts) list(ctx context.Context) ([]ports.PU, error) {
	w, e := p.w, p.e
	w.mu.Lock()
	if e.dead {
		w.mu.Unlock()
		return nil, errPMDead
	}
	f := pmFault{kind: -1}
	if w.listFault.left > 0 {
		w.listFault.left--
		w.lastFault = w.now()
		f = w.listFault
	}
	all := make([]pmPU, 0, len(w.set))
	for _, pu := range w.set {
		all = append(all, pu)
	}
	slices.SortFunc(all, func(a, b pmPU) int { return b.order - a.order }) // newest first
	snap := make([]ports.PU, 0, len(all)+len(w.stale))
	journaled := map[string]ports.PU{}
	if w.o.journal {
		for _, j := range w.journal.PUs() {
			journaled[j.PUID] = j
		}
	}
	for _, pu := range all {
		if w.o.journal { // what the journal holds of it, if anything
			j, ok := journaled[pu.pu.PUID]
			if !ok {
				continue
			}
			pu.pu = j
		}
		snap = append(snap, pu.pu)
	}
	e.listing = make([]string, 0, len(snap))
	for _, pu := range snap {
		e.listing = append(e.listing, pu.PUID)
	}
	for _, pu := range w.stale {
		if _, held := w.set[pu.PUID]; !held {
			snap = append(snap, pu)
		}
	}
	w.seq++
	e.listStartSeq, e.listStart = w.seq, w.now()
	e.lists++
	w.mu.Unlock()
	switch f.kind {
	case pmFail:
		return nil, errors.New("pm: ListPUs failed")
	case pmHang:
		p.hang(f.dur, false)
	case pmDelay:
		select {
		case <-time.After(f.dur):
		case <-ctx.Done():
			w.mu.Lock()
			w.lastFault = w.now()
			w.mu.Unlock()
			return nil, ctx.Err()
		}
		w.mu.Lock()
		w.lastFault = w.now()
		w.mu.Unlock()
	case pmPanic:
		panic(w.panicValue("ListPUs"))
	case pmTypedNil:
		return nil, w.typedNil()
	}
	if e.isDead(w) {
		return nil, errPMDead
	}
	return snap, nil
}

func (e *pmEngine) isDead(w *pmWorld) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return e.dead
}

var pmGoneReasons = map[ports.Reason]bool{ports.ReasonPodGone: true, ports.ReasonUIDChanged: true, ports.ReasonNodeChanged: true}

// resolvedLocked: the engine no longer holds puid.
func (e *pmEngine) resolvedLocked(w *pmWorld, puid string) {
	e.resolved[puid] = w.seq
	delete(e.firstCall, puid)
	delete(e.lastCall, puid)
	e.removals = append(e.removals, w.now())
	delete(e.fails, puid)
	delete(e.places, puid)
}

// Typed nils of every kind a port may answer: a *url.Error, whose reading
// panics, and errors that read no field, whose Is says not found and whose
// Unwrap says permanent: a pointer, a map, a slice, a func and a chan.
type (
	pmQuietNil   struct{}
	pmNilMap     map[int]int
	pmNilSlice   []int
	pmNilFunc    func()
	pmNilChan    chan int
	pmQuietError interface {
		error
		Is(error) bool
		Unwrap() error
	}
)

func (*pmQuietNil) Error() string        { return "pm: a quiet typed nil" }
func (*pmQuietNil) Is(target error) bool { return target == ports.ErrPodNotFound }
func (*pmQuietNil) Unwrap() error        { return ports.Permanent(errors.New("pm: quiet")) }
func (pmNilMap) Error() string           { return "pm: a nil map" }
func (pmNilMap) Is(target error) bool    { return target == ports.ErrPodNotFound }
func (pmNilMap) Unwrap() error           { return ports.Permanent(errors.New("pm: quiet")) }
func (pmNilSlice) Error() string         { return "pm: a nil slice" }
func (pmNilSlice) Is(target error) bool  { return target == ports.ErrPodNotFound }
func (pmNilSlice) Unwrap() error         { return ports.Permanent(errors.New("pm: quiet")) }
func (pmNilFunc) Error() string          { return "pm: a nil func" }
func (pmNilFunc) Is(target error) bool   { return target == ports.ErrPodNotFound }
func (pmNilFunc) Unwrap() error          { return ports.Permanent(errors.New("pm: quiet")) }
func (pmNilChan) Error() string          { return "pm: a nil chan" }
func (pmNilChan) Is(target error) bool   { return target == ports.ErrPodNotFound }
func (pmNilChan) Unwrap() error          { return ports.Permanent(errors.New("pm: quiet")) }

var (
	_ pmQuietError = (*pmQuietNil)(nil)
	_ pmQuietError = pmNilMap(nil)
	_ pmQuietError = pmNilSlice(nil)
	_ pmQuietError = pmNilFunc(nil)
	_ pmQuietError = pmNilChan(nil)
)

// pmReadOnce is an error that reads fine once, and panics from its second reading on (a buffer its port released).
type pmReadOnce struct{ reads atomic.Int32 }

func (e *pmReadOnce) Error() string {
	if e.reads.Add(1) > 1 {
		panic("pm: an error read again")
	}
	return "pm: read once"
}

// pmLateNil is an error whose cause its port's code clears once the call has returned: its first reads of the cause
// (up to fine) see an error, later ones a typed nil whose Is says not found and whose Unwrap gives a Permanent error.
type pmLateNil struct {
	fine  int32
	reads atomic.Int32
}

func (e *pmLateNil) Error() string { return "pm: a cause cleared later" }
func (e *pmLateNil) Unwrap() error {
	if e.reads.Add(1) <= e.fine {
		return errors.New("pm: the cause")
	}
	return (*pmQuietNil)(nil)
}

// pmFlip is an error whose cause its port's code replaces once the call has returned: its first read of the cause sees
// a failure, later ones the not-found error. Met twice in one answer (errors.Join(f, f)), a reading that reads it
// twice finds a not-found the answer never said.
type pmFlip struct{ reads atomic.Int32 }

func (e *pmFlip) Error() string { return "pm: a cause replaced later" }
func (e *pmFlip) Unwrap() error {
	if e.reads.Add(1) == 1 {
		return errors.New("pm: the cause")
	}
	return ports.ErrPodNotFound
}

// pmStatusFlip is a Kubernetes status error whose Status changes at each reading: a 503 of no reason, then an
// InternalError of code 404; neither reading is a NotFound.
type pmStatusFlip struct{ reads atomic.Int32 }

func (e *pmStatusFlip) Error() string { return "pm: a status read twice" }
func (e *pmStatusFlip) Status() metav1.Status {
	if e.reads.Add(1) == 1 {
		return metav1.Status{Status: metav1.StatusFailure, Code: 503}
	}
	return metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonInternalError, Code: 404}
}

// panicValue is what a port that panics panics with: a string, a value whose printing panics with itself, or an error
// that wraps itself (alone, or in a struct), in turn.
func (w *pmWorld) panicValue(port string) any {
	switch w.panics.Add(1) % 5 {
	case 1:
		return &pmUnprintable{}
	case 3: // an error that wraps itself, held in a struct: printing it (fmt, errors.Is) never ends
		return struct{ cause error }{&pmSelfWrapping{}}
	case 4:
		return &pmSelfWrapping{}
	}
	return "pm: " + port + " panics"
}

// pmSelfWrapping is an error that wraps itself, and whose Error reads what it wraps, as an ordinary wrapper does:
// reading it without a bound overflows the stack, which no recover catches.
type pmSelfWrapping struct{}

func (e *pmSelfWrapping) Error() string { return "pm: wraps " + e.Unwrap().Error() }
func (e *pmSelfWrapping) Unwrap() error { return e }

// pmUnprintable is a panic value whose Error panics with itself: fmt
// panics again printing it.
type pmUnprintable struct{}

func (u *pmUnprintable) Error() string { panic(u) }

// typedNil returns the next typed nil, of each kind in turn, or an error too large to read: one that repeats a
// child, nested (2^60 errors to walk), or one whose second reading says something else (alone, or met twice in its
// tree).
func (w *pmWorld) typedNil() error {
	n := w.typedNils.Add(1)
	switch n % 9 {
	case 8:
		switch n / 9 % 4 {
		case 3:
			f := &pmFlip{}
			return errors.Join(f, f)
		case 2:
			return &pmStatusFlip{}
		}
		return &pmLateNil{fine: int32(n/9%3 + 1)}
	case 7:
		return &pmReadOnce{}
	case 6:
		err := fmt.Errorf("pm: %w", ports.ErrPodNotFound)
		for range 60 {
			err = errors.Join(err, err)
		}
		return err
	case 1:
		return (*pmQuietNil)(nil)
	case 2:
		return pmNilMap(nil)
	case 3:
		return pmNilSlice(nil)
	case 4:
		return pmNilFunc(nil)
	case 5:
		return pmNilChan(nil)
	}
	var u *url.Error
	return u
}

// Requeue is the agent's controller, reconciling a pod whose PU went with its sandbox (rows 10 and 12): it creates
// the PU of the pod's sandbox now, under the pod's UID, and tracks it at once.
func (p *pmPorts) Requeue(ctx context.Context, pod *corev1.Pod) error {
	w, e := p.w, p.e
	if w.o.unread { // nobody reads its channel: it waits for its context, and the agent's controller never hears
		<-ctx.Done()
		return ctx.Err()
	}
	slot := pmSlotOf(pod.Name)
	w.mu.Lock()
	if e.dead || slot < 0 || !w.pods[slot].exists || w.pods[slot].uid != string(pod.UID) {
		w.mu.Unlock()
		return errPMDead
	}
	pu := ports.PU{PUID: string(pod.UID), Pod: pmKey(slot), SandboxID: w.pods[slot].sandbox}
	w.mu.Unlock()
	w.userTrack(e, pu)
	return nil
}

func (p *pmPorts) Observe(ev deletion.Event) {
	w, e := p.w, p.e
	w.mu.Lock()
	if e.dead {
		w.mu.Unlock()
		return
	}
	w.seq++
	puid := ev.PU.PUID
	if pmTraceEvents {
		w.trace = append(w.trace, fmt.Sprintf("%v:   engine #%d tells %s %s sandbox %q row %d", w.now(), e.id, ev.Kind, puid, ev.PU.SandboxID, ev.Verdict.Row))
	}
	if w.o.journal {
		w.journal.Observe(ev)
	}
	if puid != "" {
		if e.obsIn[puid] > 0 {
			w.violateLocked("11: %s of %s is told while another event of it is", ev.Kind, puid)
		}
		e.obsIn[puid]++
		defer func() {
			w.mu.Lock()
			e.obsIn[puid]--
			if ev.Kind == deletion.EventTracked {
				e.toldTracked[puid]++
			}
			w.mu.Unlock()
		}()
		switch ev.Kind {
		case deletion.EventDestroyed, deletion.EventDestroyFailed, deletion.EventAbandoned:
			// Event.Verdict: of the check that decided the destroy, its Row the decision table's row.
			if v := ev.Verdict; v.Action != deletion.Destroy || v.Reason != ev.Reason || v.Row < 1 || v.Row > 12 {
				w.violateLocked("10: %s of %s tells the verdict %+v, not the destroy's (reason %s)", ev.Kind, puid, v, ev.Reason)
			}
			// Event.DestroyCalls: the calls so far; each destroyed or failed one adds one, an abandon none.
			last := e.destroyCalls[puid]
			if ev.DestroyCalls < 1 || ev.DestroyCalls < last || ev.DestroyCalls == last && ev.Kind != deletion.EventAbandoned {
				w.violateLocked("10: %s of %s tells DestroyCalls %d, after %d so far in its tracking", ev.Kind, puid, ev.DestroyCalls, last)
			}
			e.destroyCalls[puid] = ev.DestroyCalls
		case deletion.EventTracked:
			delete(e.destroyCalls, puid)
		}
		if slot := pmSlotOf(ev.PU.Pod.Name); ev.Kind == deletion.EventVetoed && !e.obsLive[puid] && slot >= 0 &&
			e.untrackSeq[puid] > w.confirmedSeq[slot] {
			w.violateLocked("11: EventVetoed of %s, decided before the Untrack, told after its EventUntracked", puid)
		}
		switch ev.Kind {
		case deletion.EventTracked:
			if e.obsLive[puid] {
				w.violateLocked("11: a second EventTracked of %s while it is tracked", puid)
			}
			e.obsLive[puid] = true
			if e.live++; !e.answered { // what a list's answer tracks counts no more: the memory is for the list
				e.peakLive = max(e.peakLive, e.live)
			}
		case deletion.EventAdopted, deletion.EventUntracked, deletion.EventDestroyed, deletion.EventAbandoned, deletion.EventWouldDestroy:
			if !e.obsLive[puid] {
				w.violateLocked("11: %s of %s is told before its EventTracked, or after the event that ended its tracking", ev.Kind, puid)
			}
			if ev.Kind != deletion.EventAdopted && (ev.Kind != deletion.EventWouldDestroy || ev.Dropped) && e.obsLive[puid] {
				e.obsLive[puid] = false
				e.live--
			}
		}
	}
	if e.startReturned && (ev.Kind == deletion.EventRestored || ev.Kind == deletion.EventTracked && e.userTracking[puid] == 0) {
		w.violateLocked("10: %s of %q from the Inventory's list after Start returned", ev.Kind, puid)
	}
	if (ev.Kind == deletion.EventChecked && ev.Err != nil || ev.Kind == deletion.EventListFailed) && !w.slowObs && w.obsSleeping == 0 {
		e.failsHeard = append(e.failsHeard, w.now())
	}
	if slot := pmSlotOf(ev.PU.Pod.Name); ev.Kind == deletion.EventChecked && slot >= 0 && w.o.workers == 1 {
		if w.failedFor[slot] && ev.Err == nil {
			w.violateLocked("10: a check of %s met a port's failure, and its EventChecked has no Err: the Observer is not told of every failure", puid)
		}
		if ev.Err != nil && !w.lateFor[slot] && strings.Contains(ev.Err.Error(), "past its check's deadline") {
			w.violateLocked("10: a check of %s met no hang and no slow Observer, and its EventChecked blames a late port: %v", puid, ev.Err)
		}
		w.failedFor[slot], w.lateFor[slot] = false, false
	}
	switch ev.Kind {
	case deletion.EventChecked:
		e.lastCheckTold = w.now()
		if !e.retracked[puid] {
			e.lastVerdict[puid] = ev.Verdict
		}
	case deletion.EventListFailed:
		if !e.listFailed && !e.restored {
			e.begunAt = w.now()
		}
		e.listFailed = true
	case deletion.EventRestored:
		if !e.listFailed && !e.restored {
			e.begunAt = w.now()
		}
		e.restored = true
	case deletion.EventTracked:
		if e.userTracking[puid] == 0 { // a list's
			if r, ok := e.removedSeq[puid]; ok && e.lists > 0 && r > e.listStartSeq {
				w.violateLocked("10: the Inventory's list begun at %v brings back %s, removed while it was under way", e.listStart, puid)
			}
			// Options.DryRun: until the first list is in, it remembers the latest dropped PUs, at least as many as
			// it ever tracked at once (and MinDryRunMemory), so that the list does not report them again.
			// The Observer hears the events of different PUs in the order their checks tell them, which with
			// Workers > 1 may not be the order the engine tracked and dropped them in: the most PUs tracked at
			// once is at least what Len() said and what the events say (whichever is less), and the last
			// Workers-1 drops it cannot place.
			peak := min(e.peakLive, max(e.peak, e.peakLive-(w.o.workers-1)))
			if m := max(deletion.MinDryRunMemory, peak) - (w.o.workers - 1); slices.Contains(e.drops[max(0, len(e.drops)-m):], puid) {
				w.violateLocked("7: the Inventory's first list brings back %s, which the dry run dropped before it was in, among the latest %d drops it remembers (%d PUs tracked at once at most)",
					puid, m, e.peakLive)
			}
		}
		e.drops = slices.DeleteFunc(e.drops, func(p string) bool { return p == puid })
		// The EventChecked of a check that ended the tracking before may come after this EventTracked: whose check
		// an EventChecked tells is known of a PUID tracked once.
		if _, ok := e.lastVerdict[puid]; ok || e.toldTracked[puid] > 0 {
			e.retracked[puid] = true
		}
		delete(e.lastVerdict, puid)
		delete(e.fails, puid)
		delete(e.reports, puid)
		delete(e.lastReport, puid)
		delete(e.places, puid)
		delete(e.lastOK, puid)
	case deletion.EventUntracked:
		e.untrackEv[puid]++
		e.resolvedLocked(w, puid)
	case deletion.EventDestroyed:
		if !e.lastOK[puid] {
			w.violateLocked("10: EventDestroyed of %s without a successful DestroyPU", puid)
		}
		// Found gone at the first call at the latest, destroyed after the last began; a pod gone stays gone.
		if first, ok := e.firstCall[puid]; ok && ev.Reason == ports.ReasonPodGone && ev.DestroyDelay < e.lastCall[puid]-first {
			w.violateLocked("10: EventDestroyed of %s with DestroyDelay %v: DestroyPU was first called %v before its last call",
				puid, ev.DestroyDelay, e.lastCall[puid]-first)
		}
		e.resolvedLocked(w, puid)
	case deletion.EventAbandoned:
		if (ev.DestroyCalls < pmMaxAttempts || e.streak[puid] < pmMaxAttempts) && !e.permanent[puid] {
			w.violateLocked("10: %s is given up on after %d DestroyPU calls (%d failed in a row since its last success), none of which answered a Permanent error",
				puid, ev.DestroyCalls, e.streak[puid])
		}
		e.removedSeq[puid] = w.seq
		e.resolvedLocked(w, puid)
	case deletion.EventWouldDestroy:
		if !w.o.dryRun {
			w.violateLocked("10: EventWouldDestroy of %s outside a dry run", puid)
		}
		if w.o.dryRunner && !e.dryOK[puid] {
			w.violateLocked("7: EventWouldDestroy of %s, which the DryRunner did not say it would destroy", puid)
		}
		delete(e.dryOK, puid)
		if ev.Dropped != pmGoneReasons[ev.Reason] {
			w.violateLocked("10: EventWouldDestroy of %s for %s with Dropped %v", puid, ev.Reason, ev.Dropped)
		}
		if !w.allowedLocked(ev.PU) {
			w.violateLocked("3: a dry run would destroy %s (%s), which the table does not order: the pod is %+v", ev.PU, ev.Reason, w.pods[max(0, pmSlotOf(ev.PU.Pod.Name))])
		}
		m := e.reports[puid]
		if m == nil {
			m = map[ports.Reason]int{}
			e.reports[puid] = m
		}
		if m[ev.Reason] == 0 {
			e.lastReport[puid] = ev.Reason
		}
		if m[ev.Reason]++; m[ev.Reason] > 1 {
			w.violateLocked("7: a dry run reports %s for %s a %s time", puid, ev.Reason, []string{"", "", "second", "third"}[min(m[ev.Reason], 3)])
		}
		if ev.Dropped {
			e.removedSeq[puid] = w.seq
			e.resolvedLocked(w, puid)
			if !e.answered {
				e.drops = append(e.drops, puid)
			}
		}
	}
	slow := w.slowObs
	if slow {
		w.obsSleeping++
		w.obsCount++
	}
	var fault pmFault
	if slot := pmSlotOf(ev.PU.Pod.Name); slot >= 0 && w.obsFault[slot].left > 0 {
		fault, w.obsFault[slot] = w.obsFault[slot], pmFault{}
		w.lastFault = w.now()
		if fault.kind == pmHang && ev.Kind == deletion.EventTracked && e.userTracking[ev.PU.PUID] > 0 && e.running &&
			(!w.o.inventory || e.restored || e.listFailed) {
			e.trackHolding, e.trackHoldAt, e.trackHoldEnd = true, w.now(), w.now()+fault.dur
		}
	} else if (ev.Kind == deletion.EventListFailed || ev.Kind == deletion.EventRestored) && w.obsListFault.left > 0 {
		fault, w.obsListFault = w.obsListFault, pmFault{}
		w.lastFault = w.now()
		if fault.kind == pmHang {
			e.listHolding, e.listHoldAt, e.listHoldEnd = true, w.now(), w.now()+fault.dur
		}
	}
	if slow || fault.left > 0 { // any check under way may be made late by it
		for i := range w.lateFor {
			w.lateFor[i] = true
		}
	}
	w.mu.Unlock()
	if slow {
		time.Sleep(pmObsDelay)
		w.mu.Lock()
		w.obsSleeping--
		w.lastFault, w.lastSlowEnd = w.now(), w.now()
		w.mu.Unlock()
	}
	switch {
	case fault.left > 0 && fault.kind == pmHang:
		if ev.Kind == deletion.EventTracked {
			w.mu.Lock()
			if e.userTracking[puid] == 0 && !e.restored && !e.listFailed && !e.wedging {
				e.wedging, e.wedgeAt, e.wedgeEnd = true, w.now(), w.now()+fault.dur
			}
			w.mu.Unlock()
		}
		p.hangAs(&pmHangRec{dur: fault.dur, observer: true})
	case fault.left > 0:
		panic(w.panicValue("Observer"))
	}
}

func (w *pmWorld) newEngine(t *testing.T) *pmEngine {
	e := &pmEngine{id: len(w.engines) + 1, lastSweepEnd: -1, sharedSweepEnd: -1, destroyCalls: map[string]int{}, clock: &pmClock{}, lifecycle: -1, lastSummary: -1, untracked: map[string]bool{}, untrackSeq: map[string]int64{}, untrackEv: map[string]int{}, permanent: map[string]bool{}, dryOK: map[string]bool{}, streak: map[string]int{}, tracksBegun: map[string]int{}, firstTrack: map[string]time.Duration{},
		obsIn: map[string]int{}, toldTracked: map[string]int{}, obsLive: map[string]bool{},
		userTracking: map[string]int{}, fails: map[string][]time.Duration{}, lastOK: map[string]bool{},
		firstCall: map[string]time.Duration{}, lastCall: map[string]time.Duration{},
		removedSeq: map[string]int64{}, resolved: map[string]int64{}, reports: map[string]map[ports.Reason]int{},
		places: map[string]pmPlace{}, lastReport: map[string]ports.Reason{}, lastCheckTold: -1, queuedSince: map[string]pmQueued{}, seenUnqueued: map[string]time.Duration{},
		lastVerdict: map[string]deletion.Verdict{}, retracked: map[string]bool{}}
	e.ctx, e.ctxCancel = context.WithCancel(context.Background())
	p := &pmPorts{w: w, e: e}
	o := w.o
	opts := deletion.Options{NodeName: pmNode, Workers: o.workers, CheckTimeout: o.checkTimeout, SweepInterval: o.interval,
		RetryMinDelay: o.retryMin, RetryMaxDelay: o.retryMax, MaxDestroyAttempts: pmMaxAttempts, ShutdownTimeout: pmShutdown,
		DryRun: o.dryRun, Observer: p, Logger: logr.New(pmLog{w, e}), Clock: e.clock}
	if o.sandbox {
		opts.SandboxExtractor, opts.SandboxProber, opts.Requeuer = p, p, p
	}
	if o.confirmer {
		opts.Confirmer = pmConfirmer{p}
	}
	if o.inventory {
		opts.Inventory = p
	}
	if o.rate > 0 {
		opts.DestroyRate, opts.DestroyBurst = xrate.Limit(o.rate), o.burst
	}
	var policy ports.PolicyHandler = p
	if o.dryRunner {
		policy = pmDryRunner{p}
	}
	c, err := deletion.New(p, policy, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.c = c
	w.mu.Lock()
	w.engines = append(w.engines, e)
	w.mu.Unlock()
	return e
}

func (w *pmWorld) goAsync(name string, f func()) {
	a := &pmAsync{name: fmt.Sprintf("%s (at %v)", name, w.now()), done: make(chan struct{})}
	w.async = append(w.async, a)
	go func() {
		defer close(a.done)
		f()
	}()
	synctest.Wait()
}

func (w *pmWorld) asyncLeft() []string {
	var left []string
	for _, a := range w.async {
		select {
		case <-a.done:
		default:
			left = append(left, a.name)
		}
	}
	return left
}

func (w *pmWorld) start(e *pmEngine) {
	w.mu.Lock()
	if e.startCalled || e.dead {
		w.mu.Unlock()
		if err := e.c.Start(context.Background()); !errors.Is(err, deletion.ErrAlreadyStarted) {
			w.violate("10: a second Start returned %v, not ErrAlreadyStarted", err)
		}
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.startCalled, e.running = cancel, true, true
	for _, s := range e.sweeps {
		s.shared = s.shared || !s.done
	}
	w.stale = nil // a new agent: only its own destroys are its promise
	e.startedAt, e.lifecycle, e.begunAt = w.now(), w.now(), w.now()
	w.mu.Unlock()
	go func() {
		err := e.c.Start(ctx)
		w.mu.Lock()
		defer w.mu.Unlock()
		e.startReturned = true
		if err != nil {
			w.violateLocked("9: Start returned %v", err)
		}
	}()
	synctest.Wait()
}

func (w *pmWorld) stop(e *pmEngine) {
	w.mu.Lock()
	if !e.running {
		w.mu.Unlock()
		return
	}
	e.running, e.stopAt, e.lifecycle, e.logLinesAtStop = false, w.now(), w.now(), w.logLines-w.logSleeping
	w.mu.Unlock()
	e.cancel()
	synctest.Wait()
	for i := 0; i < 31; i++ {
		w.mu.Lock()
		done := e.startReturned
		w.mu.Unlock()
		if done {
			return
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		w.checkTimed()
	}
}

func (w *pmWorld) userTrack(e *pmEngine, pu ports.PU) {
	w.mu.Lock()
	w.addToSetLocked(pu)
	if p, ok := w.set[pu.PUID]; ok && pu.SandboxID != "" && p.pu.SandboxID != pu.SandboxID && p.pu.Pod == pu.Pod &&
		!e.obsLive[pu.PUID] && e.userTracking[pu.PUID] == 0 {
		// An agent that tracks a PU with a sandbox has its PU belong to that sandbox now (Options.Inventory:
		// the PU tracked keeps the sandbox it was tracked with, whatever a list says); not one the engine holds
		// already: Track is insert-only, the PU keeps its first sandbox.
		p.pu.SandboxID = pu.SandboxID
		w.set[pu.PUID] = p
	}
	delete(e.untracked, pu.PUID)
	e.userTracking[pu.PUID]++
	e.tracksBegun[pu.PUID]++
	if _, ok := e.firstTrack[pu.PUID]; !ok && e.toldTracked[pu.PUID] == 0 { // not listed before either
		e.firstTrack[pu.PUID] = w.now()
	}
	w.mu.Unlock()
	err := e.c.Track(pu)
	w.mu.Lock()
	defer w.mu.Unlock()
	e.userTracking[pu.PUID]--
	switch {
	case err == nil:
		if e.toldTracked[pu.PUID] == 0 && !e.dead { // a dead process's Observer hears nothing
			w.violateLocked("11: Track(%s) returned before the Observer had its EventTracked", pu.PUID)
		}
	case errors.Is(err, deletion.ErrNotRunning) && e.startCalled && !e.running:
		// Start has returned: nothing would check it, and Track says so. The PU stays in the policy engine for the
		// next engine's list (the agent keeps it for the next run's journal).
		if w.o.journal && !slices.ContainsFunc(w.journal.PUs(), func(j ports.PU) bool { return j.PUID == pu.PUID }) {
			w.journal.Add(pu)
		}
	default:
		w.violateLocked("Track(%v): %v", pu, err)
	}
}

func (w *pmWorld) userUntrack(e *pmEngine, puid string) {
	w.mu.Lock()
	w.seq++
	at := w.seq
	e.untrackSeq[puid] = at
	delete(w.set, puid) // the agent tore it down itself
	before, tracks := e.untrackEv[puid], e.tracksBegun[puid]
	w.mu.Unlock()
	ok := e.c.Untrack(puid)
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case e.tracksBegun[puid] != tracks:
		// A Track of the PUID began meanwhile: a new PU, which this Untrack does not end.
	case ok:
		e.untracked[puid] = true
		e.removedSeq[puid] = at
		if e.untrackEv[puid] == before && !e.dead { // a dead process's Observer hears nothing
			w.violateLocked("10: Untrack(%s) returned true before EventUntracked was told", puid)
		}
	default: // not tracked: a list under way must not bring it back either
		e.untracked[puid] = true
	}
}

func (w *pmWorld) sweep(e *pmEngine, limit time.Duration, cut int) {
	w.mu.Lock()
	s := &pmSweepRec{start: w.now(), startSeq: w.seq, slowAt: w.obsCount}
	s.begun, s.queued, s.shared = s.start, e.sweepsActive > 0, e.running
	s.clean = w.quietLocked() && w.lastFault < s.start
	e.sweeps = append(e.sweeps, s)
	e.sweepsActive++
	w.mu.Unlock()
	snap := e.c.Status()
	w.mu.Lock()
	s.snapN = len(snap)
	for _, st := range snap {
		if !w.aliveLocked(st.PUID) {
			s.required = append(s.required, st.PUID)
		}
	}
	w.mu.Unlock()
	ctx := e.ctx
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	if cut > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		e.clock.arm(cut, cancel)
		defer e.clock.arm(0, nil)
	}
	e.c.Sweep(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	s.done, s.end = true, w.now()
	if ctx.Err() != nil && e.ctx.Err() == nil {
		s.clean = false // ended by its context: what it had not done yet is not owed (6b)
	}
	e.sweepsActive--
	e.lastSweepEnd = s.end
	if s.shared {
		e.sharedSweepEnd = s.end
	}
	for _, o := range e.sweeps {
		if !o.done && o.queued {
			o.begun = s.end // it may begin now
		}
	}
	if !s.clean || w.lastFault >= s.start || e.dead || w.obsCount != s.slowAt { // Start's start or stop changes nothing
		return
	}
	for _, puid := range s.required {
		if e.resolved[puid] <= s.startSeq {
			w.violateLocked("6: a Sweep begun at %v (no fault since before it) returned, but PU %s of a pod gone before it is still tracked", s.start, puid)
		}
	}
}

// sweptSinceLocked reports whether a Sweep of e still running may have begun at or after at.
func (w *pmWorld) sweptSinceLocked(e *pmEngine, at time.Duration) bool {
	for _, s := range e.sweeps {
		if !s.done && s.begun >= at {
			return true
		}
	}
	return false
}

// sweepBoundLocked is invariant 9's bound on a running Sweep s of e; ok
// false: none (it waits for another Sweep, or a slow Observer ran).
func (w *pmWorld) sweepBoundLocked(e *pmEngine, s *pmSweepRec) (time.Duration, bool) {
	if e.dead {
		return e.deadAt + 2*time.Second, true
	}
	if w.slowObs || w.slowLog || w.logSleeping > 0 || w.lastLogEnd >= s.start || w.obsCount != s.slowAt {
		return 0, false
	}
	eff := s.start
	for _, o := range e.sweeps {
		if o == s {
			break
		}
		if !o.done {
			return 0, false
		}
		eff = max(eff, o.end)
	}
	for _, o := range e.sweeps {
		if o.done && o != s {
			eff = max(eff, o.end)
		}
	}
	bound := eff + 2*time.Second
	for _, h := range e.hangs {
		switch {
		case h.end >= 0 && h.end < eff:
		case h.pod:
			bound += min(h.dur, w.o.checkTimeout+2*time.Second)
		case h.observer: // an Observer holding a PU's EventTracked holds its check too, out of any slot
			bound += h.dur
		}
	}
	if w.o.inventory && e.startCalled {
		bound += w.o.listTimeout() + 2*time.Second
	}
	if w.o.unread { // it waits for the Requeuer once: CheckTimeout and a second
		bound += w.o.checkTimeout + time.Second
	}
	if w.o.rate > 0 && !w.o.dryRun {
		n := s.snapN + w.o.burst + 2
		for _, c := range e.calls {
			if c >= eff {
				n++
			}
		}
		bound += time.Duration(float64(n) / w.o.rate * float64(time.Second))
	}
	return bound, true
}

// checkTimed checks the invariants that time can break (6a, 7, 8, 9, 10).
func (w *pmWorld) checkTimed() {
	w.mu.Lock()
	now := w.now()
	for _, e := range w.engines {
		e.failsHeard = slices.DeleteFunc(e.failsHeard, func(at time.Duration) bool { return e.lastSummary >= at })
		if len(e.failsHeard) > 0 && !e.dead && (w.slowObs || w.obsSleeping > 0 || w.slowLog || w.logSleeping > 0) {
			e.failsHeard = e.failsHeard[:0] // heard late: when they failed is not known
		}
		if len(e.failsHeard) > 0 && !e.dead && now > e.failsHeard[0]+w.o.interval+time.Second {
			w.violateLocked("13: a failure the Observer was told of at %v is in no summary line by %v (SweepInterval %v; the latest summary at %v)",
				e.failsHeard[0], now, w.o.interval, e.lastSummary)
			e.failsHeard = nil // once
		}
		base := e.listStart
		if e.listHolding { // no list is retried while the Observer holds an event of the lists (invariant 8)
			base = max(base, e.listHoldEnd)
		}
		if e.running && !e.dead && !e.answered && e.listsInFlight > 0 &&
			now > base+w.o.listTimeout()+time.Second+w.o.retryMax+2*time.Second {
			w.violateLocked("12: the Inventory's list begun at %v hangs past its deadline of %v and no list follows it", e.listStart, w.o.listTimeout())
			e.listStart = now // once
		}
		if logged := time.Duration(w.logLines-e.logLinesAtStop) * pmLogDelay; e.stopAt > 0 && !e.startReturned &&
			now > e.stopAt+pmShutdown+time.Second+logged {
			w.violateLocked("9: Start has not returned %v after its ctx was cancelled (ShutdownTimeout %v)", now-e.stopAt, pmShutdown)
			e.startReturned = true // once
		}
		for _, s := range e.sweeps {
			if s.done || s.flagged {
				continue
			}
			if bound, ok := w.sweepBoundLocked(e, s); ok && now > bound {
				s.flagged = true
				w.violateLocked("9: a Sweep begun at %v has not returned by %v", s.start, bound)
			}
		}
	}
	e := w.cur
	checkLive := e.running && !e.dead && e.hangsInFlight == 0 && !w.slowObs && w.obsSleeping == 0 &&
		now >= max(e.lastHangEnd, w.lastSlowEnd)+w.o.checkTimeout+2*time.Second
	wedged := e.running && !e.dead && e.stopAt == 0 && e.wedging &&
		now > e.wedgeAt+3*w.o.interval+2*time.Second && now < e.wedgeEnd
	heard := map[string]int{} // the PUs whose EventTracked the Observer heard (returned), and not yet their end
	for puid, live := range e.obsLive {
		if live && e.obsIn[puid] == 0 {
			heard[puid] = e.toldTracked[puid]
		}
	}
	listHeld := e.running && !e.dead && e.stopAt == 0 && e.listHolding &&
		now > e.listHoldAt+3*w.o.interval+2*time.Second && now < e.listHoldEnd
	trackHeld := e.running && !e.dead && e.stopAt == 0 && e.trackHolding &&
		now > e.trackHoldAt+3*w.o.interval+2*time.Second && now < e.trackHoldEnd
	checksBegun := e.running && !e.dead && e.stopAt == 0 && (!w.o.inventory || e.restored || e.listFailed)
	verdicts, checkTold := maps.Clone(e.lastVerdict), e.lastCheckTold
	w.mu.Unlock()

	inventoryListed := e.c.InventoryListed()
	sts := e.c.Status()
	backlog := e.c.Backlog()
	sts2 := e.c.Status()
	n := e.c.Len()
	var live, wedgedLive, heldLive error
	if checkLive {
		live = e.c.LivenessCheck(nil)
	}
	if wedged {
		wedgedLive = e.c.LivenessCheck(nil)
	}
	if listHeld || trackHeld {
		heldLive = e.c.LivenessCheck(nil)
	}
	// 8d: a PU queued since checkTimeout + 3s ago, and no EventChecked told since: every worker is held (in a port,
	// or in the Observer, past its check's deadline), which LivenessCheck must see.
	var stalled string
	var stalledLive error
	w.mu.Lock()
	// 8f: Backlog.OldestQueuedSince is since when the oldest queued check has waited: no earlier than the last time
	// each PU queued then was seen otherwise (one not queued in sts was seen otherwise now).
	bound, bounded := now, true
	for _, st := range sts {
		if st.State == "queued" {
			at, ok := e.seenUnqueued[st.PUID]
			bound, bounded = min(bound, at), bounded && ok
		}
	}
	if since := backlog.OldestQueuedSince; bounded && !since.IsZero() && since.Sub(w.t0) < bound-time.Millisecond {
		w.violateLocked("8f: Backlog says a check has waited in the queue since %v; every PU queued was seen otherwise since %v",
			since.Sub(w.t0), bound)
	}
	for puid := range e.seenUnqueued {
		if !slices.ContainsFunc(sts, func(st deletion.PUStatus) bool { return st.PUID == puid }) {
			delete(e.seenUnqueued, puid)
		}
	}
	for _, st := range sts2 {
		if st.State != "queued" {
			e.seenUnqueued[st.PUID] = now
		}
	}
	for _, st := range sts {
		q, ok := e.queuedSince[st.PUID]
		switch {
		case st.State != "queued":
			delete(e.queuedSince, st.PUID)
		case !ok || !q.lastChecked.Equal(st.LastChecked):
			e.queuedSince[st.PUID] = pmQueued{since: now, lastChecked: st.LastChecked}
		case checksBegun && now-max(q.since, e.begunAt) >= w.o.checkTimeout+3*time.Second && checkTold < q.since &&
			!w.slowLog && w.logSleeping == 0 && w.lastLogEnd < q.since: // a worker writing to a slow Logger is in no port
			stalled = st.PUID
		}
	}
	w.mu.Unlock()
	if stalled != "" {
		stalledLive = e.c.LivenessCheck(nil)
		again := e.c.Status()
		if i := slices.IndexFunc(again, func(st deletion.PUStatus) bool { return st.PUID == stalled }); i < 0 || again[i].State != "queued" {
			stalled = ""
		}
	}
	mem := deletion.DryRunMemory(e.c)

	w.mu.Lock()
	defer w.mu.Unlock()
	// deletion.StateLeaving: a PU leaves Status only once the Observer has heard its end; Len does not count it.
	for puid, told := range heard {
		// Its EventTracked was told: it is listed in a state past "tracking" (leaving, when its PUID is tracked again
		// since: the new one's "tracking" until the Observer has heard the end of the one before).
		if e.obsLive[puid] && e.toldTracked[puid] == told &&
			!slices.ContainsFunc(sts, func(st deletion.PUStatus) bool { return st.PUID == puid && st.State != "tracking" }) {
			w.violateLocked("10: %s, whose end the Observer has not heard, is missing from Status()", puid)
		}
	}
	if tracked := len(sts) - countLeaving(sts); n != tracked {
		w.violateLocked("10: Len() is %d, Status() lists %d tracked", n, tracked)
	}
	w.inventoryListedLocked(e, inventoryListed, sts)
	// Backlog.OldestGoneSince is zero when no PU waits for a destroy: with every PU idle, before and after, and
	// none checked in between, none waits for a retry or a turn, and none is being destroyed; one whose last check
	// failed may wait still (found to go, then a read that learned nothing), or decided a destroy its context cut.
	if backlog.Retrying == 0 && backlog.RateLimited == 0 && !backlog.OldestGoneSince.IsZero() && len(sts) == len(sts2) &&
		!slices.ContainsFunc(sts, func(st deletion.PUStatus) bool {
			return st.State != "idle" || st.LastErr != nil || st.LastVerdict.Action == deletion.Destroy // a cut check's
		}) &&
		slices.EqualFunc(sts, sts2, func(a, b deletion.PUStatus) bool {
			return a.PUID == b.PUID && a.LastChecked.Equal(b.LastChecked) && a.State == b.State
		}) {
		w.violateLocked("10: Backlog's OldestGoneSince is %v, but no PU waits for a destroy (%d idle)", backlog.OldestGoneSince, len(sts))
	}
	if live != nil {
		w.violateLocked("8: LivenessCheck fails with nothing wedged: %v", live)
	}
	if trackHeld && !errors.Is(heldLive, deletion.ErrBehind) {
		w.violateLocked("8: the Observer has held a Track's EventTracked since %v (SweepInterval %v), and LivenessCheck is %v", e.trackHoldAt, w.o.interval, heldLive)
		e.trackHolding = false // once
	}
	if listHeld && !errors.Is(heldLive, deletion.ErrBehind) {
		w.violateLocked("8: the Observer has held an event of the lists since %v (SweepInterval %v), and LivenessCheck is %v", e.listHoldAt, w.o.interval, heldLive)
		e.listHolding = false // once
	}
	if stalled != "" && e.lastCheckTold == checkTold && stalledLive == nil {
		w.violateLocked("8: %s has been queued since %v, no check has been told since %v, and LivenessCheck is nil: every worker is held unseen",
			stalled, e.queuedSince[stalled].since, checkTold)
		clear(e.queuedSince) // once
	}
	// PUStatus.LastVerdict is the verdict of the last check carried out, as its EventChecked told it: of a PU not in a
	// check, whose last EventChecked is the same before and after both samples.
	for i, st := range sts {
		v, ok := verdicts[st.PUID]
		if !ok || st.State == "checking" || st.State == "tracking" || st.State == deletion.StateLeaving || e.lastVerdict[st.PUID] != v ||
			i >= len(sts2) || sts2[i].PUID != st.PUID || !sts2[i].LastChecked.Equal(st.LastChecked) || sts2[i].State == "checking" {
			continue
		}
		if st.LastVerdict != v {
			w.violateLocked("10: Status tells %s's last verdict %v (sandbox %q), its last EventChecked %v (sandbox %q)", st.PUID,
				st.LastVerdict, st.LastVerdict.SandboxID, v, v.SandboxID)
		}
	}
	if wedged && wedgedLive == nil {
		w.violateLocked("8: the Observer has held an EventTracked of the first list's answer since %v (SweepInterval %v), and LivenessCheck is nil", e.wedgeAt, w.o.interval)
		e.wedging = false // once
	}
	e.peak = max(e.peak, n)
	if w.o.dryRun {
		// What it remembers of its drops and of the Untracks of PUIDs it
		// did not hold: at most twice max(MinDryRunMemory, tracked) each,
		// and a list's copy of them.
		bound := pmMemSlack + 8*max(deletion.MinDryRunMemory, e.peak)
		if e.listsInFlight > 0 || e.listOK && now <= e.listEnd+time.Duration(e.listN)*pmObsDelay+time.Second {
			for _, r := range e.removals {
				if r >= e.listStart && r <= e.listStart+w.o.listTimeout()+time.Second {
					bound++
				}
			}
		}
		if mem > bound {
			w.violateLocked("7: a dry run remembers %d PUIDs besides its %d records, over %d", mem, n, bound)
		}
	}
	// 10: a PU of a gone pod keeps its place in the rate's line; Status's
	// WouldDestroy is the reason a dry run reported last.
	seen := map[string]bool{}
	for _, st := range sts {
		// A PU tracked anew whose EventTracked is not told yet (State "tracking") is one the Observer does not
		// know: the reports it holds are of the tracking before.
		if w.o.dryRun && e.obsLive[st.PUID] && st.State != "tracking" && st.WouldDestroy != e.lastReport[st.PUID] {
			w.violateLocked("10: Status says %s would go for %q; the reason reported last is %q", st.PUID, st.WouldDestroy, e.lastReport[st.PUID])
		}
		seen[st.PUID] = true
		if w.o.rate == 0 || w.o.dryRun || !e.running {
			continue
		}
		gone := !w.aliveLocked(st.PUID)
		p, ok := w.cur.places[st.PUID]
		switch st.State {
		case "waiting for its turn":
			if ok && p.tracked.Equal(st.TrackedAt) && now < p.at.Sub(w.t0) && st.NextAttempt.After(p.at.Add(time.Millisecond)) && e.lifecycle < p.since {
				w.violateLocked("10: %s, waiting for its turn at %v, now waits for %v: it lost its place", st.PUID, p.at.Sub(w.t0), st.NextAttempt.Sub(w.t0))
			}
			if gone && (!ok || !p.tracked.Equal(st.TrackedAt) || !st.NextAttempt.After(p.at)) {
				e.places[st.PUID] = pmPlace{tracked: st.TrackedAt, at: st.NextAttempt, since: now, slot: pmSlotOf(st.Pod.Name)}
			}
		case "idle":
			if ok && gone && p.tracked.Equal(st.TrackedAt) && now < p.at.Sub(w.t0) && e.lifecycle < p.since {
				w.violateLocked("10: %s of a gone pod was waiting for its turn at %v, and is idle before it: it lost its place in the line", st.PUID, p.at.Sub(w.t0))
			}
			delete(e.places, st.PUID)
		}
	}
	for puid := range e.places {
		if !seen[puid] {
			delete(e.places, puid)
		}
	}
	// 6c: a PU of the policy engine's set recorded under a sandbox its live pod no longer runs in (replaced while
	// the agent ran, or while it was down: the Inventory lists it) is destroyed as changed.
	for puid, pu := range w.set {
		slot := pmSlotOf(pu.pu.Pod.Name)
		if slot < 0 || pu.pu.SandboxID == "" || !w.aliveLocked(puid) || w.pods[slot].uid != puid || w.pods[slot].sandbox == pu.pu.SandboxID {
			delete(w.replacedAt, puid)
		} else if _, ok := w.replacedAt[puid]; !ok {
			w.replacedAt[puid] = now
		}
	}
	for puid := range w.replacedAt {
		if _, ok := w.set[puid]; !ok {
			delete(w.replacedAt, puid)
		}
	}
	// 6a: while Start runs and nothing is faulty, a PU of a gone pod goes.
	if !e.running || e.dead || !w.quietLocked() {
		return
	}
	if w.o.sandbox && w.o.inventory && !w.o.dryRun {
		for puid, at := range w.replacedAt {
			base := max(at, w.lastFault, e.lifecycle, e.startedAt+w.o.listTimeout()+time.Second)
			bound := base + w.o.interval + w.o.retryMax + 3*time.Second
			if w.o.rate > 0 {
				bound += time.Duration(float64(len(w.set)+len(e.calls)+w.o.burst+1) / w.o.rate * float64(time.Second))
			}
			if now > bound {
				w.violateLocked("6c: PU %s of the policy engine, recorded under sandbox %s, which its pod no longer runs in (since %v), is not destroyed by %v",
					puid, w.set[puid].pu.SandboxID, at, bound)
				return
			}
		}
	}
	var gone []deletion.PUStatus
	for _, st := range sts {
		if !w.aliveLocked(st.PUID) {
			gone = append(gone, st)
		}
	}
	for _, st := range gone {
		// 6d: one triggered since its pod went, no retry of it pending, goes within a check's time of the trigger
		// or of Start's beginning (checks asked before Start run when it begins), not at its place in the interval.
		slot := pmSlotOf(st.Pod.Name)
		if tr := e.triggered[max(slot, 0)]; slot >= 0 && tr.op > w.uidGoneOp[st.PUID] && w.uidGoneOp[st.PUID] > 0 &&
			tr.told[st.PUID] != 0 && tr.told[st.PUID] == e.toldTracked[st.PUID] && !w.triggerSpentLocked(e, slot, tr.at) &&
			len(e.fails[st.PUID]) == 0 && st.State != "tracking" {
			at := tr.at
			base := max(at, st.TrackedAt.Sub(w.t0), w.lastFault, e.lifecycle, e.startedAt)
			if w.o.inventory {
				base = max(base, e.startedAt+w.o.listTimeout()+time.Second)
			}
			bound := base + w.o.checkTimeout + 3*time.Second
			if w.o.rate > 0 && !w.o.dryRun {
				bound += time.Duration(float64(len(gone)+len(e.calls)+w.o.burst+1) / w.o.rate * float64(time.Second))
			}
			if now > bound {
				w.violateLocked("6d: PU %s of a pod gone (since %v), triggered at %v, is still tracked (%s) past %v",
					st.PUID, w.uidGoneAt[st.PUID], at, st.State, bound)
				return
			}
		}
		base := max(w.uidGoneAt[st.PUID], st.TrackedAt.Sub(w.t0), w.lastFault, e.lifecycle)
		if w.o.inventory {
			base = max(base, e.startedAt+w.o.listTimeout()+time.Second)
		}
		bound := base + w.o.interval + w.o.retryMax + 3*time.Second
		if w.o.rate > 0 && !w.o.dryRun {
			k := len(gone) + w.o.burst + 1
			for _, c := range e.calls {
				if c >= base {
					k++
				}
			}
			bound += time.Duration(float64(k) / w.o.rate * float64(time.Second))
		}
		if now > bound {
			w.violateLocked("6: PU %s of a pod gone (since %v) is still tracked (%s, last verdict %v, error %v) past its bound %v",
				st.PUID, w.uidGoneAt[st.PUID], st.State, st.LastVerdict, st.LastErr, bound)
			return
		}
	}
}

// advance moves time on by d, a second at most at a time, checking.
// inventoryListedLocked is invariant 10's InventoryListed: once it says the engine knows every PU its Inventory holds,
// each PU the list that went in gave is tracked (sts), or was removed by the engine or the user since, or has an
// Observer call under way (its removal being told); a PU of it may also be one removed before, that the list's
// window or the dry run's memory keeps out.
func (w *pmWorld) inventoryListedLocked(e *pmEngine, listed bool, sts []deletion.PUStatus) {
	if !w.o.inventory || !listed || e.answer == nil || e.dead {
		return
	}
	for _, n := range e.obsIn {
		if n > 0 {
			return // an event being told: a removal may be on its way to the Observer
		}
	}
	for _, puid := range e.answer {
		_, resolved := e.resolved[puid]
		if !resolved && !e.untracked[puid] && !slices.ContainsFunc(sts, func(st deletion.PUStatus) bool { return st.PUID == puid }) {
			w.violateLocked("10: InventoryListed says every PU of the Inventory is known, yet %s, which its list gave, is not tracked (Start's context done: %v)",
				puid, e.stopAt > 0)
			e.answer = nil // once
			return
		}
	}
}

func (w *pmWorld) advance(d time.Duration) {
	for d > 0 && !w.failed() {
		s := min(d, time.Second)
		time.Sleep(s)
		synctest.Wait()
		w.checkTimed()
		d -= s
	}
}

// apply carries out op.
func (w *pmWorld) apply(t *testing.T, op pmOp) string {
	e := w.cur
	slot := op.slot()
	key := pmKey(slot)
	w.mu.Lock()
	w.ops++
	p := &w.pods[slot]
	now := w.now()
	gonePod := func() {
		if p.exists {
			w.uidGoneAt[p.uid], w.uidGoneOp[p.uid] = now, w.ops
			if p.sandbox != "" {
				w.dead[p.sandbox] = true
			}
		}
	}
	var note string
	switch op.kind {
	case pmTrack:
		pu := ports.PU{PUID: p.uid, Pod: key, SandboxID: p.sandbox}
		if !p.exists || op.b/2%4 == 3 {
			pu.PUID = w.id("u-stale")
		}
		switch op.a / 4 % 3 {
		case 1:
			pu.SandboxID = ""
		case 2:
			pu.SandboxID = w.id("s-old")
			w.dead[pu.SandboxID] = true
		}
		w.mu.Unlock()
		note = fmt.Sprintf("%s, sandbox %q", pu.PUID, pu.SandboxID)
		if op.async() {
			w.goAsync("Track("+pu.PUID+")", func() { w.userTrack(e, pu) })
		} else {
			w.userTrack(e, pu)
		}
		return note
	case pmUntrack:
		w.mu.Unlock()
		var mine []string
		for _, st := range e.c.Status() {
			if st.Pod == key {
				mine = append(mine, st.PUID)
			}
		}
		w.mu.Lock()
		puid := w.id("never-tracked-")
		if len(mine) > 0 {
			puid = mine[op.a/4%len(mine)]
		}
		w.mu.Unlock()
		if op.async() {
			w.goAsync("Untrack("+puid+")", func() { w.userUntrack(e, puid) })
		} else {
			w.userUntrack(e, puid)
		}
		return puid
	case pmTrigger:
		e.triggered[slot] = pmTriggered{at: now, op: w.ops, told: maps.Clone(e.toldTracked)}
		w.mu.Unlock()
		e.c.TriggerPod(key)
		return ""
	case pmTriggerAll:
		for i := range pmSlots {
			e.triggered[i] = pmTriggered{at: now, op: w.ops, told: maps.Clone(e.toldTracked)}
		}
		w.mu.Unlock()
		e.c.TriggerAll()
		return ""
	case pmSweep:
		w.mu.Unlock()
		if op.async() {
			w.goAsync("Sweep", func() { w.sweep(e, op.sweepLimit(), op.sweepCut()) })
		} else {
			w.sweep(e, op.sweepLimit(), op.sweepCut())
		}
		return ""
	case pmStart:
		w.mu.Unlock()
		w.start(e)
		return ""
	case pmStop:
		w.mu.Unlock()
		w.stop(e)
		return ""
	case pmRestart:
		e.dead, e.deadAt, e.lifecycle = true, now, now
		w.failedFor = [pmSlots]bool{} // what the dead engine's checks met is told to no one
		if e.running {
			e.running, e.stopAt, e.logLinesAtStop = false, now, w.logLines-w.logSleeping
		}
		w.mu.Unlock()
		if e.cancel != nil {
			e.cancel()
		}
		e.ctxCancel()
		w.cur = w.newEngine(t)
		if op.a%2 == 0 {
			w.start(w.cur)
		}
		return fmt.Sprintf("engine #%d", w.cur.id)
	case pmDelete:
		gonePod()
		*p = pmPod{}
	case pmRecreate, pmMove:
		gonePod()
		node, noSandbox := pmNode, op.a/4%3 == 2
		if op.kind == pmMove {
			node, noSandbox = []string{"node-b", ""}[op.a/4%2], op.a/8%3 == 2
		}
		*p = pmPod{exists: true, uid: w.id("u"), node: node}
		if !noSandbox {
			p.sandbox = w.id("s")
		}
		note = fmt.Sprintf("%s on %q in %q", p.uid, p.node, p.sandbox)
	case pmChangeSandbox:
		if p.exists {
			if p.sandbox != "" {
				w.dead[p.sandbox] = true
			}
			p.sandbox = ""
			if op.a/4%3 != 2 {
				p.sandbox = w.id("s")
			}
			note = fmt.Sprintf("%s in %q", p.uid, p.sandbox)
		}
	case pmKillSandbox:
		if p.exists && p.sandbox != "" {
			w.dead[p.sandbox] = true
			note = p.sandbox + " dead"
			p.sandbox = ""
		}
	case pmAdvance:
		w.mu.Unlock()
		w.advance(pmAdvances[op.a%len(pmAdvances)])
		return ""
	case pmFaultOp:
		port, kind, count, dur := op.fault()
		switch {
		case kind == pmLagNotFound && (port != pmPortGet || !w.o.confirmer),
			kind == pmPermanent && port != pmPortDestroy,
			kind == pmTypedNil && pmSkipped("typednil"),
			(kind == pmNilPod || kind == pmOtherPod) && port != pmPortGet && port != pmPortConfirm:
			kind = pmFail
		}
		w.faults[port][slot] = pmFault{kind: kind, left: count, dur: dur}
		w.lastFault = now
		note = pmKindNames[kind]
	case pmListFault:
		kind, count, dur := op.listFault()
		if kind == pmTypedNil && pmSkipped("typednil") {
			kind = pmFail
		}
		if kind < 0 {
			w.listFault = pmFault{}
		} else {
			w.listFault = pmFault{kind: kind, left: count, dur: dur}
		}
		w.lastFault = now
	case pmSlowObserver:
		w.lastFault = now
		if kind, dur, ok := op.observerFault(); ok && op.listEvents() {
			w.obsListFault = pmFault{kind: kind, left: 1, dur: dur}
			break
		} else if ok {
			w.obsFault[op.slot()] = pmFault{kind: kind, left: 1, dur: dur}
			break
		}
		if op.slowLogger() {
			w.slowLog = op.a%2 == 1
			if !w.slowLog {
				w.lastSlowEnd = now
			}
			break
		}
		w.slowObs = op.a%2 == 1
		if !w.slowObs {
			w.lastSlowEnd = now
		}
	case pmSeed:
		n, s := []int{4, 16, 40}[op.a%3], op.b%pmSlots
		for range n {
			sb := w.id("s-seed")
			w.dead[sb] = true
			pu := ports.PU{PUID: w.id("u-seed"), Pod: pmKey(s), SandboxID: sb}
			w.addToSetLocked(pu)
			if w.o.journal { // an earlier run's
				w.journal.Add(pu)
			}
		}
	case pmTrackMany:
		n := []int{4, 16}[op.b%2]
		var pus []ports.PU
		for range n {
			pus = append(pus, ports.PU{PUID: w.id("u-stale"), Pod: key})
		}
		w.mu.Unlock()
		for _, pu := range pus {
			w.userTrack(e, pu)
		}
		return ""
	case pmJoin:
		w.mu.Unlock()
		for i := 0; i < 60 && len(w.asyncLeft()) > 0 && !w.failed(); i++ {
			w.advance(time.Second)
		}
		return ""
	}
	w.mu.Unlock()
	return note
}

// abort ends every goroutine of the bubble, then fails with the trace.
func (w *pmWorld) abort(t *testing.T, why string) {
	w.mu.Lock()
	for _, e := range w.engines {
		e.dead = true
	}
	w.slowObs, w.slowLog = false, false
	w.obsFault, w.obsListFault = [pmSlots]pmFault{}, pmFault{}
	w.faults = [pmPodPorts][pmSlots]pmFault{}
	w.listFault = pmFault{}
	msg := fmt.Sprintf("%s\nmode: %s\n%s\noperations:\n  %s", why, w.o, strings.Join(w.violations, "\n"), strings.Join(w.trace, "\n  "))
	w.mu.Unlock()
	for _, e := range w.engines {
		if e.cancel != nil {
			e.cancel()
		}
		e.ctxCancel()
	}
	for range 300 {
		time.Sleep(time.Second)
		synctest.Wait()
	}
	t.Fatal(msg)
}

func runPromises(t *testing.T, mode uint16, data []byte) {
	w := &pmWorld{o: pmDecodeMode(mode), t0: time.Now(), lastLogEnd: -1, failedAt: [pmSlots]time.Duration{-1, -1, -1, -1},
		stuckAt: [pmSlots]time.Duration{-1, -1, -1, -1}, uidGoneAt: map[string]time.Duration{}, uidGoneOp: map[string]int{}, replacedAt: map[string]time.Duration{}, dead: map[string]bool{},
		journal: deletiontest.NewInventory(),
		set:     map[string]pmPU{}, lastFault: -1, lastSlowEnd: -1}
	for slot := range w.pods { // every pod runs at first, none tracked
		w.pods[slot] = pmPod{exists: true, uid: w.id("u"), node: pmNode, sandbox: w.id("s")}
	}
	w.cur = w.newEngine(t)
	if w.o.autoStart {
		w.start(w.cur)
	}
	for _, op := range pmDecode(data) {
		at := w.now()
		note := w.apply(t, op)
		synctest.Wait()
		w.checkTimed()
		line := fmt.Sprintf("%v: %s", at, op)
		if note != "" {
			line += ": " + note
		}
		w.trace = append(w.trace, line)
		if w.failed() {
			w.abort(t, "a promise is broken")
			return
		}
	}
	// The end: no fault any more; every goroutine returns, the PUs of
	// gone pods go (6a runs meanwhile), and Start stops in time.
	w.mu.Lock()
	w.faults = [pmPodPorts][pmSlots]pmFault{}
	w.listFault, w.slowObs, w.slowLog, w.lastFault = pmFault{}, false, false, w.now()
	w.obsFault, w.obsListFault = [pmSlots]pmFault{}, pmFault{}
	w.trace = append(w.trace, fmt.Sprintf("%v: end: faults cleared", w.now()))
	w.mu.Unlock()
	for i := 0; i < 900 && len(w.asyncLeft()) > 0 && !w.failed(); i++ {
		w.advance(time.Second)
	}
	if left := w.asyncLeft(); len(left) > 0 && !w.failed() {
		w.violate("9: never returned: %s", strings.Join(left, ", "))
	}
	w.advance(w.o.interval + w.o.retryMax + 5*time.Second)
	w.stop(w.cur)
	w.advance(3 * time.Second)
	if w.failed() {
		w.abort(t, "a promise is broken")
		return
	}
	if os.Getenv("PM_TRACE") != "" { // the operations of a run that held, to see what a seed reaches
		t.Logf("operations:\n  %s", strings.Join(w.trace, "\n  "))
	}
	for _, e := range w.engines {
		if e.cancel != nil {
			e.cancel()
		}
		e.ctxCancel()
	}
	w.mu.Lock()
	for _, e := range w.engines {
		e.dead = true
	}
	w.mu.Unlock()
	time.Sleep(time.Minute) // the hangs left behind end
}

// FuzzPromises checks the promises above on sequences of operations (see
// the top of this file); go test -fuzz '^FuzzPromises$' ./deletion/.
func FuzzPromises(f *testing.F) {
	op := func(kind, a, b int) []byte { return []byte{byte(kind), byte(a), byte(b)} }
	cat := func(ops ...[]byte) []byte { return slices.Concat(ops...) }
	// A sandbox replaced: the Requeuer, the agent's controller, tracks the new sandbox's PU at once, under the same
	// PUID, while the check that destroyed the old one is under way.
	f.Add(uint16(pmModeSandbox), cat(op(pmTrack, 0, 0), op(pmChangeSandbox, 0, 0), op(pmSweep, 0, 0), op(pmSweep, 0, 0)))
	// A Requeuer that nobody reads: three sandboxes replaced, each pod requeued into a channel that is never read,
	// and a pod deleted: its PU is destroyed in time all the same (invariant 6), for no worker waits on the Requeuer.
	f.Add(uint16(pmModeSandbox|pmModeAutoStart|pmModeLongCheck|pmModeUnread), cat(op(pmTrack, 0, 0), op(pmTrack, 1, 0),
		op(pmTrack, 2, 0), op(pmTrack, 3, 0), op(pmChangeSandbox, 0, 0), op(pmChangeSandbox, 1, 0), op(pmChangeSandbox, 2, 0),
		op(pmDelete, 3, 0), op(pmAdvance, 8, 0), op(pmAdvance, 8, 0), op(pmSweep, 0, 0), op(pmAdvance, 9, 0)))
	// Every list of the Inventory hangs, ignoring its context: each is left behind and another follows (invariant 12).
	f.Add(uint16(pmModeInventory|pmModeAutoStart|1<<9), cat(op(pmTrack, 0, 0), op(pmListFault, 1, 15), op(pmRestart, 0, 0),
		op(pmDelete, 0, 0), op(pmAdvance, 11, 0), op(pmListFault, 5, 0), op(pmAdvance, 11, 0)))
	// A PU untracked while its EventChecked is slow to be told, and tracked again meanwhile: the journal hears
	// EventUntracked before the new EventTracked (invariant 11).
	f.Add(uint16(0), cat(op(pmTrack, 0, 0), op(pmSlowObserver, 1, 0), op(pmSweep, 0, 1), op(pmUntrack, 0, 1),
		op(pmTrack, 0, 1), op(pmJoin, 0, 0)))
	// The Inventory is a journal. The previous run journaled pod-0's PU with its sandbox; the sandbox is replaced
	// while the agent is down; the new run's informer tracks the PU bare before Start, whose first list fails; a
	// trigger checks the PU before the retry and records the new sandbox. The journal must not hear it before the
	// list is in: the old sandbox's PU is destroyed as changed (invariant 6c).
	f.Add(uint16(pmModeInventory|pmModeStaleList|pmModeDryRunner|pmModeSandbox), cat(op(pmTrack, 0, 0), op(pmRestart, 1, 0),
		op(pmChangeSandbox, 0, 0), op(pmTrack, 4, 0), op(pmListFault, 0, 0), op(pmStart, 0, 0), op(pmTrigger, 0, 0),
		op(pmAdvance, 8, 0), op(pmAdvance, 8, 0), op(pmAdvance, 9, 0)))
	// The same journal; the new run's informer tracks the PU bare, and a Sweep checks it before Start: the sandbox
	// it records must not take the journal's place of the one from before (invariant 6c).
	f.Add(uint16(pmModeInventory|pmModeStaleList|pmModeDryRunner|pmModeSandbox), cat(op(pmTrack, 0, 0), op(pmRestart, 1, 0),
		op(pmChangeSandbox, 0, 0), op(pmTrack, 4, 0), op(pmSweep, 0, 0), op(pmStart, 0, 0), op(pmAdvance, 8, 0),
		op(pmAdvance, 8, 0), op(pmAdvance, 9, 0)))
	// A Logger that takes 4s per line (V(1) on) while Start runs checks of a live pod: a check writing its line is
	// in no port, and LivenessCheck holds (invariant 8).
	f.Add(uint16(0), cat(op(pmTrack, 0, 0), op(pmSlowObserver, 1, 30), op(pmStart, 0, 0), op(pmTrigger, 0, 0),
		op(pmAdvance, 1, 0), op(pmAdvance, 1, 0), op(pmAdvance, 1, 0), op(pmAdvance, 1, 0), op(pmAdvance, 1, 0),
		op(pmAdvance, 3, 0), op(pmAdvance, 3, 0), op(pmAdvance, 3, 0), op(pmAdvance, 3, 0), op(pmAdvance, 3, 0)))
	// GetPod answers typed nils of every kind in turn, a Kubernetes status error whose status changes between two
	// readings among them (the 26th): the live pod's PU is never destroyed on it (invariant 3).
	f.Add(uint16(0), cat(op(pmTrack, 0, 0),
		op(pmFaultOp, 4*pmPortGet, 27), op(pmSweep, 0, 0), op(pmSweep, 0, 0), op(pmSweep, 0, 0), op(pmSweep, 0, 0),
		op(pmSweep, 0, 0), op(pmSweep, 0, 0), op(pmSweep, 0, 0), op(pmSweep, 0, 0),
		op(pmFaultOp, 4*pmPortGet, 27), op(pmSweep, 0, 0), op(pmSweep, 0, 0), op(pmSweep, 0, 0), op(pmSweep, 0, 0),
		op(pmSweep, 0, 0), op(pmSweep, 0, 0), op(pmSweep, 0, 0), op(pmSweep, 0, 0),
		op(pmFaultOp, 4*pmPortGet, 27), op(pmSweep, 0, 0), op(pmSweep, 0, 0), op(pmSweep, 0, 0), op(pmSweep, 0, 0),
		op(pmSweep, 0, 0), op(pmSweep, 0, 0), op(pmSweep, 0, 0), op(pmSweep, 0, 0),
		op(pmFaultOp, 4*pmPortGet, 27), op(pmSweep, 0, 0), op(pmSweep, 0, 0), op(pmSweep, 0, 0), op(pmSweep, 0, 0),
		op(pmSweep, 0, 0), op(pmSweep, 0, 0), op(pmSweep, 0, 0), op(pmSweep, 0, 0)))
	// The engine's Logger takes 4s per line (V(1) on). A cache that lags says pod-0 is gone, the Confirmer vetoes
	// the destroy, and its log line is being written when the agent untracks the PU: the Observer hears the veto
	// before EventUntracked (invariant 11).
	f.Add(uint16(pmModeConfirmer), cat(op(pmTrack, 0, 0), op(pmFaultOp, 4*pmPortGet, pmLagNotFound),
		op(pmSlowObserver, 1, 30), op(pmSweep, 0, 1), op(pmAdvance, 2, 0), op(pmUntrack, 0, 0), op(pmJoin, 0, 0)))
	// The same Logger writes "PU destroyed" past the check's deadline: no port was late, and EventChecked's Err does
	// not say one was (invariant 10).
	f.Add(uint16(0), cat(op(pmTrack, 0, 0), op(pmDelete, 0, 0), op(pmSlowObserver, 1, 30), op(pmSweep, 0, 0)))
	// The Observer hangs for 20s on an EventTracked of the first list's answer, whose PUs every check waits for:
	// LivenessCheck fails after three SweepIntervals (invariant 8).
	f.Add(uint16(pmModeInventory), cat(op(pmSeed, 0, 0), op(pmSlowObserver, 0, 39), op(pmStart, 0, 0), op(pmAdvance, 7, 0),
		op(pmAdvance, 7, 0), op(pmJoin, 0, 0)))
	// The Observer hangs for 20s on the first list's EventListFailed, or on its EventRestored: the checks go on, no
	// list is retried meanwhile, and LivenessCheck fails after three SweepIntervals (invariant 8).
	f.Add(uint16(pmModeInventory), cat(op(pmTrack, 0, 0), op(pmDelete, 0, 0), op(pmListFault, 0, 0), op(pmSlowObserver, 4, 39),
		op(pmStart, 0, 0), op(pmAdvance, 7, 0), op(pmAdvance, 7, 0), op(pmJoin, 0, 0)))
	f.Add(uint16(pmModeInventory), cat(op(pmTrack, 0, 0), op(pmDelete, 0, 0), op(pmSlowObserver, 4, 39),
		op(pmStart, 0, 0), op(pmAdvance, 7, 0), op(pmAdvance, 7, 0), op(pmJoin, 0, 0)))
	// A pod goes while Start runs.
	f.Add(uint16(pmModeAutoStart|1<<9), cat(op(pmTrack, 0, 0), op(pmDelete, 0, 0), op(pmAdvance, 7, 0), op(pmSweep, 0, 0)))
	// Two pods go; Sweeps without Start, with a failed destroy and a hang.
	f.Add(uint16(pmModeWorkers2), cat(op(pmTrack, 0, 0), op(pmTrack, 1, 0), op(pmDelete, 0, 0), op(pmRecreate, 1, 0),
		op(pmFaultOp, 4*pmPortDestroy, 8), op(pmSweep, 0, 0), op(pmAdvance, 4, 0), op(pmFaultOp, 1, 1+32), op(pmSweep, 0, 1),
		op(pmAdvance, 6, 0), op(pmJoin, 0, 0), op(pmSweep, 0, 0)))
	// Sandboxes change under a dry run, Start running.
	f.Add(uint16(pmModeDryRun|pmModeSandbox|pmModeAutoStart|1<<9), cat(op(pmTrack, 0, 0), op(pmTrack, 1, 0),
		op(pmChangeSandbox, 0, 0), op(pmAdvance, 6, 0), op(pmKillSandbox, 1, 0), op(pmAdvance, 7, 0), op(pmDelete, 0, 0),
		op(pmTrigger, 0, 0), op(pmAdvance, 7, 0)))
	// A restart with an Inventory and a Confirmer; a lagging cache.
	f.Add(uint16(pmModeInventory|pmModeConfirmer|pmModeAutoStart|2<<9), cat(op(pmTrack, 0, 0), op(pmTrack, 2, 0),
		op(pmFaultOp, 2, 6), op(pmTrigger, 2, 0), op(pmDelete, 2, 0), op(pmRestart, 0, 0), op(pmAdvance, 9, 0),
		op(pmUntrack, 0, 0), op(pmAdvance, 8, 0)))
	// Two pods go and are triggered before Start; a Sweep without Start, its one worker held by a hang of pod-0's
	// read, is cut after a second: the triggers stand, and Start checks both as it begins (invariant 6d).
	f.Add(uint16(2<<9), cat(op(pmTrack, 0, 0), op(pmTrack, 1, 0), op(pmDelete, 0, 0), op(pmDelete, 1, 0), op(pmTrigger, 0, 0),
		op(pmTrigger, 1, 0), op(pmFaultOp, 4*pmPortGet, 1), op(pmSweep, 0, 2), op(pmStart, 0, 0), op(pmAdvance, 3, 0),
		op(pmAdvance, 5, 0), op(pmAdvance, 6, 0), op(pmAdvance, 8, 0)))
	// A Sweep without Start, its one worker held by a hang of pod-0's read, is cut after a second: what it queued
	// waits as before. A minute later TriggerAll queues both PUs: they have waited since then, not since the cut Sweep
	// (invariant 8f).
	f.Add(uint16(2<<9), cat(op(pmTrack, 0, 0), op(pmTrack, 1, 0), op(pmFaultOp, 4*pmPortGet, 1+32), op(pmSweep, 0, 2),
		op(pmAdvance, 11, 0), op(pmAdvance, 1, 0), op(pmTriggerAll, 0, 0), op(pmAdvance, 1, 0), op(pmAdvance, 1, 0)))
	// A destroy rate of 1/s, two workers: a goes at once; b, its pod read NotFound from a lagging cache, and c wait in
	// line; at b's turn its pod is alive, and the turn goes to c, whose read hangs half a second; d, gone meanwhile
	// and triggered, waits behind c all the same (invariant 10's order).
	f.Add(uint16(pmModeRate|pmModeAutoStart|pmModeWorkers2|2<<9), cat(op(pmTrack, 0, 0), op(pmTrack, 1, 0), op(pmTrack, 2, 0),
		op(pmTrack, 3, 0), op(pmFaultOp, 1, 6), op(pmDelete, 0, 0), op(pmDelete, 2, 0), op(pmTrigger, 0, 0),
		op(pmTrigger, 1, 0), op(pmTrigger, 2, 0), op(pmAdvance, 1, 0), op(pmFaultOp, 2, 1+3*32), op(pmAdvance, 2, 0),
		op(pmAdvance, 2, 0), op(pmDelete, 3, 0), op(pmTrigger, 3, 0), op(pmAdvance, 3, 0), op(pmAdvance, 4, 0), op(pmAdvance, 6, 0)))
	// A destroy rate, four pods gone, Start stopped and a Sweep.
	f.Add(uint16(pmModeRate|pmModeAutoStart|pmModeWorkers2|1<<9), cat(op(pmTrack, 0, 0), op(pmTrack, 1, 0), op(pmTrack, 2, 0),
		op(pmTrack, 3, 0), op(pmDelete, 0, 0), op(pmDelete, 1, 0), op(pmMove, 2, 0), op(pmRecreate, 3, 0),
		op(pmAdvance, 8, 0), op(pmStop, 0, 0), op(pmTrack, 1, 0), op(pmSweep, 0, 0)))
	// Port faults and a slow Observer while Start runs.
	f.Add(uint16(pmModeSandbox|pmModeAutoStart|pmModeLongCheck|1<<9), cat(op(pmTrack, 0, 4), op(pmSlowObserver, 1, 0),
		op(pmFaultOp, 4*pmPortSandbox, 0), op(pmFaultOp, 1, 2), op(pmTriggerAll, 0, 0), op(pmAdvance, 5, 0),
		op(pmSlowObserver, 0, 0), op(pmTrackMany, 3, 0), op(pmAdvance, 8, 0)))
	// The Inventory's list hangs past Start's stop and answers after Start returned: nothing of it is told (invariant
	// 10); then the Observer hangs, and panics, on one pod's events while the other's PU goes (invariants 9, 11).
	f.Add(uint16(pmModeInventory|pmModeWorkers2|pmModeLongCheck|1<<9), cat(op(pmSeed, 0, 1), op(pmTrack, 0, 0), op(pmListFault, 1, 8),
		op(pmStart, 0, 0), op(pmAdvance, 2, 0), op(pmStop, 0, 0), op(pmAdvance, 6, 0), op(pmAdvance, 6, 0),
		op(pmStart, 0, 0), op(pmRestart, 0, 0), op(pmTrack, 1, 0), op(pmSlowObserver, 0, 7+16), op(pmSlowObserver, 1, 7+8),
		op(pmDelete, 1, 0), op(pmDelete, 0, 0), op(pmTrigger, 0, 0), op(pmTrigger, 1, 0), op(pmAdvance, 7, 0),
		op(pmSweep, 0, 0), op(pmAdvance, 9, 0)))
	// Start stops while the Inventory's answer goes in, each EventTracked slow: the rest of it is left for the next
	// run, and InventoryListed says the engine does not know them (invariant 10).
	f.Add(uint16(pmModeInventory), cat(op(pmSeed, 0, 0), op(pmSlowObserver, 1, 0), op(pmStart, 0, 0), op(pmAdvance, 1, 0),
		op(pmStop, 0, 0), op(pmAdvance, 4, 0)))
	// A sandbox replaced while the agent was down; the informer tracks its PU without a sandbox, and the Inventory's
	// list, failing twice, answers while the Observer hangs 5s on the EventAdopted of the first check, which recorded
	// the runtime's sandbox: the sandbox listed is the PU's all the same, and it is destroyed as changed (6c).
	f.Add(uint16(pmModeSandbox|pmModeInventory), cat(op(pmTrack, 0, 0), op(pmChangeSandbox, 0, 0), op(pmListFault, 0, 1),
		op(pmRestart, 1, 0), op(pmTrack, 4, 0), op(pmSlowObserver, 0, 7+16), op(pmStart, 0, 0), op(pmAdvance, 9, 0),
		op(pmAdvance, 9, 0)))
	// An Inventory that fails, then answers; PUs of an earlier run.
	f.Add(uint16(pmModeInventory|pmModeWorkers2), cat(op(pmSeed, 0, 1), op(pmListFault, 0, 1), op(pmStart, 0, 0),
		op(pmAdvance, 6, 0), op(pmTrack, 1, 1), op(pmAdvance, 8, 0)))
	// A pod goes while the lists of a stale Inventory fail; the list that answers at last still has its PU.
	f.Add(uint16(pmModeInventory|pmModeStaleList|pmModeWorkers2), cat(op(pmTrack, 0, 0), op(pmListFault, 0, 1),
		op(pmDelete, 0, 0), op(pmStart, 0, 0), op(pmAdvance, 6, 0), op(pmAdvance, 9, 0), op(pmAdvance, 9, 0)))
	// A Sweep's check hangs 500ms in Start's one worker; a PU tracked after the Sweep began, its pod gone, is triggered
	// behind it; Start stops: the Sweep's goroutines check only the Sweep's own, not Start's (invariant 10).
	f.Add(uint16(pmModeAutoStart|3<<9), cat(op(pmTrack, 0, 0), op(pmFaultOp, 4*pmPortGet, pmHang+3*32), op(pmSweep, 0, 1),
		op(pmAdvance, 1, 0), op(pmTrack, 1, 0), op(pmDelete, 1, 0), op(pmTrigger, 1, 0), op(pmAdvance, 1, 0),
		op(pmStop, 0, 0), op(pmAdvance, 6, 0), op(pmJoin, 0, 0)))
	// GetPod of a live pod fails, again and again, with errors that cannot be read; the 17th's cause becomes a typed nil
	// whose Is says not found once it has been read twice: the engine reads what an error means once, and keeps the PU.
	lateNil := [][]byte{op(pmTrack, 0, 0)}
	for range 3 {
		lateNil = append(lateNil, op(pmFaultOp, 4*pmPortGet, pmTypedNil+3*8))
		for range 8 {
			lateNil = append(lateNil, op(pmSweep, 0, 0))
		}
	}
	f.Add(uint16(0), cat(lateNil...))
	// The same, 5 times 8: the 35th answer is errors.Join(f, f), whose f's cause is a failure when read once and the
	// not-found error when read again: the engine reads f once, and keeps the PU.
	flip := [][]byte{op(pmTrack, 0, 0)}
	for range 5 {
		flip = append(flip, op(pmFaultOp, 4*pmPortGet, pmTypedNil+3*8))
		for range 8 {
			flip = append(flip, op(pmSweep, 0, 0))
		}
	}
	f.Add(uint16(0), cat(flip...))
	// Ports that panic, again and again, with every kind of value: an error that wraps itself overflows the stack of
	// whatever prints it without a bound, which no recover catches (the whole run dies).
	panics := [][]byte{op(pmTrack, 0, 0), op(pmFaultOp, 4*pmPortGet, pmPanic+3*8)}
	for range 6 {
		panics = append(panics, op(pmSweep, 0, 0))
	}
	panics = append(panics, op(pmDelete, 0, 0), op(pmFaultOp, 4*pmPortDestroy, pmPanic+3*8))
	for range 6 {
		panics = append(panics, op(pmSweep, 0, 0))
	}
	f.Add(uint16(0), cat(panics...))
	// A dry run's DryRunner fails, says it would destroy, fails again, and so on, for a PU whose sandbox was replaced
	// (its pod lives): a real run would have destroyed it at its first success; the dry run keeps it, its failures
	// counted from its last "would destroy" (invariant 10).
	flaky := [][]byte{op(pmTrack, 0, 0), op(pmChangeSandbox, 0, 0)}
	for range pmMaxAttempts + 1 {
		flaky = append(flaky, op(pmFaultOp, 4*pmPortDestroy, pmFail), op(pmSweep, 0, 0), op(pmSweep, 0, 0))
	}
	f.Add(uint16(pmModeDryRun|pmModeDryRunner|pmModeSandbox), cat(flaky...))
	// A journal's commit of a Track's EventTracked hangs 20 s after Start: LivenessCheck fails after three intervals
	// (invariant 8e).
	f.Add(uint16(pmModeAutoStart), cat(op(pmSlowObserver, 0, 39), op(pmTrack, 0, 1), op(pmAdvance, 7, 0)))
	// A Sweep early for a PU's retry (a minute's backoff), its context ending at each of the engine's Clock readings
	// in turn, a destroy decided and its DestroyPU not called among them; Start follows: the retry stands
	// (invariant 5).
	for n := range 12 {
		f.Add(uint16(pmModeLongRetry), cat(op(pmTrack, 0, 0), op(pmDelete, 0, 0), op(pmFaultOp, 4*pmPortDestroy, pmFail),
			op(pmSweep, 0, 0), op(pmAdvance, 3, 0), op(pmSweep, 3+4*n, 0), op(pmAdvance, 3, 0), op(pmStart, 0, 0), op(pmAdvance, 6, 0)))
	}
	f.Fuzz(func(t *testing.T, mode uint16, data []byte) {
		synctest.Test(t, func(t *testing.T) { runPromises(t, mode, data) })
	})
}

// countLeaving counts the entries of sts whose tracking has ended (deletion.StateLeaving).
func countLeaving(sts []deletion.PUStatus) int {
	n := 0
	for _, st := range sts {
		if st.State == deletion.StateLeaving {
			n++
		}
	}
	return n
}
