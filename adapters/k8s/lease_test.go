package k8s

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

func TestCheckLeaseDurations(t *testing.T) {
	for _, c := range []struct {
		lease, renew, retry time.Duration
		ok                  bool
	}{
		{15 * time.Second, 10 * time.Second, 2 * time.Second, true}, // controller-runtime's defaults
		{4 * time.Second, 2500 * time.Millisecond, 500 * time.Millisecond, true},
		{13 * time.Second, 10 * time.Second, 2 * time.Second, true}, // exactly the margin
		{15 * time.Second, 12500 * time.Millisecond, 2 * time.Second, false},
		{12 * time.Second, 10 * time.Second, 2 * time.Second, false},
		{15 * time.Second, 2 * time.Second, 2 * time.Second, false}, // renew deadline not above the retry period
		{15 * time.Second, 10 * time.Second, 0, false},
		{0, 10 * time.Second, 2 * time.Second, false},
		{15 * time.Second, 1<<63 - 1, 2 * time.Second, false},                // a sum that would overflow
		{596524 * time.Hour, 10 * time.Second, 2 * time.Second, false},       // past a Lease's int32 seconds
		{30 * time.Second, 10 * time.Second, 9 * time.Second, false},         // client-go: the renew deadline above 1.2 retry periods
		{30 * time.Second, 10800 * time.Millisecond, 9 * time.Second, false}, // exactly 1.2 is not above
		{30 * time.Second, 10801 * time.Millisecond, 9 * time.Second, true},
		{2 * time.Second, 2, 1, false},                                 // no renewal can be waited for in 2ns
		{2 * time.Second, MinRenewDeadline - 1, MinRetryPeriod, false}, // a renew deadline under its floor
		{3 * time.Second, MinRenewDeadline, MinRetryPeriod - 1, false}, // a retry period under its floor
		{3 * time.Second, MinRenewDeadline, MinRetryPeriod, true},      // both at their floors
	} {
		err := CheckLeaseDurations(c.lease, c.renew, c.retry)
		if c.ok {
			assert.NoError(t, err, "%v/%v/%v", c.lease, c.renew, c.retry)
		} else {
			assert.ErrorIs(t, err, ErrInvalidSetup, "%v/%v/%v", c.lease, c.renew, c.retry)
		}
	}
}

// TestCheckLeaseDurationsRefusesALeaseDurationOfPartSeconds: a Lease holds
// its duration in whole seconds (leaseDurationSeconds, an int32) and
// client-go truncates the lease duration to them: 1500ms would be written
// as 1s, and a standby would take the Lease half a second early. (2500ms
// is written as 2s.) A lease
// duration that is not whole seconds is refused; the renew deadline and
// the retry period, which no Lease holds, may have part seconds.
func TestCheckLeaseDurationsRefusesALeaseDurationOfPartSeconds(t *testing.T) {
	for _, lease := range []time.Duration{2500 * time.Millisecond, 15*time.Second + time.Nanosecond, 15500 * time.Millisecond} {
		err := CheckLeaseDurations(lease, time.Second, 200*time.Millisecond)
		require.ErrorIs(t, err, ErrInvalidSetup, "%v", lease)
		assert.Contains(t, err.Error(), "whole seconds", "%v", lease)
	}
	assert.NoError(t, CheckLeaseDurations(3*time.Second, time.Second, 200*time.Millisecond))
}

// fakeLock is a resourcelock.Interface whose writes take latency and fail
// while fail is set.
type fakeLock struct {
	mu      sync.Mutex
	fail    bool
	latency time.Duration
	record  resourcelock.LeaderElectionRecord
}

func (l *fakeLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.record
	return &r, nil, nil
}

func (l *fakeLock) write(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	select {
	case <-time.After(l.latency):
	case <-ctx.Done():
		return ctx.Err()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail {
		return errors.New("connection refused")
	}
	l.record = ler
	return nil
}

func (l *fakeLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, ler)
}

func (l *fakeLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, ler)
}
func (l *fakeLock) RecordEvent(string) {}
func (l *fakeLock) Identity() string   { return "me" }
func (l *fakeLock) Describe() string   { return "ns/lease" }
func (l *fakeLock) setFail(fail bool)  { l.mu.Lock(); l.fail = fail; l.mu.Unlock() }

// renew writes a renewal by "me", timed now, as client-go's elector does.
func renew(t *testing.T, f *LeaseFence) error {
	t.Helper()
	now := metav1.NewTime(time.Now())
	return f.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me", LeaseDurationSeconds: 15,
		RenewTime: now, AcquireTime: now})
}

