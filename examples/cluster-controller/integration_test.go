package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/ports"
)

const (
	controllerUser = "system:serviceaccount:podsweeper-cluster:cluster-controller"
	leaseNS        = "podsweeper-cluster"
)

func testPod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
		},
	}
}

// testConfig is the command line of a replica in the tests: short lease
// times, no metrics, no probes.
func testConfig(dir string) config {
	return config{
		puDir: dir, leaderElect: true, leaseNS: leaseNS, leaseID: defaultLeaderElectionID,
		leaseDuration: 4 * time.Second, renewDeadline: 3 * time.Second, retryPeriod: 200 * time.Millisecond,
		metricsAddr: "0", probeAddr: "0", sweepInterval: time.Second, workers: 4,
	}
}

// The controller against a real API server, with nothing but the
// permissions deploy/ grants its ServiceAccount.
func TestControllerAgainstAPIServer(t *testing.T) {
	cfg, kubeconfig := testkube.StartAPIServer(t)
	admin, err := client.New(cfg, client.Options{})
	require.NoError(t, err)
	testkube.ApplyKustomization(t, admin, "deploy")
	asController := rest.CopyConfig(cfg)
	asController.Impersonate = rest.ImpersonationConfig{UserName: controllerUser}

	t.Run("RBAC reads pods and holds the Lease", func(t *testing.T) { testLeastRBAC(t, asController) })
	t.Run("two replicas: the leader destroys, the other takes over", func(t *testing.T) { testReplicas(t, admin, asController) })
	t.Run("the binary registers and destroys PUs", func(t *testing.T) { testBinary(t, admin, kubeconfig) })
	t.Run("a killed leader's Lease expires and the other takes over", func(t *testing.T) { testKilledLeader(t, admin, kubeconfig) })
}

func testLeastRBAC(t *testing.T, asController *rest.Config) {
	ctx := context.Background()
	c, err := client.New(asController, client.Options{})
	require.NoError(t, err)
	can := func(ns, group, resource, verb string) bool {
		t.Helper()
		r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Group: group, Resource: resource, Verb: verb},
		}}
		require.NoError(t, c.Create(ctx, r))
		return r.Status.Allowed
	}
	for _, verb := range []string{"get", "list", "watch"} {
		assert.True(t, can("", "", "pods", verb), "pods: %s, in every namespace", verb)
	}
	for _, verb := range []string{"create", "update", "patch", "delete"} {
		assert.False(t, can("", "", "pods", verb), "pods: not %s", verb)
	}
	for _, verb := range []string{"get", "create", "update"} {
		assert.True(t, can(leaseNS, "coordination.k8s.io", "leases", verb), "leases: %s in its namespace", verb)
		assert.False(t, can("default", "coordination.k8s.io", "leases", verb), "leases: not %s in another namespace", verb)
	}
	assert.False(t, can(leaseNS, "coordination.k8s.io", "leases", "delete"))
	assert.True(t, can(leaseNS, "", "events", "create"), "events of the election")
	assert.False(t, can("default", "", "events", "create"))
	assert.False(t, can("", "", "secrets", "get"))
}

// replica is one replica of the controller, started from setup.
type replica struct {
	name   string
	mgr    manager.Manager
	engine *deletion.Engine
	stop   func()
}

func (r *replica) elected() bool {
	select {
	case <-r.mgr.Elected():
		return true
	default:
		return false
	}
}

// destroys counts the DestroyPU calls of every replica, by PU.
type destroys struct {
	mu    sync.Mutex
	calls map[string][]string // replicas that called DestroyPU, by PUID
}

func (d *destroys) wrap(name string) func(ports.PolicyHandler) ports.PolicyHandler {
	return func(next ports.PolicyHandler) ports.PolicyHandler {
		return ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
			d.mu.Lock()
			d.calls[ev.PUID] = append(d.calls[ev.PUID], name)
			d.mu.Unlock()
			return next.DestroyPU(ctx, ev)
		})
	}
}

func (d *destroys) of(puid string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.calls[puid]...)
}

func startReplica(t *testing.T, rc *rest.Config, cfg config, name string, d *destroys) *replica {
	t.Helper()
	// Not testr: the manager's stop procedure may log after the test ends.
	log := funcr.New(func(string, string) {}, funcr.Options{})
	mgr, engine, err := setup(rc, cfg, deps{wrapPolicy: d.wrap(name), registry: prometheus.NewRegistry(), log: log})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	r := &replica{name: name, mgr: mgr, engine: engine}
	r.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				assert.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Errorf("replica %s did not stop", name)
			}
		})
	}
	t.Cleanup(r.stop)
	return r
}

func registered(dir, puid string) bool {
	_, err := os.Stat(filepath.Join(dir, puid))
	return err == nil
}

