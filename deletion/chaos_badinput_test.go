package deletion_test

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// Bad input: every case gets a clear error or a documented default, never a panic.

var badKey = types.NamespacedName{Namespace: "default", Name: "web-0"}

func badGetter(pod *corev1.Pod, err error) ports.PodGetter {
	return ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return pod, err })
}

func TestBadInputTrackWithEmptyFields(t *testing.T) {
	c, err := deletion.New(badGetter(nil, ports.ErrPodNotFound), &deletiontest.Policy{}, deletion.Options{})
	require.NoError(t, err)
	for name, e := range map[string]ports.PU{
		"zero entry":      {},
		"no PUID":         {Pod: badKey, SandboxID: "s1"},
		"no pod name":     {PUID: "uid-1", Pod: types.NamespacedName{Namespace: "default"}},
		"no namespace":    {PUID: "uid-1", Pod: types.NamespacedName{Name: "web-0"}},
		"only a sandbox":  {SandboxID: "s1"},
		"no pod at all":   {PUID: "uid-1"},
		"PUID and no key": {PUID: "uid-1", SandboxID: "s1"},
	} {
		t.Run(name, func(t *testing.T) {
			err := c.Track(e)
			require.ErrorIs(t, err, deletion.ErrInvalidPU)
			assert.Contains(t, err.Error(), "required")
		})
	}
	assert.Zero(t, c.Len())
	c.Sweep(context.Background()) // nothing to check, nothing to break
}

// TestBadInputPortAnswers: ports answering what they should not.
func TestBadInputPortAnswers(t *testing.T) {
	live := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: badKey.Namespace, Name: badKey.Name, UID: "uid-1"}}
	for _, tc := range []struct {
		name    string
		getter  ports.PodGetter
		sandbox ports.SandboxExtractor
		want    ports.Reason // "" = kept
	}{
		{name: "nil pod, nil error", getter: badGetter(nil, nil)},
		{name: "a pod and a not-found error: the error wins", getter: badGetter(live, ports.ErrPodNotFound), want: ports.ReasonPodGone},
		{name: "a pod and another error", getter: badGetter(live, errors.New("partial answer"))},
		{name: "another pod than asked for", getter: badGetter(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "db-0", UID: "uid-9"}}, nil)},
		{name: "empty sandbox, nil error", getter: badGetter(live, nil),
			sandbox: ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) { return "", nil })},
		{name: "sandbox and error together", getter: badGetter(live, nil),
			sandbox: ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) { return "s2", errors.New("stale") })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &deletiontest.Policy{}
			c, err := deletion.New(tc.getter, rec, deletion.Options{SandboxExtractor: tc.sandbox})
			require.NoError(t, err)
			require.NoError(t, c.Track(ports.PU{PUID: "uid-1", Pod: badKey, SandboxID: "s1"}))
			c.Sweep(context.Background())
			if tc.want == "" {
				assert.Empty(t, rec.Destroyed())
				assert.Equal(t, 1, c.Len())
				return
			}
			assert.Equal(t, []ports.DestroyEvent{{PUID: "uid-1", Pod: badKey, SandboxID: "s1", Reason: tc.want}}, rec.Destroyed())
			assert.Zero(t, c.Len())
		})
	}
}

// TestBadInputNilPoliciesAndRequeuers: nil-valued ports that are not nil
// interfaces are refused by New (see TestNewRejectsNilFuncsAndTypedNils);
// a Requeuer that panics is recovered and does not undo the destroy.
func TestBadInputNilPoliciesAndRequeuers(t *testing.T) {
	gone := badGetter(nil, ports.ErrPodNotFound)
	_, err := deletion.New(gone, ports.PolicyHandlerFunc(nil), deletion.Options{MaxDestroyAttempts: 1})
	require.ErrorIs(t, err, deletion.ErrNilPort)

	live := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: badKey.Namespace, Name: badKey.Name, UID: "uid-1"}}
	rec := &deletiontest.Policy{}
	c, err := deletion.New(badGetter(live, nil), rec, deletion.Options{
		SandboxExtractor: ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) { return "s2", nil }),
		Requeuer:         ports.RequeuerFunc(func(context.Context, *corev1.Pod) error { panic("requeuer bug") }),
		Logger:           deletiontest.Discard(),
	})
	require.NoError(t, err)
	require.NoError(t, c.Track(ports.PU{PUID: "uid-1", Pod: badKey, SandboxID: "s1"}))
	c.Sweep(context.Background())
	assert.Len(t, rec.Destroyed(), 1, "a panicking Requeuer does not undo the destroy")
	assert.Zero(t, c.Len())
}

