package deletion

import (
	"cmp"
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
	// ErrNilPort: New was given a nil port, or a port that is a nil func or a typed nil pointer.
	ErrNilPort = errors.New("deletion: nil port")
	// ErrInvalidOptions: an Options field is out of range.
	ErrInvalidOptions = errors.New("deletion: invalid options")
	// ErrInvalidPU: Track was given a PU without a PUID, pod name or namespace.
	ErrInvalidPU = errors.New("deletion: invalid PU")
	// ErrAlreadyStarted: Start was called a second time.
	ErrAlreadyStarted = errors.New("deletion: engine already started")
	// ErrPortPanicked wraps the value a port panicked with.
	ErrPortPanicked = errors.New("deletion: port panicked")
	// ErrNotCreated: the Engine was not made by New (a zero Engine{}): Track and Start return it, Untrack,
	// TriggerPod, TriggerAll and Sweep do nothing.
	ErrNotCreated = errors.New("deletion: Engine not created with New")
	// ErrNilContext: Start was given a nil context. It returns this before anything starts, and may be called again
	// with a context. (Sweep, which returns nothing, panics on a nil context.)
	ErrNilContext = errors.New("deletion: nil context")
)

// Defaults of the Options fields left at their zero value, and their bounds.
const (
	DefaultSweepInterval   = 5 * time.Second
	DefaultCheckTimeout    = 30 * time.Second
	DefaultWorkers         = 4
	DefaultRetryMinDelay   = time.Second
	DefaultRetryMaxDelay   = time.Minute
	DefaultShutdownTimeout = 2 * time.Second
	// MaxWorkers bounds Options.Workers: more checks at once than any API server or policy engine serves.
	MaxWorkers = 10_000
	// MinSweepInterval bounds Options.SweepInterval: checking more often costs CPU and API load and finds no gone pod
	// sooner than TriggerPod.
	MinSweepInterval = 100 * time.Millisecond
	// MinCheckTimeout bounds Options.CheckTimeout: a shorter deadline fails healthy API calls.
	MinCheckTimeout = 10 * time.Millisecond
	// MaxDuration bounds every duration of Options, and 1/DestroyRate: far from overflowing the engine's times.
	MaxDuration = 365 * 24 * time.Hour
)

// listed reports whether x answers from a list that may be old (MaxAge).
func listed(x ports.SandboxExtractor) bool {
	_, ok := x.(interface{ MaxAge() time.Duration })
	return ok
}

