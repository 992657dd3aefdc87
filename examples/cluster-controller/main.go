package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/adapters/k8s/program"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// Defaults of the command line.
const (
	defaultLeaderElectionID = "podsweeper-cluster-controller"
	defaultSweepInterval    = time.Minute
	defaultWorkers          = 16
)

// config is the controller's command line: the flags every program has,
// and its own.
type config struct {
	program.Flags
	puDir         string
	leaderElect   bool
	leaseNS       string
	leaseID       string
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
	slimPodCache  bool
	events        bool
}

// parseFlags reads the command line; getenv supplies the default of
// --leader-election-namespace ($POD_NAMESPACE, set from the downward API in
// deploy/deployment.yaml).
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	cfg := config{Flags: program.Defaults()}
	// No client-side limit: the API server's priority and fairness decide,
	// as controller-runtime does (each destroy is confirmed with one read:
	// a limit of 5 a second would make a deletion of 1,000 pods take 200 s).
	cfg.KubeAPIQPS = -1
	cfg.SweepInterval, cfg.Workers = defaultSweepInterval, defaultWorkers
	fs := flag.NewFlagSet("cluster-controller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.puDir, "pu-dir", "", "the directory that stands for the external system: one file per PU, shared by every replica (required)")
	fs.BoolVar(&cfg.leaderElect, "leader-elect", true,
		"run the engine on the replica that holds the Lease only; false runs it at once, for a single replica outside the cluster")
	fs.StringVar(&cfg.leaseNS, "leader-election-namespace", getenv("POD_NAMESPACE"),
		"namespace of the Lease (default $POD_NAMESPACE; in the cluster, the pod's own namespace if empty)")
	fs.StringVar(&cfg.leaseID, "leader-election-id", defaultLeaderElectionID, "name of the Lease")
	fs.DurationVar(&cfg.leaseDuration, "leader-election-lease-duration", 15*time.Second,
		"how long a standby waits after the leader's last renewal before it takes the Lease")
	fs.DurationVar(&cfg.renewDeadline, "leader-election-renew-deadline", 10*time.Second,
		"how long the leader tries to renew before it gives up the lead and exits: its engine stops at the latest this and a retry period after the start of its last renewal; "+
			"the lease duration must exceed both by a second or more")
	fs.DurationVar(&cfg.retryPeriod, "leader-election-retry-period", 2*time.Second, "how often candidates try to take or renew the Lease")
	fs.BoolVar(&cfg.slimPodCache, "slim-pod-cache", true,
		"keep only what podsweeper reads of each pod in the cache, read without deep copies (k8s.SlimPodCacheOptions); false keeps whole pods (about 20 times the heap)")
	fs.BoolVar(&cfg.events, "events", true,
		"record a Kubernetes Event (events.k8s.io) for each destroy and each abandoned PU, in the namespace of the PU's pod, regarding the pod (k8s.Events): one POST per destroy; false records none")
	if err := cfg.Parse(fs, args); err != nil {
		return cfg, err
	}
	switch {
	case cfg.puDir == "":
		return cfg, fmt.Errorf("%w: --pu-dir is required", program.ErrUsage)
	case cfg.leaseID == "":
		return cfg, fmt.Errorf("%w: --leader-election-id must not be empty", program.ErrUsage)
	case cfg.leaderElect && leaseDurationsErr(cfg) != nil:
		// The leader stops destroying a renew deadline and a retry period
		// after its last renewal (k8s.LeaseFence); the other replica may
		// take the Lease a lease duration after it, dated to the second.
		return cfg, fmt.Errorf("%w: --leader-election-lease-duration, --leader-election-renew-deadline, --leader-election-retry-period: %w",
			program.ErrUsage, leaseDurationsErr(cfg))
	}
	return cfg, nil
}

// leaseDurationsErr is k8s.CheckLeaseDurations of the command line's lease times.
func leaseDurationsErr(cfg config) error {
	return k8s.CheckLeaseDurations(cfg.leaseDuration, cfg.renewDeadline, cfg.retryPeriod)
}

// deps are the parts of the controller a test replaces.
type deps struct {
	// wrapPolicy, when set, wraps the PolicyHandler (the PU directory).
	wrapPolicy func(ports.PolicyHandler) ports.PolicyHandler
	// registry receives the podsweeper metrics; nil: controller-runtime's,
	// which the manager serves on --metrics-bind-address.
	registry prometheus.Registerer
	log      logr.Logger
	// leaseConfig, when set, is the config of the leader election's client
	// (the Lease's); nil: the manager's.
	leaseConfig *rest.Config
}

