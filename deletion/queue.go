package deletion

// A record's life: its states and every move between them, each one method below, under puQueue.mu; no other file sets
// record.state or takes the lock.
//
//	tracking ──announce (its EventTracked told)──▶ idle, or queued for a trigger or a Sweep that came meanwhile
//	idle, retrying, turnWaiting ──queue──▶ queued ──claim──▶ checking
//	queued ──due: a retry not due, queued by a Sweep that is over──▶ retrying
//	checking ──release──▶ idle, retrying or turnWaiting (or queued again for a trigger or a Sweep that came meanwhile)
//	any ──remove (Untrack, a destroy done or given up, a dry run's drop)──▶ removed
//
// The scheduler queues a record at record.next; a trigger or a Sweep queue it too, but a trigger not one waiting for a
// retry. A Sweep's early check leaves a retry where it was, and a check that learns nothing (a port failed) leaves a
// destroy's place in the rate's line.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podsweeper/podsweeper/ports"
)

// puQueue holds every tracked PU's record and the mechanisms that move them, under mu, taken in this file alone.
type puQueue struct {
	mu      sync.Mutex
	records map[string]*record
	byPod   map[types.NamespacedName]*record // the first record of each pod; the others follow it
	waits   [removed + 1]int                 // the records by what they wait for (record.waitFor)

	wheel    wheel                 // schedule.go
	ready    readyQueue            // workers.go
	toldCond sync.Cond             // an event told: the next in its line may be
	untold   map[string]*eventLine // the lines of removed records whose events are being told
	leaving  map[string][]*record  // removed records whose removal's event is not told yet, by PUID: Status lists them
	tracks   map[*record]int64     // the records a Track is telling the Observer of (EventTracked), since when
	// running: Start runs (since startAt) until startDone; stopped: it stops; returned: it returned; begun: its first
	// list is done; listedAt: when that list's answer was in (0: not yet), before which nothing is overdue.
	running, stopped, returned, begun bool
	startDone                         <-chan struct{}
	startAt, listedAt                 int64

	list     listWindow     // restore.go
	unlisted unlistedMemory // restore.go
	rate     rateLine       // rateline.go
	sweep    sweepRun       // sweep.go

	now, realNow        func() int64 // Engine.now, Engine.realNow
	observed, inventory bool
}

// lock takes the engine's lock and returns its release, for a defer: defer c.q.lock()().
func (q *puQueue) lock() (unlock func()) {
	q.mu.Lock()
	return q.mu.Unlock
}

// init makes the queue of an engine with options o.
func (q *puQueue) init(o Options, now, realNow func() int64) {
	q.now, q.realNow, q.observed, q.inventory = now, realNow, o.Observer != nil, o.Inventory != nil
	phases := phasesOf(o.SweepInterval)
	q.wheel.tick, q.wheel.phases = o.SweepInterval/time.Duration(phases), int32(phases)
	q.records, q.byPod = make(map[string]*record), make(map[types.NamespacedName]*record)
	q.untold = make(map[string]*eventLine)
	q.leaving = make(map[string][]*record)
	q.tracks = make(map[*record]int64)
	q.list = listWindow{removing: make(map[string]int)}
	q.ready.slots, q.ready.free = make([]slot, o.Workers), make([]int32, o.Workers)
	for i := range q.ready.slots {
		q.ready.slots[i].index, q.ready.free[i] = int32(i), int32(i)
	}
	if o.DestroyRate > 0 && o.DestroyRate != rate.Inf {
		// Rounded up: a turn early by a nanosecond would break the rate's bound.
		q.rate = newRateLine(max(1, int64(math.Ceil(float64(time.Second)/float64(o.DestroyRate)))), o.DestroyBurst)
		q.rate.stuck = q.stuckInLine
	}
	q.ready.cond.L, q.toldCond.L = &q.mu, &q.mu
}

// state is where a record is in its life (see the top of this file).
type state uint8

const (
	idle        state = iota // tracked; checked at its periodic time, or sooner
	queued                   // in the ready queue
	checking                 // held by a check; no other can claim it
	retrying                 // a destroy failed; retried at record.waitUntil
	turnWaiting              // its destroy waits for a turn until about record.waitUntil
	tracking                 // new: the Observer is being told of its EventTracked; no check claims it yet
	removed                  // no longer tracked
)

var stateNames = [...]string{idle: "idle", queued: "queued", checking: "checking",
	retrying: "waiting for a retry", turnWaiting: "waiting for its turn", tracking: "tracking", removed: "removed"}

func (s state) String() string { return stateNames[s] }

// cause is what asks for a check: the scheduler, a trigger, or a Sweep.
type cause uint8

const (
	byTime cause = iota
	byTrigger
	bySweep
)

// sweepMark is where a record is in the Sweep of record.sweepGen: that Sweep waits for no check of it (notSwept), for
// its next check to begin and end (sweepNext), for the check that holds it now (sweepThis), or for the check at its
// destroy's turn (sweepTurn).
type sweepMark uint8

const (
	notSwept sweepMark = iota
	sweepNext
	sweepThis
	sweepTurn
)

// record is the engine's record of one tracked PU, under puQueue.mu. Times are nanoseconds on Options.Clock since the
// epoch, plus one (Engine.now): 0 is never.
type record struct {
	ports.PU

	nextOfPod *record // the next record of the same pod (puQueue.byPod)
	lastErr   error   // of the last check, if it failed

	trackedAt, lastChecked int64
	next                   int64 // when the scheduler queues it; heapIndex: its place on the wheel (-1: none)
	heapIndex, phase       int32
	waitUntil              int64 // when the retry or the turn of waitFor comes
	goneSince              int64 // when a check first decided to destroy it since it was last seen alive; 0: none

	attempts int32  // failed DestroyPU calls in a row (MaxDestroyAttempts)
	calls    int32  // DestroyPU calls (Event.DestroyCalls)
	sweepGen uint32 // the Sweep that sweep refers to
	trackedT uint32 // the ticket of its EventTracked

	state   state
	waitFor state // retrying or turnWaiting, while waitUntil is set; else idle
	sweep   sweepMark
	again   bool // a trigger or a Sweep came during its check
	// sweepOnly: queued for a Sweep alone, whose end un-queues it while Start does not run; a trigger or a time that
	// queues it too (or finds it queued) makes it wanted beyond the Sweep. againWanted: so did a trigger that came
	// during its check, or one its check was cut short for.
	sweepOnly, againWanted bool
	readySeq               uint64 // the ready queue's entry of its latest queueing (readyItem.seq): others of it are stale
	failing                bool   // a check failed since the last that went well
	// fresh: TriggerPod asked for a fresh check (SandboxConfirmer); checkFresh: the claiming check is one, or a first;
	// checkAsked: it is one TriggerPod asked for.
	fresh, checkFresh, checkAsked bool
	// lastRow: the row last carried out (-1: none), vetoed by a confirmer; lineRow: the row of the destroy it waits for.
	lastRow, lineRow int8
	vetoed           bool
	listed           bool // tracked from the Inventory's list
	adoptedNow       bool // its first check, still running, recorded a sandbox: a list's answer still counts (adoptListed)
	// bare: tracked without a sandbox; one its checks recorded from the runtime gives way to a list's (adoptListed).
	bare bool
	// listedSandbox: the sandbox a list gave it while its first check ran, taken by the check (takeListed) or its
	// release (listedAfterLocked).
	listedSandbox string
	// adopted: the sandbox its last check recorded (row 7), when a list's has replaced it since; else "".
	adopted string
	// reportedRow: the row of the last destroy a dry run reported (0: none); reported: the rows reported (1<<row).
	reportedRow int8
	reported    uint16

	line *eventLine // its PUID's line to the Observer; nil without one
	// leftAt: once removed, how many tickets its line had given, its removal's last; it leaves Status once as many
	// are told.
	leftAt uint32
	// retryHeld: the retry a Sweep's early check took a place in the rate's line ahead of (0: none); the Sweep
	// ending before that turn, the record waits for its retry again.
	retryHeld int64
}

