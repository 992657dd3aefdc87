package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/ports"
)

// Lease times of TestPartitionedLeaderStopsBeforeItsLeaseCanBeTaken: the
// proportions of the defaults (15 s, 10 s, 2 s), with the Lease's whole
// seconds. Without the fence, a leader whose Lease client is black-holed
// stops a retry period, a renew deadline and its client's timeout (1.5 s)
// after its last renewal, 5 s: when the Lease can be taken, or later.
const (
	partLeaseDuration = 5 * time.Second
	partRenewDeadline = 3 * time.Second
	partRetryPeriod   = 500 * time.Millisecond
	// partPods are created in each run, one deleted every partDeleteEvery
	// from before the cut until the other replica has led for a second.
	partPods        = 120
	partDeleteEvery = 100 * time.Millisecond
)

// partitionRuns is how many runs of each mode the test makes: 20, or 2
// under -short (make test; make test-long runs 20).
func partitionRuns() int {
	if testing.Short() {
		return 2
	}
	return 20
}

// TestPartitionedLeaderStopsBeforeItsLeaseCanBeTaken runs two replicas in
// this process, as the ServiceAccount, sharing a PU directory. The
// leader's Lease client reaches the API server through a tcpProxy; the rest
// of it (its cache, its confirming reads, its Events) directly, so that it
// can go on destroying while it cannot renew: the case a lease exists for.
// Pods are deleted one every 100 ms throughout. Then the proxy refuses the
// Lease client's connections ("refuse") or drops every packet of them
// ("black-hole"). In every run, of each mode:
//
//   - the leader's last DestroyPU starts before its Lease can be taken: a
//     lease duration after its last renewal, dated to the second as a
//     standby dates it (see testCutOffLeader), and so no later than the
//     brief's "lease duration after the last successful renewal";
//   - its manager stops with an error (the fence's, or a lost Lease);
//   - the other replica takes the Lease and destroys the rest;
//   - each PU of a deleted pod is destroyed exactly once, by one replica,
//     and no live pod's.
//
// The test logs each run's margins (from the leader's last DestroyPU start
// to when its Lease could be taken, and from its fence to then), and their
// minimum and median over the runs of each mode. 2 runs of each under
// -short (about 30 s), 20 without (make test-long, about 5 minutes).
func TestPartitionedLeaderStopsBeforeItsLeaseCanBeTaken(t *testing.T) {
	// The replicas' managers log through funcr; their caches' reflectors
	// through controller-runtime's root logger: quiet too.
	ctrl.SetLogger(funcr.New(func(string, string) {}, funcr.Options{}))
	cfg, _ := testkube.StartAPIServer(t)
	admin, err := client.New(cfg, client.Options{})
	require.NoError(t, err)
	testkube.ApplyKustomization(t, admin, "deploy")
	asController := rest.CopyConfig(cfg)
	asController.Impersonate = rest.ImpersonationConfig{UserName: controllerUser}
	for _, mode := range []string{"refuse", "black-hole"} {
		t.Run(mode, func(t *testing.T) {
			var destroyMargins, fenceMargins []time.Duration
			for i := range partitionRuns() {
				r := partitionRun(t, admin, cfg, asController, mode, i)
				if t.Failed() {
					return
				}
				destroyMargins = append(destroyMargins, r.destroyMargin)
				fenceMargins = append(fenceMargins, r.fenceMargin)
			}
			slices.Sort(destroyMargins)
			slices.Sort(fenceMargins)
			t.Logf("%s, %d runs: the leader's last DestroyPU started %v (min) / %v (median) before its Lease could be taken; "+
				"its fence %v (min) / %v (median) before",
				mode, len(destroyMargins), destroyMargins[0], destroyMargins[len(destroyMargins)/2],
				fenceMargins[0], fenceMargins[len(fenceMargins)/2])
		})
	}
}

// partitionResult is what one run measured.
type partitionResult struct {
	destroyMargin time.Duration // from the leader's last DestroyPU start to when its Lease could be taken
	fenceMargin   time.Duration // from its fence (last renewal + renew deadline + retry period) to then
}

// journal records every DestroyPU call of the replicas of one run.
type journal struct {
	mu    sync.Mutex
	calls []destroyCall
}