// Options configure an Engine. The zero value of every field is a documented default; values out of range are
// rejected by New.
type Options struct {
	// SandboxExtractor reports a pod's current sandbox. nil: sandbox restarts are not detected (rows 6 to 10 and 12
	// never apply). One that answers from a list that may be old has a method MaxAge() time.Duration (adapters/cri's
	// SandboxCache), and requires a SandboxConfirmer.
	SandboxExtractor ports.SandboxExtractor
	// Requeuer is told about a pod whose PU went for a sandbox change (rows 10 and 12): destroyed, or given up on
	// (ports.Permanent, MaxDestroyAttempts), for the pod needs the PU of its new sandbox either way. nil: nothing is
	// requeued.
	Requeuer ports.Requeuer
	// NodeName is the node this engine runs for. "": the node check is off.
	NodeName string
	// Confirmer, when set, confirms every destroy decided on the PodGetter's answer (rows 1, 3, 4 and 11): the check
	// carries out the verdict of its answer, and keeps the PU when it disagrees or fails. A node agent reads pods from
	// an informer cache and confirms with a read of the API server (adapters/k8s: NewPodGetter over
	// mgr.GetAPIReader()), so that a lagging cache never destroys the PU of a live pod. nil: the PodGetter's answer is
	// final.
	Confirmer ports.PodGetter
	// SandboxConfirmer, when set, confirms the SandboxExtractor's answers that would change something: before
	// recording a sandbox (row 7) or destroying a PU whose pod runs in another sandbox (row 10), the check carries out
	// the verdict of its answer instead (a disagreement on row 10 is an EventVetoed). So the extractor may answer from
	// a list a moment old (adapters/cri's SandboxCache, confirmed by the extractor it lists with) and never record the
	// wrong sandbox nor destroy the PU of a pod that runs. A PU's first check, and one TriggerPod or TriggerAll asked for, ask it
	// alone. Requires a SandboxExtractor, and must not have a MaxAge method itself. nil: the SandboxExtractor's answer
	// is final.
	SandboxConfirmer ports.SandboxExtractor
	// SandboxProber, when set, is asked whether a PU's sandbox is dead when its pod runs in no sandbox yet (the
	// SandboxExtractor answers ""): a dead one's PU is destroyed (row 12, ports.ReasonSandboxDead) while its pod waits
	// for a new sandbox, as after a node lost its runtime's state. Requires a SandboxExtractor. nil: such a PU is kept
	// until its pod gets a new sandbox or goes.
	SandboxProber ports.SandboxProber
	// DestroyTerminated, when set, treats a finished pod (phase Succeeded or Failed, as a Job's, whose object stays
	// for hours) as gone for its PU: row 11, ports.ReasonPodTerminated. Default false: a PU lives as long as its pod
	// object.
	DestroyTerminated bool
	// Inventory, when set, is listed by Start before its first check: every PU it returns is tracked (insert-only: a
	// PU tracked already with a sandbox keeps it, the one its Track told), so that the PUs of pods that went away while
	// the agent was down, or another replica led, are destroyed. A PU tracked without a sandbox takes the sandbox listed for it, in place of any its checks recorded from
	// the runtime (a list that failed, retried, may answer after them), so that a sandbox replaced meanwhile is
	// destroyed as changed (row 10), not recorded (row 7), and a dead one's PU is destroyed (row 12); the Observer
	// hears one recorded before the list is in with Event.IfNone, which a journal that is the Inventory does not write
	// over the sandbox it holds.
	// The first list delays the first check by at most its deadline (CheckTimeout, at least a second) and a second,
	// and, when it answers by then, by the tracking of what it listed: those PUs go in before any check, so that a
	// sandbox it lists is taken before a check records another; each waits for the Observer's EventTracked (a journal's commit), Workers at a time, and LivenessCheck
	// fails while none goes in for three SweepIntervals. EventRestored is told once the checks may begin. A failing
	// or late list is retried with backoff until it answers, while checks go on. A list never brings back a PU removed from when it began until its answer
	// is tracked, nor one destroyed, given up on or dropped by a dry run while no list had answered yet (the latest
	// removals, as many as the engine tracks at the least: an Inventory that observes the engine, a journal, may
	// still hold those, under the sandbox it recorded). nil: nothing is restored.
	Inventory ports.Inventory

	// DryRun, when set, runs every check but never calls DestroyPU (a PolicyHandler that is a ports.DryRunner is asked
	// DryRunDestroyPU in its place, and its failures are DestroyPU's, retried with backoff): a PU that would go is
	// reported once per reason (EventWouldDestroy, an info log line, PUStatus.WouldDestroy) and kept, or, when its pod
	// is gone for good (PodGone, UIDChanged, NodeChanged), dropped from memory, so that a long dry run does not grow.
	// Until the Inventory's first list is in, it remembers the latest dropped PUs, at least as many as it ever tracked
	// at once (and 16) and at most twice that, so that the list does not report them again. Default false.
	DryRun bool
	// DestroyRate bounds how many DestroyPU calls start per second, with DestroyBurst at once: in any window of w
	// seconds, at most DestroyRate*w + DestroyBurst start. The PUs whose checks decide a destroy form a line in the
	// order they were found to go, and turns go to them in that order: a PU destroys only when fewer PUs are ahead of
	// it than turns are at hand; otherwise it waits, as a retry does but with no failed attempt, until about its turn,
	// and is checked again then. A trigger, or a check that learns nothing of why it waits (GetPod fails; or, for a
	// destroy of its sandbox, the SandboxExtractor or the SandboxProber fails), keeps its place; one that learns
	// nothing is checked again at its turn, and then every tick until a check learns why, so that the line moves as
	// soon as the port answers (while the API server fails, a PU whose turn has come is read at each tick: once or
	// twice a second, or once a SweepInterval when that is under half a second; not once a SweepInterval of minutes). A
	// check that sees the pod alive, or Untrack, takes it out of the line, and the turn it did not use goes to the next
	// in line, never to a later arrival; so does a turn whose DestroyPU was never called (the check's context ended
	// first), and its PU keeps its place. A failed destroy used its turn: its retry, its backoff over, takes a place
	// at the back of the line, so that one failing PU never holds the turns of the others. Backlog().RateLimited
	// counts them; a Sweep waits for them, those whose checks
	// learn nothing too (end it sooner with its context). A dry run destroys nothing and takes no turn: its reports
	// follow the checks at once. 0: no limit. Negative, or under one a year: rejected.
	DestroyRate rate.Limit
	// DestroyBurst is how many DestroyPU calls may start at once under DestroyRate. 0: 1. A burst of more turns than
	// DestroyRate gives in a year (MaxDuration) is that many: more would overflow the line's arithmetic, and no burst
	// of a year's turns is one a node's drain can tell from no limit.
	DestroyBurst int

	// SweepInterval is how often every entry is re-checked, in a few batches a second (past an hour, in 3,600
	// batches an interval: one every SweepInterval/3600). 0: 5s. At least
	// MinSweepInterval, at most MaxDuration, as every duration here.
	SweepInterval time.Duration
	// CheckTimeout is the deadline of one check, destroy included, and of a Requeue: between 99% and 100% of it
	// after the check begins (the checks a worker runs within 1% of CheckTimeout share one deadline, which a
	// context per check would cost a sixth of the CPU at cluster scale). 0: 30s. At least MinCheckTimeout.
	CheckTimeout time.Duration
	// Workers is how many checks may run at once. 0: 4. At most MaxWorkers.
	Workers int
	// MaxDestroyAttempts is how many failed DestroyPU calls in a row make the engine give up on a PU (drop it and log
	// the loss): its calls since it was tracked, or since a dry run's last "would destroy"; a check that keeps the PU
	// between two of them does not begin a new row. An error wrapped with ports.Permanent gives up at once. In a dry run, a DryRunner's "would destroy"
	// ends the row, as the destroy would have. 0: no limit, as controller-runtime retries a
	// reconcile; 1: fire and forget, as trireme-lib's.
	MaxDestroyAttempts int
	// RetryMinDelay is the wait after a PU's first failed DestroyPU; it doubles at each failure up to RetryMaxDelay.
	// No periodic check or trigger tries a PU earlier; Sweep does (a Sweep whose context ends before it calls
	// DestroyPU tried nothing: the retry stands). 0: 1s.
	RetryMinDelay time.Duration
	// RetryMaxDelay bounds the wait between retries. 0: 1m.
	RetryMaxDelay time.Duration
	// ShutdownTimeout is how long Start waits, once its context is done, for checks still in a port; those left
	// behind are logged. 0: 2s.
	ShutdownTimeout time.Duration

	// Logger receives the engine's logs: errors at error level, destroys at info, keeps and other details at V(1).
	// The zero value (logr.Discard() too) logs through klog, as client-go does, so that a lost PU is never silent; to
	// silence it, pass a Logger whose sink drops everything.
	Logger logr.Logger
	// Observer is told about every check, destroy and failure (Observers combines several). nil: nobody is told.
	Observer Observer
	// Clock drives the periodic checks, the retries, the rate's turns and the times reported; deadlines
	// (CheckTimeout, ShutdownTimeout) follow the time package (which testing/synctest fakes). nil: the real clock.
	// One that reads the zero time.Time when New is called is refused: the times reported tell "never" by it.
	Clock clock.WithTicker
}

