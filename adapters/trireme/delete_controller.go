package trireme

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// deleteChCapacity is the size of the delete channel's buffer, as in trireme-lib.
const deleteChCapacity = 1000

// DeleteEvent asks the DeleteController to track the PU of a pod, as
// trireme-lib's DeleteEvent does: PodUID is the PU's ID, SandboxID the
// sandbox it was created for ("" when not known yet) and NamespaceName where
// the pod lives.
type DeleteEvent struct {
	PodUID        string
	SandboxID     string
	NamespaceName client.ObjectKey
}

// DeleteController is a drop-in replacement for trireme-lib's pod monitor
// DeleteController. It keeps its channels and its decisions, and runs the
// deletion engine underneath: checks run on a bounded pool of workers with
// deadlines, failed destroys are retried with backoff, and a send on the
// delete channel never waits for a check.
//
// Create it with NewDeleteController and add it to a controller-runtime
// manager (it is a manager.Runnable), or call Start yourself.
type DeleteController struct {
	engine      *deletion.Engine
	deleteCh    chan DeleteEvent
	reconcileCh chan struct{}
	log         logr.Logger
	started     atomic.Bool
}

var (
	_ manager.Runnable               = (*DeleteController)(nil)
	_ manager.LeaderElectionRunnable = (*DeleteController)(nil)
)

// NewDeleteController returns a DeleteController that reads pods through c
// and destroys PUs through policy, with the deletion engine's default
// Options (see NewDeleteControllerWithOptions).
//
// nodeName is the node the agent runs on; a PU whose pod is bound to another
// node is destroyed. "" turns the node check off. extractor reports a pod's
// sandbox; nil turns the sandbox check off. When a PU is destroyed because
// its pod's sandbox was replaced, the live pod is sent on eventsCh so that
// the main pod controller creates the PU of the new sandbox; a nil eventsCh
// sends nothing.
//
// It returns an error wrapping deletion.ErrNilPort when c or policy is nil (a
// typed nil too).
func NewDeleteController(c client.Reader, nodeName string, policy ports.PolicyHandler, extractor ports.SandboxExtractor, eventsCh chan event.GenericEvent) (*DeleteController, error) {
	return NewDeleteControllerWithOptions(c, nodeName, policy, extractor, eventsCh, deletion.Options{})
}

// NewDeleteControllerWithOptions is NewDeleteController with the engine's
// Options, for example to set an Observer for metrics, a SweepInterval or
// MaxDestroyAttempts. The arguments take precedence: opts.NodeName,
// opts.SandboxExtractor and opts.Requeuer are used only when nodeName is
// empty, extractor is nil and eventsCh is nil respectively.
//
// The drop-in's default Logger is the engine's, as everywhere in
// podsweeper: klog (klog.Background()), so that errors the seed dropped are
// never silent. A controller-runtime agent passes its own, for example
// ctrl.Log.WithName("podsweeper"), or sends klog to it with
// klog.SetLogger(ctrl.Log). To silence it, pass a Logger with a sink that
// discards.
func NewDeleteControllerWithOptions(c client.Reader, nodeName string, policy ports.PolicyHandler, extractor ports.SandboxExtractor, eventsCh chan event.GenericEvent, opts deletion.Options) (*DeleteController, error) {
	if ports.IsNil(c) {
		return nil, fmt.Errorf("trireme: %w: client.Reader is nil", deletion.ErrNilPort)
	}
	if nodeName != "" {
		opts.NodeName = nodeName
	}
	if !ports.IsNil(extractor) {
		opts.SandboxExtractor = extractor
	}
	if eventsCh != nil {
		opts.Requeuer = chanRequeuer{ch: eventsCh}
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = klog.Background().WithName("podsweeper")
	}
	engine, err := deletion.New(readerGetter{r: c}, policy, opts)
	if err != nil {
		return nil, fmt.Errorf("trireme: %w", err)
	}
	return &DeleteController{
		engine:      engine,
		deleteCh:    make(chan DeleteEvent, deleteChCapacity),
		reconcileCh: make(chan struct{}, 1),
		log:         opts.Logger,
	}, nil
}

// GetDeleteCh returns the channel on which to send a DeleteEvent for every
// PU the agent creates. While Start runs, a send waits only for a map insert,
// never for a check; before Start, up to 1000 events are buffered (after
// Start returns, nothing receives them any more, as with the seed). Tracking
// is insert-only: a second event for a PodUID already tracked is ignored.
// An event without a PodUID, name or namespace is logged and ignored.
func (d *DeleteController) GetDeleteCh() chan<- DeleteEvent {
	return d.deleteCh
}

