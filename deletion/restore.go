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

// restore lists the Inventory until it answers or ctx ends, with backoff;
// listed is closed once the first list has ended, answered or not.
func (c *Engine) restore(ctx context.Context, listed chan<- struct{}) {
	delay := c.opts.RetryMinDelay
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
		case <-c.opts.Clock.After(delay):
		}
		delay = min(2*delay, c.opts.RetryMaxDelay)
	}
}

// restoreAttempt lists the Inventory once and tracks every PU it lists,
// but invalid ones, those removed while the list was under way, and those
// whose removal a journal might not have recorded when it began
// (Engine.gone). An answer after its deadline counts as a failure, so that
// a hung Inventory keeps no record of removals for long. It reports
// whether the list answered.
func (c *Engine) restoreAttempt(ctx context.Context, attempt int) bool {
	c.mu.Lock()
	c.gone = make(map[string]struct{}, len(c.removing)+len(c.dropped))
	maps.Copy(c.gone, c.dropped)
	for puid := range c.removing {
		c.gone[puid] = struct{}{}
	}
	c.listEnd = c.realNow() + int64(c.listTimeout()+stuckGrace)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.gone = nil
		c.mu.Unlock()
	}()
	pus, err := c.listPUs(ctx)
	if err == nil && c.realNow() > c.listEnd {
		err = fmt.Errorf("ListPUs answered after its deadline of %v", c.listTimeout())
	}
	if err == nil {
		restored, skipped := c.trackAll(pus)
		c.mu.Lock()
		c.restored, c.dropped = true, nil // no list is to come
		c.mu.Unlock()
		c.log.Info("PUs restored from the Inventory", "listed", len(pus), "restored", restored, "skipped", skipped, "attempts", attempt)
		c.observe(Event{Kind: EventRestored, Count: restored, ListCalls: attempt})
		return true
	}
	if ctx.Err() == nil {
		c.log.Error(err, "listing the Inventory failed; PUs of pods gone while the agent was down are not restored yet, will retry",
			"attempt", attempt, "retryIn", c.backoff(attempt).String())
	}
	return false
}

// trackAll tracks pus from Workers goroutines, so that a journal's commits
// are shared, and returns how many were new and how many were invalid.
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

// adoptListed gives the sandbox listed for pu to the record of the same PU
// if it has none and was never checked (see Options.Inventory), by the rule
// of ports.PU.WithRecordedSandbox. It reports whether it gave a sandbox.
func (c *Engine) adoptListed(pu ports.PU) bool {
	c.mu.Lock()
	e := c.records[pu.PUID]
	_, gone := c.gone[pu.PUID] // tracked again since: a new PU
	ok := e != nil && !gone && e.lastRow < 0 && (e.state == idle || e.state == queued)
	var snapshot ports.PU
	if ok {
		snapshot = e.PU.WithRecordedSandbox(pu)
		ok = snapshot != e.PU
		e.PU = snapshot
	}
	c.mu.Unlock()
	if ok {
		c.log.V(1).Info("sandbox recorded from the Inventory", "puID", pu.PUID, "pod", pu.Pod.String(), "sandboxID", pu.SandboxID)
		c.observe(Event{Kind: EventAdopted, PU: snapshot})
	}
	return ok
}

// listTimeout is the deadline of a list: CheckTimeout, at least a second.
func (c *Engine) listTimeout() time.Duration { return max(c.opts.CheckTimeout, time.Second) }

// listPUs calls the Inventory under its deadline.
func (c *Engine) listPUs(ctx context.Context) (pus []ports.PU, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.listTimeout())
	defer cancel()
	defer recovered("ListPUs", &err)
	return c.opts.Inventory.ListPUs(ctx)
}
