package deletion

import (
	"context"
	"time"
)

// restore lists the Inventory until it answers or ctx ends, and tracks
// every PU it lists that is not tracked already. A failing list is tried
// again after RetryMinDelay, doubling up to RetryMaxDelay. Entries without
// a PUID, pod name or namespace are logged and skipped.
func (c *Controller) restore(ctx context.Context) {
	delay := c.opts.RetryMinDelay
	for attempt := 1; ; attempt++ {
		pus, err := c.listPUs(ctx)
		if err == nil {
			restored, skipped := 0, 0
			for _, pu := range pus {
				isNew, err := c.track(pu)
				switch {
				case err != nil:
					skipped++
					c.log.Error(err, "skipping a PU the Inventory listed", "puID", pu.PUID, "pod", pu.Pod.String())
				case isNew:
					restored++
				}
			}
			c.log.Info("PUs restored from the Inventory", "listed", len(pus), "restored", restored, "skipped", skipped, "attempts", attempt)
			c.observe(Event{Kind: EventRestored, Count: restored, Attempt: attempt})
			return
		}
		if ctx.Err() != nil {
			return
		}
		c.log.Error(err, "listing the Inventory failed; PUs of pods gone while the agent was down are not restored yet, will retry",
			"attempt", attempt, "retryIn", delay.String())
		select {
		case <-ctx.Done():
			return
		case <-c.opts.Clock.After(delay):
		}
		delay = min(2*delay, c.opts.RetryMaxDelay)
	}
}

// listPUs calls the Inventory under a deadline of ItemTimeout.
func (c *Controller) listPUs(ctx context.Context) (pus []Entry, err error) {
	ctx, cancel := context.WithTimeout(ctx, max(c.opts.ItemTimeout, time.Second))
	defer cancel()
	defer recovered("ListPUs", &err)
	return c.opts.Inventory.ListPUs(ctx)
}
