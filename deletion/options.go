package deletion

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/podsweeper/podsweeper/ports"
)

// Errors returned by New, Track and Start. Match them with errors.Is.
var (
	// ErrNilPort: New was given a nil port, or a port that is a nil func or
	// a typed nil pointer.
	ErrNilPort = errors.New("deletion: nil port")
	// ErrInvalidOptions: an Options field is out of range.
	ErrInvalidOptions = errors.New("deletion: invalid options")
	// ErrInvalidPU: Track was given a PU without a PUID, pod name or namespace.
	ErrInvalidPU = errors.New("deletion: invalid PU")
	// ErrAlreadyStarted: Start was called a second time.
	ErrAlreadyStarted = errors.New("deletion: engine already started")
	// ErrPortPanicked wraps the value a port panicked with.
	ErrPortPanicked = errors.New("deletion: port panicked")
)

// Defaults of the Options fields left at their zero value, and their bounds.
const (
	DefaultSweepInterval   = 5 * time.Second
	DefaultCheckTimeout    = 30 * time.Second
	DefaultWorkers         = 4
	DefaultRetryMinDelay   = time.Second
	DefaultRetryMaxDelay   = time.Minute
	DefaultShutdownTimeout = 2 * time.Second
	// MaxWorkers bounds Options.Workers: far more checks at once than any
	// API server or policy engine serves, and a typo away from running a
	// node out of memory.
	MaxWorkers = 10_000
	// MinSweepInterval bounds Options.SweepInterval from below: re-reading
	// every pod more often than this costs CPU and API load without finding
	// a gone pod any sooner than TriggerPod does.
	MinSweepInterval = 100 * time.Millisecond
	// MinCheckTimeout bounds Options.CheckTimeout from below: a shorter
	// deadline fails healthy API calls.
	MinCheckTimeout = 10 * time.Millisecond
	// MaxDuration bounds every duration of Options, and 1/DestroyRate: a
	// year is far past any deadline or interval an engine needs, and the
	// engine's times stay far from overflowing.
	MaxDuration = 365 * 24 * time.Hour
)

// listed reports whether x says it answers from a list that may be old:
// it has a method MaxAge() time.Duration, as adapters/cri's SandboxCache.
func listed(x ports.SandboxExtractor) bool {
	_, ok := x.(interface{ MaxAge() time.Duration })
	return ok
}

