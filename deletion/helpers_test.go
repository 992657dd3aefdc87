package deletion_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/golang/mock/gomock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
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
		opts.Logger = deletiontest.Discard() // the default, klog, would write to the test's stderr
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

// logBuffer is a logr sink into a buffer, safe to use from goroutines that
// outlive a test (unlike testr).
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// logger returns a logger into b that writes V(1) lines too.
func (b *logBuffer) logger() logr.Logger { return b.loggerAt(1) }

// loggerAt returns a logger into b that writes the lines up to V(v).
func (b *logBuffer) loggerAt(v int) logr.Logger {
	return funcr.New(func(prefix, args string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.buf.WriteString(prefix + args + "\n")
	}, funcr.Options{Verbosity: v})
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

// clusterOf returns a Cluster with, for each pod in live, a live pod of
// testNode with the UID given there; every other pod is gone.
func clusterOf(live map[types.NamespacedName]string) *deletiontest.Cluster {
	c := deletiontest.NewCluster()
	for key, uid := range live {
		c.AddPod(podAt(key, uid), "")
	}
	return c
}

// addPod adds to c the pod of that name in namespace ns, with that UID,
// bound to node, in that phase and running in that sandbox, and returns
// its key.
func addPod(c *deletiontest.Cluster, name, uid, node, sandbox string, phase corev1.PodPhase) types.NamespacedName {
	key := types.NamespacedName{Namespace: "ns", Name: name}
	p := podAt(key, uid)
	p.Spec.NodeName, p.Status.Phase = node, phase
	c.AddPod(p, sandbox)
	return key
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

// holdingJournal is an Inventory and an Observer over one set of PUs, as
// adapters/bolt's journal is: Track's event records a PU, a destroy, an
// abandon or an Untrack forgets it, and ListPUs reads what is recorded. A
// forget of a PUID in hold waits, as a journal's commit does, until that
// channel is closed. The first failFirst lists fail.
type holdingJournal struct {
	mu        sync.Mutex
	pus       map[string]ports.PU
	hold      map[string]chan struct{}
	failFirst int
	lists     int
	// read is closed once a list that answers has read the journal.
	read chan struct{}
}

func newHoldingJournal(failFirst int) *holdingJournal {
	return &holdingJournal{pus: map[string]ports.PU{}, hold: map[string]chan struct{}{}, failFirst: failFirst, read: make(chan struct{})}
}

func (j *holdingJournal) ListPUs(context.Context) ([]ports.PU, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lists++
	if j.lists <= j.failFirst {
		return nil, errors.New("journal unavailable")
	}
	out := make([]ports.PU, 0, len(j.pus))
	for _, pu := range j.pus {
		out = append(out, pu)
	}
	select {
	case <-j.read:
	default:
		close(j.read)
	}
	return out, nil
}

func (j *holdingJournal) Observe(ev deletion.Event) {
	switch ev.Kind {
	case deletion.EventTracked:
		j.mu.Lock()
		j.pus[ev.PU.PUID] = ev.PU
		j.mu.Unlock()
	case deletion.EventDestroyed, deletion.EventAbandoned, deletion.EventUntracked:
		j.mu.Lock()
		hold := j.hold[ev.PU.PUID]
		j.mu.Unlock()
		if hold != nil {
			<-hold // the commit of the forget is under way
		}
		j.mu.Lock()
		delete(j.pus, ev.PU.PUID)
		j.mu.Unlock()
	}
}

// liveHeap returns the live heap after a collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// num8 is i in 8 decimal digits.
func num8(i int) string {
	b := []byte("00000000")
	for k := 7; k >= 0 && i > 0; k-- {
		b[k] = byte('0' + i%10)
		i /= 10
	}
	return string(b)
}

// lateClock is the real clock (fake in a synctest bubble), but its Now
// call number lateCall returns late by late: the time it read, once late
// has passed. It stands for a goroutine that reads the clock and is then
// held up (a lock the engine's Status, Backlog or TriggerAll holds over
// every PU, a preemption) before using what it read.
type lateClock struct {
	clock.RealClock
	calls    atomic.Int32
	lateCall int32
	late     time.Duration
}

func (c *lateClock) Now() time.Time {
	now := time.Now()
	if c.calls.Add(1) == c.lateCall {
		time.Sleep(c.late)
	}
	return now
}

// stuckPort is a PodGetter that answers a live pod of the node for every
// pod but one, stuck: its GetPod ignores its context and returns only once
// release is closed (then an error, which keeps the PU).
type stuckPort struct {
	stuck   types.NamespacedName
	release chan struct{}
	entered atomic.Int32
}

func newStuckPort(name string) *stuckPort {
	return &stuckPort{stuck: types.NamespacedName{Namespace: "ns", Name: name}, release: make(chan struct{})}
}

func (p *stuckPort) GetPod(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	if key == p.stuck {
		p.entered.Add(1)
		<-p.release // ignores its context, on purpose
		return nil, errBoom
	}
	return podAt(key, key.Name), nil
}

// pu is the PU of the pod of that name in namespace ns, its PUID the name.
func pu(name string) ports.PU {
	return ports.PU{PUID: name, Pod: types.NamespacedName{Namespace: "ns", Name: name}}
}

// sweepFor runs c.Sweep under a context that ends after limit, and returns
// how long it took.
func sweepFor(c *deletion.Engine, limit time.Duration) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	began := time.Now()
	c.Sweep(ctx)
	return time.Since(began)
}

// destroyLog is a deletiontest.Policy that tells when each DestroyPU call
// started, on the time package's clock (fake in a synctest bubble), since
// the log was made.
type destroyLog struct {
	*deletiontest.Policy
	t0 time.Time
}

func newDestroyLog() *destroyLog { return &destroyLog{Policy: &deletiontest.Policy{}, t0: time.Now()} }

// failFirst makes the first DestroyPU call answer first and every later one
// later (nil: success), on any PU.
func (d *destroyLog) failFirst(first, later error) {
	d.FailNext(1, first)
	d.Fail(later)
}

// since returns how long after the log was made now is.
func (d *destroyLog) since() time.Duration { return time.Since(d.t0) }

// startsOf returns when calls started, in order.
func (d *destroyLog) startsOf(calls []deletiontest.Call) []time.Duration {
	out := make([]time.Duration, 0, len(calls))
	for _, c := range calls {
		out = append(out, c.At.Sub(d.t0))
	}
	return out
}

// starts returns when every DestroyPU call started, in order.
func (d *destroyLog) starts() []time.Duration { return d.startsOf(d.Calls()) }

// of returns when the DestroyPU calls of puid started, in order.
func (d *destroyLog) of(puid string) []time.Duration {
	if calls := d.CallsOf(puid); len(calls) > 0 {
		return d.startsOf(calls)
	}
	return nil
}

// puids returns the PUIDs of the calls, in the order they started.
func (d *destroyLog) puids() []string {
	var out []string
	for _, c := range d.Calls() {
		out = append(out, c.Event.PUID)
	}
	return out
}

// assertRateBound checks the destroy rate's promise on starts: in any
// window of length w, at most rate*w + burst DestroyPU calls start. It
// reports the window that exceeds it the most.
func assertRateBound(t *testing.T, starts []time.Duration, rate float64, burst int) bool {
	t.Helper()
	s := slices.Sorted(slices.Values(starts))
	worst, wi, wj := 0.0, 0, 0
	for i := range s {
		for j := i + burst; j < len(s); j++ {
			allowed := rate*(s[j]-s[i]).Seconds() + float64(burst)
			if excess := float64(j-i+1) - allowed; excess > worst+1e-6 {
				worst, wi, wj = excess, i, j
			}
		}
	}
	if worst == 0 {
		return true
	}
	return assert.Fail(t, "more DestroyPU calls than the destroy rate allows",
		"%d calls started from %v to %v: at %v a second with a burst of %d, at most %.2f may",
		wj-wi+1, s[wi], s[wj], rate, burst, rate*(s[wj]-s[wi]).Seconds()+float64(burst))
}

// trackLive tracks n PUs named prefix0, prefix1..., each with a live pod of
// the same name and UID in w, and returns them.
func trackLive(t *testing.T, c *deletion.Engine, w *deletiontest.Cluster, prefix string, n int) []ports.PU {
	t.Helper()
	pus := make([]ports.PU, n)
	for i := range pus {
		name := fmt.Sprintf("%s%d", prefix, i)
		pus[i] = ports.PU{PUID: name, Pod: addPod(w, name, name, testNode, "", corev1.PodRunning)}
		require.NoError(t, c.Track(pus[i]))
	}
	return pus
}

// blipGetter reads pods from w, but answers NotFound for every pod while
// blip is set: an API server or a cache that for a moment reads every pod
// as gone, the wave the destroy rate exists for.
func blipGetter(w *deletiontest.Cluster, blip *atomic.Bool) ports.PodGetter {
	return ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		if blip.Load() {
			return nil, ports.ErrPodNotFound
		}
		return w.GetPod(ctx, key)
	})
}

