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
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"
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

// config is the agent's command line.
type config struct {
	kubeconfig    string
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
	zap               zap.Options
}

// parseFlags reads the command line; getenv supplies the --node default
// ($NODE_NAME, set from the downward API in deploy/daemonset.yaml).
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("node-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "", "path to a kubeconfig; empty: $KUBECONFIG, the in-cluster config, then ~/.kube/config")
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
	cfg.zap.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return cfg, fmt.Errorf("%w: %w", errUsage, err)
	}
	switch {
	case fs.NArg() > 0:
		return cfg, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	case cfg.node == "":
		return cfg, fmt.Errorf("%w: --node is required (or set NODE_NAME)", errUsage)
	case cfg.sweepInterval <= 0:
		return cfg, fmt.Errorf("%w: --sweep-interval must be positive, got %v", errUsage, cfg.sweepInterval)
	case cfg.workers <= 0:
		return cfg, fmt.Errorf("%w: --workers must be positive, got %d", errUsage, cfg.workers)
	case cfg.stateFile == "":
		return cfg, fmt.Errorf("%w: --state-file is required", errUsage)
	case !cfg.metricsSecure && cfg.metricsAddr != "0" && !loopback(cfg.metricsAddr):
		return cfg, fmt.Errorf("%w: --metrics-secure=false serves anyone who reaches --metrics-bind-address: bind it to 127.0.0.1, not %q",
			errUsage, cfg.metricsAddr)
	}
	if cfg.criEndpoint != "" {
		if _, err := cri.SocketPath(cfg.criEndpoint); err != nil {
			return cfg, fmt.Errorf("%w: --cri-endpoint: %w", errUsage, err)
		}
	}
	return cfg, nil
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

// restConfig loads the cluster's address and credentials.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		c, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading --kubeconfig %s: %w", kubeconfig, err)
		}
		return c, nil
	}
	c, err := ctrlconfig.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("finding the cluster (no --kubeconfig given): %w", err)
	}
	return c, nil
}

// destroyer is the agent's PolicyHandler. A real agent tears down the PU
// here; this one logs it.
func destroyer(log logr.Logger) ports.PolicyHandler {
	return ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
		log.Info("destroying PU", "puID", ev.PUID, "pod", ev.Pod.String(), "sandboxID", ev.SandboxID, "reason", string(ev.Reason))
		return nil
	})
}

// requeuer is the agent's Requeuer: the engine calls it for a pod whose PU
// it destroyed because the pod's sandbox was replaced. A real agent's main
// pod controller creates the PU of the new sandbox here and Tracks it; this
// one logs it and tracks the pod's PU again with track, whose first check
// records the new sandbox (no pod event may come to do it: the kubelet may
// have reported the new sandbox before the engine saw it). track nil: it
// only logs.
func requeuer(log logr.Logger, track func(ports.PU) error) ports.Requeuer {
	return ports.RequeuerFunc(func(ctx context.Context, pod *corev1.Pod) error {
		if pod == nil {
			return errors.New("requeue: nil pod")
		}
		log.Info("pod requeued: its sandbox changed", "pod", pod.Namespace+"/"+pod.Name, "uid", string(pod.UID))
		if track == nil {
			return nil
		}
		return track(ports.PU{PUID: string(pod.UID), Pod: types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}})
	})
}

