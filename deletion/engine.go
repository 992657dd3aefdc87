package deletion

// How the engine runs checks.
//
// Scheduling. Periodic checks come from a wheel: every entry sits in one of
// its slots (one per 50ms of SweepInterval, at most 64), chosen at random
// when it is tracked, and a ticker of SweepInterval/slots on Options.Clock
// checks the entries of each slot in turn, as a small Sweep. Each entry is
// thus checked once per interval at its own phase, the first time within one
// interval of Track, and checks stay spread over the interval. Everything
// else goes through a client-go rate-limiting workqueue of PUIDs served by
// Workers goroutines: TriggerPod and TriggerAll add keys at once, and a
// failed destroy schedules its retry with per-key exponential backoff
// (AddRateLimited). The queue merges duplicate keys and never hands one key
// to two workers at once. (Scheduling every periodic check through the
// queue, with AddAfter, cost 5x the CPU of the seed's loop at 10,000
// entries: see BENCHMARKS.md.)
//
// Exclusivity. Sweep and the wheel check entries outside the queue, so the
// queue alone cannot keep two checks of one PUID apart. Every check first
// claims its entry (entry.busy, under Controller.mu). A queue worker that
// finds the entry claimed marks it (entry.again) and moves on; the holder
// re-adds the key when it releases the entry. Sweep waits for the holder
// instead, up to ItemTimeout; the wheel skips the entry, whose running check
// stands for the periodic one.
//
// Concurrency. Every check, from a queue worker, the wheel or Sweep, holds
// one of Workers slots and runs on the goroutine that claimed it.
//
// Hung ports. Checks run on lanes: goroutines that each run one check at a
// time, inline. A watchdog goroutine, running while any lane exists, looks
// at every lane twice per abandonGrace. When a lane's check has outlived its
// ItemTimeout deadline, or its parent context has ended, by more than
// abandonGrace (ports that honour their context return by then), the
// watchdog abandons the lane: it gives back its slot and starts a new lane
// in its place, so the engine keeps its Workers. The stuck goroutine keeps
// its entry claimed, so no second check of that PUID can start; when the
// port finally returns, it finishes the check and exits. Start waits up to
// ShutdownTimeout for such checks, then logs them and returns. A check costs
// no goroutine, timer or allocation of its own: checks that a lane starts
// close together share one deadline context (lane.checkContext).

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// abandonGrace is how long the watchdog waits, after a check's context has
// ended, for a port that returns promptly on cancellation.
const abandonGrace = 50 * time.Millisecond

// Start runs the engine until ctx is done, then returns nil. It checks every
// entry about every SweepInterval and runs TriggerPod and TriggerAll requests
// at once, with at most Workers checks at a time. Requests made before Start
// are run when it begins. Once ctx is done, checks in flight see a cancelled
// context and Start returns within about ShutdownTimeout even when a port
// hangs. A second call returns ErrAlreadyStarted at once. Start makes the
// Controller a controller-runtime manager.Runnable.
func (c *Controller) Start(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return ErrAlreadyStarted
	}
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](c.opts.RetryMinDelay, c.opts.RetryMaxDelay),
		workqueue.TypedRateLimitingQueueConfig[string]{Clock: c.opts.Clock},
	)

	c.mu.Lock()
	c.queue = q
	var now []string
	if c.pendingAll {
		now = c.puidsLocked()
	} else {
		for key := range c.pendingPods {
			for e := c.byPod[key]; e != nil; e = e.nextOfPod {
				now = append(now, e.PUID)
			}
		}
	}
	c.pendingAll = false
	clear(c.pendingPods)
	tracked := len(c.entries)
	c.mu.Unlock()
	for _, id := range now {
		q.Add(id)
	}

	var workers sync.WaitGroup
	workers.Add(c.opts.Workers)
	for range c.opts.Workers {
		c.startLane(ctx, func(l *lane) { c.worker(ctx, l, q, &workers) })
	}
	workers.Go(func() { c.turnWheel(ctx) })
	if c.opts.Inventory != nil {
		workers.Go(func() { c.restore(ctx) })
	}
	c.log.V(1).Info("deletion engine started", "workers", c.opts.Workers, "entries", tracked)

	<-ctx.Done()
	c.mu.Lock()
	c.queue = nil
	c.mu.Unlock()
	q.ShutDown()
	workers.Wait()
	if !c.inflight.wait(c.opts.ShutdownTimeout) {
		c.log.Error(nil, "checks still stuck in ports that ignore their context; leaving them behind", "checks", c.inflight.count())
	}
	c.log.V(1).Info("deletion engine stopped")
	return nil
}

