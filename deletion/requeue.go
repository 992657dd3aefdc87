package deletion

// The Requeuer's lane: a pod to requeue (rows 10 and 12) is handed to the Requeuer off the workers, one call at a time
// in the order the checks queued them, so that a Requeuer that blocks holds the lane's goroutine alone.

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// requeueLane holds the pods waiting for the Requeuer, one per pod, whether its goroutine runs, and the Sweep whose
// pod it is handing over (calling); progress is closed at the end of each call, so that a Sweep waits for the pods
// its own checks queued only, and those ahead of them.
type requeueLane struct {
	mu       sync.Mutex
	pending  []requeueItem
	running  bool
	calling  uint32
	progress chan struct{}
}

// requeueItem is a pod to requeue, the PU whose check queued it, and the context of that check's goroutine, whose
// values the call keeps under a deadline of its own.
type requeueItem struct {
	ctx   context.Context
	puid  string
	pod   *corev1.Pod
	sweep uint32 // the Sweep whose check queued it, or queued it before at an earlier place (0: none)
}

// queueRequeue hands a copy of pod (the PodGetter's may be its cache's own) to the lane, and starts its goroutine if
// none runs; sweep is the Sweep whose check queued it (0: none).
func (c *Engine) queueRequeue(ctx context.Context, puid string, pod *corev1.Pod, sweep uint32) {
	if c.opts.Requeuer == nil {
		return
	}
	it := requeueItem{ctx: ctx, puid: puid, pod: pod.DeepCopy(), sweep: sweep}
	l := &c.rq
	l.mu.Lock()
	defer l.mu.Unlock()
	// A pod requeued again goes once, at its latest place; a Sweep that queued it before waits for it there.
	l.pending = slices.DeleteFunc(l.pending, func(p requeueItem) bool {
		if p.pod.UID == pod.UID && it.sweep == 0 {
			it.sweep = p.sweep
		}
		return p.pod.UID == pod.UID
	})
	l.pending = append(l.pending, it)
	if !l.running {
		l.running = true
		go c.requeueAll()
	}
}

// requeueAll hands the lane's pods to the Requeuer until it is empty.
func (c *Engine) requeueAll() {
	l := &c.rq
	for {
		l.mu.Lock()
		if len(l.pending) == 0 {
			l.running, l.pending = false, nil
			l.mu.Unlock()
			return
		}
		it := l.pending[0]
		l.pending[0] = requeueItem{}
		l.pending, l.calling = l.pending[1:], it.sweep
		l.mu.Unlock()
		c.requeue(it)
		l.mu.Lock()
		if l.calling = 0; l.progress != nil {
			close(l.progress)
			l.progress = nil
		}
		l.mu.Unlock()
	}
}

// requeue hands it to the Requeuer under a deadline of CheckTimeout of its own; a failure is logged at V(1) and
// summed up.
func (c *Engine) requeue(it requeueItem) {
	_, err := callLeaving(context.WithoutCancel(it.ctx), c.opts.CheckTimeout, portNames[portRequeue],
		func(ctx context.Context) (struct{}, error) { return struct{}{}, c.opts.Requeuer.Requeue(ctx, it.pod) })
	if err == nil {
		return
	}
	c.fails.add(portRequeue, it.puid, err, c.opts.Clock.Now())
	if log := c.log.V(1); log.Enabled() {
		log.Info("requeueing pod failed; the main controller will see it at its next resync", "puID", it.puid,
			"pod", it.pod.Namespace+"/"+it.pod.Name, "error", err.Error())
	}
}

// waitRequeues waits until the lane has handed over every pod the checks of the Sweep of gen queued, ctx ends, or
// CheckTimeout and a second have passed: once, not once a pod.
func (c *Engine) waitRequeues(ctx context.Context, gen uint32) {
	l := &c.rq
	t := time.NewTimer(c.opts.CheckTimeout + stuckGrace)
	defer t.Stop()
	for {
		l.mu.Lock()
		if l.calling != gen && !slices.ContainsFunc(l.pending, func(it requeueItem) bool { return it.sweep == gen }) {
			l.mu.Unlock()
			return
		}
		if l.progress == nil {
			l.progress = make(chan struct{})
		}
		progress := l.progress
		l.mu.Unlock()
		select {
		case <-progress:
		case <-ctx.Done():
			return
		case <-t.C:
			return
		}
	}
}
