package k8s_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// The integration tests share one real kube-apiserver and etcd, started by
// TestMain when KUBEBUILDER_ASSETS holds both binaries (`make test` builds
// them into bin/envtest). Each scenario gets its own namespace, node name,
// manager and engine.

// suite is the shared environment; its env is nil when the assets are missing.
var suite struct {
	env     *envtest.Environment
	cfg     *rest.Config
	client  client.Client
	missing string // why env is nil
	// metrics is the one set registered on controller-runtime's
	// metrics.Registry; every scenario's engine feeds it.
	metrics *k8s.Metrics
	tally   tally
}

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	// controller-runtime complains on stderr when its global logger is never set.
	logf.SetLogger(logr.Discard())
	var err error
	if suite.metrics, err = k8s.NewMetrics(nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	suite.missing = missingAssets(assets)
	stop := func() {}
	if suite.missing == "" {
		if stop, err = startEnv(assets); err != nil {
			fmt.Fprintln(os.Stderr, "starting kube-apiserver and etcd:", err)
			return 1
		}
	}
	code := m.Run()
	stop()
	if code != 0 {
		return code
	}
	if err := goleak.Find(leakOptions()...); err != nil {
		fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
		return 1
	}
	return 0
}

func leakOptions() []goleak.Option {
	return []goleak.Option{
		// Process-wide daemons of klog and of client-go's HTTP connection pool.
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*clientConnReadLoop).run"),
		goleak.IgnoreAnyFunction("net/http.(*http2clientConnReadLoop).run"),
	}
}

func missingAssets(dir string) string {
	if dir == "" {
		return "KUBEBUILDER_ASSETS is not set"
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return fmt.Sprintf("KUBEBUILDER_ASSETS=%s has no %s", dir, bin)
		}
	}
	return ""
}

// docs:begin testing-wiring-1
func startEnv(assets string) (stop func(), err error) {
	certs, err := os.MkdirTemp("", "podsweeper-envtest-")
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	// A fixed CertDir keeps the serving certificates when a scenario
	// restarts the API server, so that existing clients keep working.
	env.ControlPlane.GetAPIServer().CertDir = certs
	// Without a bound, a stopping API server waits for open watches (every
	// manager's informers) and a restart takes over 20s instead of about 1s.
	env.ControlPlane.GetAPIServer().Configure().Set("shutdown-watch-termination-grace-period", "1s")
	cfg, err := env.Start()
	// docs:end testing-wiring-1
	if err != nil {
		_ = env.Stop()
		_ = os.RemoveAll(certs)
		return nil, err
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		_ = env.Stop()
		_ = os.RemoveAll(certs)
		return nil, err
	}
	suite.env, suite.cfg, suite.client = env, cfg, c
	return func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		}
		_ = os.RemoveAll(certs)
	}, nil
}

// needEnv skips t when the API server binaries are missing, and fails it
// instead under CI=true.
func needEnv(t testing.TB) {
	t.Helper()
	if suite.env != nil {
		return
	}
	msg := suite.missing + ": run make test, which builds kube-apiserver and etcd into bin/envtest and runs these tests against them"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// tally is what every scenario did, counted at the ports: the ground truth
// the /metrics scenario compares the metrics with.
type tally struct {
	mu        sync.Mutex
	destroys  map[ports.Reason]int
	failures  map[ports.Reason]int
	abandoned int
	getErrors int
	// left counts the entries still tracked by stopped engines.
	left int
}

func (t *tally) add(f func(*tally)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.destroys == nil {
		t.destroys, t.failures = map[ports.Reason]int{}, map[ports.Reason]int{}
	}
	f(t)
}

// recorder is a PolicyHandler that records every destroy.
type recorder struct {
	fail func(ports.DestroyEvent) error // nil: every destroy succeeds

	mu        sync.Mutex
	destroyed []ports.DestroyEvent
}

func (r *recorder) DestroyPU(_ context.Context, ev ports.DestroyEvent) error {
	var err error
	if r.fail != nil {
		err = r.fail(ev)
	}
	suite.tally.add(func(t *tally) {
		switch {
		case err == nil:
			t.destroys[ev.Reason]++
		case ports.IsPermanent(err):
			t.failures[ev.Reason]++
			t.abandoned++
		default:
			t.failures[ev.Reason]++
		}
	})
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.destroyed = append(r.destroyed, ev)
	return nil
}

func (r *recorder) events() []ports.DestroyEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ports.DestroyEvent(nil), r.destroyed...)
}

