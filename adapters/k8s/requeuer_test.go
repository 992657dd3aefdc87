package k8s_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

func TestChannelRequeuerSendsThePod(t *testing.T) {
	ch := make(chan event.GenericEvent, 1)
	pod := testPod("ns", "web", "uid-1", "node-a")

	require.NoError(t, k8s.NewChannelRequeuer(ch).Requeue(t.Context(), pod))
	select {
	case ev := <-ch:
		assert.Same(t, pod, ev.Object)
	default:
		t.Fatal("nothing was sent")
	}
}

func TestChannelRequeuerGivesUpAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ch := make(chan event.GenericEvent) // nobody receives
		r := k8s.NewChannelRequeuer(ch)
		const deadline = 50 * time.Millisecond
		start := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), deadline)
		defer cancel()

		err := r.Requeue(ctx, testPod("ns", "web", "uid-1", "node-a"))

		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, deadline, time.Since(start), "Requeue returns at its deadline, neither before nor after")
	})
}

func TestChannelRequeuerContextDoneWinsOverAReadyChannel(t *testing.T) {
	ch := make(chan event.GenericEvent, 100)
	r := k8s.NewChannelRequeuer(ch)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for range 50 {
		require.ErrorIs(t, r.Requeue(ctx, testPod("ns", "web", "uid-1", "node-a")), context.Canceled)
	}
	assert.Empty(t, ch)
}

func TestChannelRequeuerBadInput(t *testing.T) {
	ch := make(chan event.GenericEvent, 1)
	require.ErrorIs(t, k8s.NewChannelRequeuer(ch).Requeue(t.Context(), nil), k8s.ErrNilPod)
	assert.Empty(t, ch)

	// A nil channel would block forever; it is refused at once instead.
	err := k8s.NewChannelRequeuer(nil).Requeue(context.Background(), testPod("ns", "web", "uid-1", "node-a"))
	require.ErrorIs(t, err, k8s.ErrNilChannel)
}
