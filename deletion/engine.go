package deletion

// How the engine runs checks.
//
// One claim. An entry is idle, queued, checking, waiting for a retry, or
// removed (entry.state), and moves between these only under Controller.mu.
// A check runs only on an entry it moved to checking, so no PU is ever
// checked twice at once. A trigger that finds its entry being checked sets
// entry.again, and the entry is queued again when the check ends. An entry
// waiting for the retry of a failed destroy is left alone by the wheel and
// by triggers until its retry is due; only Sweep checks it earlier.
//
// One queue. Every check that Start runs, periodic, triggered or a retry,
// goes through the ready queue (Controller.ready, oldest first) to one of
// Workers goroutines, which run checks one after another, each under a
// deadline of ItemTimeout. A trigger queues its entries and wakes as many
// idle workers as it queued entries; TriggerPod costs the same with 10 or
// 100,000 entries tracked.
//
// One scheduler. Periodic checks and retries come from a wheel: every entry
// sits in one of its slots, chosen by a hash of its PUID, and one goroutine
// wakes once per tick (SweepInterval/64, but 0.5 to 1 s) to queue the idle
// entries of that tick's slot and the retries due by then
// (Controller.retries, by tick: a retry's time is rounded up to the next
// tick). Each entry is thus checked once per interval at its own phase, the
// first time within one interval of Track, in one or two batches a second.
// The scheduler sleeps while nothing is tracked. A wake-up is what an idle
// node agent pays for: at 250 entries and 5s, two wake-ups a second and the
// worker each wakes (BENCHMARKS.md). The client-go workqueue that scheduled
// checks before cost a timer wake-up per check. Once per interval the
// scheduler also logs one summary line per failing port (failures.go).
//
// Concurrency. Start's workers and Sweep's goroutines take one of Workers
// slots (Controller.slots) for each check, so no more than Workers checks
// run at once, whoever runs them. Checks that one goroutine starts within
// 1% of ItemTimeout of each other share one deadline context: a context
// with a deadline per check was a sixth of the CPU at cluster scale.
//
// Hung ports. A port that ignores its context keeps its worker until it
// returns; nothing watches for it, so that an idle engine wakes for
// nothing else. The check is logged when it returns, HealthCheck fails
// once every worker is stuck past its deadline, and Start, once its
// context ends, waits ShutdownTimeout for such checks, then logs them and
// returns without them.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Start runs the engine until ctx is done, then returns nil. It checks every
// entry about every SweepInterval and runs TriggerPod and TriggerAll requests
// at once, with at most Workers checks at a time; with an Inventory, it
// first restores the PUs it lists, before any check (see
// Options.Inventory). Triggers made before Start are run when it begins.
// Once ctx is done, no check and no DestroyPU starts; checks in flight see
// a cancelled context (a port call already under way may still finish, and
// its outcome is recorded), and Start returns within about ShutdownTimeout
// even when a port hangs. A
// second call returns ErrAlreadyStarted at once. Start makes the Controller
// a controller-runtime manager.Runnable.
func (c *Controller) Start(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return ErrAlreadyStarted
	}
	now := c.now()
	c.mu.Lock()
	c.running = true
	c.lastTurn = now
	// Triggers before Start left their entries queued, waiting retries
	// their time: hand both to the scheduler and the workers.
	pending := 0
	for _, e := range c.entries {
		switch e.state {
		case queued:
			c.ready = append(c.ready, readyItem{e, now})
			pending++
		case waiting:
			c.addRetryLocked(e)
		}
	}
	tracked := len(c.entries)
	c.mu.Unlock()

	var sched, inPorts sync.WaitGroup
	// The Inventory is listed before the first check: a PU that a check
	// destroyed before the list came back would be tracked again from the
	// list, and destroyed a second time. Only when this first list fails
	// do checks begin, and the list is retried meanwhile.
	restored := c.opts.Inventory == nil || c.restoreAttempt(ctx, 1)
	for i := range c.workers {
		inPorts.Go(func() { c.work(ctx, &c.workers[i]) })
	}
	sched.Go(func() { c.schedule(ctx) })
	if !restored {
		inPorts.Go(func() { c.restore(ctx) })
	}
	c.log.V(1).Info("deletion engine started", "workers", c.opts.Workers, "entries", tracked, "queued", pending,
		"sweepInterval", c.opts.SweepInterval.String(), "wheelSlots", len(c.wheel))

	<-ctx.Done()
	c.mu.Lock()
	c.running, c.stopped = false, true
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
			"stuck", c.stuckWorkers(), "shutdownTimeout", c.opts.ShutdownTimeout.String())
	}
	return nil
}