// holdRetryLocked records on r, whose place in the rate's line the running Sweep waits for, the retry due that
// place is ahead of (0: none), for the Sweep's end to give back (endSweepLocked).
func (q *puQueue) holdRetryLocked(r *record, due int64) {
	if r.retryHeld = due; due != 0 {
		q.sweep.held = append(q.sweep.held, r)
	}
}

// heldRetryLocked returns the retry that r's place in the rate's line was taken ahead of (retryHeld), once the Sweep
// that took the place is over (0: none, or that Sweep still runs): the place was that Sweep's alone, and only a Sweep
// tries a PU before its retry. The retry stands, due or not: once due, it takes a place at the back of the line.
func (q *puQueue) heldRetryLocked(r *record) int64 {
	if r.retryHeld != 0 && !q.sweepingLocked(r.sweepGen) {
		return r.retryHeld
	}
	return 0
}

// eventLine orders one PUID's events to the Observer: tickets were given (atomically, by checks without the lock),
// told were told; held counts the checks holding a removed record of it. A PUID tracked again while the record before
// may still tell shares its line (puQueue.untold).
type eventLine struct {
	tickets atomic.Uint32
	told    uint32
	held    int32
}

// take gives the next event of l its ticket; a nil line (no Observer), 0.
func (l *eventLine) take() uint32 {
	if l == nil {
		return 0
	}
	return l.tickets.Add(1) - 1
}

// dropLineLocked forgets the line of a removed record once it has nothing more to tell, and the removed record that
// leaves Status once its removal is told.
func (q *puQueue) dropLineLocked(puid string, l *eventLine) {
	if rs := q.leaving[puid]; rs != nil {
		rs = slices.DeleteFunc(rs, func(r *record) bool { return r.line == l && int32(l.told-r.leftAt) >= 0 })
		if len(rs) == 0 {
			delete(q.leaving, puid)
		} else {
			q.leaving[puid] = rs
		}
	}
	if l.told == l.tickets.Load() && l.held == 0 && q.untold[puid] == l {
		delete(q.untold, puid)
	}
}

// newRecordLocked tracks pu in a new record, tracking until its EventTracked (whose ticket it returns) is told.
func (q *puQueue) newRecordLocked(pu ports.PU, now int64) (*record, uint32) {
	r := &record{PU: pu, trackedAt: now, lastRow: -1, heapIndex: -1, state: tracking, bare: pu.SandboxID == "",
		phase: int32(fnv32a(pu.PUID) % uint32(q.wheel.phases))}
	q.records[pu.PUID] = r // a record of its PUID leaving still is listed beside it until its end is told
	if q.observed {
		if r.line = q.untold[pu.PUID]; r.line != nil {
			delete(q.untold, pu.PUID) // the record before it is still being told of: its events come first
		} else {
			r.line = &eventLine{}
		}
	}
	r.nextOfPod = q.byPod[pu.Pod]
	q.byPod[pu.Pod] = r
	r.trackedT = q.ticketLocked(r)
	return r, r.trackedT
}

// announceLocked makes the tracking r checkable, its EventTracked told (a removed one stays so).
func (q *puQueue) announceLocked(r *record, now int64) {
	if r.state == tracking {
		r.state = idle
		q.resumeLocked(r, now)
	}
}

// resumeLocked makes r, no longer held, checkable: queued at once for a Sweep that waits for it, or for a trigger or a
// Sweep that came while it was held (but a retry keeps its time); else on the wheel.
func (q *puQueue) resumeLocked(r *record, now int64) {
	again, wanted := r.again && !q.stopped && r.waitFor != retrying, r.againWanted
	r.again, r.againWanted = false, false
	if r.sweep == sweepNext && q.sweepingLocked(r.sweepGen) || again {
		if q.queueLocked(r, bySweep, now) && again && wanted {
			r.sweepOnly = false
		}
		q.wakeLocked(1)
	} else {
		q.wheel.schedule(r, now)
	}
}

// ticketLocked gives the next event of r its ticket in r's line; with no Observer, 0.
func (q *puQueue) ticketLocked(r *record) uint32 {
	if !q.observed {
		return 0
	}
	t := r.line.take()
	if r.state == removed && q.records[r.PUID] == nil {
		q.untold[r.PUID] = r.line // a Track of its PUID meanwhile tells after it
	}
	return t
}

// tell tells the Observer ev, of ticket t in its PU's line l (nil: no Observer), once every event before it in the line
// has been told: the events of one PU reach the Observer one at a time and in order.
func (c *Engine) tell(l *eventLine, t uint32, ev Event) {
	if l == nil {
		return
	}
	c.q.mu.Lock()
	for int32(t-l.told) > 0 {
		c.q.toldCond.Wait()
	}
	c.q.mu.Unlock()
	err := c.observe(ev)
	c.q.mu.Lock()
	l.told++
	c.q.dropLineLocked(ev.PU.PUID, l)
	c.q.toldCond.Broadcast()
	c.q.mu.Unlock()
	c.observerPanicked(ev, err) // once it counts as told: the Logger and the Clock are the user's too
}

// observe tells the Observer ev, and returns the panic in it, if any, whatever its value (observerPanicked).
func (c *Engine) observe(ev Event) error {
	if c.opts.Observer == nil {
		return nil
	}
	if r, _, panicked := catch(func() { c.opts.Observer.Observe(ev) }); panicked {
		return fmt.Errorf("%w: Observer: %s", ErrPortPanicked, ports.Sprint(r))
	}
	return nil
}

// observerPanicked logs err, a panic of the Observer told ev, if any, and sums it up as a port's failure.
func (c *Engine) observerPanicked(ev Event, err error) {
	if err != nil {
		c.log.V(1).Info("observer panicked", "event", ev.Kind.String(), "error", err.Error())
		c.fails.add(portObserver, ev.PU.PUID, err, c.opts.Clock.Now())
	}
}

// setWaitLocked makes r wait for f (retrying, turnWaiting, or idle: nothing) until until, counting the waits.
func (q *puQueue) setWaitLocked(r *record, f state, until int64) {
	if r.waitFor == turnWaiting && f != turnWaiting {
		q.leaveLineLocked(r) // seen alive, or destroyed: its turn goes to the next in line
	}
	q.waits[r.waitFor]--
	q.waits[f]++
	r.waitFor, r.waitUntil = f, until
}

// queueLocked asks for a check of r, and reports whether r joined the ready queue (a retry only for its time or a
// Sweep); one being checked, or tracked, is checked again after for a trigger or a Sweep.
func (q *puQueue) queueLocked(r *record, why cause, now int64) bool {
	switch {
	case r.state == idle, r.state == turnWaiting, r.state == retrying && why != byTrigger:
		r.state, r.sweepOnly = queued, why == bySweep
		q.ready.seq++
		r.readySeq = q.ready.seq
		q.ready.items = append(q.ready.items, readyItem{r, now, q.ready.seq})
		return true
	case r.state == queued && why != bySweep:
		r.sweepOnly = false
	case (r.state == checking || r.state == tracking) && why != byTime:
		r.again, r.againWanted = true, r.againWanted || why != bySweep
	}
	return false
}

// claimLocked gives the queued record r to a check that will run in s.
func (q *puQueue) claimLocked(r *record, s *slot) {
	r.state = checking
	r.checkFresh, r.checkAsked, r.fresh = r.fresh || r.lastRow < 0, r.fresh, false // a first check records the sandbox: it asks the runtime too
	if (r.sweep == sweepNext || r.sweep == sweepTurn) && q.sweepingLocked(r.sweepGen) {
		r.sweep = sweepThis
	}
	s.held = r
}

