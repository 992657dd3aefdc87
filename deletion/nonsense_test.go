package deletion_test

// Ports are other people's code: a port that returns nonsense (a typed-nil
// error) fails, and a failing port keeps the PU; a programming error (a nil
// context, a typed-nil Clock or Observer) gets an error, or a clear panic
// in the caller, before any goroutine starts.

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// typedNil is the common Go mistake: a nil *url.Error returned as an error,
// which is not a nil error, and whose Error and Unwrap dereference nil.
func typedNil() error {
	var e *url.Error
	return e
}

// TestAPortReturningATypedNilErrorFailsAndKeepsThePU: each port in turn
// returns a typed-nil error; the check counts it as a failure of that port
// (EventGetFailed, EventDestroyFailed, or a PU kept), keeps the PU, and
// the process goes on, whether a Sweep or Start runs the check.
func TestAPortReturningATypedNilErrorFailsAndKeepsThePU(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "web"}
	gone := getterOf(nil, ports.ErrPodNotFound)
	live := getterOf(podAt(key, "web"), nil)
	broken := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, typedNil() })
	for _, tc := range []struct {
		port   string
		getter ports.PodGetter
		opts   func(*deletion.Options)
		policy ports.PolicyHandler
		event  deletion.EventKind
	}{
		{port: "GetPod", getter: broken, event: deletion.EventGetFailed},
		{port: "Confirmer", getter: gone, opts: func(o *deletion.Options) { o.Confirmer = broken }, event: deletion.EventVetoed},
		{port: "DestroyPU", getter: gone, event: deletion.EventDestroyFailed,
			policy: ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return typedNil() })},
		{port: "SandboxID", getter: live, event: deletion.EventChecked, opts: func(o *deletion.Options) {
			o.SandboxExtractor = ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) { return "", typedNil() })
		}},
		{port: "SandboxDead", getter: live, event: deletion.EventChecked, opts: func(o *deletion.Options) {
			o.SandboxExtractor = ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) { return "", nil })
			o.SandboxProber = ports.SandboxProberFunc(func(context.Context, *corev1.Pod, string) (bool, error) { return true, typedNil() })
		}},
	} {
		for _, runner := range []string{"Sweep", "Start"} {
			t.Run(tc.port+"/"+runner, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					rec := &deletiontest.Events{}
					policy := tc.policy
					if policy == nil {
						policy = newDestroyLog()
					}
					opts := deletion.Options{Observer: rec, NodeName: testNode, SweepInterval: time.Hour}
					if tc.opts != nil {
						tc.opts(&opts)
					}
					opts.Logger = (&logBuffer{}).logger() // it reads the errors it logs
					c := deletiontest.NewEngine(t, tc.getter, policy, opts)
					require.NoError(t, c.Track(ports.PU{PUID: "web", Pod: key, SandboxID: "s1"}))
					if runner == "Sweep" {
						c.Sweep(context.Background())
					} else {
						deletiontest.Start(t, c)
						c.TriggerAll()
					}
					synctest.Wait()
					require.Equal(t, 1, c.Len(), "the PU is kept")
					require.NotEmpty(t, rec.Of(tc.event), "the check ended with %v", tc.event)
					s := c.Status()[0]
					if tc.event != deletion.EventChecked || tc.port == "SandboxID" || tc.port == "SandboxDead" {
						require.Error(t, s.LastErr)
						assert.NotPanics(t, func() { _ = s.LastErr.Error() }, "the error kept is one that can be read")
						assert.Contains(t, s.LastErr.Error(), tc.port)
					}
				})
			})
		}
	}
}

// TestAnInventoryReturningATypedNilErrorIsRetried: a list that answers a
// typed-nil error failed: it is retried, and its next answer is restored.
func TestAnInventoryReturningATypedNilErrorIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		key := types.NamespacedName{Namespace: "ns", Name: "web"}
		calls := 0
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) {
			if calls++; calls == 1 {
				return nil, typedNil()
			}
			return []ports.PU{{PUID: "web", Pod: key}}, nil
		})
		c := deletiontest.NewEngine(t, getterOf(podAt(key, "web"), nil), newDestroyLog(), deletion.Options{Inventory: inv, RetryMinDelay: time.Second,
			Logger: (&logBuffer{}).logger()})
		deletiontest.Start(t, c)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Equal(t, 2, calls)
		assert.Equal(t, 1, c.Len(), "the second list is restored")
	})
}

// TestANilContextIsRefusedBeforeAnyGoroutineStarts: Start(nil) returns an
// error wrapping ErrNilContext and Sweep(nil) panics in its caller with a
// message saying so; neither starts a goroutine nor changes the engine:
// Start still runs afterwards.
func TestANilContextIsRefusedBeforeAnyGoroutineStarts(t *testing.T) {
	verifyNoLeaks(t)
	c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), newDestroyLog(), deletion.Options{})
	require.NoError(t, c.Track(pu("x")))
	//lint:ignore SA1012 a nil context, on purpose
	err := c.Start(nil)
	require.ErrorIs(t, err, deletion.ErrNilContext)
	assert.PanicsWithValue(t, "deletion: Sweep called with a nil context", func() {
		//lint:ignore SA1012 a nil context, on purpose
		c.Sweep(nil)
	})
	assert.Equal(t, 1, c.Len())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.NoError(t, c.Start(ctx), "a nil context did not count as Start's one call")
}

// nilClock is a clock.WithTicker whose methods dereference their receiver.
type nilClock struct{ clock.RealClock }

// TestATypedNilClockOrObserverIsRefused: New rejects a typed-nil Clock
// with ErrInvalidOptions, as it rejects a typed-nil port, and Observers
// skips a nil ObserverFunc as it skips a nil Observer.
func TestATypedNilClockOrObserverIsRefused(t *testing.T) {
	var clk *nilClock
	_, err := deletion.New(getterOf(nil, ports.ErrPodNotFound), newDestroyLog(), deletion.Options{Clock: clk})
	require.ErrorIs(t, err, deletion.ErrInvalidOptions)
	assert.Contains(t, err.Error(), "Clock")

	var told []deletion.EventKind
	obs := deletion.Observers(deletion.ObserverFunc(func(ev deletion.Event) { told = append(told, ev.Kind) }), deletion.ObserverFunc(nil))
	assert.NotPanics(t, func() { obs.Observe(deletion.Event{Kind: deletion.EventTracked}) })
	assert.Equal(t, []deletion.EventKind{deletion.EventTracked}, told)
	assert.False(t, errors.Is(err, deletion.ErrNilPort))
}
