package cri

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeList is a runtime's list of ready sandboxes that counts its calls
// and, while gate is set, waits for it to be closed.
type fakeList struct {
	calls atomic.Int32
	mu    sync.Mutex
	items []*runtimeapi.PodSandbox
	err   error
	gate  chan struct{}
}

func (f *fakeList) list(ctx context.Context) ([]*runtimeapi.PodSandbox, error) {
	f.calls.Add(1)
	f.mu.Lock()
	gate, items, err := f.gate, f.items, f.err
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return items, err
}

func (f *fakeList) set(items []*runtimeapi.PodSandbox, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.items, f.err = items, err
}

func sandbox(id, uid string, attempt uint32, created int64) *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{Id: id, State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: created,
		Metadata: &runtimeapi.PodSandboxMetadata{Uid: uid, Attempt: attempt}, Labels: map[string]string{PodUIDLabel: uid}}
}

// clock is a time the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// testCache is a SandboxCache on f with a clock the test moves.
func testCache(t *testing.T, f *fakeList, maxAge time.Duration) (*SandboxCache, *clock) {
	t.Helper()
	x, err := New("unix:///nonexistent/cri.sock", Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = x.Close() })
	c, err := NewSandboxCache(x, CacheOptions{MaxAge: maxAge})
	require.NoError(t, err)
	clk := &clock{now: time.Unix(1000, 0)}
	c.list, c.now = f.list, clk.Now
	return c, clk
}

func podUID(uid string) *corev1.Pod {
	p := &corev1.Pod{}
	p.Namespace, p.Name, p.UID = "ns", "p-"+uid, types.UID(uid)
	return p
}

// The runtime is listed once per MaxAge, however many pods are asked
// for, and the answers are the list's.
func TestSandboxCacheListsOncePerMaxAge(t *testing.T) {
	f := &fakeList{}
	f.set([]*runtimeapi.PodSandbox{sandbox("sb-a", "a", 0, 1), sandbox("sb-b1", "b", 1, 2), sandbox("sb-b0", "b", 0, 3)}, nil)
	c, now := testCache(t, f, time.Second)
	for i := range 110 {
		id, err := c.SandboxID(t.Context(), podUID("a"))
		require.NoError(t, err)
		assert.Equal(t, "sb-a", id, i)
	}
	id, err := c.SandboxID(t.Context(), podUID("b"))
	require.NoError(t, err)
	assert.Equal(t, "sb-b1", id, "the highest attempt")
	id, err = c.SandboxID(t.Context(), podUID("gone"))
	require.NoError(t, err)
	assert.Empty(t, id, "no ready sandbox of that pod")
	assert.Equal(t, int32(1), f.calls.Load(), "one list for 112 answers")

	// At MaxAge the list still serves; past it, the runtime is asked again.
	f.set([]*runtimeapi.PodSandbox{sandbox("sb-a2", "a", 1, 4)}, nil)
	now.advance(time.Second)
	id, _ = c.SandboxID(t.Context(), podUID("a"))
	assert.Equal(t, "sb-a", id)
	now.advance(time.Nanosecond)
	id, err = c.SandboxID(t.Context(), podUID("a"))
	require.NoError(t, err)
	assert.Equal(t, "sb-a2", id, "the new list's answer")
	assert.Equal(t, int32(2), f.calls.Load())
}

// Calls that find the list old while it is listed again share that one
// list; a caller that gives up gets its context's error, and the list it
// waited for still serves the others. In a synctest bubble: every caller
// is waiting (synctest.Wait) before the list is let through.
func TestSandboxCacheSharesAListUnderWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeList{gate: make(chan struct{})}
		f.set([]*runtimeapi.PodSandbox{sandbox("sb-a", "a", 0, 1)}, nil)
		c, _ := testCache(t, f, time.Second)

		gaveUp, cancel := context.WithCancel(t.Context())
		impatient := make(chan error, 1)
		go func() {
			_, err := c.SandboxID(gaveUp, podUID("a"))
			impatient <- err
		}()
		synctest.Wait()
		require.Equal(t, int32(1), f.calls.Load(), "the first call lists")
		cancel()
		assert.ErrorIs(t, <-impatient, context.Canceled)

		answers := make(chan string, 10)
		for range 10 {
			go func() {
				id, err := c.SandboxID(t.Context(), podUID("a"))
				assert.NoError(t, err)
				answers <- id
			}()
		}
		synctest.Wait() // all ten wait for the list under way
		assert.Empty(t, answers, "no answer before the list ends")
		assert.Equal(t, int32(1), f.calls.Load(), "they wait for that list, and start none")
		close(f.gate)
		for range 10 {
			assert.Equal(t, "sb-a", <-answers)
		}
		assert.Equal(t, int32(1), f.calls.Load(), "eleven calls, one list")
	})
}