// dueLocked reports whether the queued r is to be checked now; a retry a Sweep now over queued goes back to waiting.
func (q *puQueue) dueLocked(r *record, now int64) bool {
	if r.waitFor != retrying || r.waitUntil <= now || r.sweep == sweepNext && q.sweepingLocked(r.sweepGen) {
		return true
	}
	r.state = retrying
	q.wheel.schedule(r, now)
	return false
}

// stuckInLine reports whether the PU of puid is held by a check stuck in a port (rateLine.stuck).
func (q *puQueue) stuckInLine(puid string) bool {
	r := q.records[puid]
	if r == nil || r.state != checking {
		return false
	}
	now := q.realNow()
	for i := range q.ready.slots {
		if s := &q.ready.slots[i]; s.held == r {
			return s.stuck(now)
		}
	}
	return false
}

// learnedNothing reports whether a check that decided by row (failed: a port failed) learned nothing of why its PU
// waits for a destroy of lineRow, so that it keeps its place: GetPod failed (row 2), or, for a destroy of its sandbox
// (rows 10 and 12), the SandboxExtractor (row 6) or the SandboxProber (row 8) failed.
func learnedNothing(lineRow, row int, failed bool) bool {
	return row == 2 || (row == 6 || row == 8 && failed) && (lineRow == 10 || lineRow == 12)
}

// releaseLocked ends the check of r held in s with o. It reports the Sweep still waiting for this check (0: none), for
// the caller to count.
func (q *puQueue) releaseLocked(r *record, s *slot, o *outcome) (sweep uint32) {
	s.held = nil
	if l := r.line; l != nil && r.state == removed {
		l.held--
		q.dropLineLocked(r.PUID, l)
	}
	q.ready.free = append(q.ready.free, s.index)
	if q.ready.bound > 0 {
		q.ready.cond.Broadcast()
	}
	sweeping, nothing := q.sweepingLocked(r.sweepGen), learnedNothing(int(r.lineRow), o.verdict.Row, o.err != nil)
	keepsPlace := r.waitFor == turnWaiting && o.retryAt == 0 && o.turnAt == 0 && nothing
	if o.sweepCut && r.checkAsked && r.state != removed {
		// A check TriggerPod asked for, cut short by the end of the Sweep that ran it: the trigger stands, for Start's
		// workers.
		r.again, r.againWanted, r.fresh = true, true, true
	}
	switch {
	case r.sweep == sweepThis && sweeping && o.cut && r.state != removed:
		r.sweep = sweepNext // cut short by Start's stop: the Sweep checks it again, with goroutines of its own
		q.nudgeSweepLocked()
	case r.sweep == sweepThis && sweeping && (o.turnAt != 0 || keepsPlace) && r.state != removed:
		r.sweep = sweepTurn // the Sweep waits for its turn
		q.sweep.owed = append(q.sweep.owed, r)
		q.nudgeSweepLocked()
	case r.sweep == sweepThis:
		if sweeping {
			sweep = r.sweepGen
		}
		r.sweep = notSwept
	}
	if r.state == removed {
		if r.sweep == sweepNext && sweeping { // marked by a Sweep during its check
			q.sweptLocked()
		}
		return sweep
	}
	r.lastChecked, r.lastRow, r.vetoed, r.lastErr = o.end, int8(o.verdict.Row), o.vetoed, o.err
	r.adopted = ""
	if v := o.verdict; v.Action == Adopt && v.SandboxID != r.SandboxID {
		r.adopted = v.SandboxID // a list's sandbox replaced it since (listedAfterLocked)
	}
	if o.err != nil || o.turnAt == 0 { // taking a place in the rate's line ends no streak of failures
		r.failing = o.err != nil
	}
	retryDue := int64(0) // the retry this check came before, if any: its own, or the one a Sweep's turn is held ahead of
	switch {
	case r.waitFor == retrying && r.waitUntil > o.end:
		retryDue = r.waitUntil
	case r.waitFor == turnWaiting && r.retryHeld != 0:
		retryDue = r.retryHeld
	}
	r.retryHeld = 0
	switch {
	case o.retryAt != 0:
		q.setWaitLocked(r, retrying, o.retryAt)
	case (o.turnAt != 0 || keepsPlace) && retryDue != 0 && (r.sweep != sweepTurn || !sweeping):
		// A Sweep's early check, the Sweep over, or a check after it: no turn is taken, nor a place kept, ahead of the
		// retry, which stays.
		q.leaveLineLocked(r)
		if r.waitFor != retrying {
			q.setWaitLocked(r, retrying, retryDue)
		}
	case o.turnAt != 0:
		q.holdRetryLocked(r, retryDue) // the Sweep waits for its turn; its end gives back the retry
		at := o.turnAt
		if r.waitFor == turnWaiting && r.waitUntil > o.end {
			at = min(at, r.waitUntil) // it keeps its place: a new estimate only brings its turn nearer
		}
		q.setWaitLocked(r, turnWaiting, at)
	case r.waitFor == retrying && r.waitUntil > o.end && (o.verdict.Action == Destroy || nothing):
		// A Sweep's early check that destroyed nothing, and did not see the pod alive: the retry stays.
	case keepsPlace: // its place, or its turn come, the next tick; and the retry a Sweep's turn is held ahead of
		q.holdRetryLocked(r, retryDue)
		q.setWaitLocked(r, turnWaiting, max(r.waitUntil, q.wheel.onTick(o.end+1)))
	default:
		q.setWaitLocked(r, idle, 0)
	}
	if r.waitFor == idle && o.verdict.Action != Destroy && !nothing {
		r.goneSince = 0 // seen alive, or out of the rate's line
	}
	if r.state = r.waitFor; r.state == turnWaiting {
		q.nudgeLineLocked(o.end, q.wheel.onTick(o.end+1)) // the head while it was checked: its turn may be sooner
	}
	q.resumeLocked(r, o.end)
	return sweep
}

// removeLocked forgets r (the ready queue may still point to it: workers skip it). Until the caller has told the
// Observer (told), a list that begins does not bring it back; with gone (destroyed, given up on, or dropped by a dry
// run), no list is to until one has answered (unlistedMemory).
func (q *puQueue) removeLocked(r *record, gone bool) {
	swept := r.state != checking && r.sweep != notSwept // a check ends its own part of a Sweep (releaseLocked)
	if l := r.line; l != nil {
		if r.state == checking {
			l.held++
		}
		if l.held > 0 || l.told != l.tickets.Load() {
			q.untold[r.PUID] = l
		}
	}
	r.state = removed
	q.setWaitLocked(r, idle, 0)
	delete(q.records, r.PUID)
	if l := r.line; l != nil && l.told != l.tickets.Load() { // its removal's event is not told yet
		r.leftAt = l.tickets.Load()
		q.leaving[r.PUID] = append(q.leaving[r.PUID], r)
	}
	switch head := q.byPod[r.Pod]; {
	case head == r && r.nextOfPod == nil:
		delete(q.byPod, r.Pod)
	case head == r:
		q.byPod[r.Pod] = r.nextOfPod
	default:
		for p := head; p != nil; p = p.nextOfPod {
			if p.nextOfPod == r {
				p.nextOfPod = r.nextOfPod
				break
			}
		}
	}
	r.nextOfPod = nil
	q.leaveLineLocked(r)
	q.wheel.unschedule(r)
	if swept && q.sweepingLocked(r.sweepGen) {
		q.sweptLocked()
	}
	q.list.removed(r.PUID, q.realNow())
	if gone && q.inventory && !q.list.restored {
		q.unlisted.add(r.PUID, len(q.records)+1)
	}
}

// told records that the Observer has been told of the removal of the PU of puid.
func (c *Engine) told(puid string) {
	defer c.q.lock()()
	c.q.list.told(puid)
}

