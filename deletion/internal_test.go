package deletion

// White-box tests of what the engine keeps in memory, which no port can see.

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/podsweeper/podsweeper/ports"
)

func newInternal(t *testing.T, getter ports.PodGetterFunc) *Engine {
	t.Helper()
	c, err := New(getter, ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil }),
		Options{Logger: klog.Background().V(100)}) // V(100): nothing below it is printed
	require.NoError(t, err)
	return c
}

// TestRemovalGivesBackItsMemory: removing entries unlinks them from their
// pod's list and the scheduler's heap, whichever place in the list they
// hold, so that a drained node keeps nothing of its PUs.
func TestRemovalGivesBackItsMemory(t *testing.T) {
	gone := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
		return nil, ports.ErrPodNotFound
	})
	c := newInternal(t, gone)
	key := types.NamespacedName{Namespace: "ns", Name: "web"}
	for i := range 3 { // three PUs of one pod: head, middle, tail of its list
		require.NoError(t, c.Track(ports.PU{PUID: fmt.Sprint(i), Pod: key}))
	}
	for i := range 100 {
		require.NoError(t, c.Track(ports.PU{PUID: fmt.Sprintf("other-%d", i), Pod: types.NamespacedName{Namespace: "ns", Name: fmt.Sprint(i)}}))
	}
	assert.True(t, c.Untrack("1"), "the middle of the pod's list")
	var left []string
	for e := c.q.byPod[key]; e != nil; e = e.nextOfPod {
		left = append(left, e.PUID)
	}
	assert.ElementsMatch(t, []string{"0", "2"}, left)

	c.Sweep(context.Background()) // every pod is gone
	assert.Zero(t, c.Len())
	assert.Empty(t, c.q.byPod, "no pod list left behind")
	assert.Empty(t, c.q.wheel.heap, "no record left on the heap")
	assert.Zero(t, c.q.waits[retrying]+c.q.waits[turnWaiting], "none counted as waiting")
}

// TestTriggersAfterStopKeepNothing: TriggerPod and TriggerAll after Start
// has returned grow nothing, however often they are called.
func TestTriggersAfterStopKeepNothing(t *testing.T) {
	c := newInternal(t, func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound })
	key := types.NamespacedName{Namespace: "ns", Name: "web"}
	require.NoError(t, c.Track(ports.PU{PUID: "1", Pod: key}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, c.Start(ctx))
	for i := range 10_000 {
		c.TriggerPod(key)
		c.TriggerPod(types.NamespacedName{Namespace: "ns", Name: fmt.Sprint(i)})
		c.TriggerAll()
	}
	c.q.mu.Lock()
	defer c.q.mu.Unlock()
	assert.Empty(t, c.q.ready.items[c.q.ready.head:])
	assert.LessOrEqual(t, cap(c.q.ready.items), 16)
	assert.Equal(t, idle, c.q.records["1"].state)
}

// TestTheReadyQueueGivesBackItsMemory: after a TriggerAll of 10,000 PUs is
// drained, the ready queue keeps no more than 4,096 slots; while checks
// keep coming, a consumed head of over 1,024 that is over half the queue
// is given back. The workers' claims are played here as next plays them.
func TestTheReadyQueueGivesBackItsMemory(t *testing.T) {
	c := newInternal(t, func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound })
	for i := range 10_000 {
		require.NoError(t, c.Track(ports.PU{PUID: fmt.Sprint(i), Pod: types.NamespacedName{Namespace: "ns", Name: fmt.Sprint(i)}}))
	}
	c.TriggerAll()
	c.q.mu.Lock()
	defer c.q.mu.Unlock()
	require.Len(t, c.q.ready.items, 10_000)
	claim := func() {
		c.q.ready.items[c.q.ready.head] = readyItem{}
		c.q.ready.head++
		c.q.compactReadyLocked()
	}
	for range 6_000 {
		claim()
	}
	assert.LessOrEqual(t, len(c.q.ready.items), 10_000-5_000, "a consumed head over half the queue is given back")
	for c.q.ready.head < len(c.q.ready.items) {
		claim()
	}
	assert.LessOrEqual(t, cap(c.q.ready.items), 4096, "a drained queue keeps at most 4,096 slots")
}
