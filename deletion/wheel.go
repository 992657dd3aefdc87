package deletion

// The wheel: where periodic checks and retries come from.
//
// Every record sits in one of the wheel's slots, chosen by a hash of its
// PUID, and one goroutine (schedule) wakes once per tick (SweepInterval/64,
// but 0.5 to 1 s) to queue the idle records of that tick's slot and the
// retries due by then (Engine.retries, by tick: a retry's time is rounded
// up to the next tick). Each record is thus checked once per interval at
// its own phase, the first time within one interval of Track, in one or
// two batches a second, and a PUID has the same phase in every run. The
// scheduler sleeps while nothing is tracked. While destroys wait for their
// turn under the destroy rate (rollout.go), it also wakes at each turn. A wake-up is what an idle node
// agent pays for: at 250 PUs and 5s, two wake-ups a second and the worker
// each wakes (BENCHMARKS.md). The client-go workqueue that scheduled checks
// before cost a timer wake-up per check. Once per interval the scheduler
// also logs one summary line per failing port (failures.go).

import (
	"context"
	"slices"
	"time"
)

// The wheel turns a slot per tick: SweepInterval/64, but at least
// minWheelTick, for the scheduler wakes once per tick and a wake-up is what
// an idle node agent pays for (BENCHMARKS.md); and at most maxWheelTick,
// for retries are due on ticks. maxWheelSlots bounds the wheel of an
// interval of hours.
const (
	minWheelTick  = 500 * time.Millisecond
	maxWheelTick  = time.Second
	maxWheelSlots = 3600
)

// wheelSlots returns how many slots a wheel of that interval has.
func wheelSlots(interval time.Duration) int {
	tick := min(max(interval/64, minWheelTick), maxWheelTick)
	return int(max(1, min(maxWheelSlots, interval/tick)))
}

// fnv32a is the 32-bit FNV-1a hash of s.
func fnv32a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// addToWheelLocked puts the new record r in the slot of its PUID's hash.
func (c *Engine) addToWheelLocked(r *record) {
	slot := int(fnv32a(r.PUID) % uint32(len(c.wheel)))
	r.slot, r.slotIndex = int32(slot), int32(len(c.wheel[slot]))
	c.wheel[slot] = append(c.wheel[slot], r)
}

// removeFromWheelLocked takes r out of its slot, and gives back the memory
// of a slot that emptied or shrank to a quarter, after a node drain say.
func (c *Engine) removeFromWheelLocked(r *record) {
	slot := c.wheel[r.slot]
	last := slot[len(slot)-1]
	slot[r.slotIndex], last.slotIndex = last, r.slotIndex
	slot[len(slot)-1] = nil
	slot = slot[:len(slot)-1]
	switch {
	case len(slot) == 0:
		slot = nil
	case len(slot) < cap(slot)/4:
		slot = slices.Clip(slices.Clone(slot))
	}
	c.wheel[r.slot] = slot
}

// schedule turns the wheel until ctx is done: at each tick it queues the
// idle records of the tick's slot and the retries due. It works from the
// clock, not from the count of ticks, so that late ticks (a busy machine,
// a fake clock stepped by a whole interval) still reach every slot once per
// turn, and never pile up. It sleeps while nothing is tracked.
func (c *Engine) schedule(ctx context.Context, turnKick <-chan struct{}) {
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
		if len(c.records) == 0 {
			c.sleeping = true
			clear(c.retries) // only removed records can be left there
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
		if next := c.nextTurn(); next != 0 {
			wait = min(wait, time.Duration(next-c.now()))
		}
		if timer == nil {
			timer = c.opts.Clock.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
		case <-turnKick:
			timer.Stop()
		}
		c.queueTurns()
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
func (c *Engine) tickNow() int64 {
	return int64(c.opts.Clock.Since(c.epoch) / c.tick)
}

// tickOf returns the first wheel tick at or after the engine time t.
func (c *Engine) tickOf(t int64) int64 {
	d := time.Duration(t - 1)
	k := int64(d / c.tick)
	if time.Duration(k)*c.tick < d {
		k++
	}
	return k
}

// turn queues the idle records of the slots of ticks from to to (each slot
// once at most) and the retries due by tick to, and wakes a worker for them.
func (c *Engine) turn(from, to int64) {
	now := c.now()
	slots := int64(len(c.wheel))
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k := max(from, to-slots+1); k <= to; k++ {
		for _, r := range c.wheel[k%slots] {
			if r.state == idle {
				c.enqueueLocked(r, now)
				n++
			}
		}
	}
	due := func(k int64, list []*record) {
		for _, r := range list {
			if r.state == waiting && c.tickOf(r.retryAt) == k {
				c.enqueueLocked(r, now)
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

// addRetryLocked files the waiting record r under the tick its retry is due at.
func (c *Engine) addRetryLocked(r *record) {
	k := c.tickOf(r.retryAt)
	c.retries[k] = append(c.retries[k], r)
}