// of returns the destroys of the PU puid.
func (r *recorder) of(puid types.UID) []ports.DestroyEvent {
	var out []ports.DestroyEvent
	for _, ev := range r.events() {
		if ev.PUID == string(puid) {
			out = append(out, ev)
		}
	}
	return out
}

// countingGetter counts the failed reads the way the engine reports them
// (EventGetFailed), for the tally.
type countingGetter struct{ next ports.PodGetter }

func (g countingGetter) GetPod(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	pod, err := g.next.GetPod(ctx, key)
	if ctx.Err() != nil || (err != nil && !deletion.IsNotFound(err)) || (err == nil && pod == nil) {
		suite.tally.add(func(t *tally) { t.getErrors++ })
	}
	return pod, err
}

// nodeOptions shape one scenario's node agent.
type nodeOptions struct {
	sweep       time.Duration // 0: an hour, so that only triggers cause checks
	extractor   ports.SandboxExtractor
	requeuer    ports.Requeuer
	wrapGetter  func(ports.PodGetter) ports.PodGetter
	fail        func(ports.DestroyEvent) error
	unscoped    bool   // cache every pod of the namespace instead of the node's only
	cacheNode   string // "": scope the cache to the node's own name; else to this one
	confirm     bool   // confirm destroys with a direct read of the API server
	terminated  bool   // deletion.Options.DestroyTerminated
	metricsAddr string // "": no metrics server
	probeAddr   string // "": no health probe server
	workers     int    // 0: the engine's default
	setup       func(*node) error
	filter      func(*corev1.Pod) bool // SetupOptions.Filter
	slim        bool                   // the manager's pod cache holds slim pods (SlimPodCacheOptions)
	ownCache    bool                   // podsweeper reads a slim pod cache of its own; the manager's stays full
	events      bool                   // record Kubernetes Events (k8s.Events) from the manager's recorder
	restConfig  func(*rest.Config)     // changes the manager's copy of the suite's config
}

// node is one scenario's node agent: a manager, its cache and the engine.
type node struct {
	t      testing.TB
	name   string
	ns     string
	mgr    manager.Manager
	engine *deletion.Engine
	policy *recorder
	// podCache is the cache podsweeper reads: the manager's, or its own.
	podCache cache.Cache
}