// setup builds the manager, with leader election on its own Lease, and the
// engine wired into it for every pod of the cluster.
func setup(rc *rest.Config, cfg config, d deps) (manager.Manager, *deletion.Engine, error) {
	log := d.log
	dir, err := newPUDir(cfg.puDir, log.WithName("pus"))
	if err != nil {
		return nil, nil, err
	}
	leaseDuration, renewDeadline, retryPeriod := cfg.leaseDuration, cfg.renewDeadline, cfg.retryPeriod
	// Every pod of the cluster, slim: only what podsweeper reads, read
	// without deep copies (BENCHMARKS.md has the process's heap either way).
	// Nothing else here reads pods; code that did would see slim pods.
	cacheOpts := cache.Options{}
	if cfg.slimPodCache {
		cacheOpts = k8s.SlimPodCacheOptions(cacheOpts)
	}
	opts := cfg.ManagerOptions(log, cacheOpts)
	opts.LeaderElection, opts.LeaderElectionID, opts.LeaderElectionNamespace = cfg.leaderElect, cfg.leaseID, cfg.leaseNS
	// The manager releases the Lease once the engine has returned (every
	// destroy of this replica has ended), so that a rollout hands over at
	// once instead of after --leader-election-lease-duration; run returns
	// right after, as controller-runtime requires.
	opts.LeaderElectionReleaseOnCancel = true
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = &leaseDuration, &renewDeadline, &retryPeriod
	// The Lease's lock, fenced: the engine stops a renew deadline and a
	// retry period after the last renewal, before the other replica can
	// take the Lease, whatever the leader election's client is waiting for.
	var fence *k8s.LeaseFence
	if cfg.leaderElect {
		leaseConfig := rc
		if d.leaseConfig != nil {
			leaseConfig = d.leaseConfig
		}
		fence, err = k8s.NewLeaseFence(leaseConfig, k8s.LeaseFenceOptions{Namespace: cfg.leaseNS, Name: cfg.leaseID,
			LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod, Logger: log.WithName("lease")})
		if err != nil {
			return nil, nil, err
		}
		opts.LeaderElectionResourceLockInterface = fence
	}
	mgr, err := ctrl.NewManager(rc, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the manager: %w", err)
	}
	// In a dry run, what would have been destroyed and why, for the
	// operator to read before turning destroys on.
	report := cfg.DryRunReport()
	metrics, err := k8s.NewMetrics(d.registry)
	if err != nil {
		return nil, nil, fmt.Errorf("registering metrics: %w", err)
	}
	var policy ports.PolicyHandler = dir
	if d.wrapPolicy != nil {
		policy = d.wrapPolicy(policy)
	}
	// The directory registers each PU first, then the metrics count it,
	// then (--events) a Kubernetes Event records each destroy, on the gone
	// pod, in its namespace: the engine has no node for it to regard.
	observers := []deletion.Observer{dir, metrics, report}
	if cfg.events {
		events, err := k8s.NewEvents(mgr.GetEventRecorder("podsweeper"), k8s.EventsOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("recording Events: %w", err)
		}
		observers = append(observers, events)
	}
	engine, err := deletion.New(k8s.NewPodGetter(mgr.GetCache()), policy, cfg.EngineOptions(deletion.Options{
		// No NodeName: every pod of the cluster, on any node.
		// The cache may lag behind the API server: every destroy it
		// decides is confirmed with a direct read first.
		Confirmer: k8s.NewPodGetter(mgr.GetAPIReader()),
		// A new leader lists the PUs first: those of the pods deleted
		// while no replica led are in no cache.
		Inventory: dir,
		Logger:    log.WithName("podsweeper"),
		Observer:  deletion.Observers(observers...),
	}))
	if err != nil {
		return nil, nil, fmt.Errorf("creating the deletion engine: %w", err)
	}
	// The shared endpoints: a standby is alive and ready without running
	// the engine; the leader is alive while its engine runs, and ready
	// while it keeps up: a backlog is no reason to restart it.
	if err := program.Serve(mgr, engine, cfg.Flags, program.ServeOptions{Report: report, LeaderElected: true, Registry: d.registry}); err != nil {
		return nil, nil, err
	}
	if err := k8s.SetupClusterWithManager(mgr, engine, k8s.SetupOptions{Logger: log.WithName("wiring"), LeaseFence: fence}); err != nil {
		return nil, nil, err
	}
	return mgr, engine, nil
}

// run runs the controller's command line until ctx is done or the Lease is
// lost. d.log is replaced by the logger the command line asks for; main
// gives no other deps, a test may wrap the PolicyHandler.
func run(ctx context.Context, args []string, stderr io.Writer, d deps) error {
	cfg, err := parseFlags(args, os.Getenv, stderr)
	if err != nil {
		return err
	}
	// JSON lines on stderr; a line that records what became of a PU, the
	// engine's or the PU directory's, is never sampled out.
	log := cfg.NewLogger(stderr, logDestroying)
	rc, err := cfg.RESTConfig()
	if err != nil {
		return err
	}
	d.log = log
	mgr, _, err := setup(rc, cfg, d)
	if err != nil {
		return err
	}
	log.Info("starting cluster controller", "puDir", cfg.puDir, "leaderElect", cfg.leaderElect, "lease", cfg.leaseNS+"/"+cfg.leaseID,
		"sweepInterval", cfg.SweepInterval, "workers", cfg.Workers, "events", cfg.events, "dryRun", cfg.DryRun,
		"maxDestroysPerSecond", cfg.MaxDestroysPerSecond)
	// On a lost Lease, or one not renewed in time (k8s.LeaseFence), Start
	// returns an error: the process must exit, which main does.
	return mgr.Start(ctx)
}

func main() {
	program.Exit("cluster-controller", run(ctrl.SetupSignalHandler(), os.Args[1:], os.Stderr, deps{}))
}