func (j *journal) wrap(replica string) func(ports.PolicyHandler) ports.PolicyHandler {
	return func(next ports.PolicyHandler) ports.PolicyHandler {
		return ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
			start := time.Now()
			err := next.DestroyPU(ctx, ev)
			j.mu.Lock()
			j.calls = append(j.calls, destroyCall{replica: replica, puid: ev.PUID, start: start, end: time.Now(), ok: err == nil})
			j.mu.Unlock()
			return err
		})
	}
}

func (j *journal) all() []destroyCall {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.calls)
}

// runningReplica is a replica whose manager's end the test waits for.
type runningReplica struct {
	*replica
	done chan error
}

// startPartReplica starts a replica with the test's lease times; the
// Lease's client uses leaseConfig when it is not nil.
func startPartReplica(t *testing.T, rc, leaseConfig *rest.Config, dir, leaseID, name string, j *journal) *runningReplica {
	t.Helper()
	c := testConfig(dir)
	c.leaseID, c.leaseDuration, c.renewDeadline, c.retryPeriod = leaseID, partLeaseDuration, partRenewDeadline, partRetryPeriod
	c.Workers = 4
	log := funcr.New(func(string, string) {}, funcr.Options{})
	mgr, engine, err := setup(rc, c, deps{wrapPolicy: j.wrap(name), registry: prometheus.NewRegistry(), log: log, leaseConfig: leaseConfig})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningReplica{replica: &replica{name: name, mgr: mgr, engine: engine}, done: make(chan error, 1)}
	go func() { r.done <- mgr.Start(ctx) }()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-r.done:
				r.done <- err
			case <-time.After(30 * time.Second):
				t.Errorf("replica %s did not stop", name)
			}
		})
	}
	t.Cleanup(r.stop)
	return r
}