// turnWheel checks the entries of each wheel slot when the slot's turn
// comes, until ctx is done. It works from the clock, not from the count of
// ticks, so that late or coalesced ticks (a busy machine, a fake clock
// stepped by a whole interval, a slot whose checks took longer than a tick)
// still reach every slot once per turn, and never pile up.
func (c *Controller) turnWheel(ctx context.Context) {
	slots := len(c.wheel)
	tick := c.opts.SweepInterval / time.Duration(slots)
	ticker := c.opts.Clock.NewTicker(tick)
	defer ticker.Stop()
	start := c.opts.Clock.Now()
	var last int64 // the last tick whose slot was checked
	var due []*entry
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		cur := int64(c.opts.Clock.Since(start) / tick)
		from := max(last+1, cur-int64(slots)+1)
		due = due[:0]
		c.mu.Lock()
		for t := from; t <= cur; t++ {
			due = append(due, c.wheel[t%int64(slots)]...)
		}
		c.mu.Unlock()
		last = max(last, cur)
		c.checkAll(ctx, due, false)
		clear(due) // let removed entries go
	}
}

// worker checks the keys of q on lane l until q is shut down, then calls
// wg.Done. When one of its checks hangs, the lane that replaces it takes
// over its place in wg, and this goroutine exits once the port returns.
func (c *Controller) worker(ctx context.Context, l *lane, q workqueue.TypedRateLimitingInterface[string], wg *sync.WaitGroup) {
	for {
		id, shutdown := q.Get()
		if shutdown {
			wg.Done()
			return
		}
		ok := c.processKey(ctx, l, q, id)
		q.Done(id)
		if !ok {
			return
		}
	}
}

// processKey checks the entry of id, if it is still tracked and not being
// checked. It returns false when the check hung and the lane was replaced.
func (c *Controller) processKey(ctx context.Context, l *lane, q workqueue.TypedRateLimitingInterface[string], id string) bool {
	if ctx.Err() != nil {
		return true
	}
	e := c.tryClaim(id)
	if e == nil {
		return true
	}
	return c.checkClaimed(ctx, l, e)
}

// Sweep checks every tracked entry once, entries waiting for a retry
// included, with at most Workers checks at a time, and returns when all are
// done or ctx is. It is safe to call while Start runs: an entry that is
// being checked already is waited for (up to ItemTimeout), then checked. A
// check stuck in a port past its deadline is left behind, not waited for.
func (c *Controller) Sweep(ctx context.Context) {
	c.mu.Lock()
	all := make([]*entry, 0, len(c.entries))
	for _, e := range c.entries {
		all = append(all, e)
	}
	c.mu.Unlock()
	c.checkAll(ctx, all, true)
}

// checkAll checks the entries on up to Workers lanes and returns when all
// are checked or ctx is done. With wait, an entry being checked already is
// waited for (Sweep); without, it is skipped, the running check standing for
// this one (the wheel). Entries removed meanwhile are skipped. entries is
// not used once checkAll returns.
func (c *Controller) checkAll(ctx context.Context, entries []*entry, wait bool) {
	var next atomic.Int64
	var wg sync.WaitGroup
	loop := func(l *lane) {
		for ctx.Err() == nil {
			i := next.Add(1) - 1
			if i >= int64(len(entries)) {
				break
			}
			if !c.checkOne(ctx, l, entries[i], wait) {
				return // replaced; the new lane calls wg.Done
			}
		}
		wg.Done()
	}
	n := min(c.opts.Workers, len(entries))
	wg.Add(n)
	for range n {
		c.startLane(ctx, loop)
	}
	wg.Wait()
}

