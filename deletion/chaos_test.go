package deletion_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

var chaosDuration = flag.Duration("chaos.duration", 0,
	"how long TestChaos throws faults at the engine (default 3s under -short, 20s otherwise)")

const (
	chaosNode      = "node-a"
	chaosOtherNode = "node-b"
	chaosTimeout   = 20 * time.Millisecond  // CheckTimeout of the engine under test
	chaosCacheLag  = 300 * time.Millisecond // how far the engine's PodGetter is behind the truth
)

// chaosPod is the truth about one pod of the simulated cluster. UIDs and
// sandbox IDs are never reused, as in a real cluster.
type chaosPod struct {
	uid, node, sandbox string
}

// chaosPU is one tracked PU: one EventTracked, until its entry is removed.
type chaosPU struct {
	puid      string
	pod       types.NamespacedName
	tracked   string // the SandboxID it was tracked with
	failures  int    // failed or panicked DestroyPU calls
	successes int    // successful DestroyPU calls: at most one
}

// chaosWorld is a simulated cluster behind the four ports, and the node
// agent that tracks a PU for every pod on its node. It checks invariants
// (a) and (c) at every DestroyPU.
type chaosWorld struct {
	c      *deletion.Engine
	faults atomic.Bool
	// release ends the hangs of GetPod calls that ignore their context.
	release chan struct{}
	// requeues carries requeued pods to the agent.
	requeues chan *corev1.Pod
	nextID   atomic.Int64

	// mu guards the cluster; the agent holds it while it calls Track, so a
	// PU is always tracked from a true picture of its pod.
	mu   sync.Mutex
	pods map[types.NamespacedName]chaosPod

	// acct guards the accounting of PUs. Lock order: mu, then acct.
	acct       sync.Mutex
	current    map[string]*chaosPU // by PUID, the last tracked PU
	all        []*chaosPU
	violations []string

	// cache is the engine's PodGetter: the truth as it was chaosCacheLag
	// ago, as an informer's cache is; the API server (chaosWorld's own
	// GetPod) is the engine's Confirmer.
	cache laggingCache

	gets, getFaults, hangs, destroyFails, destroyPanics, lostRequeues, destroyed, vetoes atomic.Int64
}

// laggingCache holds the pods as they were chaosCacheLag ago: every change
// of the truth reaches it that much later.
type laggingCache struct {
	w       *chaosWorld
	mu      sync.Mutex
	pods    map[types.NamespacedName]chaosPod
	pending []cacheUpdate // oldest first
}

type cacheUpdate struct {
	at     time.Time
	key    types.NamespacedName
	pod    chaosPod
	exists bool
}

// recordLocked schedules the current truth about key for the cache; w.mu is held.
func (w *chaosWorld) recordLocked(key types.NamespacedName) {
	p, ok := w.pods[key]
	w.cache.mu.Lock()
	w.cache.pending = append(w.cache.pending, cacheUpdate{at: time.Now().Add(chaosCacheLag), key: key, pod: p, exists: ok})
	w.cache.mu.Unlock()
}

// GetPod answers from the lagging picture, with the same faults as the API
// server.
func (lc *laggingCache) GetPod(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	if pod, err, faulted := lc.w.fault(ctx); faulted {
		return pod, err
	}
	lc.mu.Lock()
	now := time.Now()
	n := 0
	for _, u := range lc.pending {
		if u.at.After(now) {
			break
		}
		if u.exists {
			lc.pods[u.key] = u.pod
		} else {
			delete(lc.pods, u.key)
		}
		n++
	}
	lc.pending = lc.pending[n:]
	p, ok := lc.pods[key]
	lc.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("chaos: cache: %s: %w", key, ports.ErrPodNotFound)
	}
	return lc.w.toPod(key, p), nil
}

func newChaosWorld() *chaosWorld {
	w := &chaosWorld{
		release:  make(chan struct{}),
		requeues: make(chan *corev1.Pod, 4096),
		pods:     make(map[types.NamespacedName]chaosPod),
		current:  make(map[string]*chaosPU),
	}
	w.cache = laggingCache{w: w, pods: make(map[types.NamespacedName]chaosPod)}
	return w
}