// deps are the parts of the agent a real agent brings (policy, requeuer)
// or a test replaces.
type deps struct {
	policy   ports.PolicyHandler
	requeuer ports.Requeuer
	// journal restores the PUs at start and records them as they are
	// tracked; nil: no journal.
	journal *bolt.Journal
	// registry receives the podsweeper metrics; nil: controller-runtime's,
	// which the manager serves on --metrics-bind-address.
	registry prometheus.Registerer
	// observer is told about the engine's events besides the metrics; nil: nobody.
	observer deletion.Observer
	log      logr.Logger
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

// closeOnStop closes the SandboxExtractor when the manager stops.
type closeOnStop struct{ x *cri.SandboxExtractor }

// Start waits for the manager to stop, then closes the connection to the runtime.
func (c closeOnStop) Start(ctx context.Context) error {
	<-ctx.Done()
	return c.x.Close()
}

// NeedLeaderElection returns false: it runs on every node, as the engine does.
func (c closeOnStop) NeedLeaderElection() bool { return false }

// setup builds the manager and the engine wired into it, with the container
// runtime of --cri-endpoint as their SandboxExtractor.
func setup(rc *rest.Config, cfg config, d deps) (mgr manager.Manager, engine *deletion.Engine, err error) {
	log := d.log
	// The cache and the engine (deletion.Options.NodeName below, which
	// SetupWithManager reads) are given the same node, --node.
	cacheOpts, err := k8s.NodeCacheOptions(cfg.node, cache.Options{})
	if err != nil {
		return nil, nil, err
	}
	extractor, criReady, err := sandboxes(cfg.criEndpoint, log.WithName("cri"))
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil && extractor != nil {
			_ = extractor.Close()
		}
	}()
	mgr, err = ctrl.NewManager(rc, ctrl.Options{
		Cache:                  cacheOpts,
		Metrics:                metricsOptions(cfg),
		HealthProbeBindAddress: cfg.probeAddr,
		Logger:                 log,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("creating the manager: %w", err)
	}
	if cfg.probeAddr != "0" {
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return nil, nil, err
		}
		// Ready once the pod cache has synced: before, the wiring has not
		// seen the node's pods and the engine reads an empty cache.
		if err := mgr.AddReadyzCheck("pod-cache", cacheSynced(mgr.GetCache())); err != nil {
			return nil, nil, err
		}
		if criReady != nil {
			if err := mgr.AddReadyzCheck("cri", criReady); err != nil {
				return nil, nil, err
			}
		}
	}
	metrics, err := k8s.NewMetrics(d.registry)
	if err != nil {
		return nil, nil, fmt.Errorf("registering metrics: %w", err)
	}
	// A nil *cri.SandboxExtractor in the interface would not read as "no
	// extractor": pass a nil interface instead.
	var sandboxExtractor ports.SandboxExtractor
	if extractor != nil {
		sandboxExtractor = extractor
		if err := mgr.Add(closeOnStop{extractor}); err != nil {
			return nil, nil, err
		}
	}
	opts := deletion.Options{
		NodeName:         cfg.node,
		SandboxExtractor: sandboxExtractor,
		Requeuer:         d.requeuer,
		// The pod cache may lag behind the API server or miss a pod: every
		// destroy it decides is confirmed with a direct read first.
		Confirmer:         k8s.NewPodGetter(mgr.GetAPIReader()),
		DestroyTerminated: cfg.destroyTerminated,
		SweepInterval:     cfg.sweepInterval,
		Workers:           cfg.workers,
		Logger:            log.WithName("podsweeper"),
		Observer:          deletion.Observers(metrics, d.observer),
	}
	if d.journal != nil {
		// The journal lists the PUs of the previous run at start, and
		// records each PU before Track returns. It goes first, so that
		// what the metrics count is on disk already.
		opts.Inventory = d.journal
		opts.Observer = deletion.Observers(d.journal, metrics, d.observer)
	}
	engine, err = deletion.New(k8s.NewPodGetter(mgr.GetCache()), d.policy, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the deletion engine: %w", err)
	}
	reg := d.registry
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	if err := reg.Register(k8s.NewBacklogCollector(engine)); err != nil {
		return nil, nil, fmt.Errorf("registering the backlog metrics: %w", err)
	}
	if cfg.metricsAddr != "0" {
		// Why each PU is kept, beside /metrics and behind the same filter.
		if err := mgr.AddMetricsServerExtraHandler(k8s.StatusPath, k8s.NewStatusHandler(engine)); err != nil {
			return nil, nil, err
		}
	}
	if cfg.probeAddr != "0" {
		// Live, and ready, while the engine runs and its workers keep up.
		if err := mgr.AddHealthzCheck("podsweeper", engine.HealthCheck); err != nil {
			return nil, nil, err
		}
		if err := mgr.AddReadyzCheck("podsweeper", engine.HealthCheck); err != nil {
			return nil, nil, err
		}
	}
	// The node comes from the engine's options; the extractor is the
	// engine's alone (the wiring leaves it to the checks).
	wiring := k8s.SetupOptions{Logger: log.WithName("wiring")}
	if !cfg.allPods {
		// Host-network and mirror pods get no PU from a network-policy
		// agent: destroying one would be asked of a policy engine that
		// never created it, and retried for as long as it failed.
		wiring.Filter = k8s.PodsWithOwnNetwork
	}
	if err := k8s.SetupWithManager(mgr, engine, wiring); err != nil {
		return nil, nil, err
	}
	return mgr, engine, nil
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	cfg, err := parseFlags(args, os.Getenv, stderr)
	if err != nil {
		return err
	}
	log := zap.New(zap.UseFlagOptions(&cfg.zap), zap.WriteTo(stderr))
	ctrl.SetLogger(log)
	rc, err := restConfig(cfg.kubeconfig)
	if err != nil {
		return err
	}
	journal, err := bolt.Open(cfg.stateFile, bolt.Options{Logger: log.WithName("journal")})
	if err != nil {
		return fmt.Errorf("opening --state-file: %w", err)
	}
	// engine is set before the manager starts it, and so before any requeue.
	var engine *deletion.Engine
	mgr, engine, err := setup(rc, cfg, deps{
		policy:   destroyer(log.WithName("policy")),
		requeuer: requeuer(log.WithName("requeue"), func(e ports.PU) error { return engine.Track(e) }),
		journal:  journal,
		log:      log,
	})
	if err != nil {
		return errors.Join(err, journal.Close())
	}
	log.Info("starting node agent", "node", cfg.node, "criEndpoint", cfg.criEndpoint, "sweepInterval", cfg.sweepInterval,
		"workers", cfg.workers, "stateFile", cfg.stateFile)
	// The manager has stopped the engine when Start returns: nothing writes
	// to the journal any more.
	return errors.Join(mgr.Start(ctx), journal.Close())
}

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