// Validate reports whether New would take o, with New's error: one wrapping ErrNilPort for an optional port that is a
// nil XxxFunc or a typed nil pointer, or ErrInvalidOptions, naming the first field it refuses. For a program that
// checks its command line before it connects to anything.
func (o Options) Validate() error {
	_, err := o.withDefaults()
	return err
}

// withDefaults validates o and fills in the defaults.
func (o Options) withDefaults() (Options, error) {
	names := [...]string{"Options.SandboxExtractor", "Options.Requeuer", "Options.Confirmer", "Options.SandboxConfirmer",
		"Options.SandboxProber", "Options.Inventory", "Options.Observer"}
	for i, p := range [...]any{o.SandboxExtractor, o.Requeuer, o.Confirmer, o.SandboxConfirmer, o.SandboxProber, o.Inventory,
		o.Observer} {
		if p != nil && ports.IsNil(p) { // optional: nil is none, a typed nil is a mistake
			return o, fmt.Errorf("%w: %s is nil (%T)", ErrNilPort, names[i], p)
		}
	}
	for _, d := range []struct {
		name     string
		v        *time.Duration
		fallback time.Duration
	}{
		{"SweepInterval", &o.SweepInterval, DefaultSweepInterval},
		{"CheckTimeout", &o.CheckTimeout, DefaultCheckTimeout},
		{"RetryMinDelay", &o.RetryMinDelay, DefaultRetryMinDelay},
		{"RetryMaxDelay", &o.RetryMaxDelay, DefaultRetryMaxDelay},
		{"ShutdownTimeout", &o.ShutdownTimeout, DefaultShutdownTimeout},
	} {
		if *d.v < 0 || *d.v > MaxDuration {
			return o, fmt.Errorf("%w: %s is %v, want 0 to %v", ErrInvalidOptions, d.name, *d.v, MaxDuration)
		}
		if *d.v == 0 {
			*d.v = d.fallback
		}
	}
	for _, c := range []struct {
		bad bool
		msg string
	}{
		{(o.SandboxConfirmer != nil || o.SandboxProber != nil) && o.SandboxExtractor == nil,
			"SandboxConfirmer or SandboxProber is set without a SandboxExtractor: it would be asked nothing"},
		{listed(o.SandboxExtractor) && o.SandboxConfirmer == nil, fmt.Sprintf("SandboxExtractor (%T) answers from a list "+
			"that may be old: give the extractor it lists with as SandboxConfirmer", o.SandboxExtractor)},
		{listed(o.SandboxConfirmer), fmt.Sprintf("SandboxConfirmer (%T) answers from a list that may be old: it must ask "+
			"the runtime itself", o.SandboxConfirmer)},
		{o.Workers < 0 || o.Workers > MaxWorkers, fmt.Sprintf("Workers is %d, want 0 to %d", o.Workers, MaxWorkers)},
		{!(o.DestroyRate == 0 || o.DestroyRate*rate.Limit(MaxDuration.Seconds()) >= 1) || o.DestroyBurst < 0,
			fmt.Sprintf("DestroyRate is %v and DestroyBurst %d: want a rate of 0 (no limit) or at least one a year, and a "+
				"burst of 0 or more", o.DestroyRate, o.DestroyBurst)},
		{o.MaxDestroyAttempts < 0, fmt.Sprintf("MaxDestroyAttempts is negative (%d)", o.MaxDestroyAttempts)},
		{o.SweepInterval < MinSweepInterval, fmt.Sprintf("SweepInterval is %v, want at least %v", o.SweepInterval, MinSweepInterval)},
		{o.CheckTimeout < MinCheckTimeout, fmt.Sprintf("CheckTimeout is %v, want at least %v", o.CheckTimeout, MinCheckTimeout)},
		{o.RetryMaxDelay < o.RetryMinDelay, fmt.Sprintf("RetryMaxDelay (%v) is below RetryMinDelay (%v)", o.RetryMaxDelay,
			o.RetryMinDelay)},
	} {
		if c.bad {
			return o, fmt.Errorf("%w: %s", ErrInvalidOptions, c.msg)
		}
	}
	o.DestroyBurst, o.Workers = max(o.DestroyBurst, 1), cmp.Or(o.Workers, DefaultWorkers)
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	} else if ports.IsNil(o.Clock) {
		return o, fmt.Errorf("%w: Clock is a nil %T", ErrInvalidOptions, o.Clock)
	} else if o.Clock.Now().IsZero() {
		return o, fmt.Errorf("%w: Clock reads the zero time.Time: Status and Backlog tell \"never\" by it (start a fake clock at time.Now())", ErrInvalidOptions)
	}
	if o.Logger.GetSink() == nil {
		o.Logger = klog.Background()
	}
	return o, nil
}
