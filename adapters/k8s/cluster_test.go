package k8s_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// The cluster-wide scenarios: replicas of a central controller, each a
// manager with leader election (a Lease in the scenario's namespace) and an
// engine without a node, share one external system, which holds a PU per
// pod, lists them (the engines' Inventory) and destroys them.

// externalSystem stands for the system that holds a PU per pod: the test
// creates a PU for each pod it creates; DestroyPU forgets it. It counts
// every DestroyPU call by PU and by replica.
type externalSystem struct {
	// latency is how long each DestroyPU takes.
	latency time.Duration

	mu     sync.Mutex
	pus    map[string]ports.PU
	calls  map[string]int       // DestroyPU calls by PUID
	by     map[string]string    // replica of the last DestroyPU, by PUID
	lastBy map[string]time.Time // start of each replica's last DestroyPU
	last   time.Time            // end of the last DestroyPU
}

func newExternalSystem(latency time.Duration) *externalSystem {
	return &externalSystem{latency: latency, pus: map[string]ports.PU{}, calls: map[string]int{}, by: map[string]string{},
		lastBy: map[string]time.Time{}}
}

func (s *externalSystem) add(pod *corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pus[string(pod.UID)] = ports.PU{PUID: string(pod.UID), Pod: client.ObjectKeyFromObject(pod)}
}

// ListPUs is the engines' Inventory.
func (s *externalSystem) ListPUs(context.Context) ([]ports.PU, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ports.PU, 0, len(s.pus))
	for _, pu := range s.pus {
		out = append(out, pu)
	}
	return out, nil
}

// policy returns the PolicyHandler of one replica. A PU already gone is
// destroyed (the call still counts).
func (s *externalSystem) policy(replica string) ports.PolicyHandler {
	return ports.PolicyHandlerFunc(func(_ context.Context, ev ports.DestroyEvent) error {
		started := time.Now()
		time.Sleep(s.latency)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.lastBy[replica] = started
		delete(s.pus, ev.PUID)
		s.calls[ev.PUID]++
		s.by[ev.PUID] = replica
		s.last = time.Now()
		return nil
	})
}

// left returns how many PUs the system still holds.
func (s *externalSystem) left() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pus)
}

// destroyedOnce checks that every PU of uids was destroyed exactly once, and
// returns how many each replica destroyed.
func (s *externalSystem) destroyedOnce(t *testing.T, uids []types.UID) map[string]int {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	byReplica := map[string]int{}
	twice := 0
	for _, uid := range uids {
		n := s.calls[string(uid)]
		if n > 1 {
			twice++
		}
		assert.NotZero(t, n, "PU %s never destroyed", uid)
		byReplica[s.by[string(uid)]]++
	}
	assert.Zero(t, twice, "PUs destroyed more than once")
	assert.Len(t, s.calls, len(uids), "DestroyPU called for PUs of live pods")
	return byReplica
}

