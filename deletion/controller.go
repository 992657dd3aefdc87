package deletion

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/podsweeper/podsweeper/ports"
)

// Controller remembers every PU it is told about, re-checks each one against
// the live API and destroys it through the PolicyHandler once its pod is
// really gone. Create it with New; all its methods are safe from any goroutine.
type Controller struct {
	getter    ports.PodGetter
	policy    ports.PolicyHandler
	extractor ports.SandboxExtractor
	requeuer  ports.Requeuer
	opts      Options
	log       logr.Logger

	// slots bounds the checks that run at once to Workers.
	slots chan struct{}
	// inflight counts the checks that have not returned yet.
	inflight inflight

	// lanes are the goroutines running checks, watched by the watchdog
	// while there are any (watching).
	lanesMu  sync.Mutex
	lanes    map[*lane]struct{}
	watching bool
	started  atomic.Bool

	mu      sync.Mutex
	entries map[string]*entry
	// byPod holds the first entry of each pod; the others follow through
	// entry.nextOfPod. A pod rarely has more than one.
	byPod map[types.NamespacedName]*entry
	// wheel holds every entry in the slot of the interval it is checked in.
	wheel [][]*entry
	// queue is set while Start runs; nil before and after.
	queue workqueue.TypedRateLimitingInterface[string]
	// Triggers asked for before Start, run when it starts.
	pendingAll  bool
	pendingPods map[types.NamespacedName]struct{}
}

// New returns a Controller that reads pods through getter and destroys PUs
// through policy. It returns an error wrapping ErrNilPort when a port is
// nil, and one wrapping ErrInvalidOptions when opts is out of range.
func New(getter ports.PodGetter, policy ports.PolicyHandler, opts Options) (*Controller, error) {
	if getter == nil {
		return nil, fmt.Errorf("%w: PodGetter is nil", ErrNilPort)
	}
	if policy == nil {
		return nil, fmt.Errorf("%w: PolicyHandler is nil", ErrNilPort)
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Controller{
		getter:      getter,
		policy:      policy,
		extractor:   o.SandboxExtractor,
		requeuer:    o.Requeuer,
		opts:        o,
		log:         o.Logger,
		slots:       make(chan struct{}, o.Workers),
		entries:     make(map[string]*entry),
		byPod:       make(map[types.NamespacedName]*entry),
		wheel:       make([][]*entry, wheelSlots(o.SweepInterval)),
		lanes:       make(map[*lane]struct{}),
		pendingPods: make(map[types.NamespacedName]struct{}),
	}, nil
}

// Track starts tracking the PU described by e. It never blocks. It is
// insert-only: when e.PUID is tracked already, the entry is left as it is
// (the first sandbox seen is the PU's) and Track returns nil. An entry
// without a PUID, pod name or pod namespace is rejected with an error
// wrapping ErrInvalidEntry.
func (c *Controller) Track(e Entry) error {
	_, err := c.track(e)
	return err
}

// track is Track, and reports whether e was new.
func (c *Controller) track(e Entry) (bool, error) {
	if e.PUID == "" || e.Pod.Name == "" || e.Pod.Namespace == "" {
		return false, fmt.Errorf("%w: PUID %q, pod %q: PUID, pod name and namespace are required", ErrInvalidEntry, e.PUID, e.Pod)
	}
	c.mu.Lock()
	if _, ok := c.entries[e.PUID]; ok {
		c.mu.Unlock()
		return false, nil
	}
	// A random slot: entries tracked together are checked at different
	// points of the interval, the first time within one interval.
	slot := rand.IntN(len(c.wheel))
	n := &entry{Entry: e, slot: int32(slot), wheelIndex: int32(len(c.wheel[slot]))}
	c.entries[e.PUID] = n
	n.nextOfPod = c.byPod[e.Pod]
	c.byPod[e.Pod] = n
	c.wheel[slot] = append(c.wheel[slot], n)
	c.mu.Unlock()

	c.observe(Event{Kind: EventTracked, Entry: e})
	return true, nil
}

// TriggerPod asks for the entries of that pod to be checked now. Its cost
// grows with the number of that pod's entries, not with all entries. Before
// Start, the request is kept and run when Start begins.
func (c *Controller) TriggerPod(key types.NamespacedName) {
	c.mu.Lock()
	q := c.queue
	if q == nil {
		c.pendingPods[key] = struct{}{}
		c.mu.Unlock()
		return
	}
	var buf [4]string
	puids := buf[:0]
	for e := c.byPod[key]; e != nil; e = e.nextOfPod {
		puids = append(puids, e.PUID)
	}
	c.mu.Unlock()
	for _, id := range puids {
		q.Add(id)
	}
}

// TriggerAll asks for every entry to be checked now. Before Start, the
// request is kept and run when Start begins.
func (c *Controller) TriggerAll() {
	c.mu.Lock()
	q := c.queue
	if q == nil {
		c.pendingAll = true
		c.mu.Unlock()
		return
	}
	puids := c.puidsLocked()
	c.mu.Unlock()
	for _, id := range puids {
		q.Add(id)
	}
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

// NeedLeaderElection returns false: every node runs its own engine for its
// own pods, so a controller-runtime manager must start it on every replica.
func (c *Controller) NeedLeaderElection() bool { return false }

func (c *Controller) puidsLocked() []string {
	out := make([]string, 0, len(c.entries))
	for id := range c.entries {
		out = append(out, id)
	}
	return out
}

// remove forgets e, unless it was replaced meanwhile. It reports whether e was removed.
func (c *Controller) remove(e *entry) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.removed {
		return false
	}
	e.removed = true
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
	slot[e.wheelIndex], last.wheelIndex = last, e.wheelIndex
	slot[len(slot)-1] = nil
	slot = slot[:len(slot)-1]
	switch {
	case len(slot) == 0:
		slot = nil // give back the memory of a slot that emptied, after a node drain say
	case len(slot) < cap(slot)/4:
		slot = slices.Clip(slices.Clone(slot))
	}
	c.wheel[e.slot] = slot
	return true
}

// The wheel (see engine.go) has a slot per minWheelTick of SweepInterval,
// and at most maxWheelSlots: at least 64 points of the interval for checks
// to spread over at the default 5s, and never more than 20 ticks a second,
// each of which costs the wake-up of the engine's lanes.
const (
	maxWheelSlots = 64
	minWheelTick  = 50 * time.Millisecond
)

// wheelSlots returns how many slots a wheel of that interval has.
func wheelSlots(interval time.Duration) int {
	return int(max(1, min(maxWheelSlots, interval/minWheelTick)))
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
