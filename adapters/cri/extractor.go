package cri

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-client/pkg/util"

	"github.com/podsweeper/podsweeper/ports"
)

// Errors of New and SandboxID. Match them with errors.Is.
var (
	// ErrInvalidEndpoint: New was given an empty endpoint, or one that is not
	// a unix socket (unix:///path, or a bare path).
	ErrInvalidEndpoint = errors.New("cri: invalid endpoint")
	// ErrInvalidOptions: an Options field is out of range.
	ErrInvalidOptions = errors.New("cri: invalid options")
	// ErrInvalidPod: SandboxID was given a nil pod or a pod without a UID.
	ErrInvalidPod = errors.New("cri: invalid pod")
	// ErrClosed: SandboxID was called on an extractor that is closed, or
	// that New did not build.
	ErrClosed = errors.New("cri: sandbox extractor closed")
)

// PodUIDLabel is the label the kubelet puts on every sandbox it creates, with
// the pod's UID as value (k8s.io/kubelet/pkg/types.KubernetesPodUIDLabel).
const PodUIDLabel = "io.kubernetes.pod.uid"

// DefaultTimeout is Options.Timeout when left at zero.
const DefaultTimeout = 2 * time.Second

// Connection settings, as the kubelet's CRI client has them: reconnect to a
// runtime that restarted within a few seconds, give a busy runtime 5s to
// finish the handshake (gRPC's connect deadline is otherwise only the
// backoff delay, 100ms at first), and accept the large answers a runtime may
// send for a node full of sandboxes.
const (
	reconnectBaseDelay = 100 * time.Millisecond
	reconnectMaxDelay  = 3 * time.Second
	minConnectTimeout  = 5 * time.Second
	maxRecvMsgSize     = 16 << 20
)

// Options configure New.
type Options struct {
	// Timeout bounds each SandboxID call: the answer comes within
	// min(the context's deadline, Timeout). 0: DefaultTimeout (2s).
	Timeout time.Duration
}

// SandboxExtractor is a ports.SandboxExtractor that asks the container
// runtime for a pod's sandbox. It is safe for use by several goroutines at
// once. Build it with New.
type SandboxExtractor struct {
	endpoint string
	timeout  time.Duration
	conn     *grpc.ClientConn
	client   runtimeapi.RuntimeServiceClient
	closed   atomic.Bool
}

var (
	_ ports.SandboxExtractor = (*SandboxExtractor)(nil)
	_ ports.SandboxProber    = (*SandboxExtractor)(nil)
)

// New returns a SandboxExtractor for the runtime serving the CRI on endpoint,
// written as the kubelet's --container-runtime-endpoint is
// ("unix:///run/containerd/containerd.sock", "unix:///var/run/crio/crio.sock").
// It does not connect: the connection is made by the first SandboxID call,
// and made again after the runtime restarts, so New succeeds whether or not
// anything listens on the socket yet. Close releases the connection.
func New(endpoint string, opts Options) (*SandboxExtractor, error) {
	addr, dial, err := parseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("%w: Timeout is negative (%v)", ErrInvalidOptions, opts.Timeout)
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	params := grpc.ConnectParams{Backoff: backoff.DefaultConfig, MinConnectTimeout: minConnectTimeout}
	params.Backoff.BaseDelay = reconnectBaseDelay
	params.Backoff.MaxDelay = reconnectMaxDelay
	// passthrough hands the socket path to the dialer as it is; the
	// authority of a unix socket is "localhost", as runtimes expect.
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority("localhost"),
		grpc.WithContextDialer(dial),
		grpc.WithConnectParams(params),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecvMsgSize)),
	)
	if err != nil {
		return nil, fmt.Errorf("cri: creating the client of %q: %w", endpoint, err)
	}
	return &SandboxExtractor{
		endpoint: endpoint,
		timeout:  opts.Timeout,
		conn:     conn,
		client:   runtimeapi.NewRuntimeServiceClient(conn),
	}, nil
}

// SocketPath returns the path of the unix socket that endpoint names, as New
// reads it, so that an agent can tell a runtime that is not installed (no
// socket) from one that does not answer. A malformed endpoint is an error
// wrapping ErrInvalidEndpoint.
func SocketPath(endpoint string) (string, error) {
	addr, _, err := parseEndpoint(endpoint)
	return addr, err
}

// parseEndpoint reads endpoint as the kubelet does (cri-client's util) and
// returns the socket's address and the dialer for it.
func parseEndpoint(endpoint string) (string, func(context.Context, string) (net.Conn, error), error) {
	if endpoint == "" {
		return "", nil, fmt.Errorf("%w: endpoint is empty", ErrInvalidEndpoint)
	}
	addr, dial, err := util.GetAddressAndDialer(endpoint)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %q: %w", ErrInvalidEndpoint, endpoint, err)
	}
	if addr == "" {
		return "", nil, fmt.Errorf("%w: %q has no socket path", ErrInvalidEndpoint, endpoint)
	}
	return addr, dial, nil
}

// Ping asks the runtime for its version: nil when it answers within
// min(ctx's deadline, Options.Timeout). It suits a readiness check.
func (s *SandboxExtractor) Ping(ctx context.Context) error {
	switch {
	case s == nil || s.client == nil || s.closed.Load():
		return ErrClosed
	case ctx == nil:
		return errors.New("cri: Ping: nil context")
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if _, err := s.client.Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
		return fmt.Errorf("cri: the runtime at %s does not answer: %w", s.endpoint, err)
	}
	return nil
}