// Options configure an Engine. The zero value of every field is a
// documented default; values out of range are rejected by New.
type Options struct {
	// SandboxExtractor reports a pod's current sandbox. nil: sandbox restarts
	// are not detected (rows 6 to 10 of the decision table never apply).
	// One that answers from a list that may be old says so with a method
	// MaxAge() time.Duration (adapters/cri's SandboxCache): New then requires
	// a SandboxConfirmer.
	SandboxExtractor ports.SandboxExtractor
	// Requeuer is told about a pod whose PU was destroyed for a sandbox
	// change. nil: nothing is requeued.
	Requeuer ports.Requeuer
	// NodeName is the node this engine runs for. "": the node check is off.
	NodeName string
	// Confirmer, when set, confirms every destroy decided on the
	// PodGetter's answer (rows 1, 3, 4 and 11 of the decision table): it is
	// asked for the pod, its answer goes through the same table, and the
	// check carries out that second verdict, so a PU is destroyed only when
	// the Confirmer's answer says so too; when it disagrees or fails, the PU
	// is kept and checked again later. A node agent reads pods from an
	// informer cache and confirms with a direct read of the API server
	// (adapters/k8s: NewPodGetter over mgr.GetAPIReader()), so that a cache
	// that lags or filters never destroys the PU of a live pod. nil: the
	// PodGetter's answer is final.
	Confirmer ports.PodGetter
	// SandboxConfirmer, when set, confirms the SandboxExtractor's answers
	// that would change something: before the engine records a sandbox
	// (row 7) or destroys a PU whose pod runs in another sandbox (row 10),
	// it asks the SandboxConfirmer and carries out the verdict of its answer
	// instead; a disagreement on row 10 is a veto (EventVetoed). So the
	// SandboxExtractor may answer from a list a moment old, one runtime call
	// per list instead of one per check (adapters/cri: a SandboxCache,
	// confirmed by the SandboxExtractor it lists with), and a stale answer
	// never records the wrong sandbox nor destroys the PU of a pod that
	// runs. A PU's first check, and one that TriggerPod asked for (the
	// kubelet's status of a replaced sandbox), ask the SandboxConfirmer
	// alone; a change no pod event tells of is seen by a periodic check that
	// reads a list made after it, at most SweepInterval plus the list's age
	// later. Requires a SandboxExtractor, and must not answer from a list
	// itself (have a MaxAge method). nil: the SandboxExtractor's answer is
	// final, and it must not answer from a list.
	SandboxConfirmer ports.SandboxExtractor
	// DestroyTerminated, when set, treats a pod that has finished (phase
	// Succeeded or Failed) as gone for its PU: row 11 destroys it with
	// ports.ReasonPodTerminated. A finished Job's pod keeps its object for
	// hours. Default false: a PU lives as long as its pod object.
	DestroyTerminated bool
	// Inventory, when set, is listed by Start before its first check: every
	// PU it returns is tracked (insert-only), so that the PUs of pods that
	// went away while the agent was down, or while another replica held the
	// lease, are checked and destroyed. A PU tracked already keeps what it
	// has, but a PU tracked without a sandbox and not yet checked (a pod
	// informer's add) takes the sandbox the Inventory lists for it, so that
	// a sandbox replaced while the agent was down is destroyed as changed
	// (row 10) instead of the new one being recorded (row 7). The first list
	// thus delays the first check by as long as it takes, at most its
	// deadline (CheckTimeout, at least a second) and a second more; its
	// answer is taken whenever it comes. A failing list is retried with
	// backoff (RetryMinDelay doubling up to RetryMaxDelay) until it answers
	// or Start's context ends; checks go on meanwhile. A list never brings
	// back a PU removed (destroyed, given up, untracked) while it was under
	// way. nil: nothing is restored.
	Inventory ports.Inventory

	// DryRun, when set, runs every check as usual, the Confirmer included,
	// but never calls DestroyPU: where a destroy would happen, the PU is
	// reported once (EventWouldDestroy, a log line at info level, and in
	// Status as PUStatus.WouldDestroy) and kept; it is reported again only
	// if the reason changes. A PU whose pod is gone for good (PodGone,
	// UIDChanged, NodeChanged) is dropped from memory once reported, so that
	// a long dry run on a busy node does not grow; an Inventory or journal
	// still lists it, so a restart reports it once more (Start's lists of
	// the run skip it). Default false.
	DryRun bool
	// DestroyRate bounds how many DestroyPU calls start per second, with
	// DestroyBurst at once (golang.org/x/time/rate, the limiter client-go's
	// workqueue uses): in any window of w seconds, at most DestroyRate*w +
	// DestroyBurst start, give or take the scheduling of a goroutine. A
	// check that decides a destroy beyond the budget
	// waits for its turn when it comes within a moment (20 to 125 ms by
	// SweepInterval, and half of the check's time left); otherwise the
	// PU waits, as a retry does but without counting as a failed attempt,
	// for about when its turn would come, behind the PUs that wait already,
	// and is checked again then: nothing is lost, only delayed. Its periodic
	// check, a trigger or a Sweep check it meanwhile, so that a PU whose pod
	// is seen alive again leaves the line and holds back no other. Untrack
	// stops a destroy that waits for its turn. Backlog().RateLimited counts
	// the PUs waiting; Status says "waiting for its turn". 0: no limit.
	// Negative, or less than one a year: rejected.
	DestroyRate rate.Limit
	// DestroyBurst is how many DestroyPU calls may start at once under
	// DestroyRate. 0: 1.
	DestroyBurst int

	// SweepInterval is how often every entry is re-checked. Checks are spread
	// over the interval in a few batches a second (one every 64th of it
	// beyond an hour), not run in one burst. 0: 5s. At least
	// MinSweepInterval, at most MaxDuration, as every duration here.
	SweepInterval time.Duration
	// CheckTimeout is the deadline of one check, destroy included. Requeue
	// gets a deadline of its own of the same length. 0: 30s. At least
	// MinCheckTimeout.
	CheckTimeout time.Duration
	// Workers is how many checks may run at once. 0: 4. At most MaxWorkers.
	Workers int
	// MaxDestroyAttempts is how many failed DestroyPU calls make the engine
	// give up on a PU (drop it and log the loss). 0: no limit: a failing
	// policy engine is retried with capped backoff for as long as it takes,
	// as controller-runtime retries a reconcile. 1 = fire and forget, as
	// trireme-lib's DeleteController does. An error wrapped with
	// ports.Permanent gives up at once whatever this says.
	MaxDestroyAttempts int
	// RetryMinDelay is the wait after the first failed DestroyPU of a PU
	// before it is tried again; it doubles at each failure up to
	// RetryMaxDelay. No periodic check or trigger tries a PU earlier; Sweep
	// does. 0: 1s.
	RetryMinDelay time.Duration
	// RetryMaxDelay bounds the wait between retries. 0: 1m.
	RetryMaxDelay time.Duration
	// ShutdownTimeout is how long Start waits, once its context is done, for
	// checks that are still inside a port; a check stuck in a port that
	// ignores its context is logged and left behind. 0: 2s.
	ShutdownTimeout time.Duration

	// Logger receives the engine's logs: errors at error level, destroys at
	// info, keeps and other details at V(1). The zero value (logr.Discard()
	// is the zero value too) logs through klog (klog.Background()), as
	// client-go and the kubelet do, so that an abandoned PU, a panicking port
	// or a failing API is never silent. To silence the engine, pass a Logger
	// whose sink drops everything.
	Logger logr.Logger
	// Observer is told about every check, destroy and failure, for metrics
	// and journals; Observers combines several. nil: nobody is told.
	Observer Observer
	// Clock drives the periodic checks, the retries, the destroy rate's
	// turns, the Inventory's retries and the times reported in Status and
	// to the Observer. Deadlines (CheckTimeout, ShutdownTimeout) are context
	// deadlines and timers of the time package (which testing/synctest
	// fakes). nil: the real clock.
	Clock clock.WithTicker
}