// replica is one replica of the central controller.
type replica struct {
	name   string
	mgr    manager.Manager
	engine *deletion.Engine
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// elected reports whether the replica's manager has taken the lease.
func (r *replica) elected() bool {
	select {
	case <-r.mgr.Elected():
		return true
	default:
		return false
	}
}

// stop cancels the replica's context and waits for its manager to return;
// it does so once.
func (r *replica) stop(t testing.TB) {
	t.Helper()
	r.once.Do(func() { r.stopOnce(t) })
}

func (r *replica) stopOnce(t testing.TB) {
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("replica %s: manager: %v", r.name, err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("replica %s: manager did not stop within 30s", r.name)
	}
}

// startReplica starts a replica for the namespace ns, with the lease in ns.
func startReplica(t testing.TB, ns, name string, sys *externalSystem, workers int) *replica {
	t.Helper()
	lease, renew, retry := 4*time.Second, 3*time.Second, 200*time.Millisecond
	mgr, err := manager.New(suite.cfg, manager.Options{
		Cache:                         cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		LeaderElection:                true,
		LeaderElectionID:              "podsweeper-cluster",
		LeaderElectionNamespace:       ns,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &lease,
		RenewDeadline:                 &renew,
		RetryPeriod:                   &retry,
		Logger:                        afterTestLogger(),
	})
	require.NoError(t, err)
	engine, err := deletion.New(k8s.NewPodGetter(mgr.GetCache()), sys.policy(name), deletion.Options{
		Confirmer:     k8s.NewPodGetter(mgr.GetAPIReader()),
		Inventory:     sys,
		SweepInterval: time.Second,
		Workers:       workers,
		Logger:        afterTestLogger(),
	})
	require.NoError(t, err)
	require.NoError(t, k8s.SetupClusterWithManager(mgr, engine, k8s.SetupOptions{Logger: afterTestLogger()}))
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{name: name, mgr: mgr, engine: engine, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- mgr.Start(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// newNamespace creates a namespace for one scenario.
func newNamespace(t testing.TB, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	require.NoError(t, suite.client.Create(t.Context(), ns))
	return ns.Name
}

// createPods creates n pods in ns from 32 goroutines, each with its PU in
// sys, spread over 10 nodes, and returns them.
func createPods(t testing.TB, ns string, n int, sys *externalSystem) []*corev1.Pod {
	t.Helper()
	pods := make([]*corev1.Pod, n)
	parallel(t, n, func(i int) error {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("pod-%05d", i)},
			Spec: corev1.PodSpec{
				NodeName:   fmt.Sprintf("node-%d", i%10),
				Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
			},
		}
		if err := suite.client.Create(context.Background(), p); err != nil {
			return err
		}
		sys.add(p)
		pods[i] = p
		return nil
	})
	return pods
}

// deletePods deletes pods with a grace period of 0 from 32 goroutines.
func deletePods(t testing.TB, pods []*corev1.Pod) {
	t.Helper()
	parallel(t, len(pods), func(i int) error {
		return suite.client.Delete(context.Background(), pods[i], client.GracePeriodSeconds(0))
	})
}

// parallel runs f(0) to f(n-1) on 32 goroutines and fails t on the first error.
func parallel(t testing.TB, n int, f func(i int) error) {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	require.NoError(t, <-errs)
}

func uidsOf(pods []*corev1.Pod) []types.UID {
	out := make([]types.UID, len(pods))
	for i, p := range pods {
		out[i] = p.UID
	}
	return out
}

// waitLeader waits until exactly one of rs has taken the lease, and returns it.
func waitLeader(t testing.TB, rs ...*replica) *replica {
	t.Helper()
	var leader *replica
	require.Eventually(t, func() bool {
		leader = nil
		for _, r := range rs {
			if r.elected() {
				if leader != nil {
					return false
				}
				leader = r
			}
		}
		return leader != nil
	}, 30*time.Second, 10*time.Millisecond, "no leader elected")
	return leader
}

// TestEnvtestClusterLeaderDestroysAlone: two replicas against one API server
// share the external system; only the leader tracks pods and destroys, and
// every PU of a deleted pod is destroyed exactly once.
func TestEnvtestClusterLeaderDestroysAlone(t *testing.T) {
	needEnv(t)
	ns := newNamespace(t, "cluster")
	sys := newExternalSystem(0)
	pods := createPods(t, ns, 100, sys)
	a := startReplica(t, ns, "a", sys, 4)
	b := startReplica(t, ns, "b", sys, 4)
	leader := waitLeader(t, a, b)
	standby := a
	if leader == a {
		standby = b
	}
	require.Eventually(t, func() bool { return leader.engine.Len() == len(pods) }, 30*time.Second, 10*time.Millisecond,
		"the leader tracks every pod of the namespace, on every node")

	deletePods(t, pods[:60])
	require.Eventually(t, func() bool { return sys.left() == 40 }, 30*time.Second, 10*time.Millisecond)
	time.Sleep(2 * time.Second) // two sweeps: nothing more is destroyed
	byReplica := sys.destroyedOnce(t, uidsOf(pods[:60]))
	assert.Equal(t, map[string]int{leader.name: 60}, byReplica, "destroyed by the leader only")
	assert.Equal(t, 40, sys.left())
	assert.False(t, standby.elected())
	assert.Zero(t, standby.engine.Len(), "a standby tracks nothing")
	assert.NoError(t, k8s.LeaderReadinessCheck(standby.mgr, standby.engine)(&http.Request{}), "a standby is ready")
	assert.NoError(t, k8s.LeaderLivenessCheck(standby.mgr, standby.engine)(&http.Request{}), "a standby is alive")
	assert.NoError(t, k8s.LeaderReadinessCheck(leader.mgr, leader.engine)(&http.Request{}))
	assert.NoError(t, k8s.LeaderLivenessCheck(leader.mgr, leader.engine)(&http.Request{}))
}

// TestEnvtestClusterFailover: the leader's context is cancelled while pods
// are being deleted; the other replica takes the lease, lists the external
// system and destroys what is left: nothing twice, nothing left.
func TestEnvtestClusterFailover(t *testing.T) {
	needEnv(t)
	ns := newNamespace(t, "failover")
	sys := newExternalSystem(5 * time.Millisecond)
	pods := createPods(t, ns, 300, sys)
	a := startReplica(t, ns, "a", sys, 4)
	b := startReplica(t, ns, "b", sys, 4)
	first := waitLeader(t, a, b)
	second := a
	if first == a {
		second = b
	}
	require.Eventually(t, func() bool { return first.engine.Len() == len(pods) }, 30*time.Second, 10*time.Millisecond)

	deleted := make(chan struct{})
	go func() {
		defer close(deleted)
		for _, p := range pods[:200] {
			if err := suite.client.Delete(context.Background(), p, client.GracePeriodSeconds(0)); err != nil {
				t.Errorf("deleting %s: %v", p.Name, err)
				return
			}
		}
	}()
	// Cancel the leader once it has destroyed some PUs, while the deletes go on.
	require.Eventually(t, func() bool { return sys.left() <= 280 }, 30*time.Second, time.Millisecond)
	first.stop(t)
	stopped := time.Now()
	<-deleted
	require.Eventually(t, second.elected, 30*time.Second, 10*time.Millisecond, "the other replica takes the lease")
	require.Eventually(t, func() bool { return sys.left() == 100 }, 30*time.Second, 10*time.Millisecond)
	time.Sleep(2 * time.Second) // two sweeps: nothing more is destroyed
	byReplica := sys.destroyedOnce(t, uidsOf(pods[:200]))
	assert.Equal(t, 100, sys.left())
	assert.Len(t, byReplica, 2, "each replica destroyed some: %v", byReplica)
	sys.mu.Lock()
	assert.True(t, sys.lastBy[first.name].Before(stopped), "the first leader starts no destroy once stopped")
	sys.mu.Unlock()
	t.Logf("destroyed by the first leader: %d, by the second: %d", byReplica[first.name], byReplica[second.name])
}

// TestEnvtestClusterScale: thousands of pods created through the API, all
// tracked by the leader, a thousand deleted at once: every PU destroyed
// once. It logs how long the API server takes to create the pods, the time
// from the delete calls to the last destroy and the process's heap per PU
// (BENCHMARKS.md). -short runs 1,000 pods and deletes 200.
func TestEnvtestClusterScale(t *testing.T) {
	needEnv(t)
	n, del := 5000, 1000
	if testing.Short() {
		n, del = 1000, 200
	}
	ns := newNamespace(t, "scale")
	sys := newExternalSystem(0)
	start := time.Now()
	pods := createPods(t, ns, n, sys)
	created := time.Since(start)
	t.Logf("%d pods created in %v from 32 goroutines (%.0f pods/s)", n, created.Round(time.Millisecond), float64(n)/created.Seconds())
	heapBefore := heapInUse() // the test's own pods and PUs counted out

	start = time.Now()
	r := startReplica(t, ns, "a", sys, 16)
	require.Eventually(t, r.elected, 30*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return r.engine.Len() == n }, 60*time.Second, 10*time.Millisecond, "every pod tracked")
	t.Logf("all %d tracked %v after the replica started (cache sync and election included)", n, time.Since(start).Round(time.Millisecond))
	heapAfter := heapInUse()
	t.Logf("heap in use: %d B before the replica, %d B with its %d pods cached and tracked: %.0f B per PU (manager, pod cache, engine)",
		heapBefore, heapAfter, n, float64(heapAfter-heapBefore)/float64(n))

	start = time.Now()
	deletePods(t, pods[:del])
	deletes := time.Since(start)
	require.Eventually(t, func() bool { return sys.left() == n-del }, 60*time.Second, 5*time.Millisecond, "every deleted pod's PU destroyed")
	sys.mu.Lock()
	last := sys.last.Sub(start)
	sys.mu.Unlock()
	t.Logf("%d pods deleted in %v from 32 goroutines; last destroy %v after the first delete call", del, deletes.Round(time.Millisecond), last.Round(time.Millisecond))
	time.Sleep(2 * time.Second) // two sweeps: nothing more is destroyed
	sys.destroyedOnce(t, uidsOf(pods[:del]))
	assert.Equal(t, n-del, sys.left())
	assert.Equal(t, n-del, r.engine.Len())
}

// heapInUse returns the heap in use after two collections.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