// Track starts tracking pu. It is insert-only: when pu.PUID is tracked already, the PU is left as it is (its first
// sandbox is the PU's) and Track returns nil. A PU without a PUID, pod name or pod namespace is rejected with an error
// wrapping ErrInvalidPU; once Start's context is done (Start stops), nothing would check it: Track returns an error
// wrapping ErrNotRunning. Track returns once the Observer has been told (EventTracked), the second Track of a PU too; no check
// of the PU begins before.
func (c *Engine) Track(pu ports.PU) error {
	_, err := c.track(pu, false)
	return err
}

// track is Track, and reports whether pu was new; a PU the Inventory listed and removed meanwhile is not tracked.
func (c *Engine) track(pu ports.PU, listed bool) (bool, error) {
	if c.q.records == nil {
		return false, ErrNotCreated
	}
	if pu.PUID == "" || pu.Pod.Name == "" || pu.Pod.Namespace == "" {
		return false, fmt.Errorf("%w: PUID %q, pod %q: PUID, pod name and namespace are required", ErrInvalidPU, pu.PUID, pu.Pod)
	}
	now := c.now()
	c.q.mu.Lock()
	if c.q.stoppingLocked() {
		c.q.mu.Unlock()
		if listed { // a list that answered as Start stops: the PU stays in the Inventory for the next run
			return false, errListCut
		}
		return false, fmt.Errorf("%w: Start's context is done: nothing would check PU %q", ErrNotRunning, pu.PUID)
	}
	r, tracked := c.q.records[pu.PUID]
	_, gone := c.q.list.gone[pu.PUID]
	switch {
	case tracked:
		for l := r.line; l != nil && int32(r.trackedT-l.told) >= 0; { // until its EventTracked has been told
			c.q.toldCond.Wait()
		}
		c.q.mu.Unlock()
		return false, nil
	case listed && gone:
		c.q.mu.Unlock()
		c.log.V(1).Info("a PU the Inventory listed was removed meanwhile; not tracked again", "puID", pu.PUID, "pod", pu.Pod.String())
		return false, nil
	}
	r, t := c.q.newRecordLocked(pu, now)
	r.listed = listed
	if c.q.inventory && !c.q.list.restored {
		c.q.unlisted.saw(len(c.q.records))
	}
	if r.line != nil {
		if !listed { // a list's are the list's (waits)
			c.q.tracks[r] = now
		}
		c.q.mu.Unlock()
		c.tell(r.line, t, Event{Kind: EventTracked, PU: pu})
		now = c.now()
		c.q.mu.Lock()
		delete(c.q.tracks, r)
	}
	c.q.announceLocked(r, now)
	c.q.toldCond.Broadcast() // a second Track of it may return
	c.q.mu.Unlock()
	return true, nil
}

// Untrack forgets the PU of puid without destroying it, for a PU the agent tore down itself. It reports whether the
// PU was tracked, once the Observer has been told (EventUntracked, after every earlier event of the PU). Once it
// returns, no DestroyPU of that PU starts, though the Inventory's list under way holds it; one the engine had already
// started may finish, and so may one a check had decided under the engine's lock before Untrack took it, which may be
// entering the PolicyHandler as Untrack returns. A later Track of the same PUID is a new PU, and so is one a later list brings: the Inventory
// must no longer list it (a journal that observes EventUntracked does not). An Untrack of a PUID it does not hold
// (false) tells the Observer nothing: until the Inventory's first list is in, that list does not bring it back (as
// many as the dry run's memory holds, Options.DryRun), but a journal that still holds it from an earlier run is not
// told; remove it from your Inventory yourself.
func (c *Engine) Untrack(puid string) bool {
	if c.q.records == nil {
		return false
	}
	c.q.mu.Lock()
	r := c.q.records[puid]
	if r == nil { // the list under way, or the first to come, is not to bring it back
		c.q.list.removed(puid, c.realNow())
		c.q.list.told(puid)
		if c.q.inventory && !c.q.list.restored {
			c.q.unlisted.addUntracked(puid, len(c.q.records)+1)
		}
		c.q.mu.Unlock()
		return false
	}
	snapshot, t := r.PU, c.q.ticketLocked(r)
	c.q.removeLocked(r, false)
	c.q.mu.Unlock()
	c.tell(r.line, t, Event{Kind: EventUntracked, PU: snapshot})
	c.told(puid)
	return true
}

// TriggerPod asks for the PUs of that pod to be checked now, each a fresh check (it asks the SandboxConfirmer, if
// any); one waiting for the retry of a failed destroy keeps waiting (one waiting for its turn is checked, and keeps
// its place). Its cost grows with that pod's PUs, not with all PUs. Checks asked before Start run when it begins; once
// Start's context is done, TriggerPod does nothing.
func (c *Engine) TriggerPod(key types.NamespacedName) {
	c.trigger(func(yield func(*record) bool) {
		for r := c.q.byPod[key]; r != nil && yield(r); r = r.nextOfPod {
		}
	})
}

// TriggerAll asks for every PU to be checked now, as TriggerPod does for the PUs of one pod.
func (c *Engine) TriggerAll() { c.trigger(maps.Values(c.q.records)) }

// trigger asks for a fresh check of each record of rs now (TriggerPod, TriggerAll).
func (c *Engine) trigger(rs func(yield func(*record) bool)) {
	if c.q.records == nil {
		return
	}
	now, n := c.now(), 0 // read before the stop is: a Clock that ends Start's context ends this trigger too
	defer c.q.lock()()
	if c.q.stoppingLocked() {
		return
	}
	for r := range rs {
		r.fresh = true
		if c.q.queueLocked(r, byTrigger, now) {
			n++
		}
	}
	c.q.wakeLocked(n)
}

// Len returns the number of tracked PUs.
func (c *Engine) Len() int {
	defer c.q.lock()()
	return len(c.q.records)
}

// Running reports whether Start runs: it was called, and has not returned (a Start that stops, its context done,
// still runs until it returns, within ShutdownTimeout).
func (c *Engine) Running() bool {
	defer c.q.lock()()
	return c.started.Load() && !c.q.returned
}

// Stopping reports whether Start's context is done while Start has not returned yet (it waits, within
// ShutdownTimeout, for the checks under way): no check of its own and no DestroyPU of them starts any more, and no
// retry or turn of a PU comes.
func (c *Engine) Stopping() bool {
	defer c.q.lock()()
	return c.started.Load() && !c.q.returned && c.q.stoppingLocked()
}

// InventoryListed reports whether the engine knows every PU its Inventory holds: it has none (Options.Inventory
// nil), or a list of it answered (Start's first, or a retry of it) and all its PUs went in. A Start that stops while
// they go in leaves the rest in the Inventory for the next run, and this reports false from then on. Until then, Len
// and Status may miss the PUs a restart left to check: adapters/k8s's status page answers 503 meanwhile, once Start
// runs (before, it answers, and tells the engine not running).
func (c *Engine) InventoryListed() bool {
	if c.opts.Inventory == nil {
		return true
	}
	defer c.q.lock()()
	return c.q.list.restored
}

// takeListed records the sandbox a list gave r while its first check ran, before the check's verdict is carried out,
// as if the check had begun after it: a verdict to adopt a sandbox is decided again on the one listed.
func (c *Engine) takeListed(r *record, o *outcome, pod *corev1.Pod) {
	defer c.q.lock()()
	sb := r.listedSandbox
	if sb == "" || r.state == removed || r.SandboxID != "" { // a sandbox a check recorded: replaced at the release
		return
	}
	r.listedSandbox = ""
	r.SandboxID = sb
	o.pu = r.PU
	o.events = append(o.events, tellItem{c.q.ticketLocked(r), Event{Kind: EventAdopted, PU: r.PU}})
	if v := o.verdict; v.Action == Adopt { // decided again on the sandbox recorded: row 9, or 10 (replaced)
		o.verdict = Decide(r.PU, Observation{Pod: pod, NodeName: c.opts.NodeName, DestroyTerminated: c.opts.DestroyTerminated,
			HasExtractor: true, SandboxAsked: true, SandboxID: v.SandboxID})
	}
}

