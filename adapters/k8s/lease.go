package k8s

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	crleaderelection "sigs.k8s.io/controller-runtime/pkg/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// LeaseMargin is how much longer than its renew deadline and its retry
// period together a Lease must last (CheckLeaseDurations): a standby dates
// the leader's last renewal from the Lease's record, whose times are whole
// seconds, so it may date it up to a second early.
const LeaseMargin = time.Second

// MinRenewDeadline and MinRetryPeriod are the shortest renew deadline and
// retry period CheckLeaseDurations accepts: a renewal is a read and a write
// of the Lease on the API server, which a shorter deadline cannot wait for,
// so that the leader would lose its Lease at its first renewal; and a
// shorter retry period is a loop of calls on the API server.
const (
	MinRenewDeadline = time.Second
	MinRetryPeriod   = 100 * time.Millisecond
)

// ErrLeaseNotRenewed is the cause of the context a LeaseFence ends, and the
// error the engine's Runnable returns then: the Lease was not renewed
// within the renew deadline. Match it with errors.Is.
var ErrLeaseNotRenewed = errors.New("k8s: the Lease was not renewed within the renew deadline")

// CheckLeaseDurations returns an error wrapping ErrInvalidSetup unless
// leaseDuration > 0, renewDeadline >= MinRenewDeadline,
// retryPeriod >= MinRetryPeriod, renewDeadline > retryPeriod,
// leaseDuration is whole seconds (a Lease holds it as an int32 of seconds,
// which client-go truncates it to) and
// leaseDuration >= renewDeadline + retryPeriod + LeaseMargin: the rule
// under which a LeaseFence stops the leader's engine before another
// replica can take its Lease. The leader's engine stops at the latest a
// retry period and a renew deadline after the start of its last
// successful renewal; a standby may take the Lease a lease duration after
// it saw that renewal, dated to the second, so up to a second early.
// controller-runtime's defaults (15 s, 10 s, 2 s) keep it, with 2 s to
// spare.
func CheckLeaseDurations(leaseDuration, renewDeadline, retryPeriod time.Duration) error {
	// Each at most maxLeaseDuration first: their sum then cannot overflow.
	switch {
	case leaseDuration <= 0 || renewDeadline <= 0 || retryPeriod <= 0:
		return fmt.Errorf("%w: lease duration (%v), renew deadline (%v) and retry period (%v) must be positive",
			ErrInvalidSetup, leaseDuration, renewDeadline, retryPeriod)
	case renewDeadline < MinRenewDeadline || retryPeriod < MinRetryPeriod:
		return fmt.Errorf("%w: the renew deadline (%v) must be at least %v and the retry period (%v) at least %v: a renewal is a read and a write "+
			"of the Lease on the API server, which a shorter deadline cannot wait for, and a shorter retry period calls it in a loop",
			ErrInvalidSetup, renewDeadline, MinRenewDeadline, retryPeriod, MinRetryPeriod)
	case leaseDuration > maxLeaseDuration || renewDeadline > maxLeaseDuration || retryPeriod > maxLeaseDuration:
		return fmt.Errorf("%w: lease duration (%v), renew deadline (%v) and retry period (%v) must be at most %v: a Lease holds its duration in int32 seconds",
			ErrInvalidSetup, leaseDuration, renewDeadline, retryPeriod, maxLeaseDuration)
	case leaseDuration%time.Second != 0:
		// Refused, not rounded: the duration a standby waits is a safety
		// bound, which the program should not change behind its operator.
		return fmt.Errorf("%w: the lease duration (%v) must be whole seconds: a Lease holds it in whole seconds, and client-go "+
			"would write %v, after which another replica may take the Lease", ErrInvalidSetup, leaseDuration, leaseDuration.Truncate(time.Second))
	case float64(renewDeadline) <= leaderelection.JitterFactor*float64(retryPeriod):
		return fmt.Errorf("%w: the renew deadline (%v) must be longer than %v times the retry period (%v), as client-go's leader election requires",
			ErrInvalidSetup, renewDeadline, leaderelection.JitterFactor, retryPeriod)
	case leaseDuration < renewDeadline+retryPeriod+LeaseMargin:
		return fmt.Errorf("%w: the lease duration (%v) must be at least the renew deadline (%v) plus the retry period (%v) plus %v, "+
			"or the leader may still destroy when another replica takes its Lease", ErrInvalidSetup, leaseDuration, renewDeadline, retryPeriod, LeaseMargin)
	}
	return nil
}

// inClusterNamespacePath is the file a pod reads its own namespace from,
// as controller-runtime's leader election reads it.
const inClusterNamespacePath = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// LeaseNamespace returns the namespace of a Lease given namespace, as
// NewLeaseFence takes it: namespace itself, or, when it is empty, the
// namespace of the pod the program runs in (read from its service
// account's mount, as controller-runtime's leader election reads it).
// Outside a pod an empty namespace has none: the error wraps
// ErrInvalidSetup, for a program to refuse its command line with before
// it connects to anything.
func LeaseNamespace(namespace string) (string, error) {
	if namespace != "" {
		return namespace, nil
	}
	b, err := os.ReadFile(inClusterNamespacePath)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: the Lease has no namespace, and the program runs in no pod (no %s) to take its own", ErrInvalidSetup, inClusterNamespacePath)
	}
	if err != nil {
		return "", fmt.Errorf("%w: the Lease has no namespace, and the pod's own cannot be read: %w", ErrInvalidSetup, err)
	}
	return string(b), nil
}

