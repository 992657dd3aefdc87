package cri_test

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	fakeremote "k8s.io/cri-client/pkg/fake"

	"github.com/podsweeper/podsweeper/adapters/cri"
)

func TestMain(m *testing.M) {
	// klog (imported by cri-client, which the tests drive the runtime with)
	// starts its flush daemon at init, once per process.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"))
}

// fakeRuntime is cri-client's fake container runtime serving the CRI on a
// unix socket of its own, with a real CRI client that drives it as the
// kubelet would.
type fakeRuntime struct {
	*fakeremote.RemoteRuntime
	endpoint string
	cri      internalapi.RuntimeService
}

// socketEndpoint returns a unix:// endpoint in a directory of the test's own.
func socketEndpoint(t testing.TB) string {
	return "unix://" + filepath.Join(t.TempDir(), "cri.sock")
}

// startFake starts the fake runtime on a fresh socket; the test's cleanup
// stops it.
func startFake(t testing.TB) *fakeRuntime {
	t.Helper()
	endpoint := socketEndpoint(t)
	f := fakeremote.NewFakeRemoteRuntime()
	require.NoError(t, f.Start(endpoint))
	t.Cleanup(f.Stop)
	return &fakeRuntime{RemoteRuntime: f, endpoint: endpoint, cri: dialCRI(t, endpoint)}
}

// serve serves srv's runtime service on a fresh socket, for runtimes that
// behave unlike the fake; the test's cleanup stops it.
func serve(t testing.TB, srv runtimeapi.RuntimeServiceServer) string {
	t.Helper()
	endpoint := socketEndpoint(t)
	l, err := net.Listen("unix", endpoint[len("unix://"):])
	require.NoError(t, err)
	g := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(g, srv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = g.Serve(l)
	}()
	t.Cleanup(func() {
		g.Stop()
		<-done
	})
	return endpoint
}

// dialCRI returns cri-client's runtime client on endpoint.
func dialCRI(t testing.TB, endpoint string) internalapi.RuntimeService {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	svc, err := remote.NewRemoteRuntimeServiceBuilder().
		WithEndpoint(endpoint).
		WithConnectionTimeout(10 * time.Second).
		WithTracerProvider(nil).
		Build(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, svc.Close(context.Background())) })
	return svc
}

// runSandbox starts a sandbox for the pod uid as the kubelet does: metadata
// and the io.kubernetes.pod.* labels. It returns the sandbox's ID.
func runSandbox(t testing.TB, svc internalapi.RuntimeService, uid types.UID, name string, attempt uint32) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := svc.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: string(uid), Attempt: attempt},
		Labels: map[string]string{
			cri.PodUIDLabel:               string(uid),
			"io.kubernetes.pod.name":      name,
			"io.kubernetes.pod.namespace": "default",
		},
	}, "")
	require.NoError(t, err)
	require.NotEmpty(t, id)
	return id
}

// stopSandbox stops a sandbox, as the kubelet does before it replaces one.
func stopSandbox(t testing.TB, svc internalapi.RuntimeService, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, svc.StopPodSandbox(ctx, id))
}

// newExtractor builds an extractor on endpoint; the test's cleanup closes it.
func newExtractor(t testing.TB, endpoint string, timeout time.Duration) *cri.SandboxExtractor {
	t.Helper()
	x, err := cri.New(endpoint, cri.Options{Timeout: timeout})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, x.Close()) })
	return x
}

func podOf(uid types.UID) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: uid}}
}

// sandboxID calls x.SandboxID with a deadline far beyond any in the tests.
func sandboxID(t testing.TB, x *cri.SandboxExtractor, pod *corev1.Pod) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return x.SandboxID(ctx, pod)
}

// blockingRuntime is the fake runtime, except that ListPodSandbox answers
// only when its caller gives up: a runtime that hangs.
type blockingRuntime struct {
	*fakeremote.RemoteRuntime
	mu    sync.Mutex
	calls int
}

func (b *blockingRuntime) ListPodSandbox(ctx context.Context, _ *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	b.mu.Lock()
	b.calls++
	b.mu.Unlock()
	<-ctx.Done()
	return nil, ctx.Err()
}

func (b *blockingRuntime) callCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

// filterIgnoringRuntime is the fake runtime, except that ListPodSandbox
// ignores the filter and lists every sandbox of the node.
type filterIgnoringRuntime struct {
	*fakeremote.RemoteRuntime
}

func (f filterIgnoringRuntime) ListPodSandbox(ctx context.Context, _ *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	return f.RemoteRuntime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
}

// stoppedTwinRuntime is the fake runtime, except that ListPodSandbox lists
// every ready sandbox twice, stopped first: an answer merged from two (a
// CRI proxy, a list read while the runtime rewrites its store).
type stoppedTwinRuntime struct {
	*fakeremote.RemoteRuntime
}

func (f stoppedTwinRuntime) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	resp, err := f.RemoteRuntime.ListPodSandbox(ctx, req)
	if err != nil {
		return nil, err
	}
	var items []*runtimeapi.PodSandbox
	for _, sb := range resp.GetItems() {
		if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			twin := proto.Clone(sb).(*runtimeapi.PodSandbox)
			twin.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
			items = append(items, twin)
		}
		items = append(items, sb)
	}
	resp.Items = items
	return resp, nil
}

// silentListener accepts connections on a unix socket and never answers: a
// runtime that hangs before the gRPC handshake.
func silentListener(t testing.TB) string {
	t.Helper()
	endpoint := socketEndpoint(t)
	l, err := net.Listen("unix", endpoint[len("unix://"):])
	require.NoError(t, err)
	var (
		mu    sync.Mutex
		conns []net.Conn
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return endpoint
}
