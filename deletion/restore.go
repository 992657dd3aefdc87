package deletion

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/podsweeper/podsweeper/ports"
)

// restore lists the Inventory until it answers or ctx ends, with backoff; listed is closed once the first list has
// ended, answered or not.
func (c *Engine) restore(ctx context.Context, listed chan<- struct{}) {
	for attempt := 1; ; attempt++ {
		ok := c.restoreAttempt(ctx, attempt)
		if attempt == 1 {
			close(listed)
		}
		if ok || ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-c.opts.Clock.After(c.backoff(attempt)):
		}
	}
}

// listWindow is what the Inventory's lists keep of removals, under Engine.mu: a list under way may hold a PU removed
// meanwhile, or whose removal the Observer (a journal) was still being told when it began, and must not bring it back.
type listWindow struct {
	// gone holds the PUIDs removed since the list under way began (nil: none is), until its answer is tracked, or until
	// end (realNow) if it has not answered by then: a hung list keeps no record for long.
	gone     map[string]struct{}
	end      int64          // 0: the list answered in time; its answer is being tracked
	removing map[string]int // PUIDs whose removal the Observer is being told
	restored bool           // a list answered: none is to come
}

func (w *listWindow) removed(puid string, now int64) {
	w.removing[puid]++
	if w.gone != nil && (w.end == 0 || now <= w.end) {
		w.gone[puid] = struct{}{}
	}
}

func (w *listWindow) told(puid string) {
	if w.removing[puid]--; w.removing[puid] <= 0 {
		delete(w.removing, puid)
	}
}

// unlistedMemory is what the engine remembers, under Engine.mu, of the PUs it destroyed, gave up on or dropped (a dry
// run) while no list of the Inventory has answered yet, so that a list does not bring them back: an Inventory that
// observes the engine may not have forgotten them (a journal's record of a PU holds a sandbox that the engine, which
// tracked it without one, never reported). It keeps the latest removals in two generations of limit each: limit is
// the most PUs the engine has tracked at once (seen at every Track and removal), and minUnlistedMemory at the least;
// so it remembers at least limit and at most twice limit removals. Past that the older generation is forgotten, so
// that it stays bounded while the Inventory fails (a list may then bring those back, to be destroyed, or reported,
// once more).
type unlistedMemory struct {
	cur, old map[string]struct{}
	limit    int
}

const minUnlistedMemory = 16

// saw raises the limit to tracked, a number of PUs tracked at once.
func (m *unlistedMemory) saw(tracked int) { m.limit = max(m.limit, tracked, minUnlistedMemory) }

// add remembers puid, removed with tracked PUs tracked.
func (m *unlistedMemory) add(puid string, tracked int) {
	if m.saw(tracked); len(m.cur) >= m.limit {
		m.old, m.cur = m.cur, nil
	}
	if m.cur == nil {
		m.cur = make(map[string]struct{})
	}
	m.cur[puid] = struct{}{}
}

// copy returns what m remembers, in a new set with room for extra more.
func (m *unlistedMemory) copy(extra int) map[string]struct{} {
	out := make(map[string]struct{}, len(m.cur)+len(m.old)+extra)
	maps.Copy(out, m.old)
	maps.Copy(out, m.cur)
	return out
}

// unlistedLocked remembers the removal of the PU of puid while no list has answered (unlistedMemory).
func (c *Engine) unlistedLocked(puid string) {
	if c.opts.Inventory != nil && !c.q.list.restored {
		c.q.unlisted.add(puid, len(c.q.records)+1)
	}
}

