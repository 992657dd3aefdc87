package deletion

// How the engine runs checks.
//
// One claim. A record is idle, queued, checking, waiting for a retry, or
// removed (record.state), and moves between these only under Engine.mu.
// A check runs only on a record it moved to checking, so no PU is ever
// checked twice at once. A trigger that finds its record being checked sets
// record.again, and the record is queued again when the check ends. A
// record waiting for the retry of a failed destroy is left alone by the
// wheel and by triggers until its retry is due; only Sweep checks it earlier.
//
// One queue. Every check, periodic (wheel.go), triggered, a retry or a
// Sweep's, goes through the ready queue (Engine.ready, oldest first) to a
// worker, which runs checks one after another, each under a deadline of
// CheckTimeout. A trigger queues its records and wakes as many idle
// workers as it queued records; TriggerPod costs the same with 10 or
// 100,000 PUs tracked.
//
// The workers. While Start runs, Workers goroutines take checks from the
// queue. Sweep queues every record and waits for their checks: Start's
// workers run them, or, while Start is not running, goroutines of the
// Sweep's own (at most Workers), which stop once the Sweep is done or Start
// begins. Checks that one goroutine starts within 1% of CheckTimeout of each
// other share one deadline context: a context with a deadline per check
// was a sixth of the CPU at cluster scale.
//
// Hung ports. A port that ignores its context keeps its worker until it
// returns; nothing watches for it, so that an idle engine wakes for
// nothing else. The check is logged when it returns, LivenessCheck fails
// once every worker is stuck past its deadline, a Sweep stops waiting for
// checks held by such workers, and Start, once its context ends, waits
// ShutdownTimeout for such checks, then logs them and returns without them.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/ports"
)

// Start runs the engine until ctx is done, then returns nil. It checks every
// PU about every SweepInterval and runs TriggerPod and TriggerAll requests
// at once, with at most Workers checks at a time; with an Inventory, it
// first restores the PUs it lists, before any check (see
// Options.Inventory). Triggers made before Start are run when it begins.
// Once ctx is done, no check and no DestroyPU starts; checks in flight see
// a cancelled context (a port call already under way may still finish, and
// its outcome is recorded), and Start returns within about ShutdownTimeout
// even when a port hangs. A second call returns ErrAlreadyStarted at once.
// Start makes the Engine a controller-runtime manager.Runnable.
func (c *Engine) Start(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return ErrAlreadyStarted
	}
	now := c.now()
	c.mu.Lock()
	c.running = true
	c.lastTurn = now
	// Made here, not in New, so that it belongs to the goroutines that
	// run the engine (a testing/synctest bubble sees the scheduler's wait
	// on it as durable).
	c.turnKick = make(chan struct{}, 1)
	turnKick := c.turnKick
	// Triggers before Start queued their records: they wait from now on.
	// Records waiting for a retry go to the wheel.
	for i := range c.ready[c.readyHead:] {
		c.ready[c.readyHead+i].at = now
	}
	pending := len(c.ready) - c.readyHead
	for _, r := range c.records {
		if r.state == waiting && r.paidAt == 0 { // those with a turn wait in c.turns
			c.addRetryLocked(r)
		}
	}
	tracked := len(c.records)
	c.cond.Broadcast() // a Sweep's own goroutines leave the queue to Start's workers
	c.mu.Unlock()

	var sched, inPorts sync.WaitGroup
	// The Inventory is listed before the first check: a PU that a check
	// destroyed before the list came back would be tracked again from the
	// list, and destroyed a second time. Only when this first list fails
	// do checks begin, and the list is retried meanwhile.
	restored := c.opts.Inventory == nil || c.restoreAttempt(ctx, 1)
	for i := range c.workers {
		inPorts.Go(func() { c.work(ctx, &c.workers[i], 0) })
	}
	sched.Go(func() { c.schedule(ctx, turnKick) })
	if !restored {
		inPorts.Go(func() { c.restore(ctx) })
	}
	c.log.V(1).Info("deletion engine started", "workers", c.opts.Workers, "tracked", tracked, "queued", pending,
		"sweepInterval", c.opts.SweepInterval.String(), "wheelSlots", len(c.wheel))

	<-ctx.Done()
	c.mu.Lock()
	c.running, c.stopped = false, true
	c.endSweepLocked() // the checks it waits for will not run
	c.cond.Broadcast()
	c.mu.Unlock()
	sched.Wait()
	done := make(chan struct{})
	go func() {
		inPorts.Wait()
		close(done)
	}()
	t := time.NewTimer(c.opts.ShutdownTimeout)
	defer t.Stop()
	select {
	case <-done:
		c.log.V(1).Info("deletion engine stopped")
	case <-t.C:
		c.log.Error(nil, "checks still stuck in ports that ignore their context; leaving them behind",
			"stuck", stuckIn(c.workers, c.realNow()), "shutdownTimeout", c.opts.ShutdownTimeout.String())
	}
	return nil
}

