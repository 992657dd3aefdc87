package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
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

	"github.com/podsweeper/podsweeper/adapters/bolt"
	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// errUsage: the command line is wrong; main exits with status 2.
var errUsage = errors.New("usage")

// defaultStateFile is where the journal lives: deploy/daemonset.yaml mounts
// its directory from the host, so that it outlives the agent's container.
const defaultStateFile = "/var/lib/podsweeper/journal.db"

// config is the agent's command line.
type config struct {
	kubeconfig    string
	node          string
	metricsAddr   string
	probeAddr     string
	sweepInterval time.Duration
	workers       int
	stateFile     string
	zap           zap.Options
}

// parseFlags reads the command line; getenv supplies the --node default
// ($NODE_NAME, set from the downward API in deploy/daemonset.yaml).
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("node-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "", "path to a kubeconfig; empty: $KUBECONFIG, the in-cluster config, then ~/.kube/config")
	fs.StringVar(&cfg.node, "node", getenv("NODE_NAME"), "the node this agent runs on (default $NODE_NAME)")
	fs.StringVar(&cfg.metricsAddr, "metrics-bind-address", ":8080", `address of the Prometheus /metrics endpoint; "0" turns it off`)
	fs.StringVar(&cfg.probeAddr, "health-probe-bind-address", ":8081", `address of the /healthz and /readyz endpoints; "0" turns them off`)
	fs.DurationVar(&cfg.sweepInterval, "sweep-interval", deletion.DefaultSweepInterval, "how often every PU is re-checked against the API")
	fs.IntVar(&cfg.workers, "workers", deletion.DefaultWorkers, "how many checks may run at once")
	fs.StringVar(&cfg.stateFile, "state-file", defaultStateFile,
		"the journal of tracked PUs, read at start to destroy the PUs of pods gone while the agent was down; its directory must exist")
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

// destroyer is the agent's PolicyHandler. A real agent tears down the PU
// here; this one logs it.
func destroyer(log logr.Logger) ports.PolicyHandler {
	return ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
		log.Info("destroying PU", "puID", ev.PUID, "pod", ev.Pod.String(), "sandboxID", ev.SandboxID, "reason", string(ev.Reason))
		return nil
	})
}

// setup builds the manager and the engine wired into it. journal restores
// the PUs at start and records them as they are tracked. reg receives the
// podsweeper metrics; nil means controller-runtime's registry, which the
// manager serves on --metrics-bind-address.
func setup(rc *rest.Config, cfg config, policy ports.PolicyHandler, journal *bolt.Journal, reg prometheus.Registerer, log logr.Logger) (manager.Manager, *deletion.Controller, error) {
	cacheOpts, err := k8s.NodeCacheOptions(cfg.node, cache.Options{})
	if err != nil {
		return nil, nil, err
	}
	mgr, err := ctrl.NewManager(rc, ctrl.Options{
		Cache:                  cacheOpts,
		Metrics:                metricsserver.Options{BindAddress: cfg.metricsAddr},
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
		if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
			return nil, nil, err
		}
	}
	metrics, err := k8s.NewMetrics(reg)
	if err != nil {
		return nil, nil, fmt.Errorf("registering metrics: %w", err)
	}
	engine, err := deletion.New(k8s.NewPodGetter(mgr.GetCache()), policy, deletion.Options{
		NodeName:      cfg.node,
		SweepInterval: cfg.sweepInterval,
		Workers:       cfg.workers,
		Logger:        log.WithName("podsweeper"),
		// The journal lists the PUs of the previous run at start, and
		// records each PU before Track returns. It goes first, so that
		// what the metrics count is on disk already.
		Inventory: journal,
		Observer:  deletion.Observers(journal, metrics),
		// A real agent also sets SandboxExtractor (asking the container
		// runtime over CRI) and a Requeuer to its main pod controller.
	})
	if err != nil {
		return nil, nil, fmt.Errorf("creating the deletion engine: %w", err)
	}
	if err := k8s.SetupWithManager(mgr, engine, k8s.SetupOptions{NodeName: cfg.node, Logger: log.WithName("wiring")}); err != nil {
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
	mgr, _, err := setup(rc, cfg, destroyer(log.WithName("policy")), journal, nil, log)
	if err != nil {
		return errors.Join(err, journal.Close())
	}
	log.Info("starting node agent", "node", cfg.node, "sweepInterval", cfg.sweepInterval, "workers", cfg.workers, "stateFile", cfg.stateFile)
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