// schedule turns the wheel until ctx is done: at each tick it queues the
// idle entries of the tick's slot and the retries due. It works from the
// clock, not from the count of ticks, so that late ticks (a busy machine,
// a fake clock stepped by a whole interval) still reach every slot once per
// turn, and never pile up. It sleeps while nothing is tracked.
func (c *Controller) schedule(ctx context.Context) {
	var timer interface {
		C() <-chan time.Time
		Reset(time.Duration) bool
		Stop() bool
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	last := c.tickNow()
	lastFlush := last
	perInterval := int64(len(c.wheel))
	defer c.flushFailures()
	for {
		c.mu.Lock()
		if len(c.entries) == 0 {
			c.sleeping = true
			clear(c.retries) // only removed entries can be left there
			c.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-c.kick:
			}
			last = c.tickNow()
			c.mu.Lock()
			c.lastTurn = c.now()
			c.mu.Unlock()
			continue
		}
		c.mu.Unlock()

		wait := time.Duration(last+1)*c.tick - c.opts.Clock.Since(c.epoch)
		if timer == nil {
			timer = c.opts.Clock.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
		}
		cur := c.tickNow()
		if cur <= last {
			continue
		}
		c.turn(last+1, cur)
		last = cur
		if cur-lastFlush >= perInterval {
			c.flushFailures() // once per interval at most
			lastFlush = cur
		}
	}
}

// tickNow returns the index of the last wheel tick that is due.
func (c *Controller) tickNow() int64 {
	return int64(c.opts.Clock.Since(c.epoch) / c.tick)
}

// tickOf returns the first wheel tick at or after the engine time t.
func (c *Controller) tickOf(t int64) int64 {
	d := time.Duration(t - 1)
	k := int64(d / c.tick)
	if time.Duration(k)*c.tick < d {
		k++
	}
	return k
}

// turn queues the idle entries of the slots of ticks from to to (each slot
// once at most) and the retries due by tick to, and wakes workers for them.
func (c *Controller) turn(from, to int64) {
	now := c.now()
	slots := int64(len(c.wheel))
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k := max(from, to-slots+1); k <= to; k++ {
		for _, e := range c.wheel[k%slots] {
			if e.state == idle {
				e.state = queued
				c.ready = append(c.ready, readyItem{e, now})
				n++
			}
		}
	}
	due := func(k int64, list []*entry) {
		for _, e := range list {
			if e.state == waiting && c.tickOf(e.retryAt) == k {
				e.state = queued
				c.ready = append(c.ready, readyItem{e, now})
				n++
			}
		}
		delete(c.retries, k)
	}
	if to-from < int64(len(c.retries)) {
		for k := from; k <= to; k++ {
			if list, ok := c.retries[k]; ok {
				due(k, list)
			}
		}
	} else {
		for k, list := range c.retries {
			if k <= to {
				due(k, list)
			}
		}
	}
	c.lastTurn = now
	c.wakeLocked(min(n, 1)) // more once the batch waits (see next)
}

// addRetryLocked files the waiting entry e under the tick its retry is due at.
func (c *Controller) addRetryLocked(e *entry) {
	k := c.tickOf(e.retryAt)
	c.retries[k] = append(c.retries[k], e)
}

// spreadAfter is how long a queued check may wait before the worker that
// takes it wakes another: an eighth of a tick, at least 20ms. A batch of
// fast checks is done by one worker, which costs no wake-up of the others
// and no contention on the lock; slow checks still spread over all
// workers long before the next tick.
func (c *Controller) spreadAfter() time.Duration { return max(20*time.Millisecond, c.tick/8) }

// wakeLocked wakes up to n idle workers.
func (c *Controller) wakeLocked(n int) {
	for range min(n, c.idleWorkers) {
		c.cond.Signal()
	}
}

