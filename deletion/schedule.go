package deletion

// The scheduler: one goroutine sleeps until the first time on the wheel and queues every record due. A periodic check
// comes at the tick a hash of the PUID picks, in one or two batches a second, each waking one worker.

import (
	"container/heap"
	"context"
	"time"

	"k8s.io/utils/clock"
)

// The ticks of the interval: SweepInterval/64 within minTick and maxTick, but for intervals of more than maxPhases ticks.
const (
	minTick   = 500 * time.Millisecond
	maxTick   = time.Second
	maxPhases = 3600
)

// phasesOf returns how many ticks an interval has.
func phasesOf(interval time.Duration) int {
	tick := min(max(interval/64, minTick), maxTick)
	return int(max(1, min(maxPhases, interval/tick)))
}

func fnv32a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// wheel is the scheduler's heap of every record at record.next, under puQueue.mu. tick is the interval's tick and
// phases how many it has; the scheduler sleeps until wakeAt (0: until kick), on timer (nil while none runs).
type wheel struct {
	tick   time.Duration
	phases int32
	heap   timeHeap
	wakeAt int64
	kick   chan struct{}
	timer  clock.Timer
}

// schedule puts r on the heap at its next time after now: its periodic check at the tick of its phase, its retry, or
// the sooner of its turn and its periodic check; it wakes the scheduler when that comes before wakeAt.
func (w *wheel) schedule(r *record, now int64) {
	k := int64((now-1)/int64(w.tick)) + 1 // the first tick after now
	k += (int64(r.phase) - k%int64(w.phases) + int64(w.phases)) % int64(w.phases)
	r.next = k*int64(w.tick) + 1
	switch r.waitFor {
	case retrying:
		r.next = r.waitUntil
	case turnWaiting:
		r.next = min(r.next, r.waitUntil)
	}
	if r.heapIndex >= 0 {
		w.heap[r.heapIndex].at = r.next
		heap.Fix(&w.heap, int(r.heapIndex))
	} else {
		heap.Push(&w.heap, r)
	}
	if r.heapIndex == 0 && (w.wakeAt == 0 || r.next < w.wakeAt) {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

func (w *wheel) unschedule(r *record) {
	if r.heapIndex >= 0 {
		heap.Remove(&w.heap, int(r.heapIndex))
	}
	if len(w.heap) == 0 && w.timer != nil && w.wakeAt != 0 {
		w.timer.Stop()
		w.wakeAt = 0
	}
	if len(w.heap) == 0 && cap(w.heap) > 4096 {
		w.heap = nil // after a node drain
	}
}

// onTick returns the first tick (of at most maxTick) at or after t.
func (w *wheel) onTick(t int64) int64 {
	tick := int64(min(w.tick, maxTick))
	k := (t - 1 + tick - 1) / tick
	return k*tick + 1
}

// popDue takes the first record off the wheel if its time has come at now; nil: none has.
func (w *wheel) popDue(now int64) *record {
	if len(w.heap) == 0 || w.heap[0].at > now {
		return nil
	}
	return heap.Pop(&w.heap).(*record)
}

// first returns the time of the first record on the wheel; 0: none.
func (w *wheel) first() int64 {
	if len(w.heap) == 0 {
		return 0
	}
	return w.heap[0].at
}

// timeHeap is the heap of records by record.next; each entry keeps the time beside its record, so that ordering
// 150,000 records reads the heap's own memory.
type timeHeap []timed

// timed is a record on the heap and its time.
type timed struct {
	at int64
	r  *record
}

func (h timeHeap) Len() int           { return len(h) }
func (h timeHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h timeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].r.heapIndex, h[j].r.heapIndex = int32(i), int32(j)
}
func (h *timeHeap) Push(x any) {
	r := x.(*record)
	r.heapIndex = int32(len(*h))
	*h = append(*h, timed{at: r.next, r: r})
}
func (h *timeHeap) Pop() any {
	old := *h
	r := old[len(old)-1].r
	old[len(old)-1] = timed{}
	*h = old[:len(old)-1]
	r.heapIndex = -1
	return r
}

// schedule queues the records whose time has come until ctx is done, once Start's first list is done (listed).
func (c *Engine) schedule(ctx context.Context, kick chan struct{}, listed <-chan struct{}) {
	if c.opts.Inventory != nil && !c.awaitFirstList(ctx, listed) {
		return
	}
	timer := c.opts.Clock.NewTimer(MaxDuration)
	timer.Stop()
	c.schedulerTimer(timer)
	defer c.schedulerTimer(nil)
	for {
		var fire <-chan time.Time // nil: until a kick
		if c.queueDue(c.now()) != 0 {
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
			return
		case <-fire:
		case <-kick:
		}
	}
}

// awaitFirstList lets the checks begin once Start's first list has ended, or is past its deadline without an answer;
// an answer in time is tracked first, however long that takes. It reports whether ctx is not done.
func (c *Engine) awaitFirstList(ctx context.Context, listed <-chan struct{}) bool {
	t := time.NewTimer(c.listTimeout() + stuckGrace)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-listed:
	case <-t.C:
		if c.listTracking() { // it answered in time: its PUs go in before any check
			select {
			case <-ctx.Done():
				return false
			case <-listed:
			}
			break
		}
		c.log.Info("Start's first list of the Inventory is past its deadline; checks begin without it, and it is retried",
			"deadline", c.listTimeout().String())
	}
	c.checksBegin()
	return true
}