// checkOne claims e and checks it on lane l. It returns false when the
// check hung and the lane was replaced.
func (c *Controller) checkOne(ctx context.Context, l *lane, e *entry, wait bool) bool {
	if !c.claim(ctx, e, wait) {
		return true
	}
	return c.checkClaimed(ctx, l, e)
}

// checkClaimed checks the claimed entry e on lane l once a slot is free. It
// returns false when the check hung and the lane was replaced.
func (c *Controller) checkClaimed(ctx context.Context, l *lane, e *entry) bool {
	if !c.takeSlot(ctx) {
		c.release(e)
		return true
	}
	if !c.checkHere(ctx, l, e) {
		return false
	}
	c.giveSlot()
	return true
}

// checkHere runs one check of the claimed entry e on lane l, whose
// goroutine holds a slot. It returns false when the watchdog abandoned the
// lane meanwhile: the slot was given back and a new lane started, and the
// caller must exit without touching the slot or its WaitGroup.
func (c *Controller) checkHere(parent context.Context, l *lane, e *entry) bool {
	ctx, deadline := l.checkContext(c.opts.ItemTimeout)
	l.begin(e, deadline)
	c.inflight.add()
	c.check(parent, ctx, e)
	c.inflight.done()
	return l.end()
}

// lane is a goroutine that runs checks inline, one at a time, under the
// watchdog's eye.
type lane struct {
	parent context.Context // the context its checks derive from
	loop   func(*lane)     // what it runs; a replacement runs the same
	// ctx is parent, for the lane alone: check contexts are made under
	// it, so that lanes do not contend on parent's lock.
	ctx       context.Context
	cancelCtx context.CancelFunc
	// check is the deadline context of the lane's checks, shared by the
	// checks that start within 1% of ItemTimeout of each other (see
	// checkContext); checkEnd is its deadline.
	check       context.Context
	checkCancel context.CancelFunc
	checkEnd    time.Time

	mu        sync.Mutex
	running   bool      // a check is running
	abandoned bool      // the watchdog gave up on it
	entry     *entry    // the entry being checked
	deadline  time.Time // when the running check's context ends
	cancelled time.Time // when the watchdog first saw parent done
}

// checkContext returns the context of a check starting now on the lane and
// its deadline, between 99% and 100% of timeout away. Checks of one lane
// that start close together share one context: a context with a deadline
// costs a timer, and a lane may start thousands of checks a second. The
// lane runs one check at a time, so no running check loses its context
// when a new one replaces it.
func (l *lane) checkContext(timeout time.Duration) (context.Context, time.Time) {
	if l.check == nil || time.Until(l.checkEnd) < timeout-timeout/100 {
		if l.checkCancel != nil {
			l.checkCancel()
		}
		l.check, l.checkCancel = context.WithTimeout(l.ctx, timeout)
		l.checkEnd, _ = l.check.Deadline()
	}
	return l.check, l.checkEnd
}

func (l *lane) begin(e *entry, deadline time.Time) {
	l.mu.Lock()
	l.running, l.entry, l.deadline = true, e, deadline
	l.mu.Unlock()
}

// end reports whether the check finished before the watchdog gave up on it.
func (l *lane) end() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running, l.entry = false, nil
	return !l.abandoned
}

// hung reports whether the lane's check has outlived its context by more
// than abandonGrace, and if so marks the lane abandoned and returns the
// entry it is stuck on.
func (l *lane) hung(now time.Time) (*entry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancelled.IsZero() && l.parent.Err() != nil {
		l.cancelled = now
	}
	if !l.running || l.abandoned {
		return nil, false
	}
	end := l.deadline
	if !l.cancelled.IsZero() && l.cancelled.Before(end) {
		end = l.cancelled
	}
	if now.Sub(end) < abandonGrace {
		return nil, false
	}
	l.abandoned = true
	return l.entry, true
}

// startLane starts a goroutine running loop on a new lane under the watchdog.
func (c *Controller) startLane(parent context.Context, loop func(*lane)) {
	l := &lane{parent: parent, loop: loop}
	l.ctx, l.cancelCtx = context.WithCancel(parent)
	c.lanesMu.Lock()
	c.lanes[l] = struct{}{}
	if !c.watching {
		c.watching = true
		go c.watchdog()
	}
	c.lanesMu.Unlock()
	go func() {
		loop(l)
		l.cancelCtx()
		c.lanesMu.Lock()
		delete(c.lanes, l)
		c.lanesMu.Unlock()
	}()
}

