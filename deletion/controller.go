package deletion

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/ports"
)

// Controller remembers every PU it is told about, re-checks each one against
// the live API and destroys it through the PolicyHandler once its pod is
// really gone. Create it with New; all its methods are safe from any goroutine.
type Controller struct {
	getter    ports.PodGetter
	confirmer ports.PodGetter
	policy    ports.PolicyHandler
	extractor ports.SandboxExtractor
	requeuer  ports.Requeuer
	opts      Options
	log       logr.Logger

	// epoch is the origin of the engine's int64 times on Options.Clock (see
	// entry), realEpoch that of check deadlines (see realNow).
	epoch, realEpoch time.Time
	// tick is the wheel's period: SweepInterval / len(wheel).
	tick time.Duration
	// slots bounds the checks that run at once, Sweep's included, to Workers.
	slots chan struct{}
	// kick wakes the scheduler when the first entry is tracked.
	kick chan struct{}

	started atomic.Bool
	// workers are the states of Start's workers, for HealthCheck.
	workers []workerState

	mu      sync.Mutex
	entries map[string]*entry
	// byPod holds the first entry of each pod; the others follow through
	// entry.nextOfPod. A pod rarely has more than one.
	byPod map[types.NamespacedName]*entry
	// wheel holds every entry in the slot of the interval it is checked in.
	wheel [][]*entry
	// retries holds the entries waiting for a retry, by the wheel tick their
	// retry is due at. It may hold entries that no longer wait; the
	// scheduler skips them.
	retries map[int64][]*entry
	// ready is the queue of entries for the workers, oldest first, from
	// readyHead on. It may hold entries no longer queued; workers skip them.
	ready     []readyItem
	readyHead int
	// idleWorkers is how many workers wait on cond for the ready queue.
	idleWorkers int
	cond        sync.Cond
	// running: Start runs. stopped: Start has returned.
	running, stopped bool
	// sleeping: the scheduler waits for kick, having nothing to check.
	sleeping bool
	// lastTurn is when the scheduler last handed out a slot.
	lastTurn int64
	// released, when not nil, is closed at the end of every check, to wake
	// Sweep calls waiting for an entry another check holds.
	released chan struct{}

	// fails sums up the ports' failures for the logs (see failures.go).
	fails failures
}

// readyItem is an entry in the ready queue and when it was queued.
type readyItem struct {
	e  *entry
	at int64
}