// Sweep checks every tracked PU once, those waiting for a retry included,
// and returns when all are done or ctx is. Its checks go through the same
// queue as every other: while Start runs, its workers run them; otherwise
// Sweep runs them on goroutines of its own, at most Workers at a time. A PU
// being checked when Sweep is called is checked once more after that check.
// A check stuck in a port past its deadline is left behind: Sweep returns
// once every check it still waits for is held by a worker so stuck, or
// every worker is. One Sweep runs at a time. While Start is not running
// (before it, or after it has returned), Sweep alone checks PUs.
func (c *Engine) Sweep(ctx context.Context) {
	c.sweepMu.Lock()
	defer c.sweepMu.Unlock()
	now := c.now()
	c.mu.Lock()
	n := 0
	for _, r := range c.records {
		switch r.state {
		case idle, waiting: // a waiting record's retry item is skipped once it is queued
			c.enqueueLocked(r, now)
		case checking:
			r.again = true
		}
		r.swept = sweepNext
		n++
	}
	if n == 0 {
		c.mu.Unlock()
		return
	}
	c.sweepLeft = n
	done := make(chan struct{})
	c.sweepDone = done
	c.sweepGen++
	gen := c.sweepGen
	var lanes []workerState
	if c.running {
		c.wakeLocked(n)
	} else {
		lanes = make([]workerState, min(c.opts.Workers, n))
	}
	c.mu.Unlock()
	defer c.flushFailures()
	for i := range lanes {
		go c.work(ctx, &lanes[i], gen)
	}

	t := time.NewTicker(stuckGrace)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
		case <-t.C:
			if !c.sweepStuck(lanes) {
				continue
			}
		}
		c.mu.Lock()
		if c.sweepGen == gen {
			c.endSweepLocked()
		}
		c.mu.Unlock()
		return
	}
}

// sweepStuck reports whether the running Sweep is to stop waiting: every
// check it waits for is held by a worker stuck in a port past its deadline,
// or every worker that could run them is. The workers are Start's while it
// runs, lanes otherwise.
func (c *Engine) sweepStuck(lanes []workerState) bool {
	now := c.realNow()
	c.mu.Lock()
	defer c.mu.Unlock()
	ws := lanes
	if c.running {
		ws = c.workers
	}
	held, stuck := 0, 0
	for i := range ws {
		if !ws[i].stuck(now) {
			continue
		}
		stuck++
		if r := ws[i].held; r != nil && r.swept != notSwept {
			held++
		}
	}
	if held < c.sweepLeft && stuck < len(ws) {
		return false
	}
	c.log.Error(nil, "Sweep leaves checks stuck in ports that ignore their context", "stuck", stuck, "unchecked", c.sweepLeft-held)
	return true
}

// endSweepLocked ends the running Sweep, if any, with what it has: the
// records it still waits for are no longer waited for.
func (c *Engine) endSweepLocked() {
	if c.sweepDone == nil {
		return
	}
	if c.sweepLeft > 0 {
		for _, r := range c.records {
			r.swept = notSwept
		}
		c.sweepLeft = 0
	}
	close(c.sweepDone)
	c.sweepDone = nil
	c.cond.Broadcast() // its own goroutines stop
}

// sweptLocked records that the running Sweep has what it waited for of r:
// the end of a check that began after the Sweep, or r's removal.
func (c *Engine) sweptLocked(r *record) {
	if r.swept == notSwept {
		return
	}
	r.swept = notSwept
	if c.sweepLeft--; c.sweepLeft == 0 {
		c.endSweepLocked()
	}
}

// queueLocked asks for a check of r now: an idle record joins the ready
// queue, one being checked is checked again when that check ends. It
// returns 1 when r joined the queue.
func (c *Engine) queueLocked(r *record, now int64) int {
	switch r.state {
	case idle:
		c.enqueueLocked(r, now)
		return 1
	case checking:
		r.again = true
	}
	return 0
}

// enqueueLocked puts r at the end of the ready queue.
func (c *Engine) enqueueLocked(r *record, now int64) {
	r.state = queued
	c.ready = append(c.ready, readyItem{r, now})
}

