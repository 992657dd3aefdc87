package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// errUsage: the command line is wrong; main exits with status 2.
var errUsage = errors.New("usage")

// Defaults of the command line.
const (
	defaultLeaderElectionID = "podsweeper-cluster-controller"
	defaultSweepInterval    = time.Minute
	defaultWorkers          = 16
)

// config is the controller's command line.
type config struct {
	kubeconfig    string
	kubeAPIQPS    float64
	kubeAPIBurst  int
	puDir         string
	leaderElect   bool
	leaseNS       string
	leaseID       string
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
	metricsAddr   string
	probeAddr     string
	pprofAddr     string
	sweepInterval time.Duration
	workers       int
	slimPodCache  bool
	events        bool
	zap           zap.Options
}

// parseFlags reads the command line; getenv supplies the default of
// --leader-election-namespace ($POD_NAMESPACE, set from the downward API in
// deploy/deployment.yaml).
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("cluster-controller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "", "path to a kubeconfig; empty: $KUBECONFIG, the in-cluster config, then ~/.kube/config")
	fs.Float64Var(&cfg.kubeAPIQPS, "kube-api-qps", -1,
		"requests a second to the API server, however the config is given; negative: no client-side limit, relying on the API server's priority and fairness, as controller-runtime does (each destroy is confirmed with one read: a limit of 5 a second would make a deletion of 1,000 pods take 200 s)")
	fs.IntVar(&cfg.kubeAPIBurst, "kube-api-burst", 100, "requests allowed at once above --kube-api-qps; used only when it is positive")
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
	fs.StringVar(&cfg.metricsAddr, "metrics-bind-address", "0",
		`address of the Prometheus /metrics endpoint, plain HTTP on a loopback address only; "0" turns it off (examples/node-agent shows metrics behind authentication)`)
	fs.StringVar(&cfg.probeAddr, "health-probe-bind-address", ":8081", `address of the /healthz and /readyz endpoints; "0" turns them off`)
	fs.StringVar(&cfg.pprofAddr, "pprof-bind-address", "127.0.0.1:8082", `address of Go's /debug/pprof endpoints, loopback by default; "0" turns them off`)
	fs.DurationVar(&cfg.sweepInterval, "sweep-interval", defaultSweepInterval, "how often every PU is re-checked against the API")
	fs.IntVar(&cfg.workers, "workers", defaultWorkers, "how many checks may run at once")
	fs.BoolVar(&cfg.slimPodCache, "slim-pod-cache", true,
		"keep only what podsweeper reads of each pod in the cache, read without deep copies (k8s.SlimPodCacheOptions); false keeps whole pods (about 20 times the heap)")
	fs.BoolVar(&cfg.events, "events", true,
		"record a Kubernetes Event (events.k8s.io) for each destroy and each abandoned PU, in the namespace of the PU's pod, regarding the pod (k8s.Events): one POST per destroy; false records none")
	cfg.zap.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return cfg, fmt.Errorf("%w: %w", errUsage, err)
	}
	switch {
	case fs.NArg() > 0:
		return cfg, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	case cfg.puDir == "":
		return cfg, fmt.Errorf("%w: --pu-dir is required", errUsage)
	case cfg.leaseID == "":
		return cfg, fmt.Errorf("%w: --leader-election-id must not be empty", errUsage)
	case cfg.leaderElect && leaseDurationsErr(cfg) != nil:
		// The leader stops destroying a renew deadline and a retry period
		// after its last renewal (k8s.LeaseFence); the other replica may
		// take the Lease a lease duration after it, dated to the second.
		return cfg, fmt.Errorf("%w: --leader-election-lease-duration, --leader-election-renew-deadline, --leader-election-retry-period: %w",
			errUsage, leaseDurationsErr(cfg))
	case cfg.kubeAPIQPS == 0:
		return cfg, fmt.Errorf("%w: --kube-api-qps 0 would mean client-go's 5 a second: give a rate, or a negative value for no client-side limit", errUsage)
	case cfg.kubeAPIQPS > 0 && cfg.kubeAPIBurst <= 0:
		return cfg, fmt.Errorf("%w: --kube-api-burst must be positive with a positive --kube-api-qps, got %d", errUsage, cfg.kubeAPIBurst)
	case cfg.sweepInterval <= 0:
		return cfg, fmt.Errorf("%w: --sweep-interval must be positive, got %v", errUsage, cfg.sweepInterval)
	case cfg.workers <= 0:
		return cfg, fmt.Errorf("%w: --workers must be positive, got %d", errUsage, cfg.workers)
	case cfg.metricsAddr != "0" && !loopback(cfg.metricsAddr):
		return cfg, fmt.Errorf("%w: --metrics-bind-address serves plain HTTP to anyone who reaches it: bind it to 127.0.0.1, not %q",
			errUsage, cfg.metricsAddr)
	}
	return cfg, nil
}

