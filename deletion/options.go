package deletion

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/podsweeper/podsweeper/ports"
)

// Errors returned by New, Track and Start. Match them with errors.Is.
var (
	// ErrNilPort: New was given a nil PodGetter or PolicyHandler.
	ErrNilPort = errors.New("deletion: nil port")
	// ErrInvalidOptions: an Options field is out of range.
	ErrInvalidOptions = errors.New("deletion: invalid options")
	// ErrInvalidEntry: Track was given an entry without a PUID, pod name or namespace.
	ErrInvalidEntry = errors.New("deletion: invalid entry")
	// ErrAlreadyStarted: Start was called a second time.
	ErrAlreadyStarted = errors.New("deletion: controller already started")
	// ErrPortPanicked wraps the value a port panicked with.
	ErrPortPanicked = errors.New("deletion: port panicked")
)

// Defaults of the Options fields left at their zero value.
const (
	DefaultSweepInterval      = 5 * time.Second
	DefaultItemTimeout        = 30 * time.Second
	DefaultWorkers            = 4
	DefaultMaxDestroyAttempts = 5
	DefaultRetryMinDelay      = time.Second
	DefaultRetryMaxDelay      = time.Minute
	DefaultShutdownTimeout    = 2 * time.Second
	// MaxWorkers bounds Options.Workers: far more checks at once than any
	// API server or policy engine serves, and a typo away from running a
	// node out of memory.
	MaxWorkers = 10_000
)

// Options configure a Controller. The zero value of every field is a
// documented default; negative values are rejected by New.
type Options struct {
	// SandboxExtractor reports a pod's current sandbox. nil: sandbox restarts
	// are not detected (rows 6 to 10 of the decision table never apply).
	SandboxExtractor ports.SandboxExtractor
	// Requeuer is told about a pod whose PU was destroyed for a sandbox
	// change. nil: nothing is requeued.
	Requeuer ports.Requeuer
	// NodeName is the node this engine runs for. "": the node check is off.
	NodeName string

	// SweepInterval is how often every entry is re-checked. Checks are spread
	// over the interval, not run in one burst. 0: 5s.
	SweepInterval time.Duration
	// ItemTimeout is the deadline of one check, destroy included: its
	// context ends between 99% and 100% of ItemTimeout after it starts
	// (checks started close together share one context). Requeue gets a
	// deadline of its own of the same length. 0: 30s.
	ItemTimeout time.Duration
	// Workers is how many checks may run at once. 0: 4. At most MaxWorkers.
	Workers int
	// MaxDestroyAttempts is how many times DestroyPU is tried for one PU
	// before the PU is dropped and the loss logged. 0: 5. 1 = fire and
	// forget, as trireme-lib's DeleteController does.
	MaxDestroyAttempts int
	// RetryMinDelay is the wait before the first retry of a failed
	// DestroyPU; it doubles at each failure up to RetryMaxDelay. 0: 1s.
	RetryMinDelay time.Duration
	// RetryMaxDelay bounds the wait between retries. 0: 1m.
	RetryMaxDelay time.Duration
	// ShutdownTimeout is how long Start waits, once its context is done, for
	// checks that are still inside a port; a check stuck in a port that
	// ignores its context is logged and left behind. 0: 2s.
	ShutdownTimeout time.Duration

	// Logger receives the engine's logs: errors at error level, destroys at
	// info, keeps at V(1). The zero value discards everything.
	Logger logr.Logger
	// Observer is told about every check, destroy and failure, for metrics.
	// nil: nobody is told.
	Observer Observer
	// Clock drives sweeps, retries and the durations reported to the
	// Observer; tests use a fake one. Per-check deadlines (ItemTimeout) are
	// context deadlines and always follow real time. nil: the real clock.
	Clock clock.WithTicker
}

// withDefaults validates o and fills in the defaults.
func (o Options) withDefaults() (Options, error) {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"SweepInterval", o.SweepInterval},
		{"ItemTimeout", o.ItemTimeout},
		{"RetryMinDelay", o.RetryMinDelay},
		{"RetryMaxDelay", o.RetryMaxDelay},
		{"ShutdownTimeout", o.ShutdownTimeout},
	} {
		if d.v < 0 {
			return o, fmt.Errorf("%w: %s is negative (%v)", ErrInvalidOptions, d.name, d.v)
		}
	}
	if o.Workers < 0 || o.Workers > MaxWorkers {
		return o, fmt.Errorf("%w: Workers is %d, want 0 to %d", ErrInvalidOptions, o.Workers, MaxWorkers)
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
	def(&o.ItemTimeout, DefaultItemTimeout)
	def(&o.RetryMinDelay, DefaultRetryMinDelay)
	def(&o.RetryMaxDelay, DefaultRetryMaxDelay)
	def(&o.ShutdownTimeout, DefaultShutdownTimeout)
	if o.Workers == 0 {
		o.Workers = DefaultWorkers
	}
	if o.MaxDestroyAttempts == 0 {
		o.MaxDestroyAttempts = DefaultMaxDestroyAttempts
	}
	if o.RetryMaxDelay < o.RetryMinDelay {
		return o, fmt.Errorf("%w: RetryMaxDelay (%v) is below RetryMinDelay (%v)", ErrInvalidOptions, o.RetryMaxDelay, o.RetryMinDelay)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o, nil
}

// Observer is told what the engine does, for metrics. Observe is called
// from the engine's workers: it must be fast and must not block. A panic in
// it is recovered and logged.
type Observer interface {
	Observe(Event)
}

// ObserverFunc lets a plain function serve as an Observer.
type ObserverFunc func(Event)

// Observe calls f(ev).
func (f ObserverFunc) Observe(ev Event) { f(ev) }

// EventKind says what an Event reports.
type EventKind uint8

const (
	// EventTracked: a new entry is tracked.
	EventTracked EventKind = iota + 1
	// EventChecked: a check finished; Verdict and Duration are set.
	EventChecked
	// EventGetFailed: GetPod failed with an error other than not found; Err is set.
	EventGetFailed
	// EventDestroyed: DestroyPU succeeded and the entry is removed. Reason is
	// set; Duration is the time from the first check that found the PU must
	// go to this successful destroy.
	EventDestroyed
	// EventDestroyFailed: DestroyPU failed; Reason, Attempt and Err are set.
	// An EventAbandoned follows when this was the last attempt.
	EventDestroyFailed
	// EventAbandoned: the entry is removed without a successful destroy,
	// after its last failed attempt or a permanent error; Reason and Err are set.
	EventAbandoned
)

var eventKindNames = [...]string{
	EventTracked: "Tracked", EventChecked: "Checked", EventGetFailed: "GetFailed",
	EventDestroyed: "Destroyed", EventDestroyFailed: "DestroyFailed", EventAbandoned: "Abandoned",
}

// String returns the kind's name.
func (k EventKind) String() string {
	if int(k) < len(eventKindNames) && eventKindNames[k] != "" {
		return eventKindNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", k)
}

// Event is one thing the engine did, as reported to an Observer.
type Event struct {
	Kind     EventKind
	Entry    Entry
	Verdict  Verdict
	Reason   ports.Reason
	Duration time.Duration
	Attempt  int
	Err      error
}
