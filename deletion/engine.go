package deletion

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/ports"
)

// Engine remembers every PU it is told about, re-checks each one against the live API and destroys it through the
// PolicyHandler once its pod is really gone. Create it with New; all its methods are safe from any goroutine.
//
// Where each mechanism lives: queue.go, every record and its moves, under the engine's one lock; check.go, one check;
// boundary.go, the ports' calls; decide.go, the decision table; workers.go, Start, Sweep and the Workers slots;
// sweep.go, what a Sweep waits for; schedule.go, the scheduler; rateline.go, the destroy rate; restore.go, the
// Inventory; status.go, observer.go and logs.go, what the engine tells.
type Engine struct {
	getter ports.PodGetter
	policy ports.PolicyHandler
	opts   Options
	log    logr.Logger

	epoch, realEpoch time.Time // the origins of times on Options.Clock (now) and of deadlines (realNow)

	started  atomic.Bool
	sweeping chan struct{} // lets one Sweep run at a time

	q     puQueue
	fails failures
	rq    requeueLane
}

// New returns an Engine that reads pods through getter and destroys PUs through policy. It returns an error wrapping
// ErrNilPort when a port, or an optional port of opts, is nil (a nil XxxFunc or a typed nil pointer too), and one
// wrapping ErrInvalidOptions when opts is out of range.
func New(getter ports.PodGetter, policy ports.PolicyHandler, opts Options) (*Engine, error) {
	for i, p := range [...]any{getter, policy} {
		if ports.IsNil(p) {
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
	c.fails.log, c.fails.clock, c.fails.every = o.Logger, o.Clock, o.SweepInterval
	c.q.init(o, c.now, c.realNow)
	return c, nil
}

// Classify says how the decision table reads pod on its own, for adapters that choose from pod events which pods to
// track, so that the table's rows stay here: PodElsewhere when the engine has a node (Options.NodeName) and pod is
// bound to another (row 3) or to none yet (no PU of it can be here), or pod is nil; PodFinished when
// Options.DestroyTerminated is set and pod has finished (row 11); PodLive otherwise (a PU of it is kept while its UID
// and sandbox hold).
func (c *Engine) Classify(pod *corev1.Pod) PodClass {
	switch {
	case pod == nil, c.opts.NodeName != "" && (pod.Spec.NodeName == "" || boundElsewhere(pod, c.opts.NodeName)):
		return PodElsewhere
	case c.opts.DestroyTerminated && finished(pod):
		return PodFinished
	}
	return PodLive
}

// Now returns the time as the engine tells times (Status's TrackedAt, LastChecked and NextAttempt): on Options.Clock,
// from the time it read when the engine was made. A step of the wall clock since does not move it, as it moves
// time.Now: tell how long ago a time of Status was from Now, not from time.Now.
func (c *Engine) Now() time.Time { return c.timeOf(c.now()) }

// now returns the time on Options.Clock since the epoch, plus one: 0 is never.
func (c *Engine) now() int64 { return int64(c.opts.Clock.Since(c.epoch)) + 1 }

// timeOf turns an engine time back into a time.Time; 0 is the zero time.
func (c *Engine) timeOf(t int64) time.Time {
	if t == 0 {
		return time.Time{}
	}
	return c.epoch.Add(time.Duration(t - 1))
}