// listedAfterLocked records, as r's check ends, the sandbox a list gave r after takeListed: the one it had before the
// restart, whatever the check recorded (the next check destroys it as changed). It returns the PU and the ticket of
// the EventAdopted to tell; ok false: none.
func (q *puQueue) listedAfterLocked(r *record) (pu ports.PU, t uint32, ok bool) {
	sb := r.listedSandbox
	r.listedSandbox = ""
	if sb == "" || r.state == removed || r.SandboxID == sb {
		return ports.PU{}, 0, false
	}
	r.SandboxID = sb
	return r.PU, q.ticketLocked(r), true
}

// settle carries out the verdict of o on the claimed r, unless Untrack removed it: it records the adopted sandbox, or,
// for a destroy, reports it (a dry run) or takes its turn under the destroy rate (else o.turnAt). It reports whether
// DestroyPU is to be called now, for ev.
func (c *Engine) settle(r *record, o *outcome) (ev ports.DestroyEvent, destroy bool) {
	defer c.q.lock()()
	if r.state == removed {
		return ev, false
	}
	switch v := o.verdict; v.Action {
	case Adopt:
		r.SandboxID, r.adoptedNow = v.SandboxID, r.lastRow < 0
		// Told at once, as a fill of what a journal that is the Inventory holds: the sandbox it holds from before a
		// restart is the one Start's list is to give in its place.
		ifNone := r.bare && c.q.inventory && !c.q.list.restored
		o.events = append(o.events, tellItem{c.q.ticketLocked(r), Event{Kind: EventAdopted, PU: r.PU, Verdict: v, IfNone: ifNone}})
	case Destroy:
		ev = ports.DestroyEvent{PUID: r.PUID, Pod: r.Pod, SandboxID: r.SandboxID, Reason: v.Reason}
		if _, asks := c.policy.(ports.DryRunner); c.opts.DryRun && !asks {
			c.q.wouldDestroyLocked(r, o, ev)
			return ev, false
		} else if c.opts.DryRun {
			return ev, true // the DryRunner tells whether it would destroy (destroyed)
		}
		now := c.now()
		if r.goneSince == 0 {
			r.goneSince = now
		}
		if at := c.q.heldRetryLocked(r); at != 0 { // the PU queued for that turn, or checked at it, as it ended
			c.q.leaveLineLocked(r)
			if r.retryHeld = 0; at > now {
				o.retryAt = at
				return ev, false
			}
		}
		r.lineRow = int8(v.Row)
		if !c.q.rate.limited() {
			return ev, true
		}
		ok, at, turn := c.q.rate.take(r.PUID, now)
		if !ok {
			o.turnAt = at
			return ev, false
		}
		o.turn = turn
		c.q.nudgeLineLocked(now, now)
		return ev, true
	}
	return ev, false
}

// endedByLocked records on r, which the check of o ends at now, what that check tells on the status page while r is
// leaving (StateLeaving): as the release records it of a check that does not end it.
func (q *puQueue) endedByLocked(r *record, now int64, o *outcome) {
	r.lastChecked, r.lastRow, r.vetoed, r.lastErr, r.adopted = now, int8(o.verdict.Row), o.vetoed, o.err, ""
}

// wouldDestroyLocked is a destroy in a dry run: reported once per reason and kept, or dropped when its pod can never
// come back.
func (q *puQueue) wouldDestroyLocked(r *record, o *outcome, ev ports.DestroyEvent) {
	v := o.verdict
	gone := v.Reason == ports.ReasonPodGone || v.Reason == ports.ReasonUIDChanged || v.Reason == ports.ReasonNodeChanged
	if r.reported&(1<<v.Row) == 0 {
		r.reported |= 1 << v.Row
		r.reportedRow = int8(v.Row)
		o.events = append(o.events, tellItem{q.ticketLocked(r),
			Event{Kind: EventWouldDestroy, PU: ev.PU(), Verdict: v, Reason: ev.Reason, Dropped: gone}})
	}
	if gone {
		q.endedByLocked(r, q.now(), o) // leaving, it tells the check that ended it
		q.removeLocked(r, true)
		o.removed = true
	}
}

// destroyed carries out DestroyPU's answer for ev on the claimed r: a success or the last failure removes the record,
// another failure sets o.retryAt; a record Untrack removed meanwhile is not retried. In a dry run, the DryRunner's
// success is reported (wouldDestroyLocked).
func (c *Engine) destroyed(r *record, o *outcome, ev ports.DestroyEvent, err error, permanent bool) {
	defer c.q.lock()()
	untracked := r.state == removed
	switch {
	case err == errNotCalled:
		c.q.notCalledLocked(r, o, c.now(), untracked)
		return
	}
	r.calls++
	if err == nil && c.opts.DryRun {
		if !untracked { // a real run would have destroyed it, ending its failures
			r.attempts = 0
			c.q.wouldDestroyLocked(r, o, ev)
		}
		return
	}
	if err != nil {
		r.attempts++
		o.err = err
	}
	attempts := int(r.attempts)
	o.done = err == nil || permanent || c.opts.MaxDestroyAttempts > 0 && attempts >= c.opts.MaxDestroyAttempts
	now := c.now()
	if !o.done && !untracked {
		o.retryAt = now + int64(c.backoff(attempts)) // at its time: a tick would stretch a backoff under a second
	}
	// Its events take their tickets before the record is removed (a success none once Untrack removed it).
	event := func(e Event) { o.events = append(o.events, tellItem{c.q.ticketLocked(r), e}) }
	switch {
	case err == nil && !untracked:
		event(Event{Kind: EventDestroyed, PU: ev.PU(), Verdict: o.verdict, Reason: ev.Reason, DestroyDelay: time.Duration(now - r.goneSince),
			DestroyCalls: int(r.calls)})
	case err != nil:
		o.fails = append(o.fails, portFailure{port: portDestroyPU, err: err})
		event(Event{Kind: EventDestroyFailed, PU: ev.PU(), Verdict: o.verdict, Reason: ev.Reason, DestroyCalls: int(r.calls), Err: err,
			Next: c.timeOf(o.retryAt), DryRun: c.opts.DryRun})
		if o.done && !untracked {
			event(Event{Kind: EventAbandoned, PU: ev.PU(), Verdict: o.verdict, Reason: ev.Reason, DestroyCalls: int(r.calls), Err: err,
				DryRun: c.opts.DryRun})
		}
	}
	if o.done && !untracked {
		c.q.endedByLocked(r, now, o) // leaving, it tells the check that ended it
		c.q.removeLocked(r, true)
		o.removed = true
	}
	o.untrackedDestroy = err == nil && untracked
}

// notCalledLocked undoes, on r, the destroy its check decided and did not carry out (DestroyPU not called: the check's
// context ended first): no attempt was made, so r waits as it did before the check. The rate's turn it took goes back
// to the line, and r with it, at its place; a retry it waited for stands (its own, or, once the Sweep that took a turn
// ahead of it is over, the one that turn was held ahead of); else it is due again at once.
func (q *puQueue) notCalledLocked(r *record, o *outcome, now int64, untracked bool) {
	retry := int64(0)
	switch {
	case untracked:
	case r.waitFor == retrying && r.waitUntil > now:
		retry = r.waitUntil
	case q.heldRetryLocked(r) != 0:
		retry = max(r.retryHeld, now)
	}
	queue := !untracked && retry == 0 && o.turn != 0
	q.rate.giveBack(r.PUID, o.turn, queue)
	switch {
	case untracked:
	case queue:
		o.turnAt = now // at its place, its turn at hand again
	case retry != 0:
		o.retryAt = retry
	} // else it waits for nothing, as before the check: its next periodic check
	if o.turn != 0 {
		q.nudgeLineLocked(now, now)
	}
}