// afterABlip runs the destroy rate's blip: DestroyRate 1 (burst 1), 10 PUs
// of live pods tracked and Start running; a blip reads every pod as gone
// for the checks TriggerAll asks for, so that one PU is destroyed and nine
// wait for their turns (1 to 9 s away: with CheckTimeout 1s, beyond half
// of a check's time left, so that no check waits for its turn and destroys
// on its own read); then the blip ends, and 30s pass, three SweepIntervals,
// in which the nine are checked again and kept.
func afterABlip(t *testing.T) (*deletion.Engine, *deletiontest.Cluster, *destroyLog, []ports.PU) {
	t.Helper()
	w := deletiontest.NewCluster()
	var blip atomic.Bool
	policy := newDestroyLog()
	c := deletiontest.NewEngine(t, blipGetter(w, &blip), policy, deletion.Options{DestroyRate: 1, CheckTimeout: time.Second, SweepInterval: 10 * time.Second})
	pus := trackLive(t, c, w, "pu", 10)
	deletiontest.Start(t, c)
	synctest.Wait()
	blip.Store(true)
	c.TriggerAll()
	synctest.Wait()
	blip.Store(false)
	require.Len(t, policy.starts(), 1, "one destroy within the burst; nine wait for their turns")
	b := c.Backlog()
	require.Equal(t, 9, b.RateLimited, "nine wait for their turns")
	require.False(t, b.OldestGoneSince.IsZero())
	time.Sleep(30 * time.Second)
	synctest.Wait()
	require.Len(t, policy.starts(), 1, "their pods live: the checks at or before their turns keep them")
	require.Equal(t, 9, c.Len())
	var kept []ports.PU
	for _, pu := range pus {
		if len(policy.of(pu.PUID)) == 0 {
			kept = append(kept, pu)
		}
	}
	return c, w, policy, kept
}