// leaseDurationsErr is k8s.CheckLeaseDurations of the command line's lease times.
func leaseDurationsErr(cfg config) error {
	return k8s.CheckLeaseDurations(cfg.leaseDuration, cfg.renewDeadline, cfg.retryPeriod)
}

// loopback reports whether addr (host:port) listens on a loopback address only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// restConfig loads the cluster's address and credentials, from kubeconfig
// or as controller-runtime finds them, and sets the client's rate limit to
// qps and burst either way (clientcmd leaves QPS at 0, which client-go
// reads as 5 a second; controller-runtime's GetConfig turns the limit off).
func restConfig(kubeconfig string, qps float64, burst int) (*rest.Config, error) {
	var c *rest.Config
	var err error
	if kubeconfig != "" {
		if c, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
			return nil, fmt.Errorf("loading --kubeconfig %s: %w", kubeconfig, err)
		}
	} else if c, err = ctrlconfig.GetConfig(); err != nil {
		return nil, fmt.Errorf("finding the cluster (no --kubeconfig given): %w", err)
	}
	c.QPS, c.Burst = float32(qps), burst
	return c, nil
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
	opts := ctrl.Options{
		Cache:                   cacheOpts,
		Metrics:                 metricsserver.Options{BindAddress: cfg.metricsAddr},
		HealthProbeBindAddress:  cfg.probeAddr,
		PprofBindAddress:        cfg.pprofAddr,
		LeaderElection:          cfg.leaderElect,
		LeaderElectionID:        cfg.leaseID,
		LeaderElectionNamespace: cfg.leaseNS,
		// The manager releases the Lease once the engine has returned
		// (every destroy of this replica has ended), so that a rollout
		// hands over at once instead of after --leader-election-lease-duration;
		// run returns right after, as controller-runtime requires.
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &leaseDuration,
		RenewDeadline:                 &renewDeadline,
		RetryPeriod:                   &retryPeriod,
		Logger:                        log,
	}
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
	observers := []deletion.Observer{dir, metrics}
	if cfg.events {
		events, err := k8s.NewEvents(mgr.GetEventRecorder("podsweeper"), k8s.EventsOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("recording Events: %w", err)
		}
		observers = append(observers, events)
	}
	engine, err := deletion.New(k8s.NewPodGetter(mgr.GetCache()), policy, deletion.Options{
		// No NodeName: every pod of the cluster, on any node.
		// The cache may lag behind the API server: every destroy it
		// decides is confirmed with a direct read first.
		Confirmer: k8s.NewPodGetter(mgr.GetAPIReader()),
		// A new leader lists the PUs first: those of the pods deleted
		// while no replica led are in no cache.
		Inventory:     dir,
		SweepInterval: cfg.sweepInterval,
		Workers:       cfg.workers,
		Logger:        log.WithName("podsweeper"),
		Observer:      deletion.Observers(observers...),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("creating the deletion engine: %w", err)
	}
	if cfg.probeAddr != "0" {
		// A standby is alive and ready without running the engine; the
		// leader is alive while its engine runs, and ready while it keeps
		// up: a backlog is no reason to restart it.
		if err := mgr.AddHealthzCheck("podsweeper", k8s.LeaderLivenessCheck(mgr, engine)); err != nil {
			return nil, nil, err
		}
		if err := mgr.AddReadyzCheck("podsweeper", k8s.LeaderReadinessCheck(mgr, engine)); err != nil {
			return nil, nil, err
		}
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return nil, nil, err
		}
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
	// JSON lines on stderr, as the --zap-* flags say; their sampling (of the
	// lines of one message, 100 a second, then one in 100) never drops a
	// line that records what became of a PU, the engine's or the PU
	// directory's: an operator who greps the log for a PU finds it.
	log := k8s.NewLogger(append(k8s.EngineRecordMessages(), logDestroying), zap.UseFlagOptions(&cfg.zap), zap.WriteTo(stderr))
	ctrl.SetLogger(log)
	rc, err := restConfig(cfg.kubeconfig, cfg.kubeAPIQPS, cfg.kubeAPIBurst)
	if err != nil {
		return err
	}
	d.log = log
	mgr, _, err := setup(rc, cfg, d)
	if err != nil {
		return err
	}
	log.Info("starting cluster controller", "puDir", cfg.puDir, "leaderElect", cfg.leaderElect, "lease", cfg.leaseNS+"/"+cfg.leaseID,
		"sweepInterval", cfg.sweepInterval, "workers", cfg.workers, "events", cfg.events)
	// On a lost Lease, or one not renewed in time (k8s.LeaseFence), Start
	// returns an error: the process must exit, which main does.
	return mgr.Start(ctx)
}

func main() {
	if err := run(ctrl.SetupSignalHandler(), os.Args[1:], os.Stderr, deps{}); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "cluster-controller:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
