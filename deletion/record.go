package deletion

// A record's life: its states and every move between them, each one method below, under Engine.mu; no other file sets
// record.state.
//
//	tracking ──announce (its EventTracked told)──▶ idle, or queued for a trigger or a Sweep that came meanwhile
//	idle, retrying, turnWaiting ──queue──▶ queued ──claim──▶ checking
//	queued ──due: a retry not due, queued by a Sweep that is over──▶ retrying
//	checking ──release──▶ idle, retrying or turnWaiting (or queued again for a trigger or a Sweep that came meanwhile)
//	any ──remove (Untrack, a destroy done or given up, a dry run's drop)──▶ removed
//
// The scheduler queues a record at record.next (schedule.go); a trigger or a Sweep queue it too, but a trigger not one
// waiting for a retry. A waiting record keeps waitFor and waitUntil through a check that leaves it waiting: a Sweep's
// early check leaves a retry where it was, and a destroy waiting for its turn keeps its place through a check that
// learns nothing (a port failed). A Sweep waits for the turns of its checks' destroys.

import "github.com/podsweeper/podsweeper/ports"

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

// cause is what asks for a check of a record: the scheduler (record.next has come), TriggerPod or TriggerAll, or a Sweep.
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

// record is the engine's record of one tracked PU, guarded by Engine.mu. Times are nanoseconds on Options.Clock since
// the epoch: an int64 is a third of a time.Time.
type record struct {
	ports.PU

	nextOfPod *record // the next record of the same pod (Engine.byPod)
	lastErr   error   // of the last check, if it failed

	trackedAt   int64
	lastChecked int64 // when the last check ended; 0: never
	// next is when the scheduler queues it (at its phase, or what it waits for); heapIndex is its index in Engine.heap
	// (-1: not there).
	next             int64
	heapIndex, phase int32
	waitUntil        int64 // when the retry or the turn of waitFor comes; 0: none
	// goneSince: when a check first decided to destroy it since it was last seen alive; 0: it waits for no destroy.
	goneSince int64

	attempts int32  // failed DestroyPU calls
	sweepGen uint32 // the Sweep that sweep refers to

	state   state
	waitFor state // retrying or turnWaiting, while waitUntil is set; else idle
	sweep   sweepMark
	again   bool // a trigger or a Sweep came during its check: check it again
	// fresh: TriggerPod asked for the next check, which asks the SandboxConfirmer; checkFresh: the claiming check is
	// one, or a first.
	fresh, checkFresh bool
	// lastRow is the row of the last verdict carried out (-1: none); vetoed: it was a confirmer's, overriding a destroy.
	lastRow int8
	vetoed  bool
	// reportedRow is the row of the last destroy a dry run reported (0: none), reported the rows it reported (bit
	// 1<<row).
	reportedRow int8
	reported    uint16

	// line is its PUID's line to the Observer (nil without an Observer): the events of one PU reach the Observer one
	// at a time, in the order of the moves that made them (tell), those of a record of the same PUID removed before it
	// first.
	line *eventLine
}

// eventLine is the line of one PUID's events to the Observer: tickets of them were given a place, told were told. A
// record of a PUID tracked again while the events of the one before are being told shares its line (Engine.untold).
type eventLine struct{ tickets, told uint32 }

// newRecordLocked tracks pu in a new record, tracking until its EventTracked, whose ticket it returns, is told
// (announceLocked).
func (c *Engine) newRecordLocked(pu ports.PU, now int64) (*record, uint32) {
	r := &record{PU: pu, trackedAt: now, lastRow: -1, heapIndex: -1, state: tracking,
		phase: int32(fnv32a(pu.PUID) % uint32(c.q.phases))}
	c.q.records[pu.PUID] = r
	if c.opts.Observer != nil {
		if r.line = c.q.untold[pu.PUID]; r.line != nil {
			delete(c.q.untold, pu.PUID) // the record before it is still being told of: its events come first
		} else {
			r.line = &eventLine{}
		}
	}
	r.nextOfPod = c.q.byPod[pu.Pod]
	c.q.byPod[pu.Pod] = r
	return r, c.ticketLocked(r)
}

