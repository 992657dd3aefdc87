package main

import (
	"context"
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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/adapters/cri"
	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/adapters/k8s/program"
	"github.com/podsweeper/podsweeper/deletion"
)

// config is the collector's command line: the flags every program has,
// and its own.
type config struct {
	program.Flags
	node           string
	criEndpoint    string
	cacheDir       string
	pluginDirs     string
	confDir        string
	resyncInterval time.Duration
}

// parseFlags reads the command line; getenv supplies the --node default
// ($NODE_NAME, from the downward API in deploy/daemonset.yaml).
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	// The shared flags' defaults, but for the metrics: plain HTTP on the
	// node's loopback (the collector runs in the host's network namespace),
	// and the probes' port, beside the node agent's.
	cfg := config{Flags: program.Defaults()}
	cfg.MetricsBindAddress, cfg.MetricsSecure, cfg.HealthProbeBindAddress = "127.0.0.1:9812", false, ":9811"
	cfg.PprofBindAddress = program.Off
	fs := flag.NewFlagSet("cni-gc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.node, "node", getenv("NODE_NAME"), "the node this collector runs on (default $NODE_NAME)")
	fs.StringVar(&cfg.criEndpoint, "cri-endpoint", "unix:///run/containerd/containerd.sock",
		"the container runtime's CRI socket, as the kubelet's --container-runtime-endpoint: it says which sandbox is each pod's current one")
	fs.StringVar(&cfg.cacheDir, "cni-cache-dir", cni.DefaultCacheDir, "libcni's cache directory, the runtime's")
	fs.StringVar(&cfg.pluginDirs, "cni-bin-dir", cni.DefaultPluginDir, "the CNI plugins' directories, comma-separated, as the runtime's")
	fs.StringVar(&cfg.confDir, "cni-conf-dir", cni.DefaultConfDir, "the runtime's network configs: a network whose config says disableGC is never touched")
	fs.DurationVar(&cfg.resyncInterval, "resync-interval", cni.DefaultResyncInterval, "how often the cache is listed again for attachments that appeared")
	if err := cfg.Parse(fs, args); err != nil {
		return cfg, err
	}
	switch {
	case cfg.node == "":
		return cfg, fmt.Errorf("%w: --node is required (or set NODE_NAME)", program.ErrUsage)
	case cfg.criEndpoint == "":
		return cfg, fmt.Errorf("%w: --cri-endpoint is required: without the runtime, no leaked sandbox of a live pod is seen", program.ErrUsage)
	case cfg.resyncInterval <= 0:
		return cfg, fmt.Errorf("%w: --resync-interval must be positive, got %v", program.ErrUsage, cfg.resyncInterval)
	}
	return cfg, nil
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
	return ctrl.NewManager(rc, cfg.ManagerOptions(log, cacheOpts))
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
	engine, err := deletion.New(k8s.StaticPodUIDs(k8s.NewPodGetter(mgr.GetCache())), collector, cfg.EngineOptions(deletion.Options{
		NodeName:         cfg.node,
		SandboxExtractor: sandboxes,
		SandboxProber:    collector, // a dead sandbox's attachments go while its pod waits for a new one
		Requeuer:         collector,
		Inventory:        collector,
		Confirmer:        k8s.StaticPodUIDs(k8s.NewPodGetter(mgr.GetAPIReader())),
		Observer:         deletion.Observers(metrics, report),
		Logger:           log,
	}))
	if err != nil {
		return nil, err
	}
	return engine, nil
}

// trackNoPod is the wiring's Filter: the PUs come from libcni's cache (the
// Inventory at start, Resync after), each with its pod's oldest sandbox.
// A PU tracked from the informer would record the pod's current sandbox
// instead and hide an older, leaked one. Pod deletions still trigger a
// check at once.
func trackNoPod(*corev1.Pod) bool { return false }

// wire runs the engine on the manager, fed by pod events and by Resync,
// and adds the shared endpoints: ready while the runtime answers.
func wire(mgr manager.Manager, cfg config, engine *deletion.Engine, collector *cni.Collector, sandboxes *cri.SandboxExtractor,
	report *k8s.DryRunReport, log logr.Logger) error {
	if err := k8s.SetupWithManager(mgr, engine, k8s.SetupOptions{Filter: trackNoPod, Logger: log.WithName("wiring")}); err != nil {
		return err
	}
	resync := manager.RunnableFunc(func(ctx context.Context) error { return collector.Resync(ctx, engine) })
	if err := mgr.Add(resync); err != nil {
		return err
	}
	return program.Serve(mgr, engine, cfg.Flags, program.ServeOptions{Report: report, Ready: map[string]healthz.Checker{
		"cri": func(req *http.Request) error { return sandboxes.Ping(req.Context()) },
	}})
}

// run is the collector, one step after the other: the command line, the
// logger, the cluster, the runtime, the CNI cache, the manager, the engine,
// its wiring and its endpoints.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	cfg, err := parseFlags(args, os.Getenv, stderr)
	if err != nil {
		return err
	}
	// JSON lines on stderr; a line that records what became of a PU or an
	// attachment is never sampled out.
	log := cfg.NewLogger(stderr, cni.LogMessageFreed)
	rc, err := cfg.RESTConfig()
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
	report := cfg.DryRunReport()
	engine, err := newEngine(mgr, cfg, collector, sandboxes, report, log.WithName("podsweeper"))
	if err != nil {
		return fmt.Errorf("creating the deletion engine: %w", err)
	}
	if err := wire(mgr, cfg, engine, collector, sandboxes, report, log); err != nil {
		return err
	}
	log.Info("starting the CNI collector", "node", cfg.node, "criEndpoint", cfg.criEndpoint, "cacheDir", cfg.cacheDir,
		"pluginDirs", cfg.pluginDirs, "confDir", cfg.confDir, "dryRun", cfg.DryRun, "maxDestroysPerSecond", cfg.MaxDestroysPerSecond)
	return mgr.Start(ctx)
}

func main() {
	program.Exit("cni-gc", run(ctrl.SetupSignalHandler(), os.Args[1:], os.Stderr))
}