// testReplicas runs two replicas as the ServiceAccount, sharing the PU
// directory: the leader registers a PU per pod and destroys those of the
// deleted pods, alone; once it stops, the other takes the Lease, finds the
// PUs of the pods deleted meanwhile in the directory and destroys them.
func testReplicas(t *testing.T, admin client.Client, asController *rest.Config) {
	ctx := context.Background()
	dir := t.TempDir()
	var pods []*corev1.Pod
	for i := range 20 {
		p := testPod(fmt.Sprintf("web-%02d", i), fmt.Sprintf("node-%d", i%3))
		require.NoError(t, admin.Create(ctx, p))
		pods = append(pods, p)
	}
	d := &destroys{calls: map[string][]string{}}
	a := startReplica(t, asController, testConfig(dir), "a", d)
	b := startReplica(t, asController, testConfig(dir), "b", d)
	var leader, standby *replica
	require.Eventually(t, func() bool {
		switch {
		case a.elected() && !b.elected():
			leader, standby = a, b
		case b.elected() && !a.elected():
			leader, standby = b, a
		default:
			return false
		}
		return true
	}, 30*time.Second, 10*time.Millisecond, "one replica takes the Lease")
	require.Eventually(t, func() bool {
		for _, p := range pods {
			if !registered(dir, string(p.UID)) {
				return false
			}
		}
		return true
	}, 20*time.Second, 10*time.Millisecond, "the leader registers a PU for every pod, on every node")
	assert.Zero(t, standby.engine.Len(), "the standby tracks nothing")

	for _, p := range pods[:5] {
		require.NoError(t, admin.Delete(ctx, p, client.GracePeriodSeconds(0)))
	}
	for _, p := range pods[:5] {
		require.Eventually(t, func() bool { return !registered(dir, string(p.UID)) }, 20*time.Second, 10*time.Millisecond)
	}

	// Failover: the leader stops; pods are deleted while nobody leads.
	leader.stop()
	for _, p := range pods[5:10] {
		require.NoError(t, admin.Delete(ctx, p, client.GracePeriodSeconds(0)))
	}
	require.Eventually(t, standby.elected, 30*time.Second, 10*time.Millisecond, "the other replica takes the Lease")
	for _, p := range pods[5:10] {
		require.Eventually(t, func() bool { return !registered(dir, string(p.UID)) }, 20*time.Second, 10*time.Millisecond,
			"the new leader destroys the PUs of the pods deleted during the failover")
	}
	time.Sleep(2 * time.Second) // two sweeps: nothing more is destroyed
	for i, p := range pods {
		switch {
		case i < 5:
			assert.Equal(t, []string{leader.name}, d.of(string(p.UID)), "destroyed once, by the leader")
		case i < 10:
			assert.Equal(t, []string{standby.name}, d.of(string(p.UID)), "destroyed once, by the new leader")
		default:
			assert.Empty(t, d.of(string(p.UID)), "a live pod keeps its PU")
			assert.True(t, registered(dir, string(p.UID)))
		}
	}
	for _, p := range pods[10:] {
		require.NoError(t, admin.Delete(ctx, p, client.GracePeriodSeconds(0)))
	}
}

// controllerArgsEnv, when set, makes TestControllerHelper run the
// controller with these arguments, one a line.
const controllerArgsEnv = "PODSWEEPER_CLUSTER_CONTROLLER_ARGS"

// TestControllerHelper is the controller the binary tests run in a process
// of its own (run registers the metrics on controller-runtime's global
// registry, once a process): with controllerArgsEnv set, it runs the
// controller's command line until SIGTERM, or until killed.
func TestControllerHelper(t *testing.T) {
	args := os.Getenv(controllerArgsEnv)
	if args == "" {
		t.Skip("run by the binary tests as the controller they start and stop")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	require.NoError(t, run(ctx, strings.Split(args, "\n"), os.Stderr, deps{}))
}

// child is the controller's command line running in a process of its own.
type child struct {
	cmd       *exec.Cmd
	probeAddr string
	logs      *testkube.SyncBuffer
	done      chan error
}

// startChild runs the controller in a child process with a kubeconfig that
// acts as the ServiceAccount, dir as its --pu-dir and short lease times; it
// is killed when the test ends, if it still runs.
func startChild(t *testing.T, kubeconfig []byte, dir string) *child {
	t.Helper()
	return startChildWith(t, kubeconfig, dir, nil)
}

// startChildWith is startChild with env added to the child's environment
// and extra appended to its command line (a flag given again there wins).
func startChildWith(t *testing.T, kubeconfig []byte, dir string, env []string, extra ...string) *child {
	t.Helper()
	c := &child{probeAddr: testkube.FreeAddr(t), logs: &testkube.SyncBuffer{}, done: make(chan error, 1)}
	args := []string{"--kubeconfig=" + controllerKubeconfig(t, kubeconfig), "--pu-dir=" + dir,
		"--leader-election-namespace=" + leaseNS, "--health-probe-bind-address=" + c.probeAddr,
		// Off: two children cannot both listen on the default 127.0.0.1:8082.
		"--pprof-bind-address=0",
		"--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s", "--leader-election-retry-period=200ms",
		"--sweep-interval=1s"}
	args = append(args, extra...)
	c.cmd = exec.Command(os.Args[0], "-test.run=^TestControllerHelper$", "-test.count=1")
	c.cmd.Env = append(append(os.Environ(), env...), controllerArgsEnv+"="+strings.Join(args, "\n"))
	// Its logs, and on stdout the test's verdict: run's error.
	c.cmd.Stdout, c.cmd.Stderr = c.logs, c.logs
	require.NoError(t, c.cmd.Start())
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.done
	})
	return c
}