// A failed list fails the calls that waited for it and is not kept: the
// next call lists again, and the last good list is not served past MaxAge.
func TestSandboxCacheFailureIsNotKept(t *testing.T) {
	f := &fakeList{}
	f.set([]*runtimeapi.PodSandbox{sandbox("sb-a", "a", 0, 1)}, nil)
	c, now := testCache(t, f, time.Second)
	_, err := c.SandboxID(t.Context(), podUID("a"))
	require.NoError(t, err)

	boom := errors.New("runtime down")
	f.set(nil, boom)
	now.advance(2 * time.Second)
	id, err := c.SandboxID(t.Context(), podUID("a"))
	assert.ErrorIs(t, err, boom)
	assert.Empty(t, id, "an error is never an answer")
	_, err = c.SandboxID(t.Context(), podUID("a"))
	assert.ErrorIs(t, err, boom, "still failing: the stale list is not served")
	assert.Equal(t, int32(3), f.calls.Load())

	f.set([]*runtimeapi.PodSandbox{sandbox("sb-a", "a", 0, 1)}, nil)
	id, err = c.SandboxID(t.Context(), podUID("a"))
	require.NoError(t, err)
	assert.Equal(t, "sb-a", id)
}

func TestSandboxCacheBadInput(t *testing.T) {
	f := &fakeList{}
	c, _ := testCache(t, f, 0)
	assert.Equal(t, DefaultCacheMaxAge, c.maxAge, "0 is the default")
	_, err := c.SandboxID(t.Context(), nil)
	assert.ErrorIs(t, err, ErrInvalidPod)
	_, err = c.SandboxID(t.Context(), &corev1.Pod{})
	assert.ErrorIs(t, err, ErrInvalidPod)
	var nilCtx context.Context
	_, err = c.SandboxID(nilCtx, podUID("a"))
	assert.Error(t, err)
	var nilCache *SandboxCache
	_, err = nilCache.SandboxID(t.Context(), podUID("a"))
	assert.ErrorIs(t, err, ErrClosed)
	assert.Zero(t, f.calls.Load(), "bad input lists nothing")

	_, err = NewSandboxCache(nil, CacheOptions{})
	assert.ErrorIs(t, err, ErrClosed)
	x, err := New("unix:///nonexistent/cri.sock", Options{})
	require.NoError(t, err)
	defer x.Close()
	_, err = NewSandboxCache(x, CacheOptions{MaxAge: -time.Second})
	assert.ErrorIs(t, err, ErrInvalidOptions)
}

// pickAll chooses, for every pod, the sandbox pick chooses for it alone,
// whatever the runtime's list holds (stopped sandboxes, other pods',
// several attempts, equal creation times, missing IDs and labels).
func TestPickAllIsPickForEveryPod(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 2000 {
		var items []*runtimeapi.PodSandbox
		uids := []string{"a", "b", "c", ""}
		for i := range r.IntN(12) {
			sb := sandbox(fmt.Sprintf("sb-%d", r.IntN(6)), uids[r.IntN(len(uids))], uint32(r.IntN(3)), int64(r.IntN(3)))
			if i%5 == 4 {
				sb.Id = ""
			}
			if r.IntN(4) == 0 {
				sb.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
			}
			items = append(items, sb)
		}
		all := pickAll(items)
		for _, uid := range uids[:3] {
			assert.Equal(t, pick(items, uid), all[uid], "round %d, pod %s", round, uid)
		}
	}
}
