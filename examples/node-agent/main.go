package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/podsweeper/podsweeper/adapters/bolt"
	"github.com/podsweeper/podsweeper/adapters/cri"
	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/adapters/k8s/program"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// defaultCRIEndpoint is containerd's socket, as the kubelet's
// --container-runtime-endpoint names it.
const defaultCRIEndpoint = "unix:///run/containerd/containerd.sock"

// defaultStateFile is where the journal lives: deploy/daemonset.yaml mounts
// its directory from the host, so that it outlives the agent's container.
const defaultStateFile = "/var/lib/podsweeper/journal.db"

func main() {
	program.Exit("node-agent", run(ctrl.SetupSignalHandler(), os.Args[1:], os.Stderr))
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
	log := cfg.NewLogger(stderr, logDestroying)
	rc, err := cfg.RESTConfig()
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
	report := cfg.DryRunReport()
	engine, err := newEngine(mgr, cfg, journal, extractor, report, requeued, log)
	if err != nil {
		return err
	}
	if err := wire(mgr, engine, requeued, cfg, log); err != nil {
		return err
	}
	// The shared endpoints; ready once the pod cache has synced and while
	// the runtime answers.
	ready := map[string]healthz.Checker{"pod-cache": program.CacheSynced(mgr.GetCache())}
	if criReady != nil {
		ready["cri"] = criReady
	}
	if err := program.Serve(mgr, engine, cfg.Flags, program.ServeOptions{Report: report, Ready: ready}); err != nil {
		return err
	}
	log.Info("starting node agent", "node", cfg.node, "criEndpoint", cfg.criEndpoint, "sweepInterval", cfg.SweepInterval,
		"workers", cfg.Workers, "stateFile", cfg.stateFile, "dryRun", cfg.DryRun, "maxDestroysPerSecond", cfg.MaxDestroysPerSecond)
	return mgr.Start(ctx)
}

// closeOnReturn closes c, and adds its error to *err: deferred by run.
func closeOnReturn(err *error, c io.Closer) {
	*err = errors.Join(*err, c.Close())
}

// config is the agent's command line: the flags every program has, and
// its own.
type config struct {
	program.Flags
	node        string
	criEndpoint string
	stateFile   string
	allPods     bool
	// destroyTerminated is deletion.Options.DestroyTerminated.
	destroyTerminated bool
	slimPodCache      bool
	criCacheMaxAge    time.Duration
	// destroyDeadSandboxes wires the CRI extractor as
	// deletion.Options.SandboxProber (row 12).
	destroyDeadSandboxes bool
}

// parseFlags reads the command line; getenv supplies the --node default
// ($NODE_NAME, set from the downward API in deploy/daemonset.yaml).
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	// The shared flags' defaults: the kubelet's client rate limit, metrics
	// over HTTPS on :8443.
	cfg := config{Flags: program.Defaults()}
	fs := flag.NewFlagSet("node-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.node, "node", getenv("NODE_NAME"), "the node this agent runs on (default $NODE_NAME)")
	fs.StringVar(&cfg.criEndpoint, "cri-endpoint", defaultCRIEndpoint, `the container runtime's CRI socket, as the kubelet's --container-runtime-endpoint; "" turns sandbox restart detection off`)
	fs.StringVar(&cfg.stateFile, "state-file", defaultStateFile,
		"the journal of tracked PUs, read at start to destroy the PUs of pods gone while the agent was down; its directory must exist")
	fs.BoolVar(&cfg.allPods, "all-pods", false,
		"track host-network and mirror (static) pods too; by default they are skipped, for a network-policy agent creates no PU for them")
	fs.BoolVar(&cfg.destroyTerminated, "destroy-terminated", false,
		"destroy the PU of a pod that has finished (phase Succeeded or Failed) with reason PodTerminated, "+
			"instead of keeping it as long as the pod object exists")
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
	if err := cfg.Parse(fs, args); err != nil {
		return cfg, err
	}
	return cfg, check(cfg)
}

// check rejects the agent's own flags it cannot run with.
func check(cfg config) error {
	switch {
	case cfg.node == "":
		return fmt.Errorf("%w: --node is required (or set NODE_NAME)", program.ErrUsage)
	case cfg.criCacheMaxAge < 0:
		return fmt.Errorf("%w: --cri-cache-max-age must not be negative, got %v", program.ErrUsage, cfg.criCacheMaxAge)
	case cfg.stateFile == "":
		return fmt.Errorf("%w: --state-file is required", program.ErrUsage)
	case cfg.destroyDeadSandboxes && cfg.criEndpoint == "":
		return fmt.Errorf("%w: --destroy-dead-sandboxes needs the runtime: give --cri-endpoint", program.ErrUsage)
	}
	if cfg.criEndpoint != "" {
		if _, err := cri.SocketPath(cfg.criEndpoint); err != nil {
			return fmt.Errorf("%w: --cri-endpoint: %w", program.ErrUsage, err)
		}
	}
	return nil
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
	mgr, err := ctrl.NewManager(rc, cfg.ManagerOptions(log, cacheOpts))
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	return mgr, nil
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
	opts := cfg.EngineOptions(deletion.Options{
		NodeName:  cfg.node,
		Requeuer:  k8s.NewChannelRequeuer(requeued),
		Confirmer: k8s.NewPodGetter(mgr.GetAPIReader()),
		// The journal lists the PUs of the previous run at start, and
		// records each PU before Track returns. It is told first, so that
		// what the metrics count is on disk already.
		Inventory:         journal,
		Observer:          deletion.Observers(journal, metrics, report, events),
		DestroyTerminated: cfg.destroyTerminated,
		Logger:            log.WithName("podsweeper"),
	})
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