func TestBadInputAbsurdOptions(t *testing.T) {
	getter, policy := badGetter(nil, ports.ErrPodNotFound), &deletiontest.Policy{}
	for name, o := range map[string]deletion.Options{
		"SweepInterval":                       {SweepInterval: -time.Second},
		"CheckTimeout":                        {CheckTimeout: -1},
		"RetryMinDelay":                       {RetryMinDelay: -time.Millisecond},
		"RetryMaxDelay":                       {RetryMaxDelay: math.MinInt64},
		"ShutdownTimeout":                     {ShutdownTimeout: -time.Hour},
		"Workers":                             {Workers: -4},
		"MaxDestroyAttempts":                  {MaxDestroyAttempts: -1},
		"RetryMaxDelay (below RetryMinDelay)": {RetryMinDelay: time.Minute, RetryMaxDelay: time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := deletion.New(getter, policy, o)
			require.ErrorIs(t, err, deletion.ErrInvalidOptions)
			assert.Nil(t, c)
			assert.Contains(t, err.Error(), firstWord(name))
			assert.Equal(t, err, o.Validate(), "Validate refuses what New refuses, with the same error")
		})
	}
	assert.NoError(t, deletion.Options{}.Validate(), "the zero Options are the defaults")
	t.Run("nil ports", func(t *testing.T) {
		_, err := deletion.New(nil, policy, deletion.Options{})
		require.ErrorIs(t, err, deletion.ErrNilPort)
		_, err = deletion.New(getter, nil, deletion.Options{})
		require.ErrorIs(t, err, deletion.ErrNilPort)
	})
}

func firstWord(s string) string {
	for i, r := range s {
		if r == ' ' {
			return s[:i]
		}
	}
	return s
}

// TestBadInputZeroWorkersMeansFour: Workers 0 is the documented default, 4.
func TestBadInputZeroWorkersMeansFour(t *testing.T) {
	var running, peak atomic.Int32
	release := make(chan struct{})
	getter := ports.PodGetterFunc(func(ctx context.Context, _ types.NamespacedName) (*corev1.Pod, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, errors.New("unavailable")
	})
	c, err := deletion.New(getter, &deletiontest.Policy{}, deletion.Options{Workers: 0})
	require.NoError(t, err)
	for i := range 10 {
		require.NoError(t, c.Track(ports.PU{PUID: string(rune('a' + i)), Pod: badKey}))
	}
	done := make(chan struct{})
	go func() { defer close(done); c.Sweep(context.Background()) }()
	require.Eventually(t, func() bool { return running.Load() == int32(deletion.DefaultWorkers) }, 5*time.Second, time.Millisecond)
	close(release)
	<-done
	assert.Equal(t, int32(deletion.DefaultWorkers), peak.Load())
}

// TestBadInputHugeSweepInterval: an interval near the largest Duration is
// refused with a clear error, and the largest one New takes (MaxDuration)
// must not wrap around into immediate re-checks.
func TestBadInputHugeSweepInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var gets atomic.Int64
		live := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: badKey.Namespace, Name: badKey.Name, UID: "uid-1"}}
		getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			gets.Add(1)
			return live, nil
		})
		_, err := deletion.New(getter, &deletiontest.Policy{}, deletion.Options{SweepInterval: math.MaxInt64, Logger: deletiontest.Discard()})
		require.ErrorIs(t, err, deletion.ErrInvalidOptions)
		c, err := deletion.New(getter, &deletiontest.Policy{}, deletion.Options{SweepInterval: deletion.MaxDuration, Logger: deletiontest.Discard()})
		require.NoError(t, err)
		require.NoError(t, c.Track(ports.PU{PUID: "uid-1", Pod: badKey}))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		for range 10 {
			c.TriggerPod(badKey)
			synctest.Wait()
		}
		time.Sleep(1000 * time.Hour)
		assert.Equal(t, int64(10), gets.Load(), "ten triggers, ten checks: the periodic one is up to a year away")
		cancel()
		require.NoError(t, <-done)
	})
}

// TestBadInputEmptyPod: a getter that answers a zero Pod (no name, no UID)
// with a nil error has not found the pod the PU belongs to; no API server
// returns a pod without a UID.
func TestBadInputEmptyPod(t *testing.T) {
	rec := &deletiontest.Policy{}
	c, err := deletion.New(badGetter(&corev1.Pod{}, nil), rec, deletion.Options{})
	require.NoError(t, err)
	require.NoError(t, c.Track(ports.PU{PUID: "uid-1", Pod: badKey, SandboxID: "s1"}))
	c.Sweep(context.Background())
	assert.Empty(t, rec.Destroyed())
	assert.Equal(t, 1, c.Len())
}

// TestBadInputStartAndSweepWithDoneContexts: contexts that are over before
// the call return at once.
func TestBadInputStartAndSweepWithDoneContexts(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c, err := deletion.New(badGetter(nil, ports.ErrPodNotFound), &deletiontest.Policy{}, deletion.Options{})
	require.NoError(t, err)
	require.NoError(t, c.Track(ports.PU{PUID: "uid-1", Pod: badKey}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.Sweep(ctx)
	assert.Equal(t, 1, c.Len(), "a sweep with a done context checks nothing")
	require.NoError(t, c.Start(ctx))
	require.ErrorIs(t, c.Start(context.Background()), deletion.ErrAlreadyStarted)
	c.TriggerPod(types.NamespacedName{})
	c.TriggerAll()
}