// restoreAttempt lists the Inventory once and tracks every PU it lists, but invalid ones, and those removed since the
// list began or being removed then (listWindow), or destroyed, given up on or dropped while no list had answered
// (unlistedMemory). An answer after its deadline counts as a
// failure. It reports whether the list answered.
func (c *Engine) restoreAttempt(ctx context.Context, attempt int) bool {
	c.q.mu.Lock()
	w := &c.q.list
	w.gone = c.q.unlisted.copy(len(w.removing))
	for puid := range w.removing {
		w.gone[puid] = struct{}{}
	}
	w.end = c.realNow() + int64(c.listTimeout()+stuckGrace)
	c.q.mu.Unlock()
	defer func() {
		c.q.mu.Lock()
		w.gone = nil
		c.q.mu.Unlock()
	}()
	pus, err := c.listPUs(ctx)
	c.q.mu.Lock()
	if err == nil && c.realNow() > w.end {
		err = fmt.Errorf("ListPUs answered after its deadline of %v", c.listTimeout())
	} else if err == nil {
		w.end = 0 // removals count until its answer is tracked
	}
	c.q.mu.Unlock()
	if err == nil {
		restored, skipped := c.trackAll(pus)
		c.q.mu.Lock()
		w.restored = true
		c.q.unlisted = unlistedMemory{} // no list is to come
		c.q.mu.Unlock()
		c.log.Info("PUs restored from the Inventory", "listed", len(pus), "restored", restored, "skipped", skipped, "attempts", attempt)
		c.observe(Event{Kind: EventRestored, Count: restored, ListCalls: attempt})
		return true
	}
	if ctx.Err() == nil {
		// The first failure is an error line; the others are summed up once an interval, as every port's.
		msg := "listing the Inventory failed; PUs of pods gone while the agent was down are not restored yet, will retry"
		if attempt == 1 {
			c.log.Error(err, msg, "attempt", attempt, "retryIn", c.backoff(attempt).String())
		} else {
			c.log.V(1).Info(msg, "attempt", attempt, "retryIn", c.backoff(attempt).String(), "error", err.Error())
			c.fails.add(portListPUs, "", err, c.opts.Clock.Now())
		}
	}
	return false
}

// trackAll tracks pus from Workers goroutines, so that a journal's commits are shared, and returns how many were new
// and how many were invalid.
func (c *Engine) trackAll(pus []ports.PU) (restored, skipped int) {
	var next, nRestored, nSkipped atomic.Int64
	var wg sync.WaitGroup
	for range min(c.opts.Workers, len(pus)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(pus)); i = next.Add(1) - 1 {
				pu := pus[i]
				isNew, err := c.track(pu, true)
				switch {
				case err != nil:
					nSkipped.Add(1)
					c.log.Error(err, "skipping a PU the Inventory listed", "puID", pu.PUID, "pod", pu.Pod.String())
				case isNew, c.adoptListed(pu):
					nRestored.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return int(nRestored.Load()), int(nSkipped.Load())
}

// adoptListed gives the sandbox listed for pu to the record of the same PU if it has none and was never checked (see
// Options.Inventory), by the rule of ports.PU.WithRecordedSandbox. It reports whether it gave a sandbox.
func (c *Engine) adoptListed(pu ports.PU) bool {
	c.q.mu.Lock()
	e := c.q.records[pu.PUID]
	_, gone := c.q.list.gone[pu.PUID] // tracked again since: a new PU
	ok := e != nil && !gone && e.lastRow < 0 && (e.state == idle || e.state == queued || e.state == tracking)
	var snapshot ports.PU
	var t uint32
	if ok {
		snapshot = e.PU.WithRecordedSandbox(pu)
		ok = snapshot != e.PU
		e.PU = snapshot
	}
	if ok {
		t = c.ticketLocked(e)
	}
	c.q.mu.Unlock()
	if ok {
		c.log.V(1).Info("sandbox recorded from the Inventory", "puID", pu.PUID, "pod", pu.Pod.String(), "sandboxID", pu.SandboxID)
		c.tell(e, t, Event{Kind: EventAdopted, PU: snapshot})
	}
	return ok
}

// listTimeout is the deadline of a list: CheckTimeout, at least a second.
func (c *Engine) listTimeout() time.Duration { return max(c.opts.CheckTimeout, time.Second) }