// leads reports whether the child has taken the Lease.
func (c *child) leads() bool { return strings.Contains(c.logs.String(), "Successfully acquired lease") }

// terminate stops the child with SIGTERM and checks that it exits cleanly.
func (c *child) terminate(t *testing.T) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-c.done:
		assert.NoError(t, err, "logs:\n%s", c.logs)
	case <-time.After(30 * time.Second):
		t.Errorf("the controller did not stop on SIGTERM; logs:\n%s", c.logs)
	}
	c.done <- nil // for the cleanup
}

// kill stops the child with SIGKILL: no Lease released, no destroy ended.
func (c *child) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGKILL))
	err := <-c.done
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	c.done <- err
}

// testBinary runs the controller's command line as the ServiceAccount: it
// takes the Lease, registers a PU for a pod and destroys it once the pod is
// deleted, then stops cleanly on SIGTERM.
func testBinary(t *testing.T, admin client.Client, kubeconfig []byte) {
	ctx := context.Background()
	dir := t.TempDir()
	pod := testPod("api", "node-a")
	require.NoError(t, admin.Create(ctx, pod))
	c := startChild(t, kubeconfig, dir)
	require.Eventually(t, func() bool { return testkube.Get(t, "http://"+c.probeAddr+"/readyz") == "ok" }, 30*time.Second, 20*time.Millisecond,
		"logs:\n%s", c.logs)
	require.Eventually(t, func() bool { return registered(dir, string(pod.UID)) }, 30*time.Second, 20*time.Millisecond,
		"a PU registered for the pod; logs:\n%s", c.logs)
	require.NoError(t, admin.Delete(ctx, pod, client.GracePeriodSeconds(0)))
	require.Eventually(t, func() bool { return !registered(dir, string(pod.UID)) }, 30*time.Second, 20*time.Millisecond,
		"the PU of the deleted pod destroyed; logs:\n%s", c.logs)
	assert.Contains(t, c.logs.String(), "destroying PU")
	assert.True(t, c.leads(), "it took the Lease")
	c.terminate(t)
}

// testKilledLeader runs two controllers in processes of their own and kills
// the leader with SIGKILL: it releases nothing. Once its Lease expires the
// other takes it, lists the directory and destroys the PUs of the pods
// deleted meanwhile; the live pods keep theirs.
func testKilledLeader(t *testing.T, admin client.Client, kubeconfig []byte) {
	ctx := context.Background()
	dir := t.TempDir()
	var pods []*corev1.Pod
	for i := range 6 {
		p := testPod(fmt.Sprintf("kill-%d", i), "node-a")
		require.NoError(t, admin.Create(ctx, p))
		pods = append(pods, p)
	}
	a, b := startChild(t, kubeconfig, dir), startChild(t, kubeconfig, dir)
	var leader, standby *child
	require.Eventually(t, func() bool {
		switch {
		case a.leads():
			leader, standby = a, b
		case b.leads():
			leader, standby = b, a
		default:
			return false
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "one takes the Lease")
	for _, p := range pods {
		require.Eventually(t, func() bool { return registered(dir, string(p.UID)) }, 30*time.Second, 20*time.Millisecond)
	}
	leader.kill(t)
	for _, p := range pods[:3] {
		require.NoError(t, admin.Delete(ctx, p, client.GracePeriodSeconds(0)))
	}
	require.Eventually(t, standby.leads, 30*time.Second, 20*time.Millisecond, "the other takes the expired Lease; logs:\n%s", standby.logs)
	for _, p := range pods[:3] {
		require.Eventually(t, func() bool { return !registered(dir, string(p.UID)) }, 30*time.Second, 20*time.Millisecond,
			"the PU of a pod deleted while nobody led is destroyed; logs:\n%s", standby.logs)
	}
	for _, p := range pods[3:] {
		assert.True(t, registered(dir, string(p.UID)), "a live pod keeps its PU")
		require.NoError(t, admin.Delete(ctx, p, client.GracePeriodSeconds(0)))
	}
	assert.NotContains(t, leader.logs.String(), "destroying PU", "the killed leader destroyed nothing")
	standby.terminate(t)
}

// controllerKubeconfig writes a kubeconfig that acts as the controller's
// ServiceAccount and returns its path.
func controllerKubeconfig(t *testing.T, kubeconfig []byte) string {
	return testkube.ImpersonatingKubeconfig(t, kubeconfig, controllerUser)
}