// late notes in o that what (a port, or the Observer) answered past the deadline of the check of r held in s, if it
// did; the Observer's time during the check is no port's, and the Logger's is neither.
func (c *Engine) late(r *record, s *slot, o *outcome, what string) {
	late := time.Duration(c.realNow() - s.checkEnd.Load()) // the Logger's time moved the deadline (logging)
	if what != "the Observer" {
		late -= o.observing
	}
	if late > 0 {
		err := fmt.Errorf("PU %s of pod %s: %s answered %v past its check's deadline; its slot was stuck meanwhile", r.PUID, r.Pod, what, late)
		o.fails = append(o.fails, portFailure{port: portLate, err: err})
	}
}

// finish ends the check of r held in s with o, run under ctx: it tells the EventChecked in the slot (an Observer that
// hangs is stuck, as a port is), hands the pod to requeue to the Requeuer's lane, tells in the slot too the sandbox a
// list gave r during the check (listedAfterLocked), then releases the record and the slot, so that a Sweep returns once
// the Observer knows. An Observer past the deadline is summed up in the logs alone.
func (c *Engine) finish(ctx context.Context, r *record, s *slot, o *outcome, start int64) {
	// The ports' failures are summed up before the Observer hears them: one that hangs holds no summary line back.
	failedAt, summed := c.opts.Clock.Now(), len(o.fails) // the Clock is the user's: not under the lock
	for _, f := range o.fails {
		c.fails.add(f.port, r.PUID, f.err, failedAt)
	}
	if c.opts.Observer != nil {
		c.q.mu.Lock()
		t, pu := c.q.ticketLocked(r), r.PU
		c.q.mu.Unlock()
		errs := make([]error, len(o.fails))
		for i, f := range o.fails {
			errs[i] = f.err
		}
		c.tell(r.line, t, Event{Kind: EventChecked, PU: pu, Verdict: o.verdict, CheckDuration: time.Duration(o.end - start),
			Err: errors.Join(errs...)})
	}
	if o.requeue != nil {
		c.q.mu.Lock()
		var sweep uint32 // the Sweep this check is one of: it waits for the requeue
		if r.sweep == sweepThis && c.q.sweepingLocked(r.sweepGen) {
			sweep = r.sweepGen
		}
		c.q.mu.Unlock()
		c.queueRequeue(ctx, r.PUID, o.requeue, sweep)
	}
	now := c.opts.Clock.Now() // the Clock is the user's (the failures' summary asks it too): not under the lock
	c.q.mu.Lock()
	c.tellListedLocked(r, s)
	c.q.mu.Unlock()
	if n := len(o.fails); c.opts.Observer != nil && (n == 0 || o.fails[n-1].port != portLate) {
		c.late(r, s, o, "the Observer")
	}
	for _, f := range o.fails[summed:] { // the Observer's lateness; before the release: a Sweep that returns then sums them up
		c.fails.add(f.port, r.PUID, f.err, now)
	}
	c.q.mu.Lock()
	c.tellListedLocked(r, s) // a list that answered since: under the lock from here to the release, none comes between
	s.checkEnd.Store(0)
	if sweep := c.q.releaseLocked(r, s, o); sweep != 0 {
		c.q.sweptLocked()
	}
	r.adoptedNow = false
	c.q.mu.Unlock()
}

// tellListedLocked tells, in the slot of r's check, the sandboxes lists gave r during it (listedAfterLocked), each
// with the lock let go meanwhile; the lock is held on entry and on return.
func (c *Engine) tellListedLocked(r *record, s *slot) {
	for {
		pu, t, listed := c.q.listedAfterLocked(r)
		if !listed {
			return
		}
		c.q.mu.Unlock()
		c.tellListed(r, t, pu, s)
		c.q.mu.Lock()
	}
}

// tellListed logs and tells pu, r's PU given the sandbox a list recorded, its EventAdopted holding ticket t: in the
// slot s of its check; with no slot, as a list's answer goes in, told only (trackAll logs it once the list has ended).
func (c *Engine) tellListed(r *record, t uint32, pu ports.PU, s *slot) {
	if s != nil {
		c.logging(s, func() {
			c.log.V(1).Info("sandbox recorded from the Inventory", "puID", pu.PUID, "pod", pu.Pod.String(), "sandboxID", pu.SandboxID)
		})
	}
	c.tell(r.line, t, Event{Kind: EventAdopted, PU: pu})
}

// leaveLineLocked gives back r's place in the destroy rate's line, if it has one, to the next in line.
func (q *puQueue) leaveLineLocked(r *record) {
	if _, ok := q.rate.leave(r.PUID); ok {
		now := q.now()
		q.nudgeLineLocked(now, now)
	}
}

// nudgeLineLocked has the PU at the head of the line checked at its turn, not before floor, if that is sooner than it
// waits for: the one before it took its turn or left the line, or its own check failed.
func (q *puQueue) nudgeLineLocked(now, floor int64) {
	puid, ok := q.rate.front()
	if !ok {
		return
	}
	r := q.records[puid]
	if r == nil || r.state != turnWaiting {
		return // being checked, or queued: its check takes its turn, or its release nudges it
	}
	if at := max(q.rate.turnAt(0, now), floor); at < r.waitUntil {
		r.waitUntil = at
		q.wheel.schedule(r, now)
		q.nudgeSweepLocked()
	}
}

// Status returns what the engine knows of every tracked PU, sorted by PUID, and of every PU whose tracking has ended
// while the Observer is not told yet (StateLeaving): a PU leaves Status only once the Observer has heard its end, even
// when its PUID is tracked again meanwhile (the one leaving is listed before the new one).
func (c *Engine) Status() []PUStatus {
	c.q.mu.Lock()
	out := make([]PUStatus, 0, len(c.q.records)+len(c.q.leaving))
	for e := range c.q.allLocked() {
		state := e.state.String()
		switch {
		case e.state == removed:
			state = StateLeaving
		case e.state == tracking && e.line != nil && int32(e.trackedT-e.line.told) < 0:
			state = idle.String() // its EventTracked is told: the Observer knows it, whatever Track does after
		}
		s := PUStatus{
			PU:          e.PU,
			State:       state,
			TrackedAt:   c.timeOf(e.trackedAt),
			LastChecked: c.timeOf(e.lastChecked),
			Vetoed:      e.vetoed,
			Attempts:    int(e.attempts),
			LastErr:     e.lastErr,
			// rows[0], none reported, has no Reason.
			WouldDestroy: rows[e.reportedRow].v.Reason,
		}
		if sb := cmp.Or(e.adopted, e.SandboxID); e.lastRow >= 0 {
			s.LastVerdict = verdictOfRow(int(e.lastRow), sb)
		}
		s.ReportedRows = RowSet(e.reported)
		if e.waitFor != idle {
			s.NextAttempt = c.timeOf(e.waitUntil)
		}
		out = append(out, s)
	}
	c.q.mu.Unlock()
	slices.SortFunc(out, func(a, b PUStatus) int {
		leaving := func(st PUStatus) int {
			if st.State == StateLeaving {
				return 0
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.PUID, b.PUID), cmp.Compare(leaving(a), leaving(b)))
	})
	return out
}

// allLocked yields the tracked records, then those leaving.
func (q *puQueue) allLocked() func(yield func(*record) bool) {
	return func(yield func(*record) bool) {
		for _, r := range q.records {
			if !yield(r) {
				return
			}
		}
		for _, rs := range q.leaving {
			for _, r := range rs {
				if !yield(r) {
					return
				}
			}
		}
	}
}

// Backlog says how far behind the destroys are. It reads every PU under the engine's lock: call it at a scrape, not
// per check.
func (c *Engine) Backlog() Backlog {
	defer c.q.lock()()
	b := Backlog{Retrying: c.q.waits[retrying], RateLimited: c.q.waits[turnWaiting]}
	var oldest int64
	for _, r := range c.q.records {
		if r.goneSince != 0 && (oldest == 0 || r.goneSince < oldest) {
			oldest = r.goneSince
		}
	}
	b.OldestGoneSince, b.OldestQueuedSince = c.timeOf(oldest), c.timeOf(c.q.oldestQueuedLocked())
	return b
}