// SandboxID returns the ID of pod's READY sandbox; when several are ready (a
// restart in progress), the one of the highest attempt, then the newest. It
// returns "" and a nil error when the pod has no ready sandbox, and an error
// (never "") when the runtime cannot be reached, answers an error, or takes
// longer than min(ctx's deadline, Options.Timeout). A nil pod or a pod
// without a UID is an ErrInvalidPod error. The pod is only read.
func (s *SandboxExtractor) SandboxID(ctx context.Context, pod *corev1.Pod) (string, error) {
	if s == nil || s.client == nil || s.closed.Load() {
		return "", ErrClosed
	}
	if err := checkArgs(ctx, pod); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	uid := string(pod.UID)
	resp, err := s.client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{PodUIDLabel: uid},
	}})
	if err != nil {
		return "", fmt.Errorf("cri: listing the sandboxes of pod %s/%s (uid %s) at %s: %w", pod.Namespace, pod.Name, uid, s.endpoint, err)
	}
	return pick(resp.GetItems(), uid), nil
}

// SandboxDead reports whether the sandbox of that ID, one of pod's, is
// dead: the runtime lists it, of pod's UID, and not ready (nor ready too,
// as a list merged from two answers may say). A sandbox the
// runtime does not list is not known to be dead (it may be one being
// created: this extractor knows no sandbox's network namespace), nor is
// one of another pod. An error comes, as for SandboxID, when the runtime
// cannot be asked. It is the engine's ports.SandboxProber: it asks the
// runtime itself, never a list.
func (s *SandboxExtractor) SandboxDead(ctx context.Context, pod *corev1.Pod, sandboxID string) (bool, error) {
	if err := checkArgs(ctx, pod); err != nil {
		return false, err
	}
	if sandboxID == "" {
		return false, fmt.Errorf("%w: no sandbox ID", ErrInvalidPod)
	}
	items, err := s.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{Id: sandboxID})
	if err != nil {
		return false, err
	}
	stopped := false
	for _, sb := range items {
		if sb.GetId() == sandboxID && sb.GetLabels()[PodUIDLabel] == string(pod.UID) {
			if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
				return false, nil // listed ready, whatever else the list says
			}
			stopped = true
		}
	}
	return stopped, nil
}

// ListPodSandbox lists the runtime's sandboxes that filter selects (nil:
// every sandbox, ready or not), as the CRI's ListPodSandbox answers,
// within min(ctx's deadline, Options.Timeout). It is what
// adapters/cni.Options.Runtime asks: the sandboxes' states and creation
// times.
func (s *SandboxExtractor) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	switch {
	case s == nil || s.client == nil || s.closed.Load():
		return nil, ErrClosed
	case ctx == nil:
		return nil, errors.New("cri: ListPodSandbox: nil context")
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	resp, err := s.client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("cri: listing the sandboxes at %s: %w", s.endpoint, err)
	}
	return resp.GetItems(), nil
}

// checkArgs rejects what SandboxID cannot answer for: a nil context, a
// nil pod, a pod without a UID.
func checkArgs(ctx context.Context, pod *corev1.Pod) error {
	switch {
	case ctx == nil:
		return errors.New("cri: SandboxID: nil context")
	case pod == nil:
		return fmt.Errorf("%w: pod is nil", ErrInvalidPod)
	case pod.UID == "":
		return fmt.Errorf("%w: pod %s/%s has no UID", ErrInvalidPod, pod.Namespace, pod.Name)
	}
	return nil
}

// pick returns the ID of the ready sandbox of the pod uid that the pod runs
// in now: the highest attempt, then the newest, then the greatest ID so that
// the answer does not depend on the runtime's order. The runtime was asked
// to filter already; pick filters again, so that a runtime that ignores a
// filter cannot make another pod's sandbox, or a stopped one, the answer.
// Sandboxes without an ID are skipped.
func pick(items []*runtimeapi.PodSandbox, uid string) string {
	var best *runtimeapi.PodSandbox
	for _, sb := range items {
		if sb.GetId() == "" || sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY || sb.GetLabels()[PodUIDLabel] != uid {
			continue
		}
		if best == nil || after(sb, best) {
			best = sb
		}
	}
	return best.GetId()
}

// after reports whether a replaced b, or would be chosen over it.
func after(a, b *runtimeapi.PodSandbox) bool {
	if aa, ba := a.GetMetadata().GetAttempt(), b.GetMetadata().GetAttempt(); aa != ba {
		return aa > ba
	}
	if a.GetCreatedAt() != b.GetCreatedAt() {
		return a.GetCreatedAt() > b.GetCreatedAt()
	}
	return a.GetId() > b.GetId()
}

// Close releases the connection to the runtime. SandboxID answers ErrClosed
// afterwards; calls still running end with an error. Closing again does
// nothing and returns nil.
func (s *SandboxExtractor) Close() error {
	if s == nil || s.conn == nil || !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	if err := s.conn.Close(); err != nil {
		return fmt.Errorf("cri: closing the connection to %s: %w", s.endpoint, err)
	}
	return nil
}
