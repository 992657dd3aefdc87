package k8s_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// TestStatusHandlerServesWhyEachPUIsKept: the status page lists every PU
// with the row of its last check, its failed attempts, the next one and the
// last error, in JSON sorted by PUID.
func TestStatusHandlerServesWhyEachPUIsKept(t *testing.T) {
	live := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "live", UID: "b"}, Spec: corev1.PodSpec{NodeName: "n"}}
	getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		if key.Name == "live" {
			return live, nil
		}
		return nil, ports.ErrPodNotFound
	})
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return errors.New("policy engine busy") })
	engine, err := deletion.New(getter, policy, deletion.Options{NodeName: "n"})
	require.NoError(t, err)
	require.NoError(t, engine.Track(ports.PU{PUID: "b", Pod: types.NamespacedName{Namespace: "ns", Name: "live"}, SandboxID: "sb-b"}))
	require.NoError(t, engine.Track(ports.PU{PUID: "a", Pod: types.NamespacedName{Namespace: "ns", Name: "gone"}}))
	require.NoError(t, engine.Track(ports.PU{PUID: "c", Pod: types.NamespacedName{Namespace: "ns", Name: "new"}}))
	// Check a and b only: c stays unchecked.
	sweepOnly(t, engine, "a", "b")

	rec := httptest.NewRecorder()
	k8s.NewStatusHandler(engine).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, k8s.StatusPath, nil))
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var got []k8s.PUStatus
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got), rec.Body.String())
	require.Len(t, got, 3)
	assert.Equal(t, []string{"a", "b", "c"}, []string{got[0].PUID, got[1].PUID, got[2].PUID})

	a := got[0]
	assert.Equal(t, "ns/gone", a.Pod)
	assert.Equal(t, 1, a.LastRow)
	assert.Equal(t, "pod not found", a.Why)
	assert.Equal(t, 1, a.Attempts)
	assert.NotNil(t, a.NextAttempt, "waiting for its retry")
	assert.Equal(t, "policy engine busy", a.LastError)
	assert.Equal(t, "waiting for a retry", a.State)

	b := got[1]
	assert.Equal(t, 5, b.LastRow)
	assert.Equal(t, "same pod, sandbox not checked", b.Why)
	assert.Zero(t, b.Attempts)
	assert.Nil(t, b.NextAttempt)
	assert.Equal(t, "sb-b", b.SandboxID)

	c := got[2]
	assert.Nil(t, c.LastChecked, "never checked")
	assert.Zero(t, c.LastRow)

	rec = httptest.NewRecorder()
	k8s.NewStatusHandler(engine).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, k8s.StatusPath, nil))
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	rec = httptest.NewRecorder()
	k8s.NewStatusHandler(nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, k8s.StatusPath, nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
}

// sweepOnly checks the PUs of puids once, by untracking the others during a
// Sweep and tracking them again after.
func sweepOnly(t *testing.T, engine *deletion.Engine, puids ...string) {
	t.Helper()
	keep := map[string]bool{}
	for _, id := range puids {
		keep[id] = true
	}
	var others []ports.PU
	for _, e := range deletiontest.PUs(engine) {
		if !keep[e.PUID] {
			others = append(others, e)
			require.True(t, engine.Untrack(e.PUID))
		}
	}
	engine.Sweep(context.Background())
	for _, e := range others {
		require.NoError(t, engine.Track(e))
	}
}