// New returns a Controller that reads pods through getter and destroys PUs
// through policy. It returns an error wrapping ErrNilPort when a port is
// nil (a nil XxxFunc or a typed nil pointer included, for the optional
// ports of opts too), and one wrapping ErrInvalidOptions when opts is out
// of range.
func New(getter ports.PodGetter, policy ports.PolicyHandler, opts Options) (*Controller, error) {
	for _, p := range []struct {
		name     string
		v        any
		optional bool
	}{
		{"PodGetter", getter, false},
		{"PolicyHandler", policy, false},
		{"Options.SandboxExtractor", opts.SandboxExtractor, true},
		{"Options.Requeuer", opts.Requeuer, true},
		{"Options.Confirmer", opts.Confirmer, true},
		{"Options.Inventory", opts.Inventory, true},
		{"Options.Observer", opts.Observer, true},
	} {
		if p.v == nil && p.optional {
			continue
		}
		if isNil(p.v) {
			return nil, fmt.Errorf("%w: %s is nil (%T)", ErrNilPort, p.name, p.v)
		}
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	slots := wheelSlots(o.SweepInterval)
	c := &Controller{
		getter:    getter,
		confirmer: o.Confirmer,
		policy:    policy,
		extractor: o.SandboxExtractor,
		requeuer:  o.Requeuer,
		opts:      o,
		log:       o.Logger,
		epoch:     o.Clock.Now(),
		realEpoch: time.Now(),
		workers:   make([]workerState, o.Workers),
		tick:      o.SweepInterval / time.Duration(slots),
		slots:     make(chan struct{}, o.Workers),
		kick:      make(chan struct{}, 1),
		entries:   make(map[string]*entry),
		byPod:     make(map[types.NamespacedName]*entry),
		wheel:     make([][]*entry, slots),
		retries:   make(map[int64][]*entry),
	}
	c.cond.L = &c.mu
	return c, nil
}

// isNil reports whether v is nil or holds a nil func, pointer, map, chan or slice.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Func, reflect.Pointer, reflect.Map, reflect.Chan, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// Track starts tracking the PU described by e. It is insert-only: when
// e.PUID is tracked already, the entry is left as it is (the first sandbox
// seen is the PU's) and Track returns nil. An entry without a PUID, pod name
// or pod namespace is rejected with an error wrapping ErrInvalidEntry. Track
// returns once the Observer has been told (EventTracked); it blocks only as
// long as the Observer does.
func (c *Controller) Track(e Entry) error {
	_, err := c.track(e)
	return err
}

// track is Track, and reports whether e was new.
func (c *Controller) track(e Entry) (bool, error) {
	if e.PUID == "" || e.Pod.Name == "" || e.Pod.Namespace == "" {
		return false, fmt.Errorf("%w: PUID %q, pod %q: PUID, pod name and namespace are required", ErrInvalidEntry, e.PUID, e.Pod)
	}
	now := c.now()
	c.mu.Lock()
	if _, ok := c.entries[e.PUID]; ok {
		c.mu.Unlock()
		return false, nil
	}
	// A slot from a hash of the PUID: entries tracked together are checked
	// at different points of the interval, the first time within one
	// interval, and a PUID has the same phase in every run.
	slot := int(fnv32a(e.PUID) % uint32(len(c.wheel)))
	n := &entry{Entry: e, trackedAt: now, slot: int32(slot), slotIndex: int32(len(c.wheel[slot])), lastRow: -1}
	c.entries[e.PUID] = n
	n.nextOfPod = c.byPod[e.Pod]
	c.byPod[e.Pod] = n
	c.wheel[slot] = append(c.wheel[slot], n)
	wake := c.sleeping
	c.sleeping = false
	c.mu.Unlock()
	if wake {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
	c.observe(Event{Kind: EventTracked, Entry: e})
	return true, nil
}

// Untrack forgets the PU of puid without destroying it, for a PU the agent
// tore down itself. It reports whether the PU was tracked. Once it returns,
// no DestroyPU of that PU starts; one the engine had already started may
// finish. A later Track of the same PUID is a new entry.
func (c *Controller) Untrack(puid string) bool {
	c.mu.Lock()
	e := c.entries[puid]
	if e == nil {
		c.mu.Unlock()
		return false
	}
	c.removeLocked(e)
	snapshot := e.Entry
	c.mu.Unlock()
	c.observe(Event{Kind: EventUntracked, Entry: snapshot})
	return true
}

// TriggerPod asks for the entries of that pod to be checked now; an entry
// waiting for the retry of a failed destroy keeps waiting. Its cost grows
// with the number of that pod's entries, not with all entries. Before Start,
// the checks are queued and run when Start begins; after Start has
// returned, TriggerPod does nothing.
func (c *Controller) TriggerPod(key types.NamespacedName) {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	now, n := c.now(), 0
	for e := c.byPod[key]; e != nil; e = e.nextOfPod {
		n += c.queueLocked(e, now)
	}
	c.wakeLocked(n)
	c.mu.Unlock()
}

// TriggerAll asks for every entry to be checked now, but those waiting for
// the retry of a failed destroy. Before Start, the checks are queued and
// run when Start begins; after Start has returned, it does nothing.
func (c *Controller) TriggerAll() {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	now, n := c.now(), 0
	for _, e := range c.entries {
		n += c.queueLocked(e, now)
	}
	c.wakeLocked(n)
	c.mu.Unlock()
}

// queueLocked asks for a check of e now: an idle entry joins the ready
// queue, one being checked is checked again when that check ends. It
// returns 1 when e joined the queue.
func (c *Controller) queueLocked(e *entry, now int64) int {
	switch e.state {
	case idle:
		e.state = queued
		c.ready = append(c.ready, readyItem{e, now})
		return 1
	case checking:
		e.again = true
	}
	return 0
}

// Pending returns a snapshot of the tracked entries, sorted by PUID.
func (c *Controller) Pending() []Entry {
	c.mu.Lock()
	out := make([]Entry, 0, len(c.entries))
	for _, e := range c.entries {
		out = append(out, e.Entry)
	}
	c.mu.Unlock()
	slices.SortFunc(out, func(a, b Entry) int { return cmp.Compare(a.PUID, b.PUID) })
	return out
}

// Len returns the number of tracked entries.
func (c *Controller) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// NodeName returns Options.NodeName, the node this engine runs for ("":
// the node check is off). Adapters that feed the engine read it here, so
// that the node is given in one place only.
func (c *Controller) NodeName() string { return c.opts.NodeName }

// DestroyTerminated returns Options.DestroyTerminated: whether the engine
// destroys the PU of a finished pod whose object remains (row 11). Adapters
// read it so as not to track such a pod again once its PU is destroyed.
func (c *Controller) DestroyTerminated() bool { return c.opts.DestroyTerminated }

// SandboxExtractor returns Options.SandboxExtractor, nil when the engine
// has none. Adapters that need the extractor read it here, so that it is
// given in one place only.
func (c *Controller) SandboxExtractor() ports.SandboxExtractor { return c.extractor }

// NeedLeaderElection returns false: every node runs its own engine for its
// own pods, so a controller-runtime manager must start it on every replica.
func (c *Controller) NeedLeaderElection() bool { return false }

// removeLocked forgets e: it leaves the maps, its pod's list and its wheel
// slot at once. The ready queue and the retries may still point to it until
// they reach it; they skip a removed entry.
func (c *Controller) removeLocked(e *entry) {
	e.state = removed
	delete(c.entries, e.PUID)
	if head := c.byPod[e.Pod]; head == e {
		if e.nextOfPod == nil {
			delete(c.byPod, e.Pod)
		} else {
			c.byPod[e.Pod] = e.nextOfPod
		}
	} else {
		for p := head; p != nil; p = p.nextOfPod {
			if p.nextOfPod == e {
				p.nextOfPod = e.nextOfPod
				break
			}
		}
	}
	e.nextOfPod = nil
	slot := c.wheel[e.slot]
	last := slot[len(slot)-1]
	slot[e.slotIndex], last.slotIndex = last, e.slotIndex
	slot[len(slot)-1] = nil
	slot = slot[:len(slot)-1]
	switch {
	case len(slot) == 0:
		slot = nil // give back the memory of a slot that emptied, after a node drain say
	case len(slot) < cap(slot)/4:
		slot = slices.Clip(slices.Clone(slot))
	}
	c.wheel[e.slot] = slot
}

// The wheel (see engine.go) turns a slot per tick: SweepInterval/64, but
// at least minWheelTick, for the scheduler wakes once per tick and a
// wake-up is what an idle node agent pays for (BENCHMARKS.md); and at most
// maxWheelTick, for retries are due on ticks. maxWheelSlots bounds the
// wheel of an interval of hours.
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

// now returns the time on Options.Clock, in nanoseconds since the epoch,
// plus one: 0 stands for "never".
func (c *Controller) now() int64 { return int64(c.opts.Clock.Since(c.epoch)) + 1 }

// timeOf turns an engine time back into a time.Time; 0 is the zero time.
func (c *Controller) timeOf(t int64) time.Time {
	if t == 0 {
		return time.Time{}
	}
	return c.epoch.Add(time.Duration(t - 1))
}

// observe tells the Observer about ev; a panic in it is logged and dropped.
func (c *Controller) observe(ev Event) {
	if c.opts.Observer == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			c.log.Error(fmt.Errorf("%w: Observer: %v", ErrPortPanicked, r), "observer panicked", "event", ev.Kind.String())
		}
	}()
	c.opts.Observer.Observe(ev)
}
