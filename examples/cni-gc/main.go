package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/adapters/cri"
	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
)

// errUsage: the command line is wrong; main exits with status 2.
var errUsage = errors.New("usage")

// config is the collector's command line.
type config struct {
	kubeconfig     string
	node           string
	metricsAddr    string
	probeAddr      string
	criEndpoint    string
	cacheDir       string
	pluginDirs     string
	confDir        string
	sweepInterval  time.Duration
	resyncInterval time.Duration
	workers        int
	dryRun         bool
	zap            zap.Options
}

// parseFlags reads the command line; getenv supplies the --node default
// ($NODE_NAME, from the downward API in deploy/daemonset.yaml).
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("cni-gc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "", "path to a kubeconfig; empty: $KUBECONFIG, the in-cluster config, then ~/.kube/config")
	fs.StringVar(&cfg.node, "node", getenv("NODE_NAME"), "the node this collector runs on (default $NODE_NAME)")
	fs.StringVar(&cfg.metricsAddr, "metrics-bind-address", "127.0.0.1:9812",
		`address of the Prometheus /metrics endpoint and of the status page `+k8s.StatusPath+`, plain HTTP: keep it on loopback; "0" turns them off`)
	fs.StringVar(&cfg.probeAddr, "health-probe-bind-address", ":9811", `address of the /healthz and /readyz endpoints; "0" turns them off`)
	fs.StringVar(&cfg.criEndpoint, "cri-endpoint", "unix:///run/containerd/containerd.sock",
		"the container runtime's CRI socket, as the kubelet's --container-runtime-endpoint: it says which sandbox is each pod's current one")
	fs.StringVar(&cfg.cacheDir, "cni-cache-dir", cni.DefaultCacheDir, "libcni's cache directory, the runtime's")
	fs.StringVar(&cfg.pluginDirs, "cni-bin-dir", cni.DefaultPluginDir, "the CNI plugins' directories, comma-separated, as the runtime's")
	fs.StringVar(&cfg.confDir, "cni-conf-dir", cni.DefaultConfDir, "the runtime's network configs: a network whose config says disableGC is never touched")
	fs.DurationVar(&cfg.sweepInterval, "sweep-interval", deletion.DefaultSweepInterval, "how often every pod holding attachments is checked against the API")
	fs.DurationVar(&cfg.resyncInterval, "resync-interval", cni.DefaultResyncInterval, "how often the cache is listed again for attachments that appeared")
	fs.IntVar(&cfg.workers, "workers", deletion.DefaultWorkers, "how many checks (and DELs) may run at once")
	fs.BoolVar(&cfg.dryRun, "dry-run", false,
		"decide every free as usual, the confirming read included, but run no DEL: report each pod whose attachments would go, and why, "+
			"in the log, in podsweeper_would_destroy_total and on "+k8s.DryRunPath+"; the first step of a rollout")
	cfg.zap.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return cfg, fmt.Errorf("%w: %w", errUsage, err)
	}
	switch {
	case fs.NArg() > 0:
		return cfg, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	case cfg.node == "":
		return cfg, fmt.Errorf("%w: --node is required (or set NODE_NAME)", errUsage)
	case cfg.criEndpoint == "":
		return cfg, fmt.Errorf("%w: --cri-endpoint is required: without the runtime, no leaked sandbox of a live pod is seen", errUsage)
	case cfg.sweepInterval <= 0 || cfg.resyncInterval <= 0:
		return cfg, fmt.Errorf("%w: --sweep-interval and --resync-interval must be positive", errUsage)
	case cfg.workers <= 0:
		return cfg, fmt.Errorf("%w: --workers must be positive, got %d", errUsage, cfg.workers)
	}
	return cfg, nil
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

// newCollector reads libcni's cache and runs the plugins' DEL; the
// runtime's sandboxes order each pod's, and keep the network of a pod it
// still runs, whatever the API says.
func newCollector(cfg config, runtime *cri.SandboxExtractor, log logr.Logger) (*cni.Collector, error) {
	return cni.New(cni.Options{
		CacheDir:       cfg.cacheDir,
		PluginDirs:     strings.Split(cfg.pluginDirs, ","),
		ConfDir:        cfg.confDir,
		ResyncInterval: cfg.resyncInterval,
		Runtime:        runtime,
		Logger:         log,
	})
}

// newManager builds a manager whose pod cache holds the node's pods only.
func newManager(rc *rest.Config, cfg config, log logr.Logger) (manager.Manager, error) {
	cacheOpts, err := k8s.NodeCacheOptions(cfg.node, cache.Options{})
	if err != nil {
		return nil, err
	}
	return ctrl.NewManager(rc, ctrl.Options{
		Cache:                  cacheOpts,
		Metrics:                metricsserver.Options{BindAddress: cfg.metricsAddr},
		HealthProbeBindAddress: cfg.probeAddr,
		Logger:                 log,
	})
}

