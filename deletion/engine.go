package deletion

// How the engine runs checks.
//
// Scheduling. While Start runs, a client-go rate-limiting workqueue of PUIDs
// decides when each entry is checked: Track schedules a new entry's first
// check at a random point within one SweepInterval, every check that keeps
// the entry schedules the next one about one interval later (AddAfter), a
// failed destroy schedules a retry with per-entry exponential backoff
// (AddRateLimited), and TriggerPod/TriggerAll add keys at once. The queue
// merges duplicate keys and never hands one key to two workers at once.
//
// Exclusivity. Sweep checks entries outside the queue, so the queue alone
// cannot keep two checks of one PUID apart. Every check first claims its
// entry (entry.busy, under Controller.mu). A queue worker that finds the
// entry claimed marks it (entry.again) and moves on; the holder re-adds the
// key when it releases the entry. Sweep waits for the holder instead, up to
// ItemTimeout.
//
// Concurrency. Every check, from a queue worker or from Sweep, takes one of
// Workers slots for as long as its caller waits for it.
//
// Hung ports. A check runs in a goroutine of its own under a context with
// the ItemTimeout deadline. Its caller waits until the check returns or its
// context ends (plus a short grace for ports that return on cancellation),
// then gives up its slot and moves on. A check stuck in a port that ignores
// its context keeps the entry claimed, so no second check of that PUID can
// start, and finishes its work when the port returns; the engine counts such
// checks and logs them. Start waits up to ShutdownTimeout for checks still
// inside a port before it returns.

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// abandonGrace is how long a caller waits, after a check's context has
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
	now := make([]string, 0, len(c.pendingPods))
	later := make([]string, 0, len(c.entries))
	for id, e := range c.entries {
		if _, ok := c.pendingPods[e.Pod]; c.pendingAll || ok {
			now = append(now, id)
		} else {
			later = append(later, id)
		}
	}
	c.pendingAll = false
	clear(c.pendingPods)
	c.mu.Unlock()

	for _, id := range now {
		q.Add(id)
	}
	for _, id := range later {
		q.AddAfter(id, c.firstSweep())
	}

	var workers sync.WaitGroup
	for range c.opts.Workers {
		workers.Go(func() {
			for c.processNext(ctx, q) {
			}
		})
	}
	c.log.V(1).Info("deletion engine started", "workers", c.opts.Workers, "entries", len(now)+len(later))

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

// processNext checks the next key of q; it returns false once q is shut down.
func (c *Controller) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[string]) bool {
	id, shutdown := q.Get()
	if shutdown {
		return false
	}
	defer q.Done(id)
	if ctx.Err() != nil {
		return true
	}
	e := c.tryClaim(id)
	if e == nil {
		return true
	}
	if !c.takeSlot(ctx) {
		c.release(e, q)
		return true
	}
	defer c.giveSlot()
	c.runCheck(ctx, e)
	return true
}

// Sweep checks every tracked entry once, entries waiting for a retry
// included, with at most Workers checks at a time, and returns when all are
// done or ctx is. It is safe to call while Start runs: an entry that is
// being checked already is waited for (up to ItemTimeout), then checked.
func (c *Controller) Sweep(ctx context.Context) {
	c.mu.Lock()
	ids := c.puidsLocked()
	c.mu.Unlock()

	work := make(chan string)
	var wg sync.WaitGroup
	for range min(c.opts.Workers, len(ids)) {
		wg.Go(func() {
			for id := range work {
				c.sweepOne(ctx, id)
			}
		})
	}
feed:
	for _, id := range ids {
		select {
		case work <- id:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
}

func (c *Controller) sweepOne(ctx context.Context, id string) {
	e := c.claimWait(ctx, id)
	if e == nil {
		return
	}
	if !c.takeSlot(ctx) {
		c.release(e, c.currentQueue())
		return
	}
	defer c.giveSlot()
	c.runCheck(ctx, e)
}

// runCheck runs one check of the claimed entry e in a goroutine of its own
// and waits for it until its deadline (plus abandonGrace). The check
// releases e when it returns, however late.
func (c *Controller) runCheck(parent context.Context, e *entry) {
	ctx, cancel := context.WithTimeout(parent, c.opts.ItemTimeout)
	done := make(chan struct{})
	c.inflight.add()
	go func() {
		defer c.inflight.done()
		defer close(done)
		defer cancel()
		c.check(parent, ctx, e)
	}()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	t := time.NewTimer(abandonGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		c.log.Error(ctx.Err(), "check outlived its deadline in a port that ignores its context; moving on, the entry stays claimed until the port returns",
			"puID", e.PUID, "pod", e.Pod.String())
	}
}

func (c *Controller) currentQueue() workqueue.TypedRateLimitingInterface[string] {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queue
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

// claimWait claims the entry of id, waiting up to ItemTimeout for a check
// that holds it. It returns nil when the entry is gone, the wait is over or
// ctx is done.
func (c *Controller) claimWait(ctx context.Context, id string) *entry {
	var deadline <-chan time.Time
	for {
		c.mu.Lock()
		e := c.entries[id]
		if e == nil {
			c.mu.Unlock()
			return nil
		}
		if !e.busy {
			e.busy = true
			c.mu.Unlock()
			return e
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
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// release ends the claim on e. When a scheduled check was refused while e
// was claimed, and e is still tracked, it is checked again at once.
func (c *Controller) release(e *entry, q workqueue.TypedRateLimitingInterface[string]) {
	c.mu.Lock()
	e.busy = false
	again := e.again && c.entries[e.PUID] == e
	e.again = false
	if e.idle != nil {
		close(e.idle)
		e.idle = nil
	}
	c.mu.Unlock()
	if again && q != nil {
		q.Add(e.PUID)
	}
}

// inflight counts running check goroutines and lets Start wait for them
// with a timeout.
type inflight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while n is 0
}

func (f *inflight) add() {
	f.mu.Lock()
	if f.n == 0 {
		f.idle = make(chan struct{})
	}
	f.n++
	f.mu.Unlock()
}

func (f *inflight) done() {
	f.mu.Lock()
	f.n--
	if f.n == 0 {
		close(f.idle)
		f.idle = nil
	}
	f.mu.Unlock()
}

func (f *inflight) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// wait reports whether no check is running, waiting up to d for it.
func (f *inflight) wait(d time.Duration) bool {
	f.mu.Lock()
	idle := f.idle
	f.mu.Unlock()
	if idle == nil {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-t.C:
		return false
	}
}
