package deletion

// The wheel: where periodic checks, retries and turns come from.
//
// Every record sits in one of the wheel's slots, chosen by a hash of its
// PUID, and one goroutine (schedule) wakes once per tick (SweepInterval/64,
// but 0.5 to 1 s) to queue the records of that tick's slot. Each record is
// thus checked once per interval at its own phase, the first time within
// one interval of Track, in one or two batches a second, and a PUID has the
// same phase in every run. A record that waits, for the retry of a failed
// destroy or for its turn under the destroy rate (rollout.go), is also on
// the one list of due times (Engine.due, a heap by record.due), and the
// scheduler wakes at the first of them too: a retry is due on a tick (its
// time is rounded up to one), so retries come in the ticks' batches; a turn
// is due at its own time, so that destroys start at the rate's pace. The
// scheduler sleeps while nothing is tracked. A wake-up is what an idle node
// agent pays for: at 250 PUs and 5s, two wake-ups a second and the worker
// each wakes (BENCHMARKS.md). The client-go workqueue that scheduled checks
// before cost a timer wake-up per check. Once per interval the scheduler
// also logs one summary line per failing port (failures.go).

import (
	"container/heap"
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

// dueList is the heap of the waiting records by record.due (container/heap).
type dueList []*record

func (h dueList) Len() int           { return len(h) }
func (h dueList) Less(i, j int) bool { return h[i].due < h[j].due }
func (h dueList) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].dueIndex, h[j].dueIndex = int32(i), int32(j)
}
func (h *dueList) Push(x any) {
	r := x.(*record)
	r.dueIndex = int32(len(*h))
	*h = append(*h, r)
}
func (h *dueList) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	r.dueIndex = -1
	return r
}

// addDueLocked files the waiting record r under its due time, and wakes the
// scheduler when it comes first.
func (c *Engine) addDueLocked(r *record) {
	heap.Push(&c.due, r)
	if r.dueFor == turnWaiting {
		c.turnsWaiting++
	}
	if r.dueIndex == 0 {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// removeDueLocked takes r off the due list, if it is there.
func (c *Engine) removeDueLocked(r *record) {
	if r.dueIndex < 0 {
		return
	}
	heap.Remove(&c.due, int(r.dueIndex))
	if r.dueFor == turnWaiting {
		c.turnsWaiting--
	}
	if len(c.due) == 0 && cap(c.due) > 4096 {
		c.due = nil // after a wave of retries
	}
}

// schedule turns the wheel until ctx is done: at each tick it queues the
// records of the tick's slot, and at each due time those due. It works from
// the clock, not from the count of ticks, so that late ticks (a busy
// machine, a fake clock stepped by a whole interval) still reach every slot
// once per turn, and never pile up. It sleeps while nothing is tracked.
// With an Inventory, it begins once Start's first list is done (listed).
func (c *Engine) schedule(ctx context.Context, kick chan struct{}, listed <-chan struct{}) {
	if c.opts.Inventory != nil && !c.awaitFirstList(ctx, listed) {
		return
	}
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
			c.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-kick:
			}
			last = c.tickNow()
			c.mu.Lock()
			c.lastTurn = c.now()
			c.mu.Unlock()
			continue
		}
		wait := time.Duration(last+1)*c.tick - c.opts.Clock.Since(c.epoch)
		if len(c.due) > 0 {
			wait = min(wait, time.Duration(c.due[0].due-c.now()))
		}
		c.mu.Unlock()
		if timer == nil {
			timer = c.opts.Clock.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
		case <-kick:
			timer.Stop()
		}
		cur := c.tickNow()
		c.turn(last+1, cur)
		if cur <= last {
			continue
		}
		last = cur
		if cur-lastFlush >= perInterval {
			c.flushFailures() // once per interval at most
			lastFlush = cur
		}
	}
}

// awaitFirstList waits for Start's first list of the Inventory to end, or
// for its deadline to pass (an Inventory that ignores its context; its
// answer is taken when it comes), then lets the checks begin. It reports
// whether ctx is not done.
func (c *Engine) awaitFirstList(ctx context.Context, listed <-chan struct{}) bool {
	t := time.NewTimer(c.listTimeout() + stuckGrace)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-listed:
	case <-t.C:
		c.log.Error(nil, "the Inventory ignores its deadline; checks begin without its list",
			"deadline", c.listTimeout().String())
	}
	c.mu.Lock()
	c.begun, c.lastTurn = true, c.now()
	c.cond.Broadcast()
	c.mu.Unlock()
	return true
}

// tickNow returns the index of the last wheel tick that is due.
func (c *Engine) tickNow() int64 {
	return int64(c.opts.Clock.Since(c.epoch) / c.tick)
}

// onTick returns the engine time of the first wheel tick at or after the
// engine time t.
func (c *Engine) onTick(t int64) int64 {
	d := time.Duration(t - 1)
	k := d / c.tick
	if k*c.tick < d {
		k++
	}
	return int64(k*c.tick) + 1
}

// turn queues the records of the slots of ticks from to to (each slot once
// at most) and the waiting records due by now, and wakes a worker for them.
func (c *Engine) turn(from, to int64) {
	now := c.now()
	slots := int64(len(c.wheel))
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k := max(from, to-slots+1); k <= to; k++ {
		for _, r := range c.wheel[k%slots] {
			if c.queueLocked(r, byWheel, now) {
				n++
			}
		}
		c.lastTurn = now
	}
	for len(c.due) > 0 && c.due[0].due <= now {
		if r := c.due[0]; !c.queueLocked(r, byDue, now) {
			c.removeDueLocked(r) // never: only waiting records are due
		} else {
			n++
		}
	}
	c.wakeLocked(min(n, 1)) // more once the batch waits (see next)
}