func (w *chaosWorld) id(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, w.nextID.Add(1))
}

// violate records a broken invariant; the test fails on it at the end.
func (w *chaosWorld) violateLocked(format string, args ...any) {
	w.violations = append(w.violations, fmt.Sprintf(format, args...))
}

func (w *chaosWorld) toPod(key types.NamespacedName, p chaosPod) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: types.UID(p.uid)},
		Spec:       corev1.PodSpec{NodeName: p.node},
	}
}

// GetPod fails 30% of the time under faults, sometimes hangs past the
// check's deadline (honouring its context or not), sometimes answers a nil
// pod with a nil error.
func (w *chaosWorld) GetPod(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	if pod, err, faulted := w.fault(ctx); faulted {
		return pod, err
	}
	w.mu.Lock()
	p, ok := w.pods[key]
	w.mu.Unlock()
	if !ok {
		if rand.IntN(2) == 0 {
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, key.Name)
		}
		return nil, fmt.Errorf("chaos: %s: %w", key, ports.ErrPodNotFound)
	}
	return w.toPod(key, p), nil
}

// fault counts a read and, under faults, sometimes answers it instead of
// the truth: an error, a nil pod and a nil error, a hang past the check's
// deadline that honours its context or ignores it (then the truth follows).
func (w *chaosWorld) fault(ctx context.Context) (*corev1.Pod, error, bool) {
	w.gets.Add(1)
	if !w.faults.Load() {
		return nil, nil, false
	}
	switch r := rand.Float64(); {
	case r < 0.01:
		w.hangs.Add(1)
		<-ctx.Done()
		return nil, ctx.Err(), true
	case r < 0.02:
		w.hangs.Add(1)
		select { // ignores ctx
		case <-time.After(3 * chaosTimeout):
		case <-w.release:
		}
	case r < 0.31:
		w.getFaults.Add(1)
		return nil, errors.New("chaos: apiserver unavailable"), true
	case r < 0.32:
		w.getFaults.Add(1)
		return nil, nil, true
	}
	return nil, nil, false
}

// SandboxID asks the runtime about the pod's sandbox now; under faults it
// fails 10% of the time and does not know the sandbox yet 5% of the time.
func (w *chaosWorld) SandboxID(_ context.Context, pod *corev1.Pod) (string, error) {
	if w.faults.Load() {
		switch r := rand.Float64(); {
		case r < 0.10:
			return "", errors.New("chaos: runtime unavailable")
		case r < 0.15:
			return "", nil
		}
	}
	w.mu.Lock()
	p, ok := w.pods[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}]
	w.mu.Unlock()
	if !ok || p.uid != string(pod.UID) {
		return "", errors.New("chaos: no such pod in the runtime")
	}
	return p.sandbox, nil
}

// DestroyPU checks invariants (a) and (c), then fails 30% of the time
// under faults and panics 3% of the time.
func (w *chaosWorld) DestroyPU(_ context.Context, ev ports.DestroyEvent) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.acct.Lock()
	defer w.acct.Unlock()

	if p, ok := w.pods[ev.Pod]; ok && p.uid == ev.PUID && p.node == chaosNode && (ev.SandboxID == "" || ev.SandboxID == p.sandbox) {
		w.violateLocked("(a) %v while its pod lives with sandbox %q", ev, p.sandbox)
	}
	pu := w.current[ev.PUID]
	switch {
	case pu == nil:
		w.violateLocked("%v: PUID never tracked", ev)
		return nil
	case pu.successes > 0:
		w.violateLocked("(c) %v: destroyed already, without a failure since", ev)
	}
	if w.faults.Load() {
		switch r := rand.Float64(); {
		case r < 0.03:
			pu.failures++
			w.destroyPanics.Add(1)
			panic("chaos: policy engine panicked")
		case r < 0.33:
			pu.failures++
			w.destroyFails.Add(1)
			return errors.New("chaos: policy engine busy")
		}
	}
	pu.successes++
	w.destroyed.Add(1)
	return nil
}