// announceLocked makes the tracking r checkable, once the Observer has been told of its EventTracked: idle on the
// heap, or queued for a trigger or a Sweep that came meanwhile.
func (c *Engine) announceLocked(r *record, now int64) {
	if r.state != tracking {
		return // removed meanwhile
	}
	r.state = idle
	again := r.again && !c.q.stopped
	r.again = false
	if r.sweep == sweepNext && c.sweepingLocked(r.sweepGen) || again {
		c.queueLocked(r, bySweep, now)
		c.wakeLocked(1)
	} else {
		c.scheduleLocked(r, now)
	}
}

// ticketLocked gives the next event of r its place in r's line to the Observer (tell); with no Observer, none.
func (c *Engine) ticketLocked(r *record) uint32 {
	if c.opts.Observer == nil {
		return 0
	}
	t := r.line.tickets
	r.line.tickets++
	if r.state == removed && c.q.records[r.PUID] == nil {
		c.q.untold[r.PUID] = r.line // a Track of its PUID meanwhile tells after it
	}
	return t
}

// tell tells the Observer about ev, the event of r holding ticket t, once every event of r before it has been told,
// and passes the turn on (a zero ev only passes it on): whatever goroutines make them, the events of one PU reach the Observer one at a time and in
// order.
func (c *Engine) tell(r *record, t uint32, ev Event) {
	if c.opts.Observer == nil {
		return
	}
	c.awaitTold(r, t)
	if ev.Kind != 0 {
		c.observe(ev)
	}
	c.q.mu.Lock()
	l := r.line
	if l.told++; l.told == l.tickets && c.q.untold[r.PUID] == l {
		delete(c.q.untold, r.PUID)
	}
	c.q.toldCond.Broadcast()
	c.q.mu.Unlock()
}

// tellNow tells the Observer about ev, an event of r that no move of r made (a failed port), in its turn.
func (c *Engine) tellNow(r *record, ev Event) {
	if c.opts.Observer == nil {
		return
	}
	c.q.mu.Lock()
	t := c.ticketLocked(r)
	c.q.mu.Unlock()
	c.tell(r, t, ev)
}

// awaitTold returns once the Observer has been told every event of r before ticket t.
func (c *Engine) awaitTold(r *record, t uint32) {
	c.q.mu.Lock()
	for int32(t-r.line.told) > 0 {
		c.q.toldCond.Wait()
	}
	c.q.mu.Unlock()
}

// setWaitLocked makes r wait for f (retrying or turnWaiting) until until, or for nothing (idle), and counts the
// records waiting for each.
func (c *Engine) setWaitLocked(r *record, f state, until int64) {
	if r.waitFor == turnWaiting && f != turnWaiting {
		c.leaveLineLocked(r) // seen alive, or destroyed: its turn goes to the next in line
	}
	c.q.waits[r.waitFor]--
	c.q.waits[f]++
	r.waitFor, r.waitUntil = f, until
}

// queueLocked asks for a check of r for why, and reports whether r joined the ready queue (a retry only for its time
// or a Sweep); one being checked is checked again after, for a trigger or a Sweep.
func (c *Engine) queueLocked(r *record, why cause, now int64) bool {
	switch {
	case r.state == idle, r.state == turnWaiting, r.state == retrying && why != byTrigger:
		r.state = queued
		c.q.ready = append(c.q.ready, readyItem{r, now})
		return true
	case (r.state == checking || r.state == tracking) && why != byTime:
		r.again = true
	}
	return false
}

// markLocked asks for the check of r that the Sweep of gen waits for.
func (c *Engine) markLocked(r *record, gen uint32, now int64) {
	r.sweepGen, r.sweep = gen, sweepNext
	c.queueLocked(r, bySweep, now)
}

// claimLocked gives the queued record r to a check that will run in s.
func (c *Engine) claimLocked(r *record, s *slot) {
	r.state = checking
	r.checkFresh, r.fresh = r.fresh || r.lastRow < 0, false // a first check records the sandbox: it asks the runtime too
	if (r.sweep == sweepNext || r.sweep == sweepTurn) && c.sweepingLocked(r.sweepGen) {
		r.sweep = sweepThis
	}
	s.held = r
}