// partitionRun is one run of TestPartitionedLeaderStopsBeforeItsLeaseCanBeTaken.
func partitionRun(t *testing.T, admin client.Client, cfg, asController *rest.Config, mode string, run int) partitionResult {
	ctx := context.Background()
	ns := fmt.Sprintf("part-%s-%d", mode, run)
	leaseID := "podsweeper-" + ns
	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	var pods []*corev1.Pod
	for i := range partPods {
		p := testPod(fmt.Sprintf("p-%03d", i), "node-a")
		p.Namespace = ns
		require.NoError(t, admin.Create(ctx, p))
		pods = append(pods, p)
	}
	dir := t.TempDir()
	j := &journal{}
	lease := watchLease(t, cfg, leaseNS, leaseID)

	u, err := url.Parse(asController.Host)
	require.NoError(t, err)
	if u.Host == "" { // a bare host:port
		u = &url.URL{Scheme: "https", Host: asController.Host}
	}
	proxy := startProxy(t, u.Host)
	leaseConfig := rest.CopyConfig(asController)
	u.Host = proxy.ln.Addr().String()
	leaseConfig.Host = u.String()

	leader := startPartReplica(t, asController, leaseConfig, dir, leaseID, "leader", j)
	require.Eventually(t, leader.elected, 30*time.Second, 10*time.Millisecond, "the proxied replica leads")
	standby := startPartReplica(t, asController, nil, dir, leaseID, "standby", j)
	for _, p := range pods {
		require.Eventually(t, func() bool { return registered(dir, string(p.UID)) }, 30*time.Second, 10*time.Millisecond)
	}
	leaderID := lease.holder()
	require.NotEmpty(t, leaderID)

	// Delete a pod every 100 ms, from now until endDeletes (or the end of
	// the test, if it fails first).
	stopDeleting := make(chan struct{})
	deleted := make(chan int, 1)
	var endOnce sync.Once
	var deletedCount int
	endDeletes := func() int {
		endOnce.Do(func() {
			close(stopDeleting)
			deletedCount = <-deleted
		})
		return deletedCount
	}
	t.Cleanup(func() { endDeletes() })
	go func() {
		n := 0
		defer func() { deleted <- n }()
		tick := time.NewTicker(partDeleteEvery)
		defer tick.Stop()
		for ; n < len(pods)-10; n++ {
			select {
			case <-stopDeleting:
				return
			case <-tick.C:
			}
			if !assert.NoError(t, admin.Delete(ctx, pods[n], client.GracePeriodSeconds(0))) {
				return
			}
		}
	}()
	require.Eventually(t, func() bool { return len(callsOf(j.all(), "leader")) >= 5 }, 30*time.Second, 10*time.Millisecond,
		"the leader destroys")
	if mode == "refuse" {
		proxy.Close()
	} else {
		proxy.BlackHole()
	}
	cut := time.Now()

	var leaderErr error
	select {
	case leaderErr = <-leader.done:
		leader.done <- leaderErr
	case <-time.After(partLeaseDuration + 30*time.Second):
		require.Fail(t, "the cut-off leader's manager did not stop")
	}
	require.Error(t, leaderErr, "the leader's manager stops with an error")
	require.Eventually(t, standby.elected, 30*time.Second, 10*time.Millisecond, "the other replica takes the Lease")
	var taken time.Time
	require.Eventually(t, func() bool {
		var ok bool
		taken, ok = lease.takenFrom(leaderID)
		return ok
	}, 10*time.Second, 10*time.Millisecond, "the watch sees the Lease taken")
	time.Sleep(time.Second) // the new leader destroys a few more
	n := endDeletes()
	require.Greater(t, n, 20, "pods deleted")
	gone, alive := pods[:n], pods[n:]
	require.Eventually(t, func() bool {
		for _, p := range gone {
			if registered(dir, string(p.UID)) {
				return false
			}
		}
		return true
	}, 30*time.Second, 10*time.Millisecond, "every deleted pod's PU destroyed")
	standby.stop()
	require.NoError(t, <-standby.done)

	calls := j.all()
	renewed := lease.lastRenewal(leaderID)
	canTake := renewed.Truncate(time.Second).Add(partLeaseDuration)
	fence := renewed.Add(partRenewDeadline + partRetryPeriod)
	var leaderLast time.Time
	for _, c := range callsOf(calls, "leader") {
		if c.start.After(leaderLast) {
			leaderLast = c.start
		}
	}
	assert.True(t, leaderLast.Before(canTake), "run %d: the leader's last DestroyPU began %v after the cut, its Lease could be taken %v after it",
		run, leaderLast.Sub(cut), canTake.Sub(cut))
	assert.True(t, leaderLast.Before(renewed.Add(partLeaseDuration)), "and before the lease duration after its last renewal")
	assert.False(t, taken.Before(canTake), "the standby waited out the Lease")
	for _, c := range callsOf(calls, "standby") {
		assert.True(t, c.start.After(taken), "the standby destroys once it leads")
	}
	count := map[string]int{}
	for _, c := range calls {
		count[c.puid]++
		assert.True(t, c.ok, "DestroyPU of %s by %s", c.puid, c.replica)
	}
	for _, p := range gone {
		assert.Equal(t, 1, count[string(p.UID)], "run %d: the PU of %s destroyed exactly once", run, p.Name)
	}
	for _, p := range alive {
		assert.Zero(t, count[string(p.UID)], "a live pod's PU is kept")
	}
	if !errors.Is(leaderErr, k8s.ErrLeaseNotRenewed) {
		assert.True(t, strings.Contains(leaderErr.Error(), "leader election lost"), "the fence or a lost Lease stopped it: %v", leaderErr)
	}
	r := partitionResult{destroyMargin: canTake.Sub(leaderLast), fenceMargin: canTake.Sub(fence)}
	t.Logf("run %d, from the cut: last renewal %+.3fs, fence %+.3fs, leader's last DestroyPU %+.3fs (%d in all, %d after the cut), "+
		"Lease could be taken %+.3fs, taken %+.3fs; %d by the standby; stopped by: %v; margins %v and %v",
		run, renewed.Sub(cut).Seconds(), fence.Sub(cut).Seconds(), leaderLast.Sub(cut).Seconds(), len(callsOf(calls, "leader")),
		countAfter(callsOf(calls, "leader"), cut), canTake.Sub(cut).Seconds(), taken.Sub(cut).Seconds(), len(callsOf(calls, "standby")),
		leaderErr, r.destroyMargin, r.fenceMargin)
	for _, p := range alive {
		require.NoError(t, admin.Delete(ctx, p, client.GracePeriodSeconds(0)))
	}
	return r
}

// countAfter counts the calls that began after at.
func countAfter(calls []destroyCall, at time.Time) int {
	n := 0
	for _, c := range calls {
		if c.start.After(at) {
			n++
		}
	}
	return n
}
