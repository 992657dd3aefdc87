package deletion

// The Requeuer's lane: a pod to requeue (rows 10 and 12) is handed to the Requeuer off the workers, one call at a time
// in the order the checks queued them, so that a Requeuer that nobody reads holds the lane's goroutine, never a worker,
// and never the engine.

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// requeueLane holds the pods waiting for the Requeuer, one per pod (the latest copy keeps the first's place), and
// whether its goroutine runs: idle is closed when it stops, the lane empty; callEnd is the deadline of the call it
// makes (realNow), 0 between calls.
type requeueLane struct {
	mu      sync.Mutex
	pending []requeueItem
	idle    chan struct{} // nil: no goroutine runs
	callEnd int64
}

// requeueItem is a pod to requeue, the PU whose check queued it, and the context of the goroutine that ran the check
// (Start's, or a Sweep's): the call runs under it, with a deadline of CheckTimeout.
type requeueItem struct {
	ctx  context.Context
	puid string
	pod  *corev1.Pod
}

// queueRequeue hands a copy of pod to the lane, and starts its goroutine if none runs. The PodGetter's pod may be its
// cache's own object, and the Requeuer's receivers may keep or modify the copy.
func (c *Engine) queueRequeue(ctx context.Context, puid string, pod *corev1.Pod) {
	if c.opts.Requeuer == nil {
		return
	}
	it := requeueItem{ctx: ctx, puid: puid, pod: pod.DeepCopy()}
	l := &c.rq
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := slices.IndexFunc(l.pending, func(p requeueItem) bool { return p.pod.UID == pod.UID }); i >= 0 {
		l.pending[i] = it
		return
	}
	l.pending = append(l.pending, it)
	if l.idle == nil {
		l.idle = make(chan struct{})
		go c.requeueAll()
	}
}

// requeueAll hands the lane's pods to the Requeuer until it is empty.
func (c *Engine) requeueAll() {
	l := &c.rq
	for {
		l.mu.Lock()
		if len(l.pending) == 0 {
			close(l.idle)
			l.idle, l.pending = nil, nil
			l.mu.Unlock()
			return
		}
		it := l.pending[0]
		l.pending[0] = requeueItem{}
		l.pending = l.pending[1:]
		l.callEnd = c.realNow() + int64(c.opts.CheckTimeout)
		l.mu.Unlock()
		c.requeue(it)
		l.mu.Lock()
		l.callEnd = 0
		l.mu.Unlock()
	}
}

// requeue hands it to the Requeuer under a deadline of CheckTimeout. A failure is logged at V(1) and summed up with
// the ports' others.
func (c *Engine) requeue(it requeueItem) {
	ctx, cancel := context.WithTimeout(it.ctx, c.opts.CheckTimeout)
	defer cancel()
	_, err := call(portNames[portRequeue], func() (struct{}, error) { return struct{}{}, c.opts.Requeuer.Requeue(ctx, it.pod) })
	if err == nil {
		return
	}
	c.fails.add(portRequeue, it.puid, err, c.opts.Clock.Now())
	if log := c.log.V(1); log.Enabled() {
		log.Info("requeueing pod failed; the main controller will see it at its next resync", "puID", it.puid,
			"pod", it.pod.Namespace+"/"+it.pod.Name, "error", err.Error())
	}
}

// waitRequeues waits until the lane has handed over every pod queued, ctx ends, or its call has run stuckGrace past
// its deadline (a Requeuer that ignores its context: stuck, as a check is).
func (c *Engine) waitRequeues(ctx context.Context) {
	l := &c.rq
	t := time.NewTimer(stuckGrace)
	defer t.Stop()
	for {
		l.mu.Lock()
		idle, end := l.idle, l.callEnd
		l.mu.Unlock()
		if idle == nil || end != 0 && c.realNow() > end+int64(stuckGrace) {
			return
		}
		select {
		case <-idle:
			return
		case <-ctx.Done():
			return
		case <-t.C:
			t.Reset(stuckGrace)
		}
	}
}