// maxLeaseDuration is the longest duration a Lease holds: its
// leaseDurationSeconds is an int32.
const maxLeaseDuration = math.MaxInt32 * time.Second

// LeaseFenceOptions configure NewLeaseFence: the Lease and the durations
// of the manager's leader election, which must be the same as its
// manager.Options' (LeaderElectionNamespace, LeaderElectionID,
// LeaseDuration, RenewDeadline, RetryPeriod).
type LeaseFenceOptions struct {
	// Namespace of the Lease; "" in the cluster: the pod's own namespace
	// (LeaseNamespace).
	Namespace string
	// Name of the Lease (required).
	Name string
	// LeaseDuration, RenewDeadline and RetryPeriod must keep
	// CheckLeaseDurations.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Logger receives a line when the fence stops the engine. The zero
	// value logs through klog.
	Logger logr.Logger
}

// LeaseFence is the resource lock of a manager's leader election
// (manager.Options.LeaderElectionResourceLockInterface) that stops the
// leader's engine before another replica can take the Lease. Give it to
// SetupClusterWithManager as SetupOptions.LeaseFence.
//
// Why: client-go's leader election gives up the lead once it has failed to
// renew for RenewDeadline, then, with LeaderElectionReleaseOnCancel, tries
// to release the Lease, which waits up to its client's timeout (half the
// renew deadline) when the API server does not answer, and only then does
// the manager stop the engine. With the defaults (15 s, 10 s, 2 s) and a
// partition that drops packets, the engine ran until 17 s after the last
// renewal, while a standby may take the Lease from 14 to 15 s after it:
// two replicas destroying at once, which leader election is there to
// prevent.
//
// The fence keeps, from each renewal the lock writes for this replica, the
// time the record carries (taken before the request was sent), and ends the
// engine's context a renew deadline and a retry period after it, whatever
// the elector is doing then: retrying, releasing, or waiting on a client
// that hangs. With CheckLeaseDurations' rule that is at least LeaseMargin
// before a standby can take the Lease. From then the engine starts no check
// and no DestroyPU (one under way may finish: it is no fence against the
// API). The manager then stops as its elector gives up the lead (which it
// has by then, or does within its client's timeout): its Start returns
// "leader election lost" and the program exits; should the manager still
// run a renew deadline and a retry period later, the Runnable returns an
// error wrapping ErrLeaseNotRenewed, which stops it. A release (a record with no holder) ends the context
// at once. The fence relies on the leader's clock running at the same rate
// as the standby's, as leader election does.
type LeaseFence struct {
	lock resourcelock.Interface
	hold time.Duration // renew deadline + retry period
	log  logr.Logger

	mu      sync.Mutex
	renewed time.Time // of the last renewal written for this replica; zero: none, or released
	timer   *time.Timer
	cancel  context.CancelCauseFunc // of the fenced context, nil when none
}

var _ resourcelock.Interface = (*LeaseFence)(nil)

// NewLeaseFence returns a LeaseFence over the Lease opts names, reached
// with cfg: the lock controller-runtime's manager would make itself
// (leaderelection.NewResourceLock: its client's timeout is half the renew
// deadline, at least 1 s, and its identity the host name and a UUID). It
// records no Event of its own (manager.Options would: "became leader", on
// the Lease), so that the program needs no right to core Events. Its
// errors wrap ErrInvalidSetup, for durations that break
// CheckLeaseDurations, a missing name or namespace (LeaseNamespace), or
// come from building the lock.
// cfg itself is left as it is: the lock's timeout and user agent are set
// on a copy, so that a manager or client built from cfg afterwards keeps
// its watches open past the lock's timeout.
func NewLeaseFence(cfg *rest.Config, opts LeaseFenceOptions) (*LeaseFence, error) {
	if err := CheckLeaseDurations(opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod); err != nil {
		return nil, err
	}
	if opts.Name == "" {
		return nil, fmt.Errorf("%w: the Lease has no name", ErrInvalidSetup)
	}
	if cfg == nil {
		return nil, fmt.Errorf("%w: the rest.Config is nil", ErrInvalidSetup)
	}
	ns, err := LeaseNamespace(opts.Namespace)
	if err != nil {
		return nil, err
	}
	// NewResourceLock sets the client's timeout and user agent on the
	// config it is given (rest.AddUserAgent modifies its argument): on a
	// config shared with the manager, every watch and LIST of its cache
	// would end after half the renew deadline.
	lock, err := crleaderelection.NewResourceLock(rest.CopyConfig(cfg), noEvents{}, crleaderelection.Options{
		LeaderElection:          true,
		LeaderElectionID:        opts.Name,
		LeaderElectionNamespace: ns,
		RenewDeadline:           opts.RenewDeadline,
	})
	if err != nil {
		return nil, fmt.Errorf("k8s: the Lease's lock: %w", err)
	}
	return newLeaseFence(lock, opts), nil
}