// errorSink counts the error lines a logger writes, by message.
type errorSink struct {
	mu   sync.Mutex
	msgs []string
}

func (s *errorSink) Init(logr.RuntimeInfo)          {}
func (s *errorSink) Enabled(level int) bool         { return level == 0 }
func (s *errorSink) Info(int, string, ...any)       {}
func (s *errorSink) WithValues(...any) logr.LogSink { return s }
func (s *errorSink) WithName(string) logr.LogSink   { return s }
func (s *errorSink) Error(_ error, msg string, _ ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, msg)
}

// newErrorLogger returns a logger into a new errorSink, and the sink.
func newErrorLogger() (logr.Logger, *errorSink) {
	s := &errorSink{}
	return logr.New(s), s
}

// lines returns the messages of the error lines written, in order.
func (s *errorSink) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.msgs...)
}

// errorLines returns how many error lines were written.
func (s *errorSink) errorLines() int { return len(s.lines()) }

// summary counts msgs by message.
func summary(msgs []string) map[string]int {
	m := map[string]int{}
	for _, s := range msgs {
		m[s]++
	}
	return m
}

// key is the key of the pod of that name in namespace shop.
func key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "shop", Name: name}
}

// nsKey is the key of the pod of that name in namespace ns.
func nsKey(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "ns", Name: name}
}

// uidPU is the PU of the pod of that name in namespace ns, its PUID "uid-" and the name.
func uidPU(name string) ports.PU { return ports.PU{PUID: "uid-" + name, Pod: nsKey(name)} }

// countLines returns how many lines of b hold substr.
func countLines(b *logBuffer, substr string) int { return len(b.lines(substr)) }

// kindsLine returns the kinds of evs and their PUIDs, on one line.
func kindsLine(evs []deletion.Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%s(%s) ", e.Kind, e.PU.PUID)
	}
	return b.String()
}
