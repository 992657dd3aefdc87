package cri_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	fakeremote "k8s.io/cri-client/pkg/fake"

	"github.com/podsweeper/podsweeper/adapters/cri"
)

// The answers of SandboxID for the sandboxes a runtime may hold for a pod,
// each against the fake runtime driven through the CRI as the kubelet
// drives a real one.
func TestSandboxIDAnswers(t *testing.T) {
	const uid, other = "uid-web", "uid-other"
	for _, tc := range []struct {
		name string
		// setup creates sandboxes and returns the ID SandboxID must answer.
		setup func(t *testing.T, rt *fakeRuntime) string
	}{{
		name:  "no sandbox",
		setup: func(t *testing.T, rt *fakeRuntime) string { return "" },
	}, {
		name:  "one ready",
		setup: func(t *testing.T, rt *fakeRuntime) string { return runSandbox(t, rt.cri, uid, "web", 0) },
	}, {
		name: "restart: attempt 0 stopped, attempt 1 ready",
		setup: func(t *testing.T, rt *fakeRuntime) string {
			stopSandbox(t, rt.cri, runSandbox(t, rt.cri, uid, "web", 0))
			return runSandbox(t, rt.cri, uid, "web", 1)
		},
	}, {
		name: "two ready: the highest attempt wins, even when older",
		setup: func(t *testing.T, rt *fakeRuntime) string {
			want := runSandbox(t, rt.cri, uid, "web", 1)
			runSandbox(t, rt.cri, uid, "web", 0)
			return want
		},
	}, {
		// The fake names a sandbox name_namespace_uid_attempt, so two of one
		// attempt need two names. "web_..." sorts after "web-retry_...":
		// the answer cannot come from the ID.
		name: "two ready of the same attempt: the newest wins",
		setup: func(t *testing.T, rt *fakeRuntime) string {
			older := runSandbox(t, rt.cri, uid, "web", 0)
			newer := runSandbox(t, rt.cri, uid, "web-retry", 0)
			require.Greater(t, createdAt(t, rt, newer), createdAt(t, rt, older), "the fake stamps CreatedAt in nanoseconds")
			require.Greater(t, older, newer)
			return newer
		},
	}, {
		name: "stopped only",
		setup: func(t *testing.T, rt *fakeRuntime) string {
			stopSandbox(t, rt.cri, runSandbox(t, rt.cri, uid, "web", 0))
			stopSandbox(t, rt.cri, runSandbox(t, rt.cri, uid, "web", 1))
			return ""
		},
	}, {
		name: "another pod's sandboxes are ignored",
		setup: func(t *testing.T, rt *fakeRuntime) string {
			runSandbox(t, rt.cri, other, "web", 7) // same name, another pod (recreated)
			runSandbox(t, rt.cri, other, "db", 0)
			return ""
		},
	}, {
		name: "the pod's own among another pod's",
		setup: func(t *testing.T, rt *fakeRuntime) string {
			runSandbox(t, rt.cri, other, "web", 7)
			return runSandbox(t, rt.cri, uid, "web", 0)
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			rt := startFake(t)
			want := tc.setup(t, rt)
			x := newExtractor(t, rt.endpoint, 0)

			got, err := sandboxID(t, x, podOf(uid))

			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

// A restart seen as the engine sees it: the answer changes from the old
// sandbox to the new one, with "" while none is ready.
func TestSandboxIDFollowsARestart(t *testing.T) {
	rt := startFake(t)
	x := newExtractor(t, rt.endpoint, 0)
	pod := podOf("uid-web")
	ask := func() string {
		t.Helper()
		id, err := sandboxID(t, x, pod)
		require.NoError(t, err)
		return id
	}

	require.Empty(t, ask(), "no sandbox yet")
	first := runSandbox(t, rt.cri, pod.UID, "web", 0)
	require.Equal(t, first, ask())
	stopSandbox(t, rt.cri, first)
	require.Empty(t, ask(), "between the stop and the new sandbox")
	second := runSandbox(t, rt.cri, pod.UID, "web", 1)
	require.NotEqual(t, first, second)
	require.Equal(t, second, ask())
}

func createdAt(t *testing.T, rt *fakeRuntime, id string) int64 {
	t.Helper()
	resp, err := rt.cri.PodSandboxStatus(context.Background(), id, false)
	require.NoError(t, err)
	return resp.GetStatus().GetCreatedAt()
}

// The fake filters on the runtime side, so the tests above would pass with
// no client-side filter at all; this one keeps the client-side filter
// honest with a runtime that lists every sandbox whatever the filter says.
func TestSandboxIDFiltersWhatTheRuntimeDoesNot(t *testing.T) {
	const uid = "uid-web"
	base := fakeremote.NewFakeRemoteRuntime()
	endpoint := serve(t, filterIgnoringRuntime{base})
	svc := dialCRI(t, endpoint)
	runSandbox(t, svc, "uid-other", "web", 9)
	stopSandbox(t, svc, runSandbox(t, svc, uid, "web", 5))
	x := newExtractor(t, endpoint, 0)

	all, err := svc.ListPodSandbox(context.Background(), &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{cri.PodUIDLabel: uid}})
	require.NoError(t, err)
	require.Len(t, all, 2, "this runtime must ignore the filter for the test to mean anything")

	got, err := sandboxID(t, x, podOf(uid))
	require.NoError(t, err)
	assert.Empty(t, got, "neither another pod's ready sandbox nor the pod's stopped one is the answer")

	want := runSandbox(t, svc, uid, "web", 0)
	got, err = sandboxID(t, x, podOf(uid))
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// The fake runtime's filters are what the tests rely on: the label
// selector and the state filter really select.
func TestFakeRuntimeFilters(t *testing.T) {
	rt := startFake(t)
	ready := runSandbox(t, rt.cri, "a", "web", 1)
	stopSandbox(t, rt.cri, runSandbox(t, rt.cri, "a", "web", 0))
	runSandbox(t, rt.cri, "b", "web", 0)
	ids := func(f *runtimeapi.PodSandboxFilter) []string {
		t.Helper()
		items, err := rt.cri.ListPodSandbox(context.Background(), f)
		require.NoError(t, err)
		var out []string
		for _, sb := range items {
			out = append(out, sb.GetId())
		}
		return out
	}

	assert.Len(t, ids(nil), 3)
	assert.Len(t, ids(&runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{cri.PodUIDLabel: "a"}}), 2)
	assert.Len(t, ids(&runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}), 2)
	assert.Equal(t, []string{ready}, ids(&runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{cri.PodUIDLabel: "a"},
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	}))
}

// The runtime answering an error is an error, never "".
func TestSandboxIDRuntimeError(t *testing.T) {
	rt := startFake(t)
	runSandbox(t, rt.cri, "uid-web", "web", 0)
	rt.RuntimeService.InjectError("ListPodSandbox", errors.New("runtime is on fire"))
	x := newExtractor(t, rt.endpoint, 0)

	id, err := sandboxID(t, x, podOf("uid-web"))

	require.Error(t, err)
	assert.Empty(t, id)
	assert.Contains(t, err.Error(), "runtime is on fire")
	assert.Contains(t, err.Error(), "uid-web")
	assert.Equal(t, codes.Unknown, status.Code(err), "the gRPC status stays reachable through the wrapping")
}

// A runtime that stops: the next answer is an error, within the timeout.
func TestSandboxIDRuntimeStopped(t *testing.T) {
	rt := startFake(t)
	runSandbox(t, rt.cri, "uid-web", "web", 0)
	const timeout = 2 * time.Second
	x := newExtractor(t, rt.endpoint, timeout)
	id, err := sandboxID(t, x, podOf("uid-web"))
	require.NoError(t, err)
	require.NotEmpty(t, id, "the connection is up before the runtime stops")

	rt.Stop()
	start := time.Now()
	id, err = sandboxID(t, x, podOf("uid-web"))
	elapsed := time.Since(start)

	require.Error(t, err)
	assert.Empty(t, id)
	assert.Less(t, elapsed, timeout+time.Second, "the answer comes within the timeout")
}

// A runtime that hangs: the answer is an error after Options.Timeout, or
// sooner when the caller's deadline is sooner.
func TestSandboxIDHungRuntime(t *testing.T) {
	rt := &blockingRuntime{RemoteRuntime: fakeremote.NewFakeRemoteRuntime()}
	endpoint := serve(t, rt)

	t.Run("Options.Timeout bounds the call", func(t *testing.T) {
		const timeout = 300 * time.Millisecond
		x := newExtractor(t, endpoint, timeout)
		calls := rt.callCount()
		start := time.Now()
		id, err := sandboxID(t, x, podOf("uid-web"))
		elapsed := time.Since(start)

		require.Error(t, err)
		assert.Empty(t, id)
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
		assert.Equal(t, calls+1, rt.callCount(), "the runtime was reached: this is its hang, not a failed dial")
		assert.GreaterOrEqual(t, elapsed, timeout)
		assert.Less(t, elapsed, timeout+time.Second)
	})
	t.Run("the context's deadline when sooner", func(t *testing.T) {
		x := newExtractor(t, endpoint, time.Minute)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		id, err := x.SandboxID(ctx, podOf("uid-web"))
		elapsed := time.Since(start)

		require.Error(t, err)
		assert.Empty(t, id)
		assert.Less(t, elapsed, 200*time.Millisecond+time.Second)
	})
}

// A socket that accepts and never answers (a runtime stuck before the gRPC
// handshake): New does not wait on it, SandboxID fails within its timeout.
func TestSilentSocket(t *testing.T) {
	endpoint := silentListener(t)
	const timeout = 300 * time.Millisecond

	start := time.Now()
	x := newExtractor(t, endpoint, timeout)
	assert.Less(t, time.Since(start), timeout, "New does not connect")

	start = time.Now()
	id, err := sandboxID(t, x, podOf("uid-web"))
	elapsed := time.Since(start)

	require.Error(t, err)
	assert.Empty(t, id)
	assert.GreaterOrEqual(t, elapsed, timeout)
	assert.Less(t, elapsed, timeout+time.Second)
}

// No socket at all (the runtime not started yet): New succeeds, SandboxID
// fails fast, and once the runtime listens the same extractor answers.
func TestMissingSocketThenRuntimeStarts(t *testing.T) {
	endpoint := socketEndpoint(t)
	const timeout = 5 * time.Second
	x := newExtractor(t, endpoint, timeout)

	start := time.Now()
	id, err := sandboxID(t, x, podOf("uid-web"))
	elapsed := time.Since(start)
	require.Error(t, err)
	assert.Empty(t, id)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Less(t, elapsed, time.Second, "a missing socket fails at once, not at the timeout (%v)", timeout)

	f := fakeremote.NewFakeRemoteRuntime()
	require.NoError(t, f.Start(endpoint))
	t.Cleanup(f.Stop)
	want := runSandbox(t, dialCRI(t, endpoint), "uid-web", "web", 0)
	require.Eventually(t, func() bool {
		id, err := sandboxID(t, x, podOf("uid-web"))
		return err == nil && id == want
	}, 15*time.Second, 50*time.Millisecond, "the extractor reconnects once the runtime listens")
}

func TestNewEndpoints(t *testing.T) {
	for _, endpoint := range []string{
		"unix:///run/containerd/containerd.sock",
		"unix:///var/run/crio/crio.sock",
		"/run/containerd/containerd.sock", // the kubelet's deprecated bare path
	} {
		t.Run(endpoint, func(t *testing.T) {
			x, err := cri.New(endpoint, cri.Options{})
			require.NoError(t, err)
			assert.NoError(t, x.Close())
		})
	}
}

func TestNewRejects(t *testing.T) {
	for name, tc := range map[string]struct {
		endpoint string
		opts     cri.Options
		want     error
	}{
		"empty endpoint":   {"", cri.Options{}, cri.ErrInvalidEndpoint},
		"tcp endpoint":     {"tcp://127.0.0.1:1234", cri.Options{}, cri.ErrInvalidEndpoint},
		"other scheme":     {"http://localhost/cri", cri.Options{}, cri.ErrInvalidEndpoint},
		"no path":          {"unix://", cri.Options{}, cri.ErrInvalidEndpoint},
		"relative path":    {"unix://containerd.sock", cri.Options{}, cri.ErrInvalidEndpoint},
		"negative timeout": {"unix:///run/containerd/containerd.sock", cri.Options{Timeout: -time.Second}, cri.ErrInvalidOptions},
	} {
		t.Run(name, func(t *testing.T) {
			x, err := cri.New(tc.endpoint, tc.opts)
			require.ErrorIs(t, err, tc.want)
			assert.Nil(t, x)
		})
	}
}

// Bad input from the caller is a clear error, never a panic, and never "".
func TestSandboxIDBadInput(t *testing.T) {
	rt := startFake(t)
	runSandbox(t, rt.cri, "", "web", 0) // a sandbox labelled with an empty UID must not match a pod without one
	x := newExtractor(t, rt.endpoint, 0)
	ctx := context.Background()

	_, err := x.SandboxID(ctx, nil)
	assert.ErrorIs(t, err, cri.ErrInvalidPod)

	noUID := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	id, err := x.SandboxID(ctx, noUID)
	assert.ErrorIs(t, err, cri.ErrInvalidPod)
	assert.Contains(t, err.Error(), "default/web")
	assert.Empty(t, id)

	var nilCtx context.Context
	_, err = x.SandboxID(nilCtx, podOf("uid-web"))
	assert.Error(t, err)

	var nilExtractor *cri.SandboxExtractor
	_, err = nilExtractor.SandboxID(ctx, podOf("uid-web"))
	assert.ErrorIs(t, err, cri.ErrClosed)
	assert.NoError(t, nilExtractor.Close())

	_, err = (&cri.SandboxExtractor{}).SandboxID(ctx, podOf("uid-web"))
	assert.ErrorIs(t, err, cri.ErrClosed, "the zero value is not usable; New builds one")
}

func TestClose(t *testing.T) {
	rt := startFake(t)
	runSandbox(t, rt.cri, "uid-web", "web", 0)
	x, err := cri.New(rt.endpoint, cri.Options{})
	require.NoError(t, err)
	_, err = sandboxID(t, x, podOf("uid-web"))
	require.NoError(t, err)

	require.NoError(t, x.Close())
	require.NoError(t, x.Close(), "closing again is a no-op")
	_, err = sandboxID(t, x, podOf("uid-web"))
	assert.ErrorIs(t, err, cri.ErrClosed)
}

// One extractor serves the engine's workers and the informer at once.
func TestSandboxIDConcurrent(t *testing.T) {
	rt := startFake(t)
	uids := []string{"a", "b", "c", "d"}
	want := map[string]string{}
	for _, uid := range uids {
		want[uid] = runSandbox(t, rt.cri, types.UID(uid), "web-"+uid, 0)
	}
	x := newExtractor(t, rt.endpoint, 0)
	var wg sync.WaitGroup
	errs := make(chan error, 8*20)
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				uid := uids[(g+i)%len(uids)]
				id, err := x.SandboxID(context.Background(), podOf(types.UID(uid)))
				if err != nil {
					errs <- err
				} else if id != want[uid] {
					errs <- errors.New("pod " + uid + ": got " + id + ", want " + want[uid])
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Ping is what a readiness check asks: nil while the runtime answers, an
// error within the timeout once it does not.
func TestPing(t *testing.T) {
	rt := startFake(t)
	const timeout = time.Second
	x := newExtractor(t, rt.endpoint, timeout)
	ctx := context.Background()
	require.NoError(t, x.Ping(ctx))

	rt.Stop()
	start := time.Now()
	err := x.Ping(ctx)
	assert.Error(t, err)
	assert.Less(t, time.Since(start), timeout+time.Second)

	hung := newExtractor(t, silentListener(t), 200*time.Millisecond)
	start = time.Now()
	assert.Error(t, hung.Ping(ctx))
	assert.Less(t, time.Since(start), 200*time.Millisecond+time.Second)

	missing := newExtractor(t, socketEndpoint(t), timeout)
	assert.Error(t, missing.Ping(ctx))

	var nilCtx context.Context
	assert.Error(t, x.Ping(nilCtx))
	require.NoError(t, x.Close())
	assert.ErrorIs(t, x.Ping(ctx), cri.ErrClosed)
}

func TestSocketPath(t *testing.T) {
	for endpoint, want := range map[string]string{
		"unix:///run/containerd/containerd.sock": "/run/containerd/containerd.sock",
		"unix:///var/run/crio/crio.sock":         "/var/run/crio/crio.sock",
		"/run/containerd/containerd.sock":        "/run/containerd/containerd.sock",
	} {
		got, err := cri.SocketPath(endpoint)
		require.NoError(t, err, endpoint)
		assert.Equal(t, want, got, endpoint)
	}
	for _, endpoint := range []string{"", "unix://", "tcp://127.0.0.1:1", "unix://relative.sock"} {
		_, err := cri.SocketPath(endpoint)
		assert.ErrorIs(t, err, cri.ErrInvalidEndpoint, endpoint)
	}
}

// ListPodSandbox answers what the runtime lists: every sandbox of the
// pod, ready or stopped, with its state and creation time; and fails on
// a closed extractor.
func TestListPodSandboxListsEveryStateWithItsCreationTime(t *testing.T) {
	rt := startFake(t)
	x := newExtractor(t, rt.endpoint, 0)
	const uid = "uid-web"
	stopped := runSandbox(t, rt.cri, uid, "web", 0)
	stopSandbox(t, rt.cri, stopped)
	ready := runSandbox(t, rt.cri, uid, "web", 1)
	runSandbox(t, rt.cri, "uid-other", "db", 0)

	got, err := x.ListPodSandbox(context.Background(), &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{cri.PodUIDLabel: uid}})
	require.NoError(t, err)
	states := map[string]runtimeapi.PodSandboxState{}
	for _, sb := range got {
		states[sb.GetId()] = sb.GetState()
		assert.Equal(t, createdAt(t, rt, sb.GetId()), sb.GetCreatedAt(), "the runtime's CreatedAt")
	}
	assert.Equal(t, map[string]runtimeapi.PodSandboxState{
		stopped: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, ready: runtimeapi.PodSandboxState_SANDBOX_READY}, states)
	all, err := x.ListPodSandbox(context.Background(), nil)
	require.NoError(t, err)
	assert.Len(t, all, 3, "a nil filter lists every pod's")

	require.NoError(t, x.Close())
	_, err = x.ListPodSandbox(context.Background(), nil)
	assert.ErrorIs(t, err, cri.ErrClosed)
}

// A sandbox the runtime lists ready is not dead, whatever else its answer
// lists of it: an answer that cannot be told from nonsense kills nothing.
func TestSandboxDeadIsNeverASandboxListedReady(t *testing.T) {
	base := fakeremote.NewFakeRemoteRuntime()
	endpoint := serve(t, stoppedTwinRuntime{base})
	svc := dialCRI(t, endpoint)
	pod := podOf("uid-web")
	ready := runSandbox(t, svc, pod.UID, "web", 0)
	all, err := svc.ListPodSandbox(context.Background(), &runtimeapi.PodSandboxFilter{Id: ready})
	require.NoError(t, err)
	require.Len(t, all, 2, "this runtime must list the sandbox twice for the test to mean anything")
	x := newExtractor(t, endpoint, 0)
	dead, err := x.SandboxDead(context.Background(), pod, ready)
	require.NoError(t, err)
	assert.False(t, dead, "listed ready, and stopped too")
}

// SandboxDead, the engine's SandboxProber, against the fake runtime: a
// sandbox it lists stopped is dead, a ready one is not, and one it does not
// list, or lists for another pod, is not known to be dead.
func TestSandboxDeadAnswers(t *testing.T) {
	rt := startFake(t)
	x := newExtractor(t, rt.endpoint, 0)
	pod := podOf("uid-web")
	dead := func(id string) bool {
		t.Helper()
		ok, err := x.SandboxDead(context.Background(), pod, id)
		require.NoError(t, err)
		return ok
	}
	ready := runSandbox(t, rt.cri, pod.UID, "web", 0)
	stopped := runSandbox(t, rt.cri, pod.UID, "web", 1)
	stopSandbox(t, rt.cri, stopped)
	others := runSandbox(t, rt.cri, "uid-other", "web", 0)
	stopSandbox(t, rt.cri, others)

	assert.False(t, dead(ready), "ready")
	assert.True(t, dead(stopped), "listed stopped")
	assert.False(t, dead("never-listed"), "not listed: perhaps being created")
	assert.False(t, dead(others), "another pod's stopped sandbox is not this pod's")

	_, err := x.SandboxDead(context.Background(), pod, "")
	assert.ErrorIs(t, err, cri.ErrInvalidPod)
	_, err = x.SandboxDead(context.Background(), &corev1.Pod{}, ready)
	assert.ErrorIs(t, err, cri.ErrInvalidPod)
	require.NoError(t, x.Close())
	_, err = x.SandboxDead(context.Background(), pod, ready)
	assert.ErrorIs(t, err, cri.ErrClosed)
}
