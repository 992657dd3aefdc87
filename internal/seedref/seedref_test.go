package seedref_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/internal/seedref"
	"github.com/podsweeper/podsweeper/ports"
)

var key = types.NamespacedName{Namespace: "default", Name: "web-0"}

func pod(uid, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: types.UID(uid)},
		Spec:       corev1.PodSpec{NodeName: node},
	}
}

type recorder struct {
	mu     sync.Mutex
	events []ports.DestroyEvent
}

func (r *recorder) DestroyPU(_ context.Context, ev ports.DestroyEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	return errors.New("the seed drops this error")
}

func (r *recorder) got() []ports.DestroyEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ports.DestroyEvent(nil), r.events...)
}

// run starts c and returns a stop function that waits for Start to return.
func run(t *testing.T, c *seedref.Controller) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("Start did not return")
		}
	}
}

// track hands ev to the loop and waits until the map holds want entries:
// the loop may serve other channels before the buffered delete channel.
func track(t *testing.T, c *seedref.Controller, ev seedref.Event, want int) {
	t.Helper()
	c.DeleteCh() <- ev
	require.Eventually(t, func() bool { return length(t, c) == want }, 5*time.Second, time.Millisecond)
}

func length(t *testing.T, c *seedref.Controller) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := c.Len(ctx)
	require.NoError(t, err)
	return n
}

// TestBehavesLikeTheSeed runs one reconcile pass per row of the seed's
// behaviour, including the places where the SDK decides otherwise.
func TestBehavesLikeTheSeed(t *testing.T) {
	defer goleak.VerifyNone(t)
	notFound := ports.ErrPodNotFound
	for _, tc := range []struct {
		name       string
		sandbox    string // recorded
		pod        *corev1.Pod
		getErr     error
		noExtract  bool
		current    string // extractor's answer
		extractErr error
		want       ports.Reason // "" = kept
		wantLen    int
		requeue    bool
	}{
		{name: "pod gone", getErr: notFound, want: ports.ReasonPodGone},
		{name: "get fails: kept", pod: nil, getErr: errors.New("timeout"), wantLen: 1},
		{name: "UID changed", pod: pod("uid-2", "node-a"), want: ports.ReasonUIDChanged},
		{name: "nil pod, nil error: zero pod, UID differs", pod: nil, want: ports.ReasonUIDChanged},
		{name: "another node, same UID: no node check", pod: pod("uid-1", "node-b"), sandbox: "s1", current: "s1", wantLen: 1},
		{name: "no extractor: kept", pod: pod("uid-1", "node-a"), sandbox: "s1", noExtract: true, wantLen: 1},
		{name: "extractor fails: kept", pod: pod("uid-1", "node-a"), sandbox: "s1", extractErr: errors.New("cri down"), wantLen: 1},
		{name: "first sandbox adopted", pod: pod("uid-1", "node-a"), current: "s1", wantLen: 1},
		{name: "same sandbox: kept", pod: pod("uid-1", "node-a"), sandbox: "s1", current: "s1", wantLen: 1},
		{name: "sandbox replaced", pod: pod("uid-1", "node-a"), sandbox: "s1", current: "s2", want: ports.ReasonSandboxChanged, requeue: true},
		{name: "row 8: empty current sandbox destroys", pod: pod("uid-1", "node-a"), sandbox: "s1", current: "", want: ports.ReasonSandboxChanged, requeue: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			requeued := make(chan *corev1.Pod, 1)
			opts := seedref.Options{Requeue: requeued, TickerPeriod: time.Hour}
			if !tc.noExtract {
				opts.SandboxExtractor = ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) {
					return tc.current, tc.extractErr
				})
			}
			getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
				return tc.pod, tc.getErr
			})
			c := seedref.New(getter, rec, opts)
			stop := run(t, c)
			defer stop()

			track(t, c, seedref.Event{PUID: "uid-1", Pod: key, SandboxID: tc.sandbox}, 1)
			c.ReconcileCh() <- struct{}{}
			assert.Equal(t, tc.wantLen, length(t, c))
			if tc.want == "" {
				assert.Empty(t, rec.got())
			} else {
				assert.Equal(t, []ports.DestroyEvent{{PUID: "uid-1", Pod: key, SandboxID: tc.sandbox, Reason: tc.want}}, rec.got())
			}
			assert.Equal(t, tc.requeue, len(requeued) == 1)
		})
	}
}