func done(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

var defaultDurations = LeaseFenceOptions{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
	Logger: funcr.New(func(string, string) {}, funcr.Options{})}

// The fenced context ends a renew deadline and a retry period after the
// time of the last renewal written, dated from the record (taken before a
// slow request was sent), not from when the write returned; a failed write
// does not move it.
func TestLeaseFenceEndsARenewDeadlineAndARetryPeriodAfterTheLastRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := &fakeLock{latency: 3 * time.Second}
		f := newLeaseFence(lock, defaultDurations)
		start := time.Now()
		require.NoError(t, renew(t, f)) // recorded at start, written at start+3s
		ctx, stop := f.fence(context.Background())
		defer stop()

		time.Sleep(2 * time.Second) // start+5s
		require.NoError(t, renew(t, f), "a renewal recorded at start+5s, written at start+8s")
		lock.setFail(true)
		time.Sleep(2 * time.Second)
		assert.Error(t, renew(t, f), "a renewal that fails")

		time.Sleep(time.Until(start.Add(5*time.Second+12*time.Second)) - time.Millisecond)
		synctest.Wait()
		assert.False(t, done(ctx), "held until the last renewal's time + 12s")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.True(t, done(ctx), "ended at the last renewal's time + 12s")
		assert.ErrorIs(t, context.Cause(ctx), ErrLeaseNotRenewed)
		assert.Equal(t, start.Add(17*time.Second), time.Now())
	})
}

// A fence whose last renewal is already too old ends the context at once;
// a release (a record with no holder) ends it at once too.
func TestLeaseFenceEndsAtOnceWhenPastOrReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newLeaseFence(&fakeLock{}, defaultDurations)
		ctx, stop := f.fence(context.Background())
		defer stop()
		require.True(t, done(ctx), "no renewal yet: nothing to lead by")

		require.NoError(t, renew(t, f))
		time.Sleep(13 * time.Second)
		ctx, stop2 := f.fence(context.Background())
		defer stop2()
		require.True(t, done(ctx), "renewed 13 s ago")

		require.NoError(t, renew(t, f))
		ctx, stop3 := f.fence(context.Background())
		defer stop3()
		time.Sleep(time.Second)
		synctest.Wait()
		require.False(t, done(ctx))
		require.NoError(t, f.Update(context.Background(), resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1,
			RenewTime: metav1.NewTime(time.Now()), AcquireTime: metav1.NewTime(time.Now())}))
		require.True(t, done(ctx), "released")
		assert.ErrorIs(t, context.Cause(ctx), ErrLeaseNotRenewed)
	})
}

// Renewals on time keep the context alive for as long as they come, and
// the parent's end ends it without the fence's cause.
func TestLeaseFenceHoldsWhileRenewed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newLeaseFence(&fakeLock{latency: 50 * time.Millisecond}, defaultDurations)
		require.NoError(t, renew(t, f))
		parent, cancel := context.WithCancel(context.Background())
		ctx, stop := f.fence(parent)
		defer stop()
		for range 100 { // 200 s
			time.Sleep(2 * time.Second)
			require.NoError(t, renew(t, f))
			require.False(t, done(ctx))
		}
		cancel()
		require.True(t, done(ctx))
		assert.NotErrorIs(t, context.Cause(ctx), ErrLeaseNotRenewed)
	})
}

// A program builds its manager from the config it gave NewLeaseFence: the
// lock's client timeout (half the renew deadline) set on that config would
// end every watch and LIST of the manager's cache after 5 s at the default
// durations, and a cache of 30,000 pods would never sync.
func TestNewLeaseFenceLeavesTheConfigItIsGivenAlone(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1", UserAgent: "the program's"}
	want := rest.CopyConfig(cfg)
	opts := defaultDurations
	opts.Name, opts.Namespace = "x", "ns"
	_, err := NewLeaseFence(cfg, opts)
	require.NoError(t, err)
	assert.Zero(t, cfg.Timeout, "a client built from the config after NewLeaseFence has no timeout")
	assert.Equal(t, want, cfg)
}

func TestNewLeaseFenceRefusesBadOptions(t *testing.T) {
	_, err := NewLeaseFence(nil, LeaseFenceOptions{Name: "x", LeaseDuration: 15 * time.Second, RenewDeadline: 14 * time.Second, RetryPeriod: time.Second})
	assert.ErrorIs(t, err, ErrInvalidSetup, "durations that break the rule")
	_, err = NewLeaseFence(nil, defaultDurations)
	assert.ErrorIs(t, err, ErrInvalidSetup, "no name")
	opts := defaultDurations
	opts.Name = "x"
	_, err = NewLeaseFence(nil, opts)
	assert.ErrorIs(t, err, ErrInvalidSetup, "no config")
}

// TestLeaseNamespaceOutsideAPodIsRequired: outside a pod, a Lease without
// a namespace has none to take: LeaseNamespace and NewLeaseFence say so,
// wrapping ErrInvalidSetup, in words that name no Go field.
func TestLeaseNamespaceOutsideAPodIsRequired(t *testing.T) {
	if _, err := os.Stat(inClusterNamespacePath); err == nil {
		t.Skip("in a pod: the Lease takes the pod's namespace")
	}
	ns, err := LeaseNamespace("podsweeper")
	require.NoError(t, err)
	assert.Equal(t, "podsweeper", ns)
	_, err = LeaseNamespace("")
	require.ErrorIs(t, err, ErrInvalidSetup)
	opts := defaultDurations
	opts.Name = "x"
	_, err = NewLeaseFence(&rest.Config{Host: "https://127.0.0.1:1"}, opts)
	require.ErrorIs(t, err, ErrInvalidSetup)
	assert.NotContains(t, err.Error(), "LeaderElectionNamespace")
	assert.Contains(t, err.Error(), "no namespace")
}
