package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/podsweeper/podsweeper/adapters/bolt"
	"github.com/podsweeper/podsweeper/adapters/cri"
	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// errUsage: the command line is wrong; main exits with status 2.
var errUsage = errors.New("usage")

// defaultCRIEndpoint is containerd's socket, as the kubelet's
// --container-runtime-endpoint names it.
const defaultCRIEndpoint = "unix:///run/containerd/containerd.sock"

// defaultStateFile is where the journal lives: deploy/daemonset.yaml mounts
// its directory from the host, so that it outlives the agent's container.
const defaultStateFile = "/var/lib/podsweeper/journal.db"

func main() {
	if err := run(ctrl.SetupSignalHandler(), os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "node-agent:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// run is the agent, one step after the other: the command line, the
// logger, the cluster, the journal, the container runtime, the manager, the
// engine, its wiring and its endpoints. What run opens it closes when it
// returns, in the reverse order: by then the manager has stopped the engine,
// and nothing writes to the journal or asks the runtime any more.
func run(ctx context.Context, args []string, stderr io.Writer) (err error) {
	cfg, err := parseFlags(args, os.Getenv, stderr)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	rc, err := restConfig(cfg.kubeconfig, cfg.kubeAPIQPS, cfg.kubeAPIBurst)
	if err != nil {
		return err
	}
	journal, err := bolt.Open(cfg.stateFile, bolt.Options{Logger: log.WithName("journal")})
	if err != nil {
		return fmt.Errorf("opening --state-file: %w", err)
	}
	defer closeOnReturn(&err, journal)
	extractor, criReady, err := sandboxes(cfg.criEndpoint, log.WithName("cri"))
	if err != nil {
		return err
	}
	if extractor != nil {
		defer closeOnReturn(&err, extractor)
	}
	mgr, err := newManager(rc, cfg, log)
	if err != nil {
		return err
	}
	// The engine hands the pods it requeues to the wiring on this channel.
	requeued := make(chan event.GenericEvent)
	// In a dry run, what would have been destroyed and why, for the
	// operator to read before turning destroys on.
	var report *k8s.DryRunReport
	if cfg.dryRun {
		report = k8s.NewDryRunReport(0)
	}
	engine, err := newEngine(mgr, cfg, journal, extractor, report, requeued, log)
	if err != nil {
		return err
	}
	if err := wire(mgr, engine, requeued, cfg, log); err != nil {
		return err
	}
	if err := serve(mgr, engine, report, criReady, cfg); err != nil {
		return err
	}
	log.Info("starting node agent", "node", cfg.node, "criEndpoint", cfg.criEndpoint, "sweepInterval", cfg.sweepInterval,
		"workers", cfg.workers, "stateFile", cfg.stateFile)
	return mgr.Start(ctx)
}

// closeOnReturn closes c, and adds its error to *err: deferred by run.
func closeOnReturn(err *error, c io.Closer) {
	*err = errors.Join(*err, c.Close())
}

// config is the agent's command line.
type config struct {
	kubeconfig    string
	kubeAPIQPS    float64
	kubeAPIBurst  int
	node          string
	metricsAddr   string
	metricsSecure bool
	probeAddr     string
	criEndpoint   string
	sweepInterval time.Duration
	workers       int
	stateFile     string
	allPods       bool
	// destroyTerminated is deletion.Options.DestroyTerminated.
	destroyTerminated bool
	// dryRun, maxDestroysPerSecond and destroyBurst are deletion.Options'
	// DryRun, DestroyRate and DestroyBurst.
	dryRun               bool
	maxDestroysPerSecond float64
	destroyBurst         int
	pprofAddr            string
	slimPodCache         bool
	criCacheMaxAge       time.Duration
	// destroyDeadSandboxes wires the CRI extractor as
	// deletion.Options.SandboxProber (row 12).
	destroyDeadSandboxes bool
	zap                  zap.Options
}

// parseFlags reads the command line; getenv supplies the --node default
// ($NODE_NAME, set from the downward API in deploy/daemonset.yaml).
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("node-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "", "path to a kubeconfig; empty: $KUBECONFIG, the in-cluster config, then ~/.kube/config")
	fs.Float64Var(&cfg.kubeAPIQPS, "kube-api-qps", 50,
		"requests a second to the API server, however the config is given, as the kubelet's flag of that name (and its default); negative: no client-side limit. Each destroy is confirmed with one read")
	fs.IntVar(&cfg.kubeAPIBurst, "kube-api-burst", 100, "requests allowed at once above --kube-api-qps, as the kubelet's (and its default); a node's drain of 100 pods is confirmed at once")
	fs.StringVar(&cfg.node, "node", getenv("NODE_NAME"), "the node this agent runs on (default $NODE_NAME)")
	fs.StringVar(&cfg.metricsAddr, "metrics-bind-address", ":8443",
		`address of the Prometheus /metrics endpoint and of the status page `+k8s.StatusPath+`; "0" turns them off`)
	fs.BoolVar(&cfg.metricsSecure, "metrics-secure", true,
		"serve /metrics and the status page over HTTPS, only to clients whose token the API server authenticates and "+
			"authorizes (a get on the URL); false serves plain HTTP, and then only on a loopback --metrics-bind-address")
	fs.StringVar(&cfg.probeAddr, "health-probe-bind-address", ":8081", `address of the /healthz and /readyz endpoints; "0" turns them off`)
	fs.StringVar(&cfg.criEndpoint, "cri-endpoint", defaultCRIEndpoint, `the container runtime's CRI socket, as the kubelet's --container-runtime-endpoint; "" turns sandbox restart detection off`)
	fs.DurationVar(&cfg.sweepInterval, "sweep-interval", deletion.DefaultSweepInterval, "how often every PU is re-checked against the API")
	fs.IntVar(&cfg.workers, "workers", deletion.DefaultWorkers, "how many checks may run at once")
	fs.StringVar(&cfg.stateFile, "state-file", defaultStateFile,
		"the journal of tracked PUs, read at start to destroy the PUs of pods gone while the agent was down; its directory must exist")
	fs.BoolVar(&cfg.allPods, "all-pods", false,
		"track host-network and mirror (static) pods too; by default they are skipped, for a network-policy agent creates no PU for them")
	fs.BoolVar(&cfg.destroyTerminated, "destroy-terminated", false,
		"destroy the PU of a pod that has finished (phase Succeeded or Failed) with reason PodTerminated, "+
			"instead of keeping it as long as the pod object exists")
	fs.BoolVar(&cfg.dryRun, "dry-run", false,
		"decide every destroy as usual, the confirming read included, but destroy nothing: report each PU that would go, and why, "+
			"in the log, in podsweeper_would_destroy_total and on "+k8s.DryRunPath+"; the first step of a rollout")
	fs.Float64Var(&cfg.maxDestroysPerSecond, "max-destroys-per-second", 0,
		"at most this many PU destroys start a second, whatever goes wrong upstream; the rest wait for their turn, none is lost; 0: no limit")
	fs.IntVar(&cfg.destroyBurst, "destroy-burst", 1, "destroys that may start at once under --max-destroys-per-second")
	fs.StringVar(&cfg.pprofAddr, "pprof-bind-address", "127.0.0.1:8082", `address of Go's /debug/pprof endpoints, loopback by default; "0" turns them off`)
	fs.DurationVar(&cfg.criCacheMaxAge, "cri-cache-max-age", cri.DefaultCacheMaxAge,
		"how old the list of the runtime's ready sandboxes that the periodic checks read may be; a check a pod event triggered, "+
			"and any answer that would record a sandbox or destroy a PU, asks the runtime itself. 0: ask the runtime at every check")
	fs.BoolVar(&cfg.destroyDeadSandboxes, "destroy-dead-sandboxes", false,
		"destroy a PU as soon as the runtime lists its sandbox not ready (stopped), "+
			"with reason SandboxDead, even while the pod waits for a new sandbox: for a policy engine whose PU is one sandbox's. "+
			"The pod is requeued and its PU tracked again, as after a sandbox restart. false keeps the PU until the pod is gone or "+
			"its new sandbox is ready; needs --cri-endpoint")
	fs.BoolVar(&cfg.slimPodCache, "slim-pod-cache", true,
		"keep only what podsweeper reads of each pod in the cache, read without deep copies (k8s.SlimPodCacheOptions); false keeps whole pods, for code of your own that reads them from this cache")
	cfg.zap.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return cfg, fmt.Errorf("%w: %w", errUsage, err)
	}
	return cfg, check(cfg, fs.Args())
}

// check rejects a command line the agent cannot run with, and arguments
// besides the flags.
func check(cfg config, args []string) error {
	switch {
	case len(args) > 0:
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, args)
	case cfg.node == "":
		return fmt.Errorf("%w: --node is required (or set NODE_NAME)", errUsage)
	case cfg.kubeAPIQPS == 0:
		return fmt.Errorf("%w: --kube-api-qps 0 would mean client-go's 5 a second: give a rate, or a negative value for no client-side limit", errUsage)
	case cfg.kubeAPIQPS > 0 && cfg.kubeAPIBurst <= 0:
		return fmt.Errorf("%w: --kube-api-burst must be positive with a positive --kube-api-qps, got %d", errUsage, cfg.kubeAPIBurst)
	case cfg.sweepInterval <= 0:
		return fmt.Errorf("%w: --sweep-interval must be positive, got %v", errUsage, cfg.sweepInterval)
	case cfg.maxDestroysPerSecond < 0 || cfg.destroyBurst < 1:
		return fmt.Errorf("%w: --max-destroys-per-second must not be negative (got %v) and --destroy-burst must be at least 1 (got %d)",
			errUsage, cfg.maxDestroysPerSecond, cfg.destroyBurst)
	case cfg.workers <= 0:
		return fmt.Errorf("%w: --workers must be positive, got %d", errUsage, cfg.workers)
	case cfg.criCacheMaxAge < 0:
		return fmt.Errorf("%w: --cri-cache-max-age must not be negative, got %v", errUsage, cfg.criCacheMaxAge)
	case cfg.stateFile == "":
		return fmt.Errorf("%w: --state-file is required", errUsage)
	case cfg.destroyDeadSandboxes && cfg.criEndpoint == "":
		return fmt.Errorf("%w: --destroy-dead-sandboxes needs the runtime: give --cri-endpoint", errUsage)
	case !cfg.metricsSecure && cfg.metricsAddr != "0" && !loopback(cfg.metricsAddr):
		return fmt.Errorf("%w: --metrics-secure=false serves anyone who reaches --metrics-bind-address: bind it to 127.0.0.1, not %q",
			errUsage, cfg.metricsAddr)
	}
	if cfg.criEndpoint != "" {
		if _, err := cri.SocketPath(cfg.criEndpoint); err != nil {
			return fmt.Errorf("%w: --cri-endpoint: %w", errUsage, err)
		}
	}
	return nil
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

// newLogger is the agent's logger: JSON lines on stderr, as the --zap-*
// flags say. controller-runtime logs through it, and so does klog, which
// client-go logs through (a watch that failed, say): every line of the
// agent's log is a JSON line. Its sampling (of the lines of one message,
// 100 a second, then one in 100) never drops a line that records what
// became of a PU, the engine's or the agent's own: an operator who greps
// the log for a PU finds it.
func newLogger(cfg config, stderr io.Writer) logr.Logger {
	log := k8s.NewLogger(append(k8s.EngineRecordMessages(), logDestroying), zap.UseFlagOptions(&cfg.zap), zap.WriteTo(stderr))
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	return log
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

// dryRunObserver is report as an Observer, nil when there is none (a nil
// *DryRunReport in the interface would not read as "no Observer").
func dryRunObserver(report *k8s.DryRunReport) deletion.Observer {
	if report == nil {
		return nil
	}
	return report
}

// sandboxes returns the agent's SandboxExtractor for --cri-endpoint, and the
// readiness check that reports on it (nil when there is nothing to report).
// Without the runtime's socket the agent runs without an extractor: it says
// so once in its log, and readiness fails with the reason, because the
// engine then never sees a sandbox restart. Asking a runtime that is not
// there would only fail every check and fill the log. With the socket,
// readiness fails while the runtime does not answer.
func sandboxes(endpoint string, log logr.Logger) (*cri.SandboxExtractor, healthz.Checker, error) {
	if endpoint == "" {
		log.Info("no --cri-endpoint: sandbox restarts are not detected")
		return nil, nil, nil
	}
	path, err := cri.SocketPath(endpoint)
	if err != nil {
		return nil, nil, err
	}
	if _, err := os.Stat(path); err != nil {
		log.Error(err, "no container runtime socket: running without it, sandbox restarts are not detected", "criEndpoint", endpoint)
		notDetected := fmt.Errorf("no container runtime socket at %s (%w): sandbox restarts are not detected", path, err)
		return nil, func(*http.Request) error { return notDetected }, nil
	}
	x, err := cri.New(endpoint, cri.Options{})
	if err != nil {
		return nil, nil, err
	}
	return x, func(req *http.Request) error { return x.Ping(req.Context()) }, nil
}

// newManager builds the manager, whose pod cache holds the pods bound to
// --node only (newEngine gives the engine the same node), slim unless
// --slim-pod-cache=false: only what podsweeper reads of them, read without
// deep copies. An agent whose own code reads labels or specs from this
// manager's cache would see slim pods: give podsweeper a cache of its own
// instead (k8s.SetupOptions.Cache).
func newManager(rc *rest.Config, cfg config, log logr.Logger) (manager.Manager, error) {
	cacheOpts, err := k8s.NodeCacheOptions(cfg.node, cache.Options{})
	if err != nil {
		return nil, err
	}
	if cfg.slimPodCache {
		cacheOpts = k8s.SlimPodCacheOptions(cacheOpts)
	}
	mgr, err := ctrl.NewManager(rc, ctrl.Options{
		Cache:                  cacheOpts,
		Metrics:                metricsOptions(cfg),
		HealthProbeBindAddress: cfg.probeAddr,
		PprofBindAddress:       cfg.pprofAddr,
		Logger:                 log,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	return mgr, nil
}

// metricsOptions serves /metrics, and the status page added beside it, over
// HTTPS behind controller-runtime's authentication and authorization filter
// (a TokenReview and a SubjectAccessReview per new client, cached): only a
// client allowed to get the URL reads them. The certificate is
// controller-runtime's self-signed one unless one is mounted. With
// --metrics-secure=false, plain HTTP on a loopback address.
func metricsOptions(cfg config) metricsserver.Options {
	o := metricsserver.Options{BindAddress: cfg.metricsAddr}
	if cfg.metricsSecure {
		o.SecureServing = true
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return o
}

// newEngine builds the engine for --node. Its checks read the manager's
// pod cache, and every destroy the cache decides is confirmed with a direct
// read of the API server first (the cache may lag behind it or miss a
// pod). It asks extractor (nil: no runtime) for the pods' sandboxes,
// requeues on requeued the pods whose sandbox was replaced, and tells the
// journal, then the metrics, about what it tracks and destroys.
func newEngine(mgr manager.Manager, cfg config, journal *bolt.Journal, extractor *cri.SandboxExtractor,
	report *k8s.DryRunReport, requeued chan<- event.GenericEvent, log logr.Logger) (*deletion.Engine, error) {
	metrics, err := k8s.NewMetrics(nil) // podsweeper_* on the manager's /metrics
	if err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	// A Kubernetes Event for each destroy: on the pod, or on this node once the pod is gone.
	events, err := k8s.NewEvents(mgr.GetEventRecorder("podsweeper"), k8s.EventsOptions{NodeName: cfg.node})
	if err != nil {
		return nil, fmt.Errorf("recording Events: %w", err)
	}
	opts := deletion.Options{
		NodeName:  cfg.node,
		Requeuer:  k8s.NewChannelRequeuer(requeued),
		Confirmer: k8s.NewPodGetter(mgr.GetAPIReader()),
		// The journal lists the PUs of the previous run at start, and
		// records each PU before Track returns. It is told first, so that
		// what the metrics count is on disk already.
		Inventory:         journal,
		Observer:          deletion.Observers(journal, metrics, dryRunObserver(report), events),
		DestroyTerminated: cfg.destroyTerminated,
		DryRun:            cfg.dryRun,
		DestroyRate:       rate.Limit(cfg.maxDestroysPerSecond),
		DestroyBurst:      cfg.destroyBurst,
		SweepInterval:     cfg.sweepInterval,
		Workers:           cfg.workers,
		Logger:            log.WithName("podsweeper"),
	}
	if extractor != nil {
		// Only then: a nil *cri.SandboxExtractor in the interface would not
		// read as "no extractor".
		opts.SandboxExtractor = extractor
		if cfg.destroyDeadSandboxes {
			// The runtime itself says whether a sandbox is dead, so that
			// its PU goes while the pod waits for a new one.
			opts.SandboxProber = extractor
		}
		if cfg.criCacheMaxAge > 0 {
			// The periodic checks read one list of the runtime's sandboxes,
			// made at most --cri-cache-max-age before: one call an interval
			// instead of one per check. Checks a pod event triggered ask the
			// runtime itself, and so does any answer of that list that would
			// record a sandbox or destroy a PU.
			listed, err := cri.NewSandboxCache(extractor, cri.CacheOptions{MaxAge: cfg.criCacheMaxAge})
			if err != nil {
				return nil, err
			}
			opts.SandboxExtractor, opts.SandboxConfirmer = listed, extractor
		}
	}
	engine, err := deletion.New(k8s.NewPodGetter(mgr.GetCache()), destroyer(log.WithName("policy")), opts)
	if err != nil {
		return nil, fmt.Errorf("creating the deletion engine: %w", err)
	}
	return engine, nil
}

// logDestroying is the message of the line destroyer logs for each PU.
const logDestroying = "destroying PU"

// destroyer is the agent's PolicyHandler. A real agent tears down the PU
// here; this one logs it.
func destroyer(log logr.Logger) ports.PolicyHandler {
	return ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
		log.Info(logDestroying, "puID", ev.PUID, "pod", ev.Pod.String(), "sandboxID", ev.SandboxID, "reason", string(ev.Reason))
		return nil
	})
}

// wire runs the engine in the manager, tracks the node's pods (all of them
// with --all-pods) and tracks again the pods the engine requeues.
func wire(mgr manager.Manager, engine *deletion.Engine, requeued <-chan event.GenericEvent, cfg config, log logr.Logger) error {
	// The node comes from the engine's options; the extractor is the
	// engine's alone (the wiring leaves it to the checks).
	opts := k8s.SetupOptions{Logger: log.WithName("wiring")}
	if !cfg.allPods {
		// Host-network and mirror pods get no PU from a network-policy
		// agent: destroying one would be asked of a policy engine that
		// never created it, and retried for as long as it failed.
		opts.Filter = k8s.PodsWithOwnNetwork
	}
	if err := k8s.SetupWithManager(mgr, engine, opts); err != nil {
		return err
	}
	return mgr.Add(retracker{engine: engine, requeued: requeued, log: log.WithName("requeue")})
}

// retracker stands for the part of a real agent's main pod controller the
// engine requeues pods to: for a pod whose PU it destroyed because the
// pod's sandbox was replaced, that controller creates the PU of the new
// sandbox and Tracks it. This one logs the pod and tracks its PU again,
// without a sandbox: its first check records the new one (no pod event may
// come to do it: the kubelet may have reported the new sandbox before the
// engine saw it).
type retracker struct {
	engine   *deletion.Engine
	requeued <-chan event.GenericEvent
	log      logr.Logger
}

// Start tracks the requeued pods again until the manager stops.
func (r retracker) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-r.requeued:
			r.track(ev.Object)
		}
	}
}