// oldestQueuedLocked returns when the oldest queued check was queued; 0: none.
func (q *puQueue) oldestQueuedLocked() int64 {
	// Stale entries at the head (of PUs removed, or queued again since) go once, by whoever reads the head first: a
	// health check's cost does not grow with a drain's untracked PUs.
	for q.ready.head < len(q.ready.items) && !q.ready.items[q.ready.head].live() {
		q.ready.items[q.ready.head] = readyItem{}
		q.ready.head++
	}
	q.compactReadyLocked()
	if q.ready.head < len(q.ready.items) {
		return q.ready.items[q.ready.head].at
	}
	return 0
}

// adoptListed gives the sandbox listed for pu to the record of the same PU tracked without one, in place of any its
// checks recorded from the runtime (see Options.Inventory), by the rule of ports.PU.WithRecordedSandbox. It reports
// whether it gave a sandbox to a PU tracked before the list (restored): one the list tracked itself, listed twice, is
// restored once.
func (c *Engine) adoptListed(pu ports.PU) (restored bool) {
	c.q.mu.Lock()
	e := c.q.records[pu.PUID]
	_, gone := c.q.list.gone[pu.PUID] // tracked again since: a new PU
	var tracked ports.PU              // without the sandbox its running first check recorded
	if e != nil {
		tracked = e.PU
		if e.adoptedNow || e.bare {
			tracked.SandboxID = "" // what its checks recorded from the runtime gives way to the list's
		}
	}
	switch {
	case e == nil || gone || tracked.WithRecordedSandbox(pu) == tracked:
		// A sandbox Track gave is the PU's (insert-only); a list that recorded none learned nothing against the one
		// a check recorded.
	case e.state == checking:
		restored = !e.listed && e.listedSandbox == "" // listed twice, restored once
		e.listedSandbox = pu.SandboxID                // taken by its first check, or its release
	case e.SandboxID == pu.SandboxID: // a check recorded the same: the Inventory holds it
	case e.state == idle || e.state == queued || e.state == tracking || e.state == retrying || e.state == turnWaiting:
		if e.SandboxID != "" && e.adopted == "" {
			e.adopted = e.SandboxID // its last check's, for its LastVerdict
		}
		e.PU = tracked.WithRecordedSandbox(pu) // the list's, told now
		snapshot, t := e.PU, c.q.ticketLocked(e)
		c.q.mu.Unlock()
		c.tellListed(e, t, snapshot, nil)
		return !e.listed
	}
	c.q.mu.Unlock()
	return restored
}

// listTelling is how long the Observer has been told an event of the lists, and its kind, or (puid set) the
// EventTracked of a Track (waits).
type listTelling struct {
	lasted time.Duration
	kind   EventKind
	puid   string
}

// waits returns what a health check reads of the queue: whether Start has returned, whether it stops, whether the
// first list's answer is going in (overdue is then how long since a PU of it last began or ended going in), how long
// the oldest queued check has waited, how long ago the first check due was due (since Start and its first list), and
// how long the Observer has been told an event of the lists (zero: it is not).
func (c *Engine) waits() (stopped, stopping, restoring bool, waited, overdue time.Duration, telling listTelling) {
	now := c.now()
	defer c.q.lock()()
	stopped, stopping = c.q.returned, c.q.stoppingLocked()
	if c.q.list.telling != 0 {
		telling = listTelling{lasted: time.Duration(now - c.q.list.telling), kind: c.q.list.tellingOf}
	}
	for r, since := range c.q.tracks { // as many as Tracks under way
		if d := time.Duration(now - since); d > telling.lasted {
			telling = listTelling{lasted: d, kind: EventTracked, puid: r.PUID}
		}
	}
	if first := c.q.wheel.first(); first != 0 {
		overdue = time.Duration(now - max(first, c.q.startAt, c.q.listedAt))
	}
	listing := c.q.list.gone != nil && c.q.list.end == 0 // a list's answer going in
	switch {
	case c.q.begun && listing: // a retried list's: the lists wait for it while none of its PUs goes in
		if d := time.Duration(now - c.q.list.progress); d > telling.lasted {
			telling = listTelling{lasted: d, kind: EventTracked}
		}
	case c.q.begun:
	case listing: // wedged only while none of its PUs goes in (an Observer blocks)
		restoring, overdue = true, time.Duration(now-c.q.list.progress)
	default: // the checks wait for the first list, its deadline at most: nothing is overdue
		overdue = 0
	}
	if at := c.q.oldestQueuedLocked(); at != 0 {
		waited = time.Duration(now - at)
	}
	return stopped, stopping, restoring, waited, overdue, telling
}

// list lists the Inventory once, in a window (listWindow) opened on what unlistedMemory remembers, which listEnds
// closes. An answer after its deadline, or once Start stops, is a failure.
func (c *Engine) list(ctx context.Context) ([]ports.PU, error) {
	c.q.mu.Lock()
	w := &c.q.list
	w.gone = c.q.unlisted.copy(len(w.removing))
	for puid := range w.removing {
		w.gone[puid] = struct{}{}
	}
	w.deadline = c.realNow() + int64(c.listTimeout())
	w.end = w.deadline + int64(stuckGrace)
	c.q.mu.Unlock()
	pus, err := callLeaving(ctx, c.listTimeout(), portNames[portListPUs], c.opts.Inventory.ListPUs)
	defer c.q.lock()()
	switch {
	case err == nil && c.q.stoppingLocked():
		return nil, fmt.Errorf("%w: Start's context is done: the list's answer is not tracked", ErrNotRunning)
	case err == nil && c.realNow() > w.deadline:
		return nil, fmt.Errorf("ListPUs answered after its deadline of %v", c.listTimeout())
	case err == nil:
		w.end, w.progress = 0, c.now() // removals count until its answer is tracked
	}
	return pus, err
}

func (c *Engine) listEnds() {
	now := c.now()
	defer c.q.lock()()
	c.q.list.gone = nil
	if !c.q.begun && c.q.listedAt == 0 {
		c.q.listedAt = now
	}
}

// listProgress records that a PU of the list's answer begins, or ends, going in (waits).
func (c *Engine) listProgress() {
	now := c.now()
	defer c.q.lock()()
	c.q.list.progress = now
}

// tellList tells the Observer ev, an event of the lists, marking the while: an Observer that blocks there holds the
// lists, which LivenessCheck says.
func (c *Engine) tellList(ev Event) {
	c.q.mu.Lock()
	c.q.list.telling, c.q.list.tellingOf = c.now(), ev.Kind
	c.q.mu.Unlock()
	err := c.observe(ev)
	c.q.mu.Lock()
	c.q.list.telling = 0
	c.q.mu.Unlock()
	c.observerPanicked(ev, err)
}

// listTracking reports whether a list answered in time and its answer is being tracked.
func (c *Engine) listTracking() bool {
	defer c.q.lock()()
	return c.q.list.gone != nil && c.q.list.end == 0
}

// listTracked records that a list's answer is tracked, all of it (no list is to come) or, Start stopping, not all.
func (c *Engine) listTracked(all bool) {
	if !all {
		return
	}
	defer c.q.lock()()
	c.q.list.restored = true
	c.q.unlisted = unlistedMemory{}
}

// queueDue queues every record due at now, each once however late, sets the scheduler's timer, and returns when it
// is to wake next (0: at a kick).
func (c *Engine) queueDue(now int64) int64 {
	defer c.q.lock()()
	n := 0
	for r := c.q.wheel.popDue(now); r != nil; r = c.q.wheel.popDue(now) {
		if c.q.queueLocked(r, byTime, now) {
			n++
		}
	}
	c.q.wakeLocked(min(n, 1)) // more once a check of the batch is slow
	c.q.spreadLocked(now)
	w := &c.q.wheel
	switch w.wakeAt = w.first(); {
	case w.timer == nil:
	case w.wakeAt != 0:
		w.timer.Reset(time.Duration(w.wakeAt - now))
	default:
		w.timer.Stop()
	}
	return w.wakeAt
}

