package deletion_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/golang/mock/gomock"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/mocks"
	"github.com/podsweeper/podsweeper/ports"
)

// mockPorts holds gomock mocks of the four ports.
type mockPorts struct {
	getter    *mocks.MockPodGetter
	policy    *mocks.MockPolicyHandler
	extractor *mocks.MockSandboxExtractor
	requeuer  *mocks.MockRequeuer
}

func newMockPorts(t *testing.T) *mockPorts {
	ctrl := gomock.NewController(t)
	return &mockPorts{
		getter:    mocks.NewMockPodGetter(ctrl),
		policy:    mocks.NewMockPolicyHandler(ctrl),
		extractor: mocks.NewMockSandboxExtractor(ctrl),
		requeuer:  mocks.NewMockRequeuer(ctrl),
	}
}

// newEngine returns an Engine on the mocks; opts.SandboxExtractor and
// opts.Requeuer are set to the mocks when withSandbox is true.
func (m *mockPorts) newEngine(t *testing.T, withSandbox bool, opts deletion.Options) *deletion.Engine {
	t.Helper()
	if withSandbox {
		opts.SandboxExtractor = m.extractor
		opts.Requeuer = m.requeuer
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = quiet() // the default, klog, would write to the test's stderr
	}
	c, err := deletion.New(m.getter, m.policy, opts)
	require.NoError(t, err)
	return c
}

// verifyNoLeaks fails the test when goroutines it started outlive it.
// Call it first: it registers the cleanup that runs last.
func verifyNoLeaks(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
}

// startEngine runs c.Start in the background; the returned stop cancels it
// and waits for Start to return, failing the test if it takes over limit.
func startEngine(t *testing.T, c *deletion.Engine) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(5 * time.Second):
				t.Fatal("Start did not return within 5s of its context ending")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// logBuffer is a logr sink into a buffer, safe to use from goroutines that
// outlive a test (unlike testr).
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.buf.WriteString(prefix + args + "\n")
	}, funcr.Options{Verbosity: 1})
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) lines(substr string) []string {
	var out []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

// events records what an Observer is told.
type events struct {
	mu  sync.Mutex
	all []deletion.Event
}

func (r *events) Observe(ev deletion.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, ev)
}

func (r *events) kinds(k deletion.EventKind) []deletion.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []deletion.Event
	for _, ev := range r.all {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

// quiet returns a Logger that drops everything. logr.Discard() cannot serve:
// it is the zero Logger, which the engine takes for "use the default".
func quiet() logr.Logger { return logr.New(discardSink{}) }

type discardSink struct{}

func (discardSink) Init(logr.RuntimeInfo)            {}
func (discardSink) Enabled(int) bool                 { return false }
func (discardSink) Info(int, string, ...any)         {}
func (discardSink) Error(error, string, ...any)      {}
func (s discardSink) WithValues(...any) logr.LogSink { return s }
func (s discardSink) WithName(string) logr.LogSink   { return s }

// podGets is a PodGetter that counts its calls by pod: the pods in live are
// alive on testNode with the UID given there, every other one is gone.
type podGets struct {
	live map[types.NamespacedName]string
	mu   sync.Mutex
	n    map[types.NamespacedName]int
}

func newPodGets(live map[types.NamespacedName]string) *podGets {
	return &podGets{live: live, n: map[types.NamespacedName]int{}}
}

func (g *podGets) GetPod(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n[key]++
	if uid, ok := g.live[key]; ok {
		return podAt(key, uid), nil
	}
	return nil, ports.ErrPodNotFound
}

// of returns how many times key's pod was asked for.
func (g *podGets) of(key types.NamespacedName) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n[key]
}

// wheelNeighbour returns a PUID that has the wheel slot of puid in every
// wheel of up to 64 slots, a power of two (SweepInterval 1s: 2 slots, 32s
// and more: 64): the same FNV-1a hash modulo 64.
func wheelNeighbour(puid string) string {
	for i := 0; ; i++ {
		if n := fmt.Sprintf("neighbour-%d", i); n != puid && fnvSlot(n) == fnvSlot(puid) {
			return n
		}
	}
}