// NeedLeaderElection returns false: it runs on every node, as the engine does.
func (retracker) NeedLeaderElection() bool { return false }

func (r retracker) track(pod client.Object) {
	r.log.Info("pod requeued: its sandbox changed", "pod", pod.GetNamespace()+"/"+pod.GetName(), "uid", string(pod.GetUID()))
	pu := ports.PU{PUID: string(pod.GetUID()), Pod: client.ObjectKeyFromObject(pod)}
	if err := r.engine.Track(pu); err != nil {
		r.log.Error(err, "tracking the requeued pod's PU failed", "pod", pu.Pod.String())
	}
}

// serve adds the agent's endpoints to the manager: the backlog beside the
// metrics, the status page (why each PU is kept) beside /metrics and behind
// the same filter, and the probes: live while the engine runs and its
// workers keep up, ready once the pod cache has synced (before, the wiring
// has not seen the node's pods and the engine reads an empty cache) and
// while the runtime answers.
func serve(mgr manager.Manager, engine *deletion.Engine, report *k8s.DryRunReport, criReady healthz.Checker, cfg config) error {
	if err := ctrlmetrics.Registry.Register(k8s.NewBacklogCollector(engine)); err != nil {
		return fmt.Errorf("registering the backlog metrics: %w", err)
	}
	if cfg.metricsAddr != "0" {
		if err := mgr.AddMetricsServerExtraHandler(k8s.StatusPath, k8s.NewStatusHandler(engine)); err != nil {
			return err
		}
		if report != nil {
			if err := mgr.AddMetricsServerExtraHandler(k8s.DryRunPath, report); err != nil {
				return err
			}
		}
	}
	if cfg.probeAddr == "0" {
		return nil
	}
	err := errors.Join(
		mgr.AddHealthzCheck("ping", healthz.Ping),
		// A backlog fails readiness only: restarting a busy agent would
		// start its work over and add a relist to the load.
		mgr.AddHealthzCheck("podsweeper", engine.LivenessCheck),
		mgr.AddReadyzCheck("podsweeper", engine.ReadinessCheck),
		mgr.AddReadyzCheck("pod-cache", cacheSynced(mgr.GetCache())),
	)
	if criReady != nil {
		err = errors.Join(err, mgr.AddReadyzCheck("cri", criReady))
	}
	return err
}

// syncer is the part of the manager's cache cacheSynced needs.
type syncer interface {
	WaitForCacheSync(ctx context.Context) bool
}

// cacheSyncWait bounds how long a readiness probe waits for the cache to
// sync, below the kubelet's default probe timeout of 1s.
const cacheSyncWait = 500 * time.Millisecond

// cacheSynced is a readiness check that passes once c has synced (the pod
// informer included). It waits for the sync no longer than the probe's
// request, and at most cacheSyncWait, so that a probe never hangs.
func cacheSynced(c syncer) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), cacheSyncWait)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("the pod cache has not synced yet")
		}
		return nil
	}
}