// schedulerTimer gives the wheel the scheduler's timer; nil: the scheduler returns, its timer stopped.
func (c *Engine) schedulerTimer(t clock.Timer) {
	defer c.q.lock()()
	if w := &c.q.wheel; t == nil && w.timer != nil {
		w.timer.Stop()
		w.wakeAt = 0
	}
	c.q.wheel.timer = t
}

// slowCheck wakes another worker if checks wait: a lane's check has run spreadAfter.
func (c *Engine) slowCheck() {
	defer c.q.lock()()
	c.q.spreadLocked(math.MaxInt64)
}

// spreadLocked wakes another worker when the head of the ready queue has waited spreadAfter by now.
func (q *puQueue) spreadLocked(now int64) {
	if q.ready.head < len(q.ready.items) && q.ready.idle > 0 && q.ready.items[q.ready.head].at+int64(q.spreadAfter()) <= now {
		q.ready.cond.Signal()
	}
}

// checksBegin lets Start's workers begin, its first list ended or past its deadline.
func (c *Engine) checksBegin() {
	defer c.q.lock()()
	c.q.begun = true
	c.q.ready.cond.Broadcast()
}

// next claims the oldest queued record and a free slot for it, waiting for both; nil: its goroutine is to stop. spread,
// when others wait behind it, is how long its check may take before another worker is woken for them.
func (c *Engine) next(gen uint32) (r *record, s *slot, spread time.Duration) {
	defer c.q.lock()()
	for {
		now := c.now() // read before the stop is: a Clock that ends the context ends this claim too
		switch {
		case gen == 0 && c.q.stoppingLocked(), gen != 0 && !c.q.sweepingLocked(gen):
			return nil, nil, 0
		case gen != 0 && c.q.running:
			c.q.ready.cond.Broadcast() // pass on a wake-up that may have been meant for Start's workers
			return nil, nil, 0
		case gen == 0 && !c.q.begun, len(c.q.ready.free) == 0 && c.q.ready.head < len(c.q.ready.items): // no slot yet
			c.q.ready.bound++
			c.q.ready.cond.Wait()
			c.q.ready.bound--
			continue
		}
		for i := c.q.ready.head; i < len(c.q.ready.items); {
			it := c.q.ready.items[i]
			if it.live() && gen != 0 && !c.q.sweepsLocked(it.r, gen) {
				i++ // Start's, or asked for before Start: it waits for Start's workers
				continue
			}
			// Taken out of the queue, the checks a Sweep left before it keeping their order.
			copy(c.q.ready.items[c.q.ready.head+1:i+1], c.q.ready.items[c.q.ready.head:i])
			c.q.ready.items[c.q.ready.head] = readyItem{}
			c.q.ready.head++
			i++
			if !it.live() || !c.q.dueLocked(it.r, now) {
				continue
			}
			s := &c.q.ready.slots[c.q.ready.free[len(c.q.ready.free)-1]]
			c.q.ready.free = c.q.ready.free[:len(c.q.ready.free)-1]
			c.q.claimLocked(it.r, s)
			c.q.spreadLocked(now) // another worker if the rest waited long; spread arms its lane
			if c.q.ready.head < len(c.q.ready.items) {
				spread = c.q.spreadAfter()
			}
			c.q.compactReadyLocked()
			return it.r, s, spread
		}
		c.q.compactReadyLocked()
		c.q.ready.idle++
		c.q.ready.cond.Wait()
		c.q.ready.idle--
	}
}

// sweepsLocked reports whether a goroutine of the Sweep of gen may check the queued r: one that Sweep asked for, or the
// head of the rate's line, which holds back the turns of that Sweep's. Any other waits for Start's workers.
func (q *puQueue) sweepsLocked(r *record, gen uint32) bool {
	if r.sweepGen == gen && (r.sweep == sweepNext || r.sweep == sweepTurn) {
		return true
	}
	puid, ok := q.rate.front()
	return ok && puid == r.PUID && len(q.sweep.owed) > 0
}

// stoppingLocked reports whether Start's context is done, whether or not its goroutine has seen it yet.
func (q *puQueue) stoppingLocked() bool {
	if q.stopped {
		return true
	}
	select {
	case <-q.startDone: // nil before Start: never
		return true
	default:
		return false
	}
}

// startQueue starts the queue for Start's workers, and returns how many checks are queued and PUs tracked.
func (c *Engine) startQueue(done <-chan struct{}, kick chan struct{}, now int64) (pending, tracked int) {
	defer c.q.lock()()
	c.q.running, c.q.begun, c.q.wheel.kick, c.q.startAt, c.q.startDone = true, c.opts.Inventory == nil, kick, now, done
	for i := range c.q.ready.items[c.q.ready.head:] { // triggered before Start: they wait from now on
		c.q.ready.items[c.q.ready.head+i].at = now
	}
	c.q.ready.cond.Broadcast() // a Sweep's own goroutines leave the queue to Start's
	return len(c.q.ready.items) - c.q.ready.head, len(c.q.records)
}

// stopQueue stops Start's workers; a Sweep under way goes on with goroutines of its own.
func (c *Engine) stopQueue() {
	defer c.q.lock()()
	c.q.running, c.q.stopped = false, true
	c.q.nudgeSweepLocked()
	c.q.ready.cond.Broadcast()
}

// startReturned records that Start has returned.
func (c *Engine) startReturned() {
	defer c.q.lock()()
	c.q.returned = true
}

// endSweep ends the Sweep of gen, if it still runs.
func (c *Engine) endSweep(gen uint32) {
	defer c.q.lock()()
	if c.q.sweepingLocked(gen) {
		c.q.endSweepLocked()
	}
}

// beginSweep is beginSweepLocked (sweep.go), under the lock.
func (c *Engine) beginSweep(now int64) (gen uint32, done, nudge chan struct{}) {
	defer c.q.lock()()
	return c.q.beginSweepLocked(now)
}

// sweepStep looks at the Sweep of gen while it waits. It returns -1 when it is to stop waiting: every check it waits
// for, or every slot, is held by one stuck in a port. Else, while Start does not run, it starts the Sweep's own
// goroutines (at most Workers, less those still at work), queues the turns come (sweepTurnsLocked), and returns how
// long until the next (0: none, or one due now).
func (c *Engine) sweepStep(ctx context.Context, gen uint32) time.Duration {
	c.q.mu.Lock()
	w, held, stuck, now := &c.q.sweep, 0, 0, c.q.realNow()
	for i := range c.q.ready.slots {
		if s := &c.q.ready.slots[i]; s.stuck(now) {
			stuck++
			if r := s.held; r != nil && r.sweep != notSwept && r.sweepGen == gen {
				held++ // one the Sweep of gen waits for
			}
		}
	}
	left, next := w.left, time.Duration(-1)
	if left == 0 || held < left && stuck < len(c.q.ready.slots) {
		if !c.q.running && c.q.sweepingLocked(gen) {
			n := max(min(c.opts.Workers, w.left)-w.lanes, 0) // one stuck since a Start came and went still at work
			w.lanes += n
			for range n {
				go func() {
					c.work(ctx, gen) // until the Sweep ends or Start begins
					c.q.mu.Lock()
					if c.q.sweepingLocked(gen) { // else its end counted them out
						c.q.sweep.lanes--
					}
					c.q.mu.Unlock()
				}()
			}
		}
		next = c.q.sweepTurnsLocked(gen)
	}
	c.q.mu.Unlock()
	if next < 0 {
		c.fails.add(portStuck, "", fmt.Errorf("%d checks stuck past their deadline, %d of the Sweep's unchecked", stuck,
			left-held), c.opts.Clock.Now())
	}
	return next
}
