package deletion

// How the engine runs checks: every check goes through the one ready queue, oldest first, to a goroutine (Start's, or a
// Sweep's own while Start does not run) that runs it under CheckTimeout in one of Workers slots, which a check stuck in
// a port keeps. A goroutine's checks share one deadline context per 1% of CheckTimeout (lane).

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Start runs the engine until ctx is done, then returns nil. It checks every PU about every SweepInterval and runs
// triggers at once, those made before Start included, with at most Workers checks at a time; with an Inventory, it
// first restores the PUs it lists (see Options.Inventory). Once ctx is done, no check of its own and no DestroyPU of
// them starts; checks in flight see a cancelled context, and Start returns within about ShutdownTimeout even when a
// port hangs, the Inventory included. A Sweep under way goes on, with goroutines of its own, until its own context
// is done: a leader-elected engine sweeps under the lease's context too. Under a DestroyRate, one of Start's PUs at
// the head of the rate's line, ahead of a Sweep's, is checked by that Sweep at its turn, as any of the Sweep's: the
// line keeps its order, and a destroy after Start's context is done is then the Sweep's. A second call returns ErrAlreadyStarted. Start makes the Engine a controller-runtime
// manager.Runnable.
func (c *Engine) Start(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: Start needs a context", ErrNilContext)
	}
	if c.q.records == nil {
		return ErrNotCreated
	}
	if !c.started.CompareAndSwap(false, true) {
		return ErrAlreadyStarted
	}
	now := c.now()
	kick, listed := make(chan struct{}, 1), make(chan struct{}) // here, not in New, for a testing/synctest bubble running Start
	pending, tracked := c.startQueue(ctx.Done(), kick, now)
	defer c.startReturned()

	var sched, inPorts sync.WaitGroup
	for range c.opts.Workers {
		inPorts.Go(func() { c.work(ctx, 0) })
	}
	if c.opts.Inventory != nil {
		inPorts.Go(func() { c.restore(ctx, listed) })
	}
	sched.Go(func() { c.schedule(ctx, kick, listed) })
	c.log.V(1).Info("deletion engine started", "workers", c.opts.Workers, "tracked", tracked, "queued", pending,
		"sweepInterval", c.opts.SweepInterval.String(), "phases", c.q.wheel.phases)

	<-ctx.Done()
	c.stopQueue()
	sched.Wait()
	if within(c.opts.ShutdownTimeout, inPorts.Wait) {
		c.log.V(1).Info("deletion engine stopped")
	} else if c.stuck(math.MaxInt64) > 0 { // a check in a port, past its deadline or not
		c.log.Error(nil, "checks or the Inventory still stuck in ports that ignore their context; leaving them behind",
			"stuckChecks", c.stuck(c.realNow()), "puIDs", c.checking(), "shutdownTimeout", c.opts.ShutdownTimeout.String())
	} else { // none in a port: the Inventory in one, or checks in the Observer or writing to the Logger
		c.log.Error(nil, "the Inventory or checks still under way past the shutdown timeout (a port, the Observer or the Logger that blocks); leaving them behind",
			"stuckChecks", 0, "puIDs", c.checking(), "shutdownTimeout", c.opts.ShutdownTimeout.String())
	}
	c.fails.flush(c.opts.Clock.Now(), 0) // Start stops: what is left, summed up now
	return nil
}

// Sweep checks every tracked PU once, those waiting for a retry or their turn included, and returns when all are done
// or ctx is. Its checks go through the one queue: Start's workers run them, or, while Start does not run, Sweep's own
// goroutines, at most Workers at a time. A PU being checked when Sweep is called is checked once more after. Under
// DestroyRate, a destroy a check decides is one of Sweep's checks: Sweep waits for its turn. Sweep returns once every
// check it waits for, or every Workers slot, is held by one stuck in a port a second past its deadline (CheckTimeout),
// whoever began them: with a CheckTimeout of 100ms, about 1.1 to 2.1s after such a check began. One
// Sweep runs at a time: one called while another runs waits for it, then checks what is tracked then. It does not list the Inventory (Start does), and while Start does not run nothing happens
// between two Sweeps. A ctx done already checks nothing; a nil ctx panics.
func (c *Engine) Sweep(ctx context.Context) {
	if ctx == nil {
		panic("deletion: Sweep called with a nil context")
	}
	if c.q.records == nil || ctx.Err() != nil {
		return // not made by New (nothing is tracked), or done already: no check begins
	}
	select {
	case c.sweeping <- struct{}{}:
		defer func() { <-c.sweeping }()
	case <-ctx.Done():
		return
	}
	gen, done, nudge := c.beginSweep(c.now())
	if gen == 0 {
		return // nothing is tracked
	}
	// The failures due are logged once the pods its checks requeued are handed over (theirs too); the rest once due.
	defer func() { c.fails.flush(c.opts.Clock.Now(), c.opts.SweepInterval) }()
	defer c.waitRequeues(ctx, gen)
	defer c.endSweep(gen) // if it still runs

	t := time.NewTicker(stuckGrace)
	defer t.Stop()
	turn := c.opts.Clock.NewTimer(MaxDuration)
	defer turn.Stop()
	for next := c.sweepStep(ctx, gen); next >= 0; next = c.sweepStep(ctx, gen) {
		if next > 0 {
			turn.Reset(next)
		}
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		case <-nudge:
		case <-turn.C():
		}
	}
}