// TestAdoptionIsRemembered: a sandbox adopted in one pass is compared in the next.
func TestAdoptionIsRemembered(t *testing.T) {
	defer goleak.VerifyNone(t)
	rec := &recorder{}
	var mu sync.Mutex
	current := "s1"
	c := seedref.New(
		ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return pod("uid-1", "node-a"), nil }),
		rec,
		seedref.Options{Requeue: make(chan *corev1.Pod, 1), TickerPeriod: time.Hour,
			SandboxExtractor: ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) {
				mu.Lock()
				defer mu.Unlock()
				return current, nil
			})},
	)
	defer run(t, c)()
	track(t, c, seedref.Event{PUID: "uid-1", Pod: key}, 1)
	c.ReconcileCh() <- struct{}{}
	require.Equal(t, 1, length(t, c))
	mu.Lock()
	current = "s2"
	mu.Unlock()
	c.ReconcileCh() <- struct{}{}
	assert.Equal(t, 0, length(t, c))
	assert.Equal(t, []ports.DestroyEvent{{PUID: "uid-1", Pod: key, SandboxID: "s1", Reason: ports.ReasonSandboxChanged}}, rec.got())
}

// TestInsertOnly: a second event for a PUID changes nothing.
func TestInsertOnly(t *testing.T) {
	defer goleak.VerifyNone(t)
	rec := &recorder{}
	c := seedref.New(
		ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound }),
		rec, seedref.Options{TickerPeriod: time.Hour},
	)
	defer run(t, c)()
	// The channel is FIFO: once uid-2 is in the map, both uid-1 events were read.
	c.DeleteCh() <- seedref.Event{PUID: "uid-1", Pod: key, SandboxID: "s1"}
	c.DeleteCh() <- seedref.Event{PUID: "uid-1", Pod: key, SandboxID: "s2"}
	track(t, c, seedref.Event{PUID: "uid-2", Pod: key, SandboxID: "s3"}, 2)
	c.ReconcileCh() <- struct{}{}
	require.Equal(t, 0, length(t, c))
	got := map[string]string{}
	for _, ev := range rec.got() {
		got[ev.PUID] = ev.SandboxID
	}
	assert.Equal(t, map[string]string{"uid-1": "s1", "uid-2": "s3"}, got)
}

// TestTickerRunsPasses: passes run without being asked.
func TestTickerRunsPasses(t *testing.T) {
	defer goleak.VerifyNone(t)
	rec := &recorder{}
	c := seedref.New(
		ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound }),
		rec, seedref.Options{TickerPeriod: 5 * time.Millisecond},
	)
	defer run(t, c)()
	c.DeleteCh() <- seedref.Event{PUID: "uid-1", Pod: key}
	require.Eventually(t, func() bool { return len(rec.got()) == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, 0, length(t, c))
}

// TestRequeueSendBlocksTheLoop: nothing else happens until the requeued pod is read.
func TestRequeueSendBlocksTheLoop(t *testing.T) {
	defer goleak.VerifyNone(t)
	requeued := make(chan *corev1.Pod)
	c := seedref.New(
		ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return pod("uid-1", "node-a"), nil }),
		&recorder{},
		seedref.Options{Requeue: requeued, TickerPeriod: time.Hour,
			SandboxExtractor: ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) { return "s2", nil })},
	)
	defer run(t, c)()
	track(t, c, seedref.Event{PUID: "uid-1", Pod: key, SandboxID: "s1"}, 1)
	c.ReconcileCh() <- struct{}{}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Len(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the loop answered while its requeue send was unread")
	select {
	case p := <-requeued:
		assert.Equal(t, types.UID("uid-1"), p.UID)
	case <-time.After(5 * time.Second):
		t.Fatal("no requeue")
	}
	assert.Equal(t, 0, length(t, c))
}
