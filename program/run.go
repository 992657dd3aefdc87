package program

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/podsweeper/podsweeper/adapters/cri"
	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// Options are what a program gives Build and Run beside the shared flags:
// what is its own.
type Options struct {
	// Name names the program in the line its log starts with ("starting"
	// and the name).
	Name string
	// Logger is the program's (Flags.NewLogger). The zero value logs
	// nothing.
	Logger logr.Logger
	// Config is the cluster's; nil: Flags.RESTConfig.
	Config *rest.Config
	// Cache is the manager's pod cache (PodCacheFlags.Options, say). Build
	// scopes it to the engine's node, Engine.NodeName
	// (k8s.NodeCacheOptions): the engine reads no other pod. Without a
	// node, and at the zero value, it holds every pod of the cluster, whole.
	Cache cache.Options
	// Lease, when set, runs the engine on the replica that holds this
	// Lease only; nil: no leader election.
	Lease *Lease
	// Policy is the engine's PolicyHandler, which destroys a PU (required).
	Policy ports.PolicyHandler
	// Engine are the engine's options that are the program's own: its
	// node (an engine without one is wired to every pod of the cluster, by
	// k8s.SetupClusterWithManager; with one, k8s.SetupWithManager), its
	// Inventory, Requeuer and sandbox ports, and its Observer, told before
	// the shared ones but the dry run's report. Build sets the rest: the shared flags' fields
	// (Flags.EngineOptions), the Confirmer (a direct read of the API
	// server), the Logger, and the dry run's report (before Engine.Observer),
	// the metrics and the Events (after it) as Observers.
	Engine deletion.Options
	// Runtime is the container runtime on the program's node
	// (NodeFlags.Runtime), which Build makes the engine's SandboxExtractor;
	// nil: none.
	Runtime *cri.SandboxExtractor
	// RuntimeListMaxAge, when positive, has the periodic checks read one
	// list of the runtime's sandboxes at most this old (cri.SandboxCache)
	// instead of asking it for each pod; the runtime itself confirms any
	// answer of that list that would record a sandbox or destroy a PU
	// (deletion.Options.SandboxConfirmer).
	RuntimeListMaxAge time.Duration
	// Pods wraps both pod getters, the cache's and the Confirmer
	// (k8s.StaticPodUIDs, say); nil: they read pods as they are.
	Pods func(ports.PodGetter) ports.PodGetter
	// Events records a Kubernetes Event for each destroy and each PU given
	// up on (k8s.Events), regarding the engine's node or the pod.
	Events bool
	// Filter is the wiring's (k8s.SetupOptions.Filter); nil tracks every
	// pod the cache holds.
	Filter func(*corev1.Pod) bool
	// Beside run in the manager beside the engine, until it stops (what
	// tracks the pods the engine requeues, say).
	Beside []func(ctx context.Context, engine *deletion.Engine) error
	// Ready are readiness checks of the program's own (the container
	// runtime's, say), beside the shared ones; a nil one is left out.
	Ready map[string]healthz.Checker
	// Status are pages of the program's own, by path (under
	// k8s.StatusPath), that the status listener (--status-bind-address)
	// serves beside the status page: what a Policy holds, say (cni-gc's
	// per-address page, cni.AddressPath). A nil one is left out.
	Status map[string]http.Handler
	// Registry receives the metrics; nil: controller-runtime's, which the
	// manager serves on /metrics.
	Registry prometheus.Registerer
	// Values are logged in the line the log starts with, beside the
	// shared flags'.
	Values []any
}

// Lease is the Lease of a program with leader election: the manager
// elects the replica that holds it, and a k8s.LeaseFence stops its engine
// before another replica can take it.
type Lease struct {
	// Fence names the Lease and its durations, which the manager's leader
	// election uses too.
	Fence k8s.LeaseFenceOptions
	// Config is the config of the Lease's client; nil: the cluster's.
	Config *rest.Config
}

// Run builds the program (Build) and runs it until ctx is done, or until
// the Lease is lost: then it returns an error, and the process must exit.
func Run(ctx context.Context, f Flags, o Options) error {
	mgr, _, err := Build(f, o)
	if err != nil {
		return err
	}
	o.Logger.Info("starting "+o.Name, append([]any{"sweepInterval", f.SweepInterval, "workers", f.Workers,
		"dryRun", f.DryRun, "maxDestroysPerSecond", f.MaxDestroysPerSecond}, o.Values...)...)
	return mgr.Start(ctx)
}