// newLeaseFence fences lock, whose durations are checked.
func newLeaseFence(lock resourcelock.Interface, opts LeaseFenceOptions) *LeaseFence {
	if opts.Logger.GetSink() == nil {
		opts.Logger = klog.Background().WithName("podsweeper-lease")
	}
	return &LeaseFence{lock: lock, hold: opts.RenewDeadline + opts.RetryPeriod, log: opts.Logger}
}

// Get returns the Lease's record, as the lock reads it.
func (f *LeaseFence) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return f.lock.Get(ctx)
}

// Create creates the Lease; once it is written, its record moves the fence.
func (f *LeaseFence) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := f.lock.Create(ctx, ler)
	if err == nil {
		f.written(ler)
	}
	return err
}

// Update updates the Lease; once it is written, its record moves the
// fence: a renewal (this replica holding it) to its time, a release (no
// holder) to now.
func (f *LeaseFence) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := f.lock.Update(ctx, ler)
	if err == nil {
		f.written(ler)
	}
	return err
}

// RecordEvent records nothing: see NewLeaseFence.
func (f *LeaseFence) RecordEvent(s string) { f.lock.RecordEvent(s) }

// Identity is the lock's.
func (f *LeaseFence) Identity() string { return f.lock.Identity() }

// Describe is the lock's.
func (f *LeaseFence) Describe() string { return f.lock.Describe() }

// written moves the fence after the record ler was written.
func (f *LeaseFence) written(ler resourcelock.LeaderElectionRecord) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ler.HolderIdentity == f.lock.Identity() {
		f.renewed = ler.RenewTime.Time
	} else {
		f.renewed = time.Time{}
	}
	f.armLocked()
}

// fence returns a context that ends when parent does, or a renew deadline
// and a retry period after the last renewal, with ErrLeaseNotRenewed as
// its cause; stop releases it. One context at a time: a second call ends
// the first.
func (f *LeaseFence) fence(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	f.mu.Lock()
	if f.cancel != nil {
		f.cancel(context.Canceled)
	}
	f.cancel = cancel
	f.armLocked()
	f.mu.Unlock()
	return ctx, func() {
		cancel(context.Canceled)
		f.mu.Lock()
		if f.timer != nil {
			f.timer.Stop()
		}
		f.cancel = nil
		f.mu.Unlock()
	}
}

// armLocked sets the timer to the fence, or ends the fenced context if the
// fence has passed.
func (f *LeaseFence) armLocked() {
	if f.cancel == nil {
		return
	}
	if f.renewed.IsZero() {
		f.expireLocked()
		return
	}
	wait := time.Until(f.renewed.Add(f.hold))
	if wait <= 0 {
		f.expireLocked()
		return
	}
	if f.timer == nil {
		f.timer = time.AfterFunc(wait, f.expire)
		return
	}
	f.timer.Reset(wait)
}

// expire is the timer's: the fence may have moved since it was set.
func (f *LeaseFence) expire() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armLocked()
}

// expireLocked ends the fenced context.
func (f *LeaseFence) expireLocked() {
	var err error
	if f.renewed.IsZero() {
		err = fmt.Errorf("%w: the Lease was released", ErrLeaseNotRenewed)
	} else {
		err = fmt.Errorf("%w: last renewed at %s, fence at %s (renew deadline + retry period)", ErrLeaseNotRenewed,
			f.renewed.Format(time.RFC3339Nano), f.renewed.Add(f.hold).Format(time.RFC3339Nano))
	}
	f.log.Info("stopping the engine before another replica can take the Lease", "lease", f.lock.Describe(),
		"renewed", f.renewed, "fence", f.renewed.Add(f.hold), "reason", err.Error())
	f.cancel(err)
	f.cancel = nil
}

// noEvents is the recorder.Provider of NewLeaseFence's lock: it records
// nothing.
type noEvents struct{}

var _ recorder.Provider = noEvents{}

// GetEventRecorderFor returns a recorder of core Events that records none.
func (noEvents) GetEventRecorderFor(string) record.EventRecorder { return noCoreEvents{} }

// GetEventRecorder returns a recorder of events.k8s.io Events that records none.
func (noEvents) GetEventRecorder(string) recorder.EventRecorder { return noEventsV1{} }

type noCoreEvents struct{}

func (noCoreEvents) Event(runtime.Object, string, string, string)          {}
func (noCoreEvents) Eventf(runtime.Object, string, string, string, ...any) {}
func (noCoreEvents) AnnotatedEventf(runtime.Object, map[string]string, string, string, string, ...any) {
}

type noEventsV1 struct{}

func (noEventsV1) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {}
func (noEventsV1) AnnotatedEventf(runtime.Object, runtime.Object, map[string]string, string, string, string, string, ...any) {
}