// startNode creates a namespace and starts a node agent for it; the agent
// is stopped when t ends.
func startNode(t testing.TB, prefix string, o nodeOptions) *node {
	t.Helper()
	needEnv(t)
	ctx := t.Context()
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	require.NoError(t, suite.client.Create(ctx, nsObj))
	n := &node{t: t, ns: nsObj.Name, name: "node-" + nsObj.Name, policy: &recorder{fail: o.fail}}

	cacheOpts := cache.Options{DefaultNamespaces: map[string]cache.Config{n.ns: {}}}
	if !o.unscoped {
		var err error
		cacheNode := n.name
		if o.cacheNode != "" {
			cacheNode = o.cacheNode
		}
		cacheOpts, err = k8s.NodeCacheOptions(cacheNode, cacheOpts)
		require.NoError(t, err)
	}
	if o.slim {
		cacheOpts = k8s.SlimPodCacheOptions(cacheOpts)
	}
	if o.metricsAddr == "" {
		o.metricsAddr = "0"
	}
	cfg := rest.CopyConfig(suite.cfg)
	if o.restConfig != nil {
		o.restConfig(cfg)
	}
	mgr, err := manager.New(cfg, manager.Options{
		Cache:                  cacheOpts,
		Metrics:                metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress: o.probeAddr,
		// Not the test's logger: the manager's stop procedure may still log
		// from a goroutine of its own after the test has ended.
		Logger: afterTestLogger(),
	})
	require.NoError(t, err)
	n.mgr = mgr
	n.podCache = mgr.GetCache()
	var ownCache cache.Cache
	if o.ownCache {
		own := k8s.SlimPodCacheOptions(cacheOpts)
		own.Scheme, own.Mapper, own.HTTPClient = mgr.GetScheme(), mgr.GetRESTMapper(), mgr.GetHTTPClient()
		ownCache, err = cache.New(mgr.GetConfig(), own)
		require.NoError(t, err)
		require.NoError(t, mgr.Add(ownCache))
		n.podCache = ownCache
	}

	var getter ports.PodGetter = k8s.NewPodGetter(n.podCache)
	if o.wrapGetter != nil {
		getter = o.wrapGetter(getter)
	}
	if o.sweep == 0 {
		o.sweep = time.Hour
	}
	var confirmer ports.PodGetter
	if o.confirm {
		confirmer = k8s.NewPodGetter(mgr.GetAPIReader())
	}
	var observer deletion.Observer = suite.metrics
	if o.events {
		events, err := k8s.NewEvents(mgr.GetEventRecorder("podsweeper"), k8s.EventsOptions{NodeName: n.name})
		require.NoError(t, err)
		observer = deletion.Observers(suite.metrics, events)
	}
	n.engine, err = deletion.New(countingGetter{next: getter}, n.policy, deletion.Options{
		Confirmer:         confirmer,
		DestroyTerminated: o.terminated,
		SandboxExtractor:  o.extractor,
		Requeuer:          o.requeuer,
		NodeName:          n.name,
		SweepInterval:     o.sweep,
		Workers:           o.workers,
		Observer:          observer,
		Logger:            testr.NewWithInterface(t, testr.Options{}),
	})
	require.NoError(t, err)
	require.NoError(t, k8s.SetupWithManager(mgr, n.engine, k8s.SetupOptions{
		Filter: o.filter,
		Logger: afterTestLogger(),
		Cache:  ownCache,
	}))
	if o.setup != nil {
		require.NoError(t, o.setup(n))
	}

	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("manager: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("manager did not stop within 30s")
		}
		left := n.engine.Len()
		suite.tally.add(func(t *tally) { t.left += left })
	})
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	require.True(t, mgr.GetCache().WaitForCacheSync(syncCtx), "cache did not sync")
	require.True(t, n.podCache.WaitForCacheSync(syncCtx), "podsweeper's cache did not sync")
	return n
}

// createPod creates a pod named name in the node's namespace, bound to
// nodeName ("" leaves it unbound).
func (n *node) createPod(name, nodeName string, annotations map[string]string) *corev1.Pod {
	n.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: n.ns, Name: name, Annotations: annotations},
		Spec: corev1.PodSpec{
			NodeName:   nodeName,
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
		},
	}
	require.NoError(n.t, suite.client.Create(n.t.Context(), p))
	return p
}

func (n *node) deletePod(p *corev1.Pod) {
	n.t.Helper()
	require.NoError(n.t, suite.client.Delete(n.t.Context(), p, client.GracePeriodSeconds(0)))
}

// entry returns the engine's entry of the PU puid, if tracked.
func (n *node) entry(puid types.UID) (ports.PU, bool) {
	for _, e := range deletiontest.PUs(n.engine) {
		if e.PUID == string(puid) {
			return e, true
		}
	}
	return ports.PU{}, false
}

func (n *node) waitTracked(puid types.UID) ports.PU {
	n.t.Helper()
	require.Eventually(n.t, func() bool { _, ok := n.entry(puid); return ok }, 10*time.Second, 5*time.Millisecond,
		"PU %s never tracked", puid)
	e, _ := n.entry(puid)
	return e
}

func (n *node) waitDestroyed(puid types.UID, within time.Duration) ports.DestroyEvent {
	n.t.Helper()
	require.Eventually(n.t, func() bool { return len(n.policy.of(puid)) > 0 }, within, 5*time.Millisecond,
		"PU %s not destroyed within %v", puid, within)
	return n.policy.of(puid)[0]
}

// afterTestLogger is a Logger for goroutines that may outlive their test:
// testr's would race with the test's end. It drops what it is given.
func afterTestLogger() logr.Logger {
	return funcr.New(func(string, string) {}, funcr.Options{})
}
