package deletion_test

// A new user's mistakes get an error, not a crash: a zero Engine fails
// Track and Start and does nothing else; a nil context, or a typed-nil
// Clock or Observer, gets an error, or a clear panic in the caller, before
// any goroutine starts, and Start may be called again.

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// TestTrackOnAZeroEngineReturnsErrNotCreated: an Engine not made by New
// (deletion.Engine{}) answers Track with an error wrapping ErrNotCreated
// instead of a nil pointer dereference.
func TestTrackOnAZeroEngineReturnsErrNotCreated(t *testing.T) {
	c := &deletion.Engine{}
	var err error
	require.NotPanics(t, func() { err = c.Track(pu("a")) })
	assert.ErrorIs(t, err, deletion.ErrNotCreated)
}

// deletion: ErrNotCreated, ErrNilContext (go doc): a zero Engine fails Track and Start, the others do nothing; Start(nil) fails.
func TestAuditHoldsZeroEngineAndNilContext(t *testing.T) {
	var e deletion.Engine
	if err := e.Track(ports.PU{PUID: "x", Pod: nsKey("a")}); !errors.Is(err, deletion.ErrNotCreated) {
		t.Errorf("Track %v", err)
	}
	if err := e.Start(context.Background()); !errors.Is(err, deletion.ErrNotCreated) {
		t.Errorf("Start %v", err)
	}
	e.Untrack("x")
	e.TriggerAll()
	e.TriggerPod(nsKey("a"))
	e.Sweep(context.Background())
	t.Log(e.Len(), e.Status(), e.Backlog(), e.Classify(nil), e.LivenessCheck(nil), e.ReadinessCheck(nil))
	//lint:ignore SA1012 a nil context, on purpose
	if err := e.Start(nil); !errors.Is(err, deletion.ErrNilContext) {
		t.Errorf("Start(nil) %v", err)
	}
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

// Start(nil) returns ErrNilContext and may be called again.
func TestAuditHoldsStartNilContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		engine := deletiontest.NewEngine(t, deletiontest.NewCluster(), &deletiontest.Policy{}, deletion.Options{})
		//lint:ignore SA1012 the promise under test
		if err := engine.Start(nil); !errors.Is(err, deletion.ErrNilContext) { //nolint:staticcheck
			t.Fatalf("Start(nil) = %v", err)
		}
		deletiontest.Start(t, engine)
		synctest.Wait()
		if err := engine.LivenessCheck(nil); err != nil {
			t.Error(err)
		}
	})
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