// readyQueue is the one queue of checks, from head on (workers skip the records no longer queued), and the Workers
// slots they run in, under puQueue.mu. idle workers wait on cond for a check, bound ones for a slot or the first list.
type readyQueue struct {
	items       []readyItem
	head        int
	seq         uint64 // the last readyItem.seq given
	slots       []slot
	free        []int32 // the slots not in use
	idle, bound int
	cond        sync.Cond
}

// readyItem is a record in the ready queue, when it was queued, and which of its queueings it is (record.readySeq).
type readyItem struct {
	r   *record
	at  int64
	seq uint64
}

// live reports whether the item stands for its record's queueing now: one its record left (taken, or un-queued) is
// stale, though the record be queued again since, by an item of its own.
func (it readyItem) live() bool { return it.r.state == queued && it.r.readySeq == it.seq }

// spreadAfter is how long a queued check may wait before another worker is woken for it: an eighth of a tick, 20 to
// 125ms, so that one worker does a batch of fast checks.
func (q *puQueue) spreadAfter() time.Duration {
	return min(max(20*time.Millisecond, q.wheel.tick/8), 125*time.Millisecond)
}

func (q *puQueue) wakeLocked(n int) {
	for range min(n, q.ready.idle) {
		q.ready.cond.Signal()
	}
}

// slot is one of the Workers slots a check runs in.
type slot struct {
	checkEnd atomic.Int64 // its check's deadline (realNow); 0: none in a port
	held     *record      // the record of its check; nil while free (puQueue.mu)
	index    int32
}

// stuck reports whether the slot's check is in a port stuckGrace past its deadline.
func (s *slot) stuck(now int64) bool {
	end := s.checkEnd.Load()
	return end != 0 && now > end+int64(stuckGrace)
}

const stuckGrace = time.Second

// checking returns the PUIDs whose checks hold a Workers slot, sorted: at Start's stop, those it leaves behind.
func (c *Engine) checking() []string {
	defer c.q.lock()()
	var ids []string
	for i := range c.q.ready.slots {
		if r := c.q.ready.slots[i].held; r != nil {
			ids = append(ids, r.PUID)
		}
	}
	slices.Sort(ids)
	return ids
}

// stuck returns how many slots hold a check in a port past its deadline.
func (c *Engine) stuck(now int64) int {
	n := 0
	for i := range c.q.ready.slots {
		if c.q.ready.slots[i].stuck(now) {
			n++
		}
	}
	return n
}

// lane is the deadline context of one goroutine's checks, and its spread timer, armed while its check runs with others
// waiting behind it, to wake another worker for them if the check is slow.
type lane struct {
	// ofSweep: the lane of a Sweep's own goroutine, whose context is the Sweep's: its end cuts no check for the Sweep
	// to run again (outcome.cut).
	ofSweep bool
	ctx     context.Context
	cancel  context.CancelFunc
	ctxEnd  int64
	spread  *time.Timer
}

// spreadIn arms the lane's spread timer to fire d from now (0: disarms it). It follows the time package, as the
// check's deadline does, whatever Options.Clock is: a check is slow in time spent.
func (l *lane) spreadIn(c *Engine, d time.Duration) {
	switch {
	case d == 0 && l.spread != nil:
		l.spread.Stop()
	case d == 0:
	case l.spread == nil:
		l.spread = time.AfterFunc(d, c.slowCheck)
	default:
		l.spread.Reset(d)
	}
}

// deadline returns the context of a check starting now under parent, and its deadline, between 99% and 100% of
// timeout away.
func (l *lane) deadline(parent context.Context, now int64, timeout time.Duration) (context.Context, int64) {
	if l.ctx == nil || time.Duration(l.ctxEnd-now) < timeout-timeout/100 {
		l.done()
		l.ctx, l.cancel = context.WithTimeout(parent, timeout)
		l.ctxEnd = now + int64(timeout)
	}
	return l.ctx, l.ctxEnd
}

func (l *lane) done() {
	if l.cancel != nil {
		l.cancel()
		l.ctx, l.cancel = nil, nil
	}
}

// work runs the checks of the ready queue: for Start (gen 0) until it stops, for the Sweep of gen until it is done or
// Start begins.
func (c *Engine) work(ctx context.Context, gen uint32) {
	l := lane{ofSweep: gen != 0}
	defer l.done()
	defer l.spreadIn(c, 0)
	for ctx.Err() == nil {
		r, s, spread := c.next(gen)
		if r == nil {
			return
		}
		l.spreadIn(c, spread)
		c.check(ctx, &l, r, s)
		l.spreadIn(c, 0)
	}
}

// compactReadyLocked gives back the ready queue's consumed head.
func (q *puQueue) compactReadyLocked() {
	q.ready.items, q.ready.head, _ = compact(q.ready.items, q.ready.head)
}

// compact gives back s[:head], consumed, when it is all of s (a large s, after a TriggerAll or a drain, is dropped) or
// more than half of a long s, and returns s and head after, and whether they moved.
func compact[T any](s []T, head int) ([]T, int, bool) {
	switch {
	case head == len(s) && cap(s) > 4096:
		return nil, 0, true
	case head == len(s):
		return s[:0], 0, true
	case head > 1024 && head > len(s)/2:
		n := copy(s, s[head:])
		clear(s[n:])
		return s[:n], 0, true
	}
	return s, head, false
}

// realNow returns the time package's time since New: deadlines follow it.
func (c *Engine) realNow() int64 { return int64(time.Since(c.realEpoch)) }