// GetReconcileCh returns the channel on which to ask for every tracked PU to
// be checked now. Delete events sent before the request are tracked before
// it runs. Requests merge: a send waits only while an earlier one has not
// been picked up, which happens at once while Start runs.
func (d *DeleteController) GetReconcileCh() chan<- struct{} {
	return d.reconcileCh
}

// Start runs the controller until ctx is done, then returns nil once the
// engine has stopped (within about the engine's ShutdownTimeout). Events
// sent before Start are tracked when it begins. A second call, or a call
// after Engine().Start, returns an error wrapping deletion.ErrAlreadyStarted;
// a nil ctx, one wrapping deletion.ErrNilContext before anything starts (Start
// may then be called again with a context).
func (d *DeleteController) Start(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("trireme: DeleteController: %w", deletion.ErrNilContext)
	}
	if !d.started.CompareAndSwap(false, true) {
		return fmt.Errorf("trireme: DeleteController: %w", deletion.ErrAlreadyStarted)
	}
	engineDone := make(chan error, 1)
	go func() { engineDone <- d.engine.Start(ctx) }()
	// The loop only receives, into the line, so that a send never waits for Track (which waits for the
	// Observer's EventTracked: a journal's commit) and Start returns once the engine has stopped; the line's
	// own goroutine tracks and triggers, in the order sent, and ends with ctx once its Track has returned.
	l := &line{ready: make(chan struct{}, 1)}
	go d.work(ctx, l)
	for {
		select {
		case ev := <-d.deleteCh:
			l.add(lineItem{ev: ev})
		case <-d.reconcileCh:
			for n := len(d.deleteCh); n > 0; n-- { // the events sent before the request are tracked before it runs
				select {
				case ev := <-d.deleteCh:
					l.add(lineItem{ev: ev})
				default:
					n = 0
				}
			}
			l.add(lineItem{reconcile: true})
		case err := <-engineDone:
			// The engine stopped before ctx: it was started elsewhere already.
			if err != nil {
				return fmt.Errorf("trireme: DeleteController: %w", err)
			}
			return nil
		case <-ctx.Done():
			return <-engineDone
		}
	}
}

// lineItem is a delete event to track, or a reconcile request (every PU checked now).
type lineItem struct {
	ev        DeleteEvent
	reconcile bool
}

// line is what Start received and has not yet carried out, in the order received.
type line struct {
	mu    sync.Mutex
	items []lineItem
	ready chan struct{} // a token while items is not empty
}

func (l *line) add(it lineItem) {
	l.mu.Lock()
	if it.reconcile && len(l.items) > 0 && l.items[len(l.items)-1].reconcile {
		l.mu.Unlock()
		return // requests merge
	}
	l.items = append(l.items, it)
	l.mu.Unlock()
	select {
	case l.ready <- struct{}{}:
	default:
	}
}

func (l *line) take() (lineItem, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.items) == 0 {
		return lineItem{}, false
	}
	it := l.items[0]
	l.items[0] = lineItem{}
	l.items = l.items[1:]
	return it, true
}

// work carries out l's items in order until ctx is done.
func (d *DeleteController) work(ctx context.Context, l *line) {
	for {
		it, ok := l.take()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-l.ready:
			}
			continue
		}
		if ctx.Err() != nil {
			return
		}
		if it.reconcile {
			d.engine.TriggerAll()
		} else {
			d.track(it.ev)
		}
	}
}

// NeedLeaderElection returns false: every node runs its own DeleteController
// for its own pods.
func (d *DeleteController) NeedLeaderElection() bool { return false }

// Engine returns the deletion engine underneath, for Status, Len, Sweep or
// TriggerPod. Do not call its Start: DeleteController.Start does.
func (d *DeleteController) Engine() *deletion.Engine { return d.engine }

func (d *DeleteController) track(ev DeleteEvent) {
	err := d.engine.Track(ports.PU{PUID: ev.PodUID, Pod: ev.NamespaceName, SandboxID: ev.SandboxID})
	if err != nil {
		d.log.Error(err, "ignoring delete event", "puID", ev.PodUID, "pod", ev.NamespaceName.String())
	}
}