// workerState is a goroutine that runs checks: Start's workers and Sweep's.
type workerState struct {
	// checkEnd is the deadline of the goroutine's running check (see
	// realNow); 0 while it runs none. HealthCheck and Sweep read it.
	checkEnd atomic.Int64

	// ctx is the deadline context of the goroutine's checks, shared by the
	// checks it starts within 1% of ItemTimeout of each other, and ctxEnd
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

// work runs the checks of the ready queue until Start stops.
func (c *Controller) work(ctx context.Context, w *workerState) {
	defer w.done()
	for {
		e := c.next()
		if e == nil {
			return
		}
		c.run(ctx, e, w, 0)
	}
}

// next claims the oldest queued entry, waiting for one; it returns nil once
// Start stops.
func (c *Controller) next() *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if c.stopped {
			return nil
		}
		for c.readyHead < len(c.ready) {
			it := c.ready[c.readyHead]
			c.ready[c.readyHead] = readyItem{}
			c.readyHead++
			if it.e.state == queued {
				it.e.state = checking
				// A periodic batch wakes one worker; when its checks are
				// slow enough that they wait, this wakes another.
				if c.idleWorkers > 0 && c.readyHead < len(c.ready) && time.Duration(c.now()-it.at) > c.spreadAfter() {
					c.cond.Signal()
				}
				c.compactReadyLocked()
				return it.e
			}
		}
		c.compactReadyLocked()
		c.idleWorkers++
		c.cond.Wait()
		c.idleWorkers--
	}
}