// readyItem is a record in the ready queue and when it was queued.
type readyItem struct {
	r  *record
	at int64
}

// spreadAfter is how long a queued check may wait before the worker that
// takes it wakes another: an eighth of a tick, at least 20ms. A batch of
// fast checks is done by one worker, which costs no wake-up of the others
// and no contention on the lock; slow checks still spread over all
// workers long before the next tick.
func (c *Engine) spreadAfter() time.Duration { return max(20*time.Millisecond, c.tick/8) }

// wakeLocked wakes up to n idle workers.
func (c *Engine) wakeLocked(n int) {
	for range min(n, c.idleWorkers) {
		c.cond.Signal()
	}
}

// workerState is a goroutine that runs checks: one of Start's workers or
// of a Sweep's own.
type workerState struct {
	// checkEnd is the deadline of the goroutine's running check (see
	// realNow); 0 while it runs none. the health checks and Sweep read it.
	checkEnd atomic.Int64
	// held is the record the goroutine checks; nil between checks.
	// Guarded by Engine.mu.
	held *record

	// ctx is the deadline context of the goroutine's checks, shared by the
	// checks it starts within 1% of CheckTimeout of each other, and ctxEnd
	// its deadline: a context with a deadline costs a timer and three
	// allocations, a sixth of a check's CPU at cluster scale (BENCHMARKS.md).
	// Only the goroutine itself touches them.
	ctx    context.Context
	cancel context.CancelFunc
	ctxEnd int64
}

// deadline returns the context of a check starting now under parent, and
// its deadline, between 99% and 100% of timeout away.
func (w *workerState) deadline(parent context.Context, now int64, timeout time.Duration) (context.Context, int64) {
	if w.ctx == nil || time.Duration(w.ctxEnd-now) < timeout-timeout/100 {
		w.done()
		w.ctx, w.cancel = context.WithTimeout(parent, timeout)
		w.ctxEnd = now + int64(timeout)
	}
	return w.ctx, w.ctxEnd
}

// done releases the goroutine's deadline context.
func (w *workerState) done() {
	if w.cancel != nil {
		w.cancel()
		w.ctx, w.cancel = nil, nil
	}
}

// stuck reports whether the goroutine is in a check past its deadline.
func (w *workerState) stuck(now int64) bool {
	end := w.checkEnd.Load()
	return end != 0 && now > end+int64(stuckGrace)
}

// stuckIn returns how many of ws are in a check past its deadline.
func stuckIn(ws []workerState, now int64) int {
	n := 0
	for i := range ws {
		if ws[i].stuck(now) {
			n++
		}
	}
	return n
}

// stuckGrace is how long past its deadline a check must run to count as
// stuck: ports that honour their context return well within it.
const stuckGrace = time.Second

// work runs the checks of the ready queue: for Start (sweep 0) until it
// stops, for the Sweep of that number until it is done or Start begins.
func (c *Engine) work(ctx context.Context, w *workerState, sweep uint64) {
	defer w.done()
	for ctx.Err() == nil {
		r := c.next(w, sweep)
		if r == nil {
			return
		}
		c.run(ctx, r, w)
	}
}

// next claims the oldest queued record for w, waiting for one; it returns
// nil once w is to stop (see work).
func (c *Engine) next(w *workerState, sweep uint64) *record {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		switch {
		case sweep == 0 && c.stopped, sweep != 0 && (c.sweepGen != sweep || c.sweepDone == nil):
			return nil
		case sweep != 0 && c.running:
			c.cond.Broadcast() // pass on a wake-up that may have been meant for Start's workers
			return nil
		case c.inFlight >= c.opts.Workers && c.readyHead < len(c.ready):
			// A Sweep's own goroutines and Start's workers together: no
			// more than Workers checks at once, whoever runs them.
			c.boundWaiting++
			c.cond.Wait()
			c.boundWaiting--
			continue
		}
		for c.readyHead < len(c.ready) {
			it := c.ready[c.readyHead]
			c.ready[c.readyHead] = readyItem{}
			c.readyHead++
			if it.r.state != queued {
				continue
			}
			it.r.state = checking
			// A first check records the sandbox: it asks the runtime too.
			it.r.checkFresh, it.r.fresh = it.r.fresh || it.r.lastRow < 0, false
			c.inFlight++
			if it.r.swept == sweepNext {
				it.r.swept = sweepThis
			}
			w.held = it.r
			// A periodic batch wakes one worker; when its checks are slow
			// enough that they wait, this wakes another.
			if c.idleWorkers > 0 && c.readyHead < len(c.ready) && time.Duration(c.now()-it.at) > c.spreadAfter() {
				c.cond.Signal()
			}
			c.compactReadyLocked()
			return it.r
		}
		c.compactReadyLocked()
		c.idleWorkers++
		c.cond.Wait()
		c.idleWorkers--
	}
}