// Requeue is sometimes never read: it then waits for its deadline.
func (w *chaosWorld) Requeue(ctx context.Context, pod *corev1.Pod) error {
	if w.faults.Load() && rand.IntN(5) == 0 {
		w.lostRequeues.Add(1)
		<-ctx.Done()
		return ctx.Err()
	}
	select {
	case w.requeues <- pod:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Observe keeps the accounting of tracked PUs.
func (w *chaosWorld) Observe(ev deletion.Event) {
	switch ev.Kind {
	case deletion.EventTracked:
		w.acct.Lock()
		defer w.acct.Unlock()
		if old := w.current[ev.PU.PUID]; old != nil && old.successes == 0 {
			w.violateLocked("%s tracked again while its entry was never destroyed", ev.PU.PUID)
		}
		pu := &chaosPU{puid: ev.PU.PUID, pod: ev.PU.Pod, tracked: ev.PU.SandboxID}
		w.current[pu.puid] = pu
		w.all = append(w.all, pu)
	case deletion.EventAbandoned:
		w.acct.Lock()
		defer w.acct.Unlock()
		w.violateLocked("(b) %s abandoned after %d attempts: %v", ev.PU.PUID, ev.DestroyCalls, ev.Err)
	case deletion.EventVetoed:
		w.vetoes.Add(1)
	}
}

var (
	_ ports.PodGetter        = (*chaosWorld)(nil)
	_ ports.SandboxExtractor = (*chaosWorld)(nil)
	_ ports.PolicyHandler    = (*chaosWorld)(nil)
	_ ports.Requeuer         = (*chaosWorld)(nil)
	_ deletion.Observer      = (*chaosWorld)(nil)
)

// track is the node agent: it tracks the PU of the pod at key if that pod
// runs on this node, sometimes before its sandbox is known.
func (w *chaosWorld) track(key types.NamespacedName, maybeUnknown bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pods[key]
	if !ok || p.node != chaosNode {
		return nil
	}
	sb := p.sandbox
	if maybeUnknown && rand.IntN(5) == 0 {
		sb = ""
	}
	return w.c.Track(ports.PU{PUID: p.uid, Pod: key, SandboxID: sb})
}

// mutate changes the pod at key at random; the agent hears of it most of
// the time (it tracks the pod's PU and triggers a check), not always.
func (w *chaosWorld) mutate(key types.NamespacedName) {
	w.mu.Lock()
	p, ok := w.pods[key]
	node := chaosNode
	if rand.IntN(8) == 0 {
		node = chaosOtherNode
	}
	switch r := rand.IntN(10); {
	case !ok:
		w.pods[key] = chaosPod{uid: w.id("uid"), node: node, sandbox: w.id("sb")}
	case r < 4:
		delete(w.pods, key)
	case r < 6: // recreated under the same name, maybe on another node
		w.pods[key] = chaosPod{uid: w.id("uid"), node: node, sandbox: w.id("sb")}
	case r < 7: // moved: a new pod of that name on the other node
		other := chaosOtherNode
		if p.node == chaosOtherNode {
			other = chaosNode
		}
		w.pods[key] = chaosPod{uid: w.id("uid"), node: other, sandbox: w.id("sb")}
	default: // sandbox restarted
		p.sandbox = w.id("sb")
		w.pods[key] = p
	}
	w.recordLocked(key)
	w.mu.Unlock()
	if rand.IntN(4) != 0 {
		_ = w.track(key, true) // the informer saw it; Track rejects nothing here
	}
	if rand.IntN(3) != 0 {
		w.c.TriggerPod(key)
	}
}

// settled returns what keeps the engine's state from matching the cluster
// once the faults have stopped: invariant (b).
func (w *chaosWorld) settled() []string {
	pending := map[string]ports.PU{}
	for _, e := range deletiontest.PUs(w.c) {
		pending[e.PUID] = e
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.acct.Lock()
	defer w.acct.Unlock()
	var out []string
	for _, pu := range w.all {
		e, tracked := pending[pu.puid]
		isCurrent := w.current[pu.puid] == pu
		switch {
		case pu.successes > 0:
			if isCurrent && tracked {
				out = append(out, fmt.Sprintf("%s destroyed but still tracked", pu.puid))
			}
		case !isCurrent:
			out = append(out, fmt.Sprintf("%s replaced without a destroy", pu.puid))
		case !tracked:
			out = append(out, fmt.Sprintf("%s dropped without a destroy", pu.puid))
		default:
			p, ok := w.pods[pu.pod]
			if !ok || p.uid != pu.puid || p.node != chaosNode || p.sandbox != e.SandboxID {
				out = append(out, fmt.Sprintf("%s (sandbox %q) still tracked, pod is %+v (exists %v)", pu.puid, e.SandboxID, p, ok))
			}
		}
	}
	return out
}

// converge sweeps with the faults off until settled() finds nothing.
func (w *chaosWorld) converge(t *testing.T, ctx context.Context, keys []types.NamespacedName) {
	t.Helper()
	var problems []string
	for range 20 {
		time.Sleep(chaosCacheLag / 4) // the cache catches up with the truth
	drain:
		for {
			select {
			case p := <-w.requeues:
				require.NoError(t, w.track(types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, false))
			default:
				break drain
			}
		}
		for _, key := range keys {
			require.NoError(t, w.track(key, false))
		}
		w.c.Sweep(ctx)
		if problems = w.settled(); len(problems) == 0 && len(w.requeues) == 0 {
			return
		}
	}
	t.Fatalf("(b) the engine did not settle once the faults stopped; %d problems, first: %v", len(problems), problems[:min(20, len(problems))])
}

// heapInuse returns the bytes in in-use heap spans and the bytes of live
// objects in them, after a full collection.
func heapInuse() (inuse, live uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse, ms.HeapAlloc
}

// TestChaos throws faults at a running engine from every side (see
// chaosWorld) while pods come and go, and checks invariants (a) to (e):
// (a) no PU is destroyed while its pod lives on this node with its sandbox,
// (b) every PU of a gone pod is destroyed once the faults stop, (c) never
// twice, (d) no goroutine outlives Start, (e) the heap returns to its
// starting size once every PU is destroyed.
func TestChaos(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	names, duration := 5000, 20*time.Second
	if testing.Short() {
		names, duration = 2000, 3*time.Second
	}
	if *chaosDuration > 0 {
		duration = *chaosDuration
	}
	keys := make([]types.NamespacedName, names)
	for i := range keys {
		keys[i] = types.NamespacedName{Namespace: fmt.Sprintf("ns-%d", i%20), Name: fmt.Sprintf("pod-%d", i)}
	}

	w := newChaosWorld()
	c, err := deletion.New(&w.cache, w, deletion.Options{
		SandboxExtractor: w,
		Requeuer:         w,
		Confirmer:        w, // the cache lags: without the Confirmer, (a) breaks at once
		NodeName:         chaosNode,
		SweepInterval:    300 * time.Millisecond,
		CheckTimeout:     chaosTimeout,
		Workers:          16,
		RetryMinDelay:    time.Millisecond,
		RetryMaxDelay:    50 * time.Millisecond,
		ShutdownTimeout:  5 * time.Second,
		Observer:         w,
		Logger:           deletiontest.Discard(),
	})
	require.NoError(t, err)
	w.c = c

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- c.Start(ctx) }()
	baseline, baselineLive := heapInuse()

	// A cluster of pods, most of them on this node, each with its PU.
	w.mu.Lock()
	for i, key := range keys {
		node := chaosNode
		if i%10 == 0 {
			node = chaosOtherNode
		}
		w.pods[key] = chaosPod{uid: w.id("uid"), node: node, sandbox: w.id("sb")}
		w.recordLocked(key)
	}
	w.mu.Unlock()
	for _, key := range keys { // before the cache has them: the Confirmer must veto
		require.NoError(t, w.track(key, true))
		c.TriggerPod(key)
	}

	// Chaos: faults on, and every caller busy at once.
	w.faults.Store(true)
	chaosCtx, stopChaos := context.WithTimeout(ctx, duration)
	var callers sync.WaitGroup
	every := func(d time.Duration, f func()) {
		callers.Go(func() {
			for chaosCtx.Err() == nil {
				f()
				select {
				case <-time.After(d):
				case <-chaosCtx.Done():
				}
			}
		})
	}
	for range 2 { // pods come and go
		every(100*time.Microsecond, func() { w.mutate(keys[rand.IntN(len(keys))]) })
	}
	every(50*time.Millisecond, func() { // the agent's resync
		for _, key := range keys {
			if err := w.track(key, true); err != nil {
				t.Error(err)
			}
		}
	})
	every(time.Millisecond, func() { // the agent hears about requeued pods
		select {
		case p := <-w.requeues:
			if err := w.track(types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, true); err != nil {
				t.Error(err)
			}
		case <-chaosCtx.Done():
		}
	})
	every(time.Millisecond, func() { c.TriggerPod(keys[rand.IntN(len(keys))]) })
	every(500*time.Millisecond, c.TriggerAll)
	for range 2 {
		every(200*time.Millisecond, func() {
			sctx, scancel := context.WithTimeout(chaosCtx, 500*time.Millisecond)
			defer scancel()
			c.Sweep(sctx)
		})
	}
	callers.Wait()
	stopChaos()
	peak, _ := heapInuse()
	t.Logf("heap in use at the end of the chaos: %d KiB", peak>>10)

	// The faults stop; every PU of a gone pod must now be destroyed (b).
	w.faults.Store(false)
	close(w.release)
	w.converge(t, ctx, keys)
	w.acct.Lock()
	require.Empty(t, w.violations[:min(10, len(w.violations))], "invariants broken during the chaos (%d, the first 10 shown)", len(w.violations))
	tracked := len(w.all)
	w.acct.Unlock()
	t.Logf("%d PUs tracked, %d destroyed, %d pod reads (%d faults, %d hangs), %d destroys vetoed by the Confirmer, %d DestroyPU failures, %d panics, %d requeues never read",
		tracked, w.destroyed.Load(), w.gets.Load(), w.getFaults.Load(), w.hangs.Load(), w.vetoes.Load(),
		w.destroyFails.Load(), w.destroyPanics.Load(), w.lostRequeues.Load())
	require.Positive(t, w.destroyFails.Load()+w.destroyPanics.Load(), "the chaos threw no destroy faults")
	require.Positive(t, w.vetoes.Load(), "the cache's lag never mattered")

	// Every pod goes: every PU is destroyed exactly once (b, c).
	w.mu.Lock()
	for key := range w.pods {
		delete(w.pods, key)
		w.recordLocked(key)
	}
	w.mu.Unlock()
	c.TriggerAll()
	require.Eventually(t, func() bool {
		c.Sweep(ctx)
		return c.Len() == 0
	}, 30*time.Second, 10*time.Millisecond, "entries left after every pod went")
	w.acct.Lock()
	require.Empty(t, w.violations)
	for _, pu := range w.all {
		require.Equal(t, 1, pu.successes, "PU %s of %s: successful DestroyPU calls", pu.puid, pu.pod)
	}
	require.EqualValues(t, len(w.all), w.destroyed.Load())
	w.acct.Unlock()

	// (d) Start returns and leaves no goroutine behind.
	cancel()
	select {
	case err := <-started:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return")
	}
	goleak.VerifyNone(t, ignore)

	// (e) The heap is back to where it was before the first PU, once the
	// simulated cluster has let go of its own records. The tolerance allows
	// for the capacity Go maps keep after their peak (a few hundred bytes
	// per pod name) and is far below what the PUs took: each kept several
	// hundred bytes, and there were many more PUs than pod names.
	w.mu.Lock()
	w.pods = make(map[types.NamespacedName]chaosPod)
	w.mu.Unlock()
	w.cache.mu.Lock()
	w.cache.pods, w.cache.pending = make(map[types.NamespacedName]chaosPod), nil
	w.cache.mu.Unlock()
	w.acct.Lock()
	w.all, w.current = nil, make(map[string]*chaosPU)
	w.acct.Unlock()
	final, finalLive := heapInuse()
	tolerance := uint64(1<<20 + 200*names)
	t.Logf("heap in use: %d KiB before, %d KiB after %d PUs (live objects: %d KiB, %d KiB)",
		baseline>>10, final>>10, tracked, baselineLive>>10, finalLive>>10)
	require.LessOrEqual(t, final, baseline+tolerance, "heap in use grew by %d KiB", (int64(final)-int64(baseline))>>10)
	runtime.KeepAlive(c)
}