// Build assembles the program, in this order, and starts nothing: the
// manager (its pod cache, o.Cache scoped to the engine's node, the shared endpoints' addresses, leader
// election on o.Lease); the metrics and, in a dry run, its report
// (Flags.DryRunReport); the engine (deletion.New), whose checks read the
// pod cache and whose every destroy is first confirmed by a direct read of
// the API server; the wiring; o.Beside; and the shared endpoints (Serve),
// with the readiness checks "pod-cache" (CacheSynced) and o.Ready.
//
// When a step fails, Build releases what it acquired before: the probes',
// pprof's and the status listener's addresses (serveStatus), which it binds itself before the manager (the
// manager would bind them in NewManager and release them only once started
// and stopped), and the metrics it registered on o.Registry; a second
// Build may bind and register them. Once Build has returned a manager,
// its Start serves them and releases them when it returns: the addresses
// are free, and the metrics unregistered from o.Registry, so that a second
// Build on the same registry may register them again.
func Build(f Flags, o Options) (_ manager.Manager, _ *deletion.Engine, err error) {
	rc := o.Config
	if rc == nil {
		if rc, err = f.RESTConfig(); err != nil {
			return nil, nil, err
		}
	}
	reg := o.Registry
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	got := acquired{metrics: &registrations{Registerer: reg}}
	defer func() {
		if err != nil {
			got.release()
		}
	}()
	o.Registry = got.metrics
	probes, err := got.listen("--health-probe-bind-address", f.HealthProbeBindAddress)
	if err != nil {
		return nil, nil, err
	}
	profiles, err := got.listen("--pprof-bind-address", f.PprofBindAddress)
	if err != nil {
		return nil, nil, err
	}
	status, err := got.listen("--status-bind-address", f.StatusBindAddress)
	if err != nil {
		return nil, nil, err
	}
	m, fence, err := newManager(rc, f, o)
	if err != nil {
		return nil, nil, err
	}
	mgr, err := newEndpoints(m, &got, probes, profiles)
	if err != nil {
		return nil, nil, err
	}
	report := f.DryRunReport()
	engine, err := newEngine(mgr, f, o, report)
	if err != nil {
		return nil, nil, err
	}
	wiring := k8s.SetupOptions{Filter: o.Filter, Logger: o.Logger.WithName("wiring"), LeaseFence: fence}
	setup := k8s.SetupWithManager
	if o.Engine.NodeName == "" {
		setup = k8s.SetupClusterWithManager
	}
	if err := setup(mgr, engine, wiring); err != nil {
		return nil, nil, err
	}
	for _, run := range o.Beside {
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error { return run(ctx, engine) })); err != nil {
			return nil, nil, fmt.Errorf("adding a runnable beside the engine: %w", err)
		}
	}
	ready := map[string]healthz.Checker{"pod-cache": CacheSynced(mgr.GetCache())}
	for name, check := range o.Ready {
		if check != nil {
			ready[name] = check
		}
	}
	serve := ServeOptions{Report: report, LeaderElected: o.Lease != nil, Ready: ready, Registry: o.Registry}
	if err := Serve(mgr, engine, f, serve); err != nil {
		return nil, nil, err
	}
	if err := serveStatus(mgr, status, engine, report, o.Status); err != nil {
		return nil, nil, err
	}
	return mgr, engine, nil
}

// newManager builds the manager, with leader election on o.Lease, fenced:
// it returns the fence, nil without a Lease.
func newManager(rc *rest.Config, f Flags, o Options) (manager.Manager, *k8s.LeaseFence, error) {
	pods := o.Cache
	if o.Engine.NodeName != "" {
		var err error
		if pods, err = k8s.NodeCacheOptions(o.Engine.NodeName, pods); err != nil {
			return nil, nil, err
		}
	}
	opts := f.ManagerOptions(o.Logger, pods)
	// Build binds and serves them (acquired).
	opts.HealthProbeBindAddress, opts.PprofBindAddress = Off, Off
	var fence *k8s.LeaseFence
	if o.Lease != nil {
		l := o.Lease.Fence
		lc := o.Lease.Config
		if lc == nil {
			lc = rc
		}
		var err error
		if fence, err = k8s.NewLeaseFence(lc, l); err != nil {
			return nil, nil, err
		}
		opts.LeaderElection, opts.LeaderElectionID, opts.LeaderElectionNamespace = true, l.Name, l.Namespace
		opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = &l.LeaseDuration, &l.RenewDeadline, &l.RetryPeriod
		opts.LeaderElectionResourceLockInterface = fence
		// The manager releases the Lease once the engine has returned
		// (every destroy of this replica has ended), so that a rollout
		// hands over at once instead of after the lease duration.
		opts.LeaderElectionReleaseOnCancel = true
	}
	mgr, err := ctrl.NewManager(rc, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the manager: %w", err)
	}
	return mgr, fence, nil
}

// newEngine builds the engine: o.Engine, with the shared flags' fields,
// the runtime, the Confirmer, the Logger and the shared Observers.
func newEngine(mgr manager.Manager, f Flags, o Options, report *k8s.DryRunReport) (*deletion.Engine, error) {
	pods := func(g ports.PodGetter) ports.PodGetter { return g }
	if o.Pods != nil {
		pods = o.Pods
	}
	metrics, err := k8s.NewMetrics(o.Registry)
	if err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	// The dry run's report first: a PU the engine dropped has left the
	// status page, and its report is then the only page that tells it,
	// which a journal's commit must not delay. Then the program's Observer
	// (a journal records a PU before the metrics count it), the metrics and
	// the Events.
	observers := []deletion.Observer{report, o.Engine.Observer, metrics}
	if o.Events {
		events, err := k8s.NewEvents(mgr.GetEventRecorder("podsweeper"), k8s.EventsOptions{NodeName: o.Engine.NodeName})
		if err != nil {
			return nil, fmt.Errorf("recording Events: %w", err)
		}
		observers = append(observers, events)
	}
	opts := f.EngineOptions(o.Engine)
	if o.Runtime != nil { // only then: a nil *cri.SandboxExtractor in the interface would not read as none
		opts.SandboxExtractor = o.Runtime
	}
	if o.Runtime != nil && o.RuntimeListMaxAge > 0 {
		if opts.SandboxExtractor, err = cri.NewSandboxCache(o.Runtime, cri.CacheOptions{MaxAge: o.RuntimeListMaxAge}); err != nil {
			return nil, err
		}
		opts.SandboxConfirmer = o.Runtime
	}
	// The cache may lag behind the API server or miss a pod: every
	// destroy it decides is confirmed with a direct read first.
	opts.Confirmer = pods(k8s.NewPodGetter(mgr.GetAPIReader()))
	opts.Observer = deletion.Observers(observers...)
	opts.Logger = o.Logger.WithName("podsweeper")
	engine, err := deletion.New(pods(k8s.NewPodGetter(mgr.GetCache())), o.Policy, opts)
	if err != nil {
		return nil, fmt.Errorf("creating the deletion engine: %w", err)
	}
	return engine, nil
}
