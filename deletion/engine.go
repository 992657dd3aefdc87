package deletion

import (
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/ports"
)

// Engine remembers every PU it is told about, re-checks each one against the live API and destroys it through the
// PolicyHandler once its pod is really gone. Create it with New; all its methods are safe from any goroutine.
//
// Where each mechanism lives: record.go, a record's states and moves; decide.go, the decision table; check.go, one
// check and its destroy; workers.go, Start, Sweep, the ready queue and the Workers slots; schedule.go, the scheduler's
// heap of times; rollout.go, the dry run and the destroy rate; restore.go, the Inventory's lists; status.go,
// observer.go and failures.go, what the engine tells.
type Engine struct {
	getter ports.PodGetter
	policy ports.PolicyHandler
	opts   Options
	log    logr.Logger

	// epoch is the origin of times on Options.Clock (puQueue), realEpoch that of deadlines (realNow).
	epoch, realEpoch time.Time

	started  atomic.Bool
	sweeping chan struct{} // lets one Sweep run at a time

	q     puQueue  // every PU's record, and every move of one (queue.go): the engine's lock is its
	fails failures // the ports' failures, for the logs (failures.go)
}

// New returns an Engine that reads pods through getter and destroys PUs through policy. It returns an error wrapping
// ErrNilPort when a port, or an optional port of opts, is nil (a nil XxxFunc or a typed nil pointer too), and one
// wrapping ErrInvalidOptions when opts is out of range.
func New(getter ports.PodGetter, policy ports.PolicyHandler, opts Options) (*Engine, error) {
	for i, p := range [...]any{getter, policy} {
		if isNil(p) {
			return nil, fmt.Errorf("%w: %s is nil (%T)", ErrNilPort, [...]string{"PodGetter", "PolicyHandler"}[i], p)
		}
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Engine{
		getter:    getter,
		policy:    policy,
		opts:      o,
		log:       o.Logger,
		epoch:     o.Clock.Now(),
		realEpoch: time.Now(),
		sweeping:  make(chan struct{}, 1),
	}
	c.q.init(o)
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

// Track starts tracking pu. It is insert-only: when pu.PUID is tracked already, the PU is left as it is (its first
// sandbox is the PU's) and Track returns nil. A PU without a PUID, pod name or pod namespace is rejected with an error
// wrapping ErrInvalidPU; after Start has returned, nothing would check it: Track returns an error wrapping
// ErrNotRunning. Track returns once the Observer has been told (EventTracked), the second Track of a PU too; no check
// of the PU begins before.
func (c *Engine) Track(pu ports.PU) error {
	_, err := c.track(pu, false)
	return err
}

// track is Track, and reports whether pu was new; a PU the Inventory listed and removed meanwhile is not tracked.
func (c *Engine) track(pu ports.PU, listed bool) (bool, error) {
	if c.q.records == nil {
		return false, ErrNotCreated
	}
	if pu.PUID == "" || pu.Pod.Name == "" || pu.Pod.Namespace == "" {
		return false, fmt.Errorf("%w: PUID %q, pod %q: PUID, pod name and namespace are required", ErrInvalidPU, pu.PUID, pu.Pod)
	}
	now := c.now()
	c.q.mu.Lock()
	if c.q.stopped && !listed {
		c.q.mu.Unlock()
		return false, fmt.Errorf("%w: Start has returned: nothing would check PU %q", ErrNotRunning, pu.PUID)
	}
	r, tracked := c.q.records[pu.PUID]
	_, gone := c.q.list.gone[pu.PUID]
	switch {
	case tracked:
		var t uint32
		if r.line != nil {
			t = r.line.tickets // every event of r so far: its EventTracked among them
		}
		c.q.mu.Unlock()
		if c.opts.Observer != nil {
			c.awaitTold(r, t)
		}
		return false, nil
	case listed && gone:
		c.q.mu.Unlock()
		c.log.V(1).Info("a PU the Inventory listed was removed meanwhile; not tracked again", "puID", pu.PUID, "pod", pu.Pod.String())
		return false, nil
	}
	r, t := c.newRecordLocked(pu, now)
	if c.opts.Inventory != nil && !c.q.list.restored {
		c.q.unlisted.saw(len(c.q.records)) // the dry run's memory is as large as the most PUs tracked at once
	}
	if c.opts.Observer == nil {
		c.announceLocked(r, now)
	}
	c.q.mu.Unlock()
	if c.opts.Observer != nil {
		c.tell(r, t, Event{Kind: EventTracked, PU: pu})
		c.q.mu.Lock()
		c.announceLocked(r, c.now())
		c.q.mu.Unlock()
	}
	return true, nil
}

// Untrack forgets the PU of puid without destroying it, for a PU the agent tore down itself. It reports whether the
// PU was tracked, once the Observer has been told (EventUntracked, after every earlier event of the PU). Once it
// returns, no DestroyPU of that PU starts, though the Inventory's list under way holds it; one the engine had already
// started may finish. A later Track of the same PUID is a new PU, and so is one a later list brings: the Inventory
// must no longer list it (a journal that observes EventUntracked does not).
func (c *Engine) Untrack(puid string) bool {
	if c.q.records == nil {
		return false
	}
	c.q.mu.Lock()
	r := c.q.records[puid]
	if r == nil {
		c.q.list.removed(puid, c.realNow())
		c.q.list.told(puid)
		c.q.mu.Unlock()
		return false
	}
	c.removeLocked(r)
	snapshot, t := r.PU, c.ticketLocked(r)
	c.q.mu.Unlock()
	c.tell(r, t, Event{Kind: EventUntracked, PU: snapshot})
	c.told(puid)
	return true
}

// TriggerPod asks for the PUs of that pod to be checked now; one waiting for the retry of a failed destroy keeps
// waiting (one waiting for its turn is checked, and keeps its place). Its cost grows with that pod's PUs, not with all
// PUs. Checks asked before Start run when it begins; after Start has returned, TriggerPod does nothing.
func (c *Engine) TriggerPod(key types.NamespacedName) {
	if c.q.records == nil {
		return
	}
	c.q.mu.Lock()
	defer c.q.mu.Unlock()
	now, n := c.now(), 0
	for r := c.q.byPod[key]; r != nil && !c.q.stopped; r = r.nextOfPod {
		r.fresh = true
		if c.queueLocked(r, byTrigger, now) {
			n++
		}
	}
	c.wakeLocked(n)
}

// TriggerAll asks for every PU to be checked now, as TriggerPod does for the PUs of one pod.
func (c *Engine) TriggerAll() {
	if c.q.records == nil {
		return
	}
	c.q.mu.Lock()
	defer c.q.mu.Unlock()
	now, n := c.now(), 0
	for _, r := range c.q.records {
		if !c.q.stopped && c.queueLocked(r, byTrigger, now) {
			n++
		}
	}
	c.wakeLocked(n)
}

// Len returns the number of tracked PUs.
func (c *Engine) Len() int {
	c.q.mu.Lock()
	defer c.q.mu.Unlock()
	return len(c.q.records)
}

// Classify says how the decision table reads pod on its own, for adapters that choose from pod events which pods to
// track, so that the table's rows stay here: PodElsewhere when the engine has a node (Options.NodeName) and pod is
// bound to another (row 3) or to none yet (no PU of it can be here), or pod is nil; PodFinished when
// Options.DestroyTerminated is set and pod has finished (row 11); PodLive otherwise (a PU of it is kept while its UID
// and sandbox hold).
func (c *Engine) Classify(pod *corev1.Pod) PodClass {
	switch {
	case pod == nil:
		return PodElsewhere
	case c.opts.NodeName != "" && (pod.Spec.NodeName == "" || boundElsewhere(pod, c.opts.NodeName)):
		return PodElsewhere
	case c.opts.DestroyTerminated && finished(pod):
		return PodFinished
	}
	return PodLive
}

// now returns the time on Options.Clock since the epoch, plus one: 0 is never.
func (c *Engine) now() int64 { return int64(c.opts.Clock.Since(c.epoch)) + 1 }

// timeOf turns an engine time back into a time.Time; 0 is the zero time.
func (c *Engine) timeOf(t int64) time.Time {
	if t == 0 {
		return time.Time{}
	}
	return c.epoch.Add(time.Duration(t - 1))
}