// watchdogTick is how often the watchdog looks at the lanes.
const watchdogTick = abandonGrace / 2

// watchdog replaces lanes stuck in a port past their deadline. It runs
// while any lane exists.
func (c *Controller) watchdog() {
	t := time.NewTicker(watchdogTick)
	defer t.Stop()
	type stuck struct {
		l *lane
		e *entry
	}
	var found []stuck
	for range t.C {
		now := time.Now()
		c.lanesMu.Lock()
		if len(c.lanes) == 0 {
			c.watching = false
			c.lanesMu.Unlock()
			return
		}
		for l := range c.lanes {
			if e, ok := l.hung(now); ok {
				delete(c.lanes, l)
				found = append(found, stuck{l, e})
			}
		}
		c.lanesMu.Unlock()
		for _, s := range found {
			c.log.Error(context.DeadlineExceeded, "check outlived its deadline in a port that ignores its context; moving on, the entry stays claimed until the port returns",
				"puID", s.e.PUID, "pod", s.e.Pod.String())
			c.giveSlot()
			c.startLane(s.l.parent, s.l.loop)
		}
		clear(found)
		found = found[:0]
	}
}

func (c *Controller) takeSlot(ctx context.Context) bool {
	select {
	case c.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (c *Controller) giveSlot() { <-c.slots }

// tryClaim claims the entry of id for a check. It returns nil when the entry
// is gone, or when it is claimed already: then it is marked to be checked
// again once released.
func (c *Controller) tryClaim(id string) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[id]
	if e == nil {
		return nil
	}
	if e.busy {
		e.again = true
		return nil
	}
	e.busy = true
	return e
}

// claim claims e for a check. It fails when e is no longer tracked, or is
// claimed already and wait is false. With wait, it waits up to ItemTimeout
// for the check holding e, and fails when that wait is over or ctx is done.
func (c *Controller) claim(ctx context.Context, e *entry, wait bool) bool {
	var deadline <-chan time.Time
	for {
		c.mu.Lock()
		if e.removed {
			c.mu.Unlock()
			return false
		}
		if !e.busy {
			e.busy = true
			c.mu.Unlock()
			return true
		}
		if !wait {
			c.mu.Unlock()
			return false
		}
		if e.idle == nil {
			e.idle = make(chan struct{})
		}
		idle := e.idle
		c.mu.Unlock()

		if deadline == nil {
			t := time.NewTimer(c.opts.ItemTimeout)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-idle:
		case <-deadline:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// release ends the claim on e and returns the queue, nil when Start is not
// running. When a scheduled check was refused while e was claimed, and e is
// still tracked, it is checked again at once.
func (c *Controller) release(e *entry) workqueue.TypedRateLimitingInterface[string] {
	c.mu.Lock()
	q := c.queue
	e.busy = false
	again := e.again && !e.removed
	e.again = false
	if e.idle != nil {
		close(e.idle)
		e.idle = nil
	}
	c.mu.Unlock()
	if again && q != nil {
		q.Add(e.PUID)
	}
	return q
}

// inflight counts running checks and lets Start wait for them with a
// timeout. Its channel exists only while someone waits.
type inflight struct {
	n    atomic.Int64
	mu   sync.Mutex
	idle chan struct{} // closed when n drops to 0; made by wait
}

func (f *inflight) add() { f.n.Add(1) }

func (f *inflight) done() {
	if f.n.Add(-1) != 0 {
		return
	}
	f.mu.Lock()
	if f.idle != nil {
		close(f.idle)
		f.idle = nil
	}
	f.mu.Unlock()
}

func (f *inflight) count() int { return int(f.n.Load()) }

// wait reports whether no check is running, waiting up to d for it.
func (f *inflight) wait(d time.Duration) bool {
	f.mu.Lock()
	if f.n.Load() == 0 {
		f.mu.Unlock()
		return true
	}
	if f.idle == nil {
		f.idle = make(chan struct{})
	}
	idle := f.idle
	f.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-t.C:
		return false
	}
}