// The status page answers 503 while Start runs and the engine's Inventory
// is not listed yet (the PUs a restart left are not all known); an engine
// that does not run (a standby's) holds no PU, and its page says so, in
// k8s.EngineHeader too. It tells when it read the engine in k8s.TimeHeader.
func TestStatusHandlerWaitsForTheInventoryAndTellsItsTime(t *testing.T) {
	release := make(chan struct{})
	inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return []ports.PU{{PUID: "a", Pod: types.NamespacedName{Namespace: "ns", Name: "gone"}}}, nil
	})
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, errors.New("api down") })
	engine, err := deletion.New(getter, ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil }),
		deletion.Options{Inventory: inv})
	require.NoError(t, err)
	get := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		k8s.NewStatusHandler(engine).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, k8s.StatusPath, nil))
		return rec
	}
	standby := get()
	require.Equal(t, http.StatusOK, standby.Code, "before Start (a standby's engine): it holds no PU, and says so")
	require.Equal(t, k8s.EngineNotRunning, standby.Header().Get(k8s.EngineHeader), "a standby's page says its engine does not run")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- engine.Start(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()
	require.Eventually(t, func() bool { return get().Code == http.StatusServiceUnavailable }, 10*time.Second, time.Millisecond,
		"while Start runs and its first list is under way")
	close(release)
	require.Eventually(t, func() bool { return get().Code == http.StatusOK }, 10*time.Second, 10*time.Millisecond)
	rec := get()
	at, err := time.Parse(time.RFC3339Nano, rec.Header().Get(k8s.TimeHeader))
	require.NoError(t, err, "the page tells when it read the engine")
	require.WithinDuration(t, time.Now(), at, time.Minute)
	var got []k8s.PUStatus
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	require.Len(t, got, 1, "the listed PU is on the page")
	require.Equal(t, k8s.EngineRunning, rec.Header().Get(k8s.EngineHeader), "a started engine's page says it runs")
}

// aheadClock is the real clock as an engine reads it once the node's wall
// clock was stepped back an hour since the engine was made (an NTP step):
// the engine's times run an hour ahead of time.Now.
type aheadClock struct{ clock.RealClock }

func (aheadClock) Now() time.Time                    { return time.Now().Add(time.Hour) }
func (c aheadClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// checkedPage is the status page of an engine on clk whose one PU, of a live pod, was checked: its TimeHeader, and
// its PU's last check as the page tells it and as the engine counts it (how long before its Now).
func checkedPage(t *testing.T, clk clock.WithTicker) (at, lastChecked time.Time, since time.Duration) {
	t.Helper()
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "live", UID: "a"}}, nil
	})
	engine := deletiontest.NewEngine(t, getter, ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil }),
		deletion.Options{Clock: clk})
	defer deletiontest.Start(t, engine)()
	require.NoError(t, engine.Track(ports.PU{PUID: "a", Pod: types.NamespacedName{Namespace: "ns", Name: "live"}}))
	require.Eventually(t, func() bool {
		engine.TriggerAll()
		st := engine.Status()
		return len(st) == 1 && !st[0].LastChecked.IsZero()
	}, 10*time.Second, 10*time.Millisecond)
	checked := engine.Status()[0].LastChecked
	rec := httptest.NewRecorder()
	k8s.NewStatusHandler(engine).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, k8s.StatusPath, nil))
	since = engine.Now().Sub(checked)
	at, err := time.Parse(time.RFC3339Nano, rec.Header().Get(k8s.TimeHeader))
	require.NoError(t, err)
	var got []k8s.PUStatus
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	require.Len(t, got, 1)
	require.NotNil(t, got[0].LastChecked)
	require.Equal(t, deletion.Keep.String(), got[0].LastAction, "the page tells what its last check decided")
	return at, *got[0].LastChecked, since
}

// k8s.TimeHeader: the status page tells its time on the wall clock, and each
// of its times as that less how long ago the engine counts it. An engine
// whose clock runs an hour ahead of the wall clock: the page's time is the
// wall clock's, and its PU's last check as far before it as the engine
// counts.
func TestStatusPageTellsItsTimesOnTheWallClock(t *testing.T) {
	before := time.Now()
	at, checked, since := checkedPage(t, aheadClock{})
	after := time.Now()
	require.False(t, at.Before(before.Round(0)) || at.After(after), "the page's time %v is not the wall clock's [%v, %v]", at, before, after)
	ago := at.Sub(checked)
	require.True(t, ago >= 0 && ago <= since, "the last check is told %v before the page, the engine counts %v since", ago, since)
}

// k8s.TimeHeader, on the real clock: an engine made before a step of the wall clock (NTP) reads its times with the
// wall reading of then and the monotonic reading of now; the page tells each as TimeHeader less how long ago the
// engine counts it, so a check a moment ago is told a moment before the page, not an hour.
func TestStatusPageTellsItsTimesFromThePageAcrossAWallStep(t *testing.T) {
	at, checked, _ := checkedPage(t, k8s.WallSteppedClock(-time.Hour))
	ago := at.Sub(checked)
	require.True(t, ago >= 0 && ago < 10*time.Second, "a check a moment ago is told %v before the page", ago)
}