// withDefaults validates o and fills in the defaults.
func (o Options) withDefaults() (Options, error) {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"SweepInterval", o.SweepInterval},
		{"CheckTimeout", o.CheckTimeout},
		{"RetryMinDelay", o.RetryMinDelay},
		{"RetryMaxDelay", o.RetryMaxDelay},
		{"ShutdownTimeout", o.ShutdownTimeout},
	} {
		if d.v < 0 || d.v > MaxDuration {
			return o, fmt.Errorf("%w: %s is %v, want 0 to %v", ErrInvalidOptions, d.name, d.v, MaxDuration)
		}
	}
	if o.SandboxConfirmer != nil && o.SandboxExtractor == nil {
		return o, fmt.Errorf("%w: SandboxConfirmer is set without a SandboxExtractor: it would confirm nothing", ErrInvalidOptions)
	}
	if listed(o.SandboxExtractor) && o.SandboxConfirmer == nil {
		return o, fmt.Errorf("%w: SandboxExtractor (%T) answers from a list that may be old: give the extractor it lists with as SandboxConfirmer", ErrInvalidOptions, o.SandboxExtractor)
	}
	if listed(o.SandboxConfirmer) {
		return o, fmt.Errorf("%w: SandboxConfirmer (%T) answers from a list that may be old: it must ask the runtime itself", ErrInvalidOptions, o.SandboxConfirmer)
	}
	if o.Workers < 0 || o.Workers > MaxWorkers {
		return o, fmt.Errorf("%w: Workers is %d, want 0 to %d", ErrInvalidOptions, o.Workers, MaxWorkers)
	}
	if !(o.DestroyRate == 0 || o.DestroyRate*rate.Limit(MaxDuration.Seconds()) >= 1) || o.DestroyBurst < 0 {
		return o, fmt.Errorf("%w: DestroyRate is %v and DestroyBurst %d: want a rate of 0 (no limit) or at least one a year, and a burst of 0 or more",
			ErrInvalidOptions, o.DestroyRate, o.DestroyBurst)
	}
	if o.DestroyBurst == 0 {
		o.DestroyBurst = 1
	}
	if o.MaxDestroyAttempts < 0 {
		return o, fmt.Errorf("%w: MaxDestroyAttempts is negative (%d)", ErrInvalidOptions, o.MaxDestroyAttempts)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.SweepInterval, DefaultSweepInterval)
	def(&o.CheckTimeout, DefaultCheckTimeout)
	def(&o.RetryMinDelay, DefaultRetryMinDelay)
	def(&o.RetryMaxDelay, DefaultRetryMaxDelay)
	def(&o.ShutdownTimeout, DefaultShutdownTimeout)
	if o.SweepInterval < MinSweepInterval {
		return o, fmt.Errorf("%w: SweepInterval is %v, want at least %v", ErrInvalidOptions, o.SweepInterval, MinSweepInterval)
	}
	if o.CheckTimeout < MinCheckTimeout {
		return o, fmt.Errorf("%w: CheckTimeout is %v, want at least %v", ErrInvalidOptions, o.CheckTimeout, MinCheckTimeout)
	}
	if o.Workers == 0 {
		o.Workers = DefaultWorkers
	}
	if o.RetryMaxDelay < o.RetryMinDelay {
		return o, fmt.Errorf("%w: RetryMaxDelay (%v) is below RetryMinDelay (%v)", ErrInvalidOptions, o.RetryMaxDelay, o.RetryMinDelay)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger.GetSink() == nil {
		o.Logger = klog.Background()
	}
	return o, nil
}