// dueLocked reports whether the queued r is to be checked now; a retry that a Sweep now over queued goes back to
// waiting for its time.
func (c *Engine) dueLocked(r *record, now int64) bool {
	if r.waitFor != retrying || r.waitUntil <= now || r.sweep == sweepNext && c.sweepingLocked(r.sweepGen) {
		return true
	}
	r.state = retrying
	c.scheduleLocked(r, now)
	return false
}

// releaseLocked ends the check of r held in s with o. It reports the Sweep still waiting for this check (0: none), for
// the caller to count.
func (c *Engine) releaseLocked(r *record, s *slot, o *outcome) (sweep uint32) {
	s.held = nil
	c.q.free = append(c.q.free, s.index)
	if c.q.boundWaiting > 0 {
		c.q.cond.Broadcast()
	}
	sweeping := c.sweepingLocked(r.sweepGen)
	switch {
	case r.sweep == sweepThis && sweeping && o.turnAt != 0 && r.state != removed:
		r.sweep = sweepTurn // the Sweep waits for its turn (Sweep)
		c.q.sweep.owed = append(c.q.sweep.owed, r)
		c.nudgeSweepLocked()
	case r.sweep == sweepThis:
		if sweeping {
			sweep = r.sweepGen
		}
		r.sweep = notSwept
	}
	if r.state == removed {
		if r.sweep == sweepNext && sweeping { // marked by a Sweep during its check
			c.sweptLocked()
		}
		return sweep
	}
	r.lastChecked, r.lastRow, r.vetoed, r.lastErr = o.end, int8(o.verdict.Row), o.vetoed, o.err
	if o.verdict.Action != Destroy && o.err == nil {
		r.goneSince = 0 // seen alive: it no longer waits for a destroy
	}
	switch {
	case o.retryAt != 0:
		c.setWaitLocked(r, retrying, o.retryAt)
	case o.turnAt != 0:
		c.setWaitLocked(r, turnWaiting, o.turnAt)
	case r.waitFor == retrying && r.waitUntil > o.end:
		// A Sweep's early check that destroyed nothing: the retry stays.
	case r.waitFor == turnWaiting && o.err != nil:
		// A check that learned nothing: it keeps its place, or its turn come, the next tick.
		c.setWaitLocked(r, turnWaiting, max(r.waitUntil, c.onTick(o.end+1)))
	default:
		c.setWaitLocked(r, idle, 0)
	}
	again := r.again && !c.q.stopped && r.waitFor != retrying
	r.again = false
	r.state = r.waitFor
	if r.state == turnWaiting {
		c.nudgeLineLocked(o.end, c.onTick(o.end+1)) // the head while it was checked: its turn may be sooner
	}
	if r.sweep == sweepNext && sweeping || again {
		c.queueLocked(r, bySweep, o.end)
		c.wakeLocked(1)
	} else {
		c.scheduleLocked(r, o.end)
	}
	return sweep
}

// removeLocked forgets r (the ready queue may still point to it: workers skip it). Until the caller has told the
// Observer (told), a list of the Inventory that begins does not bring it back: a journal may still hold it.
func (c *Engine) removeLocked(r *record) {
	if r.state != checking && r.sweep != notSwept && c.sweepingLocked(r.sweepGen) {
		c.sweptLocked() // a check ends its own part of a Sweep (releaseLocked)
	}
	r.state = removed
	if l := r.line; l != nil && l.told != l.tickets {
		c.q.untold[r.PUID] = l // a Track of its PUID meanwhile tells after its events
	}
	c.leaveLineLocked(r) // in line since its check, or before
	c.setWaitLocked(r, idle, 0)
	c.unscheduleLocked(r)
	delete(c.q.records, r.PUID)
	if head := c.q.byPod[r.Pod]; head == r {
		if r.nextOfPod == nil {
			delete(c.q.byPod, r.Pod)
		} else {
			c.q.byPod[r.Pod] = r.nextOfPod
		}
	} else {
		for p := head; p != nil; p = p.nextOfPod {
			if p.nextOfPod == r {
				p.nextOfPod = r.nextOfPod
				break
			}
		}
	}
	r.nextOfPod = nil
	c.q.list.removed(r.PUID, c.realNow())
}

// told records that the Observer has been told of the removal of the PU of puid (see removeLocked).
func (c *Engine) told(puid string) {
	c.q.mu.Lock()
	defer c.q.mu.Unlock()
	c.q.list.told(puid)
}