// compactReadyLocked gives back the ready queue's consumed head: at once
// when the queue is empty, and when it is more than half of the queue.
func (c *Controller) compactReadyLocked() {
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

// Sweep checks every tracked entry once, entries waiting for a retry
// included, with at most Workers checks at a time (Start's included), and
// returns when all are done or ctx is. It is safe to call while Start runs:
// an entry that another check holds is waited for until that check's
// deadline, then checked. A check stuck in a port past its deadline is left
// behind: Sweep returns once every one of its goroutines that has not
// finished is stuck so, and skips the entries no goroutine was left to
// check, as it does when no check slot frees up within ItemTimeout.
func (c *Controller) Sweep(ctx context.Context) {
	c.mu.Lock()
	all := make([]*entry, 0, len(c.entries))
	for _, e := range c.entries {
		all = append(all, e)
	}
	c.mu.Unlock()
	n := min(c.opts.Workers, len(all))
	if n == 0 {
		return
	}
	var next, alive atomic.Int64
	done := make(chan struct{}, n)
	lanes := make([]workerState, n)
	alive.Store(int64(n))
	for i := range lanes {
		go func() {
			defer func() {
				lanes[i].done()
				alive.Add(-1)
				done <- struct{}{}
			}()
			for ctx.Err() == nil {
				j := next.Add(1) - 1
				if j >= int64(len(all)) {
					return
				}
				if e := all[j]; c.claimForSweep(ctx, e) {
					c.run(ctx, e, &lanes[i], c.opts.ItemTimeout+stuckGrace)
				}
			}
		}()
	}
	defer c.flushFailures()
	// Wait for the goroutines; every ItemTimeout, see whether the ones left
	// are all stuck in ports past their deadline, and leave them if so.
	t := time.NewTimer(c.opts.ItemTimeout + stuckGrace)
	defer t.Stop()
	for finished := 0; finished < n; {
		select {
		case <-done:
			finished++
			continue
		case <-t.C:
		}
		now, stuck := c.realNow(), 0
		for i := range lanes {
			if end := lanes[i].checkEnd.Load(); end != 0 && now > end+int64(stuckGrace) {
				stuck++
			}
		}
		if left := alive.Load(); left > 0 && int64(stuck) == left {
			c.log.Error(nil, "Sweep leaves checks stuck in ports that ignore their context", "stuck", stuck,
				"unchecked", max(0, int64(len(all))-next.Load()))
			return
		}
		t.Reset(c.opts.ItemTimeout + stuckGrace)
	}
}

// claimForSweep claims e for a check whatever its state but removed,
// waiting for a check that holds it until that check's deadline.
func (c *Controller) claimForSweep(ctx context.Context, e *entry) bool {
	for {
		c.mu.Lock()
		switch e.state {
		case removed:
			c.mu.Unlock()
			return false
		case idle, queued, waiting:
			e.state = checking // a ready or retry item left for it is skipped
			c.mu.Unlock()
			return true
		}
		left := c.opts.ItemTimeout + stuckGrace // claimed, waiting for a slot
		if end := e.checkEnd.Load(); end != 0 {
			left = time.Duration(end - c.realNow())
			if left <= 0 {
				c.mu.Unlock()
				return false // stuck in a port past its deadline: left behind
			}
		}
		if c.released == nil {
			c.released = make(chan struct{})
		}
		released := c.released
		c.mu.Unlock()
		t := time.NewTimer(left)
		select {
		case <-released:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
		t.Stop()
	}
}

// run checks the claimed entry e under a deadline of ItemTimeout once a
// slot is free, releases it, and tells the Observer. w is the state of the
// goroutine running it. With slotWait, it gives up waiting for a slot after
// that long: every slot is then held by a check stuck in a port.
func (c *Controller) run(ctx context.Context, e *entry, w *workerState, slotWait time.Duration) {
	var timeout <-chan time.Time
	if slotWait > 0 {
		t := time.NewTimer(slotWait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		c.release(e, result{})
		return
	case <-timeout:
		c.log.Error(nil, "no check slot freed up within ItemTimeout: every slot is held by a check stuck in a port; leaving the entry unchecked",
			"puID", e.PUID, "pod", e.Pod.String())
		c.release(e, result{})
		return
	}
	start := c.now()
	cctx, end := w.deadline(ctx, c.realNow(), c.opts.ItemTimeout)
	e.checkEnd.Store(end)
	w.checkEnd.Store(end)
	r := c.check(cctx, e)
	if r.requeue != nil {
		// Requeue gets a deadline of its own: a Requeuer that waits for it
		// is not a port ignoring the check's.
		end = c.realNow() + int64(c.opts.ItemTimeout)
		e.checkEnd.Store(end)
		w.checkEnd.Store(end)
		c.requeue(ctx, e, r.requeue)
	}
	w.checkEnd.Store(0)
	<-c.slots
	if late := time.Duration(c.realNow() - end); late > 0 {
		c.log.Error(nil, "a port ignored its check's deadline; its worker was stuck meanwhile",
			"puID", e.PUID, "pod", e.Pod.String(), "late", late.String())
	}
	r.end = c.now()
	snapshot := c.release(e, r)
	if c.opts.Observer != nil {
		c.observe(Event{Kind: EventChecked, Entry: snapshot, Verdict: r.verdict, Duration: time.Duration(r.end - start)})
	}
}

// result is what a check hands to run and release.
type result struct {
	verdict Verdict
	vetoed  bool
	err     error
	retryAt int64       // set when a destroy failed and will be retried
	requeue *corev1.Pod // the pod to requeue, its PU destroyed or dropped (row 10)
	end     int64
}

// release ends the check of e with r and returns e as it now stands: a
// failed destroy waits for its retry, a trigger that came meanwhile queues
// e again, anything else leaves it idle.
func (c *Controller) release(e *entry, r result) Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.end != 0 {
		e.lastChecked, e.lastRow, e.vetoed, e.lastErr = r.end, int8(r.verdict.Row), r.vetoed, r.err
	}
	e.checkEnd.Store(0)
	switch {
	case e.state == removed:
	case r.retryAt != 0 || e.retryAt > c.now():
		// A failed destroy, or a check of an entry that waits for a retry
		// (Sweep's, or one that did not run) that destroyed nothing: it
		// waits until its retry is due, whatever a trigger asked meanwhile.
		if r.retryAt != 0 {
			e.retryAt = r.retryAt
		}
		e.state = waiting
		if c.running {
			c.addRetryLocked(e)
		}
	case e.again && !c.stopped:
		e.state = queued
		if c.running {
			c.ready = append(c.ready, readyItem{e, c.now()})
			c.wakeLocked(1)
		}
	default:
		e.state = idle
	}
	e.again = false
	if c.released != nil {
		close(c.released)
		c.released = nil
	}
	return e.Entry
}

// stuckWorkers returns how many workers are in a check past its deadline.
func (c *Controller) stuckWorkers() int {
	now, n := c.realNow(), 0
	for i := range c.workers {
		if end := c.workers[i].checkEnd.Load(); end != 0 && now > end+int64(stuckGrace) {
			n++
		}
	}
	return n
}

// stuckGrace is how long past its deadline a check must run to count as
// stuck: ports that honour their context return well within it.
const stuckGrace = time.Second

// realNow returns the time package's monotonic time, in nanoseconds since
// the Controller was made: check deadlines are context deadlines, which
// follow it (and testing/synctest's fake time), whatever Options.Clock says.
func (c *Controller) realNow() int64 { return int64(time.Since(c.realEpoch)) }