// compactReadyLocked gives back the ready queue's consumed head: at once
// when the queue is empty, and when it is more than half of the queue.
func (c *Engine) compactReadyLocked() {
	switch {
	case c.readyHead == len(c.ready):
		if cap(c.ready) > 4096 {
			c.ready = nil // after a TriggerAll of a large engine
		} else {
			c.ready = c.ready[:0]
		}
		c.readyHead = 0
	case c.readyHead > 1024 && c.readyHead > len(c.ready)/2:
		n := copy(c.ready, c.ready[c.readyHead:])
		clear(c.ready[n:])
		c.ready = c.ready[:n]
		c.readyHead = 0
	}
}

// run checks the claimed record r under a deadline of CheckTimeout,
// releases it, and tells the Observer. w is the state of the goroutine
// running it.
func (c *Engine) run(ctx context.Context, r *record, w *workerState) {
	start := c.now()
	cctx, end := w.deadline(ctx, c.realNow(), c.opts.CheckTimeout)
	w.checkEnd.Store(end)
	res := c.check(cctx, r)
	if res.requeue != nil {
		// Requeue gets a deadline of its own: a Requeuer that waits for it
		// is not a port ignoring the check's.
		end = c.realNow() + int64(c.opts.CheckTimeout)
		w.checkEnd.Store(end)
		c.requeue(ctx, r, res.requeue)
	}
	w.checkEnd.Store(0)
	if late := time.Duration(c.realNow() - end); late > 0 {
		c.log.Error(nil, "a port ignored its check's deadline; its worker was stuck meanwhile",
			"puID", r.PUID, "pod", r.Pod.String(), "late", late.String())
	}
	res.end = c.now()
	snapshot, swept := c.release(w, r, res)
	if c.opts.Observer != nil {
		c.observe(Event{Kind: EventChecked, PU: snapshot, Verdict: res.verdict, CheckDuration: time.Duration(res.end - start)})
	}
	if swept { // once the Observer knows, so that a Sweep returns after it
		c.mu.Lock()
		c.sweptLocked(r)
		c.mu.Unlock()
	}
}

// result is what a check hands to run and release.
type result struct {
	verdict Verdict
	vetoed  bool
	err     error
	retryAt int64 // set when a destroy failed and will be retried
	// deferred: the destroy waits for its turn under the destroy rate.
	deferred bool
	requeue  *corev1.Pod // the pod to requeue, its PU destroyed or dropped (row 10)
	end      int64
}

// release ends w's check of r with res and returns r's PU as it now
// stands, and whether the running Sweep waited for this check: a failed
// destroy waits for its retry, a trigger or a Sweep that came meanwhile
// queues r again, anything else leaves it idle.
func (c *Engine) release(w *workerState, r *record, res result) (pu ports.PU, swept bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w.held = nil
	if c.inFlight--; c.boundWaiting > 0 {
		c.cond.Broadcast()
	}
	r.lastChecked, r.lastRow, r.vetoed, r.lastErr = res.end, int8(res.verdict.Row), res.vetoed, res.err
	if res.retryAt != 0 {
		r.retryAt = res.retryAt
	}
	// A failed destroy, or a check of a record that waits for a retry (a
	// Sweep's) that destroyed nothing: the record waits until its retry is
	// due, whatever a trigger asked meanwhile. Only a Sweep checks it earlier.
	retry := res.retryAt != 0 || r.retryAt > c.now() || res.deferred
	switch {
	case r.state == removed:
	case r.swept == sweepNext || r.again && !retry && !c.stopped:
		c.enqueueLocked(r, c.now())
		c.wakeLocked(1)
	case retry:
		r.state = waiting
		if c.running && !res.deferred { // a deferred destroy waits in Engine.turns
			c.addRetryLocked(r)
		}
	default:
		r.state = idle
	}
	r.again = false
	return r.PU, r.swept != notSwept && r.state != queued
}

// realNow returns the time package's monotonic time, in nanoseconds since
// the Engine was made: check deadlines are context deadlines, which
// follow it (and testing/synctest's fake time), whatever Options.Clock says.
func (c *Engine) realNow() int64 { return int64(time.Since(c.realEpoch)) }
