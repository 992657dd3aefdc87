package seedref

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/ports"
)

// Defaults of the seed, used for the Options fields left at zero.
const (
	DefaultTickerPeriod       = 5 * time.Second
	DefaultItemProcessTimeout = 30 * time.Second
	// EventBuffer is the capacity of the seed's delete channel.
	EventBuffer = 1000
)

// Event asks the loop to remember a PU, as the seed's DeleteEvent does.
type Event struct {
	PUID      string
	Pod       types.NamespacedName
	SandboxID string
}

// Options configure a Controller. The zero value of each field is the seed's value.
type Options struct {
	// SandboxExtractor reports a pod's sandbox. nil: sandboxes are never compared.
	SandboxExtractor ports.SandboxExtractor
	// Requeue receives the live pod after a destroy for a sandbox change.
	// The send blocks the whole loop until it is read, as in the seed; a nil
	// channel blocks it forever.
	Requeue chan<- *corev1.Pod
	// TickerPeriod is the interval of the full passes. 0: 5s.
	TickerPeriod time.Duration
	// ItemProcessTimeout is the deadline of one item's check. 0: 30s.
	ItemProcessTimeout time.Duration
}

// object is the seed's DeleteObject.
type object struct {
	podUID    string
	sandboxID string
	podName   types.NamespacedName
}

// Controller is the seed's DeleteController on the SDK's ports.
type Controller struct {
	getter    ports.PodGetter
	policy    ports.PolicyHandler
	extractor ports.SandboxExtractor
	requeue   chan<- *corev1.Pod

	deleteCh     chan Event
	reconcileCh  chan struct{}
	lenCh        chan chan int
	tickerPeriod time.Duration
	itemTimeout  time.Duration
}

// New returns the seed's controller on these ports.
func New(getter ports.PodGetter, policy ports.PolicyHandler, opts Options) *Controller {
	if opts.TickerPeriod <= 0 {
		opts.TickerPeriod = DefaultTickerPeriod
	}
	if opts.ItemProcessTimeout <= 0 {
		opts.ItemProcessTimeout = DefaultItemProcessTimeout
	}
	return &Controller{
		getter:       getter,
		policy:       policy,
		extractor:    opts.SandboxExtractor,
		requeue:      opts.Requeue,
		deleteCh:     make(chan Event, EventBuffer),
		reconcileCh:  make(chan struct{}),
		lenCh:        make(chan chan int),
		tickerPeriod: opts.TickerPeriod,
		itemTimeout:  opts.ItemProcessTimeout,
	}
}

// DeleteCh is where PUs are handed to the loop (the seed's GetDeleteCh).
// A send blocks once 1000 events wait.
func (c *Controller) DeleteCh() chan<- Event { return c.deleteCh }

// ReconcileCh starts a full pass at once (the seed's GetReconcileCh). A
// send blocks until the loop is free to receive it.
func (c *Controller) ReconcileCh() chan<- struct{} { return c.reconcileCh }

// Len returns the number of entries in the map. It is served by the loop
// between two passes, like any other event, so it also waits for a pass in
// progress to end; tests and benchmarks use it as a barrier. It is the only
// addition to the seed and changes nothing of its algorithm.
func (c *Controller) Len(ctx context.Context) (int, error) {
	reply := make(chan int, 1)
	select {
	case c.lenCh <- reply:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	select {
	case n := <-reply:
		return n, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Start runs the loop until ctx is done, then returns nil.
func (c *Controller) Start(ctx context.Context) error {
	backgroundCtx := context.Background()
	t := time.NewTicker(c.tickerPeriod)
	m := make(map[string]object)

	for {
		select {
		case ev := <-c.deleteCh:
			// insert only, never update
			if _, ok := m[ev.PUID]; !ok {
				m[ev.PUID] = object{podUID: ev.PUID, sandboxID: ev.SandboxID, podName: ev.Pod}
			}
		case <-c.reconcileCh:
			c.reconcile(backgroundCtx, m)
		case <-t.C:
			c.reconcile(backgroundCtx, m)
		case reply := <-c.lenCh:
			reply <- len(m)
		case <-ctx.Done():
			t.Stop()
			return nil
		}
	}
}

// reconcile checks every entry, one after another.
func (c *Controller) reconcile(backgroundCtx context.Context, m map[string]object) {
	for podUID, req := range m {
		c.processItem(backgroundCtx, m, podUID, req.podName)
	}
}

func (c *Controller) processItem(backgroundCtx context.Context, m map[string]object, podUID string, req types.NamespacedName) {
	delObj, ok := m[podUID]
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(backgroundCtx, c.itemTimeout)
	defer cancel()
	pod, err := c.getter.GetPod(ctx, req)
	if err != nil {
		if isNotFound(err) {
			// the normal case: the pod is gone
			_ = c.policy.DestroyPU(ctx, ports.DestroyEvent{PUID: podUID, Pod: req, SandboxID: delObj.sandboxID, Reason: ports.ReasonPodGone})
			delete(m, podUID)
		}
		return
	}
	if pod == nil {
		// The seed reads into a zero Pod: a Get without error that fills
		// nothing leaves it with an empty UID.
		pod = &corev1.Pod{}
	}

	// 1st case: another UID under the same name.
	if string(pod.UID) != delObj.podUID {
		_ = c.policy.DestroyPU(ctx, ports.DestroyEvent{PUID: podUID, Pod: req, SandboxID: delObj.sandboxID, Reason: ports.ReasonUIDChanged})
		delete(m, podUID)
		return
	}

	// 2nd case: same UID, compare the sandboxes.
	if c.extractor == nil {
		return
	}
	currentSandboxID, err := c.extractor.SandboxID(ctx, pod)
	if err != nil {
		return
	}
	if delObj.sandboxID == "" {
		delObj = object{podUID: podUID, sandboxID: currentSandboxID, podName: req}
		m[podUID] = delObj
	}
	if delObj.sandboxID != currentSandboxID {
		_ = c.policy.DestroyPU(ctx, ports.DestroyEvent{PUID: podUID, Pod: req, SandboxID: delObj.sandboxID, Reason: ports.ReasonSandboxChanged})
		delete(m, podUID)
		c.requeue <- pod
	}
}

// isNotFound is the seed's errors.IsNotFound, extended to the ports' sentinel.
func isNotFound(err error) bool {
	return errors.Is(err, ports.ErrPodNotFound) || apierrors.IsNotFound(err)
}
