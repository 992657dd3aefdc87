package deletion

// The Sweep's part of the queue: a Sweep marks every record with its generation and waits until each has been checked
// once, its destroy's turn included, or is gone.

import "time"

// sweepRun is the running Sweep's state, under puQueue.mu: its generation (record.sweepGen), how many checks it waits
// for, its own goroutines, the records whose turns it waits for, done, closed at its end (nil: none runs), and nudge.
type sweepRun struct {
	gen         uint32
	left, lanes int
	owed        []*record
	held        []*record // those it took a place for ahead of a retry (record.retryHeld), queued for it or not
	done, nudge chan struct{}
}

// beginSweepLocked marks every record for a new Sweep and returns its generation (0: nothing is tracked), and its
// done and nudge.
func (q *puQueue) beginSweepLocked(now int64) (gen uint32, done, nudge chan struct{}) {
	if len(q.records) == 0 {
		return 0, nil, nil
	}
	w := &q.sweep
	w.gen = max(w.gen+1, 1) // 0 stands for Start's workers (see work)
	gen, done, nudge = w.gen, make(chan struct{}), make(chan struct{}, 1)
	w.done, w.nudge, w.left, w.lanes, w.owed, w.held = done, nudge, len(q.records), 0, nil, nil
	for _, r := range q.records {
		r.sweepGen, r.sweep = gen, sweepNext
		q.queueLocked(r, bySweep, now)
	}
	q.wakeLocked(w.left) // Start's workers, if it runs
	return gen, done, nudge
}

// sweepTurnsLocked queues, while Start does not run, the records of the Sweep of gen whose turns have come, and the
// head of the line ahead of them, and returns how long until the next (0: none).
func (q *puQueue) sweepTurnsLocked(gen uint32) time.Duration {
	now := q.now()
	next, owed := int64(0), q.sweep.owed[:0]
	for _, r := range q.sweep.owed {
		switch {
		case r.sweep != sweepTurn || r.sweepGen != gen || r.state != turnWaiting:
			continue // handed on, or gone: a check that waits again owes it again
		case !q.running && r.waitUntil <= now:
			q.queueLocked(r, bySweep, now)
			q.wakeLocked(1)
			continue
		case !q.running && (next == 0 || r.waitUntil < next):
			next = r.waitUntil
		}
		owed = append(owed, r)
	}
	clear(q.sweep.owed[len(owed):])
	q.sweep.owed = owed
	// The head of the line, if not the Sweep's, holds back the turns behind it.
	if puid, ok := q.rate.front(); ok && !q.running && len(owed) > 0 {
		switch r := q.records[puid]; {
		case r == nil || r.state != turnWaiting || r.sweep == sweepTurn && r.sweepGen == gen:
		case r.waitUntil <= now:
			q.queueLocked(r, byTime, now)
			q.wakeLocked(1)
		case next == 0 || r.waitUntil < next:
			next = r.waitUntil
		}
	}
	return time.Duration(max(next-now, 0))
}

// sweepingLocked reports whether the Sweep of gen waits for checks.
func (q *puQueue) sweepingLocked(gen uint32) bool {
	return q.sweep.done != nil && gen == q.sweep.gen
}

// endSweepLocked ends the running Sweep, if any; its marks no longer count. A record whose turn it waited for, taken
// ahead of a retry (record.retryHeld), gives the turn back and waits for that retry again: only a Sweep checks a PU
// before its retry.
func (q *puQueue) endSweepLocked() {
	if w := &q.sweep; w.done != nil {
		now := q.now()
		for _, r := range w.held {
			if r.sweep == sweepTurn && r.sweepGen == w.gen && (r.state == turnWaiting || r.state == queued) && r.retryHeld != 0 {
				q.setWaitLocked(r, retrying, r.retryHeld) // leaves the line
				r.state, r.retryHeld, r.sweep = retrying, 0, notSwept
				q.wheel.schedule(r, now)
			}
		}
		if !q.running { // what it queued, for it alone, and no check took waits as before: no worker would take it
			for _, r := range q.records {
				if r.state == queued && r.sweepOnly && r.sweepGen == w.gen && (r.sweep == sweepNext || r.sweep == sweepTurn) {
					r.state, r.sweep = r.waitFor, notSwept
					q.wheel.schedule(r, now)
				}
			}
		}
		close(w.done)
		w.done, w.nudge, w.left, w.lanes, w.owed, w.held = nil, nil, 0, 0, nil, nil
		q.ready.cond.Broadcast() // its own goroutines stop
	}
}

// sweptLocked records that the running Sweep has, or no longer waits for, one of its checks.
func (q *puQueue) sweptLocked() {
	switch w := &q.sweep; {
	case w.left == 1:
		q.endSweepLocked()
	case w.left <= len(q.ready.slots): // it may wait for stuck checks only
		w.left--
		q.nudgeSweepLocked()
	default:
		w.left--
	}
}

// nudgeSweepLocked has the running Sweep look at its turns and stuck checks.
func (q *puQueue) nudgeSweepLocked() {
	select {
	case q.sweep.nudge <- struct{}{}:
	default:
	}
}