// newEngine builds the engine around the collector: its Inventory (the
// cache, listed at start), its PolicyHandler (DEL) and its Requeuer (the
// next sandbox of a pod whose older one was freed). Every destroy is
// confirmed by a direct read of the API server, and the CRI says which
// sandbox is each pod's current one. Both getters read a mirror pod as the
// static pod it stands for, whose UID is the one in the cache. In a dry
// run, report is told what would have been freed.
func newEngine(mgr manager.Manager, cfg config, collector *cni.Collector, sandboxes *cri.SandboxExtractor,
	report *k8s.DryRunReport, log logr.Logger) (*deletion.Engine, error) {
	metrics, err := k8s.NewMetrics(nil)
	if err != nil {
		return nil, err
	}
	observer := deletion.Observers(metrics)
	if report != nil {
		observer = deletion.Observers(metrics, report)
	}
	engine, err := deletion.New(k8s.StaticPodUIDs(k8s.NewPodGetter(mgr.GetCache())), collector, deletion.Options{
		NodeName:         cfg.node,
		SandboxExtractor: sandboxes,
		SandboxProber:    collector, // a dead sandbox's attachments go while its pod waits for a new one
		Requeuer:         collector,
		Inventory:        collector,
		Confirmer:        k8s.StaticPodUIDs(k8s.NewPodGetter(mgr.GetAPIReader())),
		SweepInterval:    cfg.sweepInterval,
		Workers:          cfg.workers,
		DryRun:           cfg.dryRun,
		Observer:         observer,
		Logger:           log,
	})
	if err != nil {
		return nil, err
	}
	return engine, ctrlmetrics.Registry.Register(k8s.NewBacklogCollector(engine))
}

// trackNoPod is the wiring's Filter: the PUs come from libcni's cache (the
// Inventory at start, Resync after), each with its pod's oldest sandbox.
// A PU tracked from the informer would record the pod's current sandbox
// instead and hide an older, leaked one. Pod deletions still trigger a
// check at once.
func trackNoPod(*corev1.Pod) bool { return false }

// wire runs the engine on the manager, fed by pod events and by Resync,
// and serves the probes, the status page and the dry run's report.
func wire(mgr manager.Manager, cfg config, engine *deletion.Engine, collector *cni.Collector, sandboxes *cri.SandboxExtractor,
	report *k8s.DryRunReport, log logr.Logger) error {
	if err := k8s.SetupWithManager(mgr, engine, k8s.SetupOptions{Filter: trackNoPod, Logger: log.WithName("wiring")}); err != nil {
		return err
	}
	resync := manager.RunnableFunc(func(ctx context.Context) error { return collector.Resync(ctx, engine) })
	if err := mgr.Add(resync); err != nil {
		return err
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
	// A backlog fails readiness only: restarting a busy collector would
	// start its work over.
	return errors.Join(
		mgr.AddHealthzCheck("podsweeper", engine.LivenessCheck),
		mgr.AddReadyzCheck("podsweeper", engine.ReadinessCheck),
		mgr.AddReadyzCheck("cri", func(req *http.Request) error { return sandboxes.Ping(req.Context()) }),
	)
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	cfg, err := parseFlags(args, os.Getenv, stderr)
	if err != nil {
		return err
	}
	// JSON lines on stderr, as the --zap-* flags say; their sampling (of the
	// lines of one message, 100 a second, then one in 100) never drops a
	// line that records what became of a PU or an attachment.
	log := k8s.NewLogger(append(k8s.EngineRecordMessages(), cni.LogMessageFreed), zap.UseFlagOptions(&cfg.zap), zap.WriteTo(stderr))
	ctrl.SetLogger(log)
	rc, err := restConfig(cfg.kubeconfig)
	if err != nil {
		return err
	}
	sandboxes, err := cri.New(cfg.criEndpoint, cri.Options{})
	if err != nil {
		return err
	}
	// The only thing to close; the manager stops everything else.
	defer sandboxes.Close()
	collector, err := newCollector(cfg, sandboxes, log.WithName("cni"))
	if err != nil {
		return err
	}
	mgr, err := newManager(rc, cfg, log)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	// In a dry run, what would have been freed and why, for the operator
	// to read before turning DELs on.
	var report *k8s.DryRunReport
	if cfg.dryRun {
		report = k8s.NewDryRunReport(0)
	}
	engine, err := newEngine(mgr, cfg, collector, sandboxes, report, log.WithName("podsweeper"))
	if err != nil {
		return fmt.Errorf("creating the deletion engine: %w", err)
	}
	if err := wire(mgr, cfg, engine, collector, sandboxes, report, log); err != nil {
		return err
	}
	log.Info("starting the CNI collector", "node", cfg.node, "criEndpoint", cfg.criEndpoint, "cacheDir", cfg.cacheDir,
		"pluginDirs", cfg.pluginDirs, "confDir", cfg.confDir, "dryRun", cfg.dryRun)
	return mgr.Start(ctx)
}

func main() {
	if err := run(ctrl.SetupSignalHandler(), os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "cni-gc:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
