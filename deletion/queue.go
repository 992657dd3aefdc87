package deletion

import (
	"sync"
	"time"

	"golang.org/x/time/rate"

	"k8s.io/apimachinery/pkg/types"
)

// puQueue holds every tracked PU's record and the mechanisms that move them, under one lock, mu: the engine's lock is
// taken in this file alone.
type puQueue struct {
	mu      sync.Mutex
	records map[string]*record
	byPod   map[types.NamespacedName]*record // the first record of each pod; the others follow it
	waits   [removed + 1]int                 // the records by what they wait for (record.waitFor)

	// tick is the scheduler's tick, phases how many an interval has; heap holds the records by the time they are
	// queued next; the scheduler sleeps until wakeAt (0: until kick).
	tick   time.Duration
	phases int32
	heap   timeHeap
	wakeAt int64
	kick   chan struct{}

	// ready is the one queue of checks, from readyHead on; workers skip the records in it no longer queued.
	ready     []readyItem
	readyHead int
	slots     []slot  // the Workers slots checks run in
	free      []int32 // the slots not in use
	// idleWorkers wait on cond for the ready queue, boundWaiting for a free slot or Start's first list.
	idleWorkers, boundWaiting int
	cond                      sync.Cond
	toldCond                  sync.Cond             // an event of a PU told: the next in its line may be (record.line)
	untold                    map[string]*eventLine // the lines of removed records whose events are being told
	// running: Start runs (since startAt); stopped: it has returned; begun: its first list of the Inventory is done.
	running, stopped, begun bool
	startAt                 int64

	list     listWindow     // the Inventory's lists (restore.go)
	unlisted unlistedMemory // the removals a list is not to bring back (restore.go)
	rate     rateLine       // the destroy rate (rateline.go)
	sweep    sweepRun       // the running Sweep (workers.go)
}

// init makes the queue of an engine with options o.
func (q *puQueue) init(o Options) {
	phases := phasesOf(o.SweepInterval)
	q.tick, q.phases = o.SweepInterval/time.Duration(phases), int32(phases)
	q.records, q.byPod = make(map[string]*record), make(map[types.NamespacedName]*record)
	q.untold = make(map[string]*eventLine)
	q.list = listWindow{removing: make(map[string]int)}
	q.slots, q.free = make([]slot, o.Workers), make([]int32, o.Workers)
	for i := range q.slots {
		q.slots[i].index, q.free[i] = int32(i), int32(i)
	}
	if o.DestroyRate > 0 && o.DestroyRate != rate.Inf {
		q.rate = newRateLine(max(1, int64(float64(time.Second)/float64(o.DestroyRate))), o.DestroyBurst) // at most MaxDuration (Options)
	}
	q.cond.L, q.toldCond.L = &q.mu, &q.mu
}
