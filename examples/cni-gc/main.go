package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"golang.org/x/time/rate"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/adapters/cri"
	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/program"
)

func main() {
	program.Main("cni-gc", run)
}

// config is the collector's command line: the shared flags, the node's and
// its own.
type config struct {
	program.Flags
	node                          program.NodeFlags
	cacheDir, pluginDirs, confDir string
	hostLocalDataDir              string
	resyncInterval                time.Duration
	reservationGrace              time.Duration
}

// parseFlags reads the command line; getenv supplies the --node default
// ($NODE_NAME, from the downward API in deploy/daemonset.yaml).
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	// The shared flags' defaults, but for the metrics: plain HTTP on the
	// node's loopback (the collector runs in the host's network namespace),
	// the probes' port, beside the node agent's, and the status listener's,
	// beside the metrics' (the host's loopback is shared with its other processes).
	cfg := config{Flags: program.Defaults()}
	cfg.MetricsBindAddress, cfg.MetricsSecure, cfg.HealthProbeBindAddress = "127.0.0.1:9812", false, ":9811"
	cfg.PprofBindAddress, cfg.StatusBindAddress = program.Off, "127.0.0.1:9813"
	fs := flag.NewFlagSet("cni-gc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.node.Bind(fs, getenv, "it says which sandbox is each pod's current one (required)")
	fs.StringVar(&cfg.cacheDir, "cni-cache-dir", cni.DefaultCacheDir, "libcni's cache directory, the runtime's; it must exist")
	fs.StringVar(&cfg.pluginDirs, "cni-bin-dir", cni.DefaultPluginDir, "the CNI plugins' directories, comma-separated, as the runtime's; each must exist")
	fs.StringVar(&cfg.confDir, "cni-conf-dir", cni.DefaultConfDir, "the runtime's network configs: a network whose config says disableGC is never touched; a directory that does not exist holds none, a file, a loop of links or a link to nothing is refused")
	fs.StringVar(&cfg.hostLocalDataDir, "host-local-data-dir", cni.DefaultHostLocalDataDir,
		"host-local's data directory for a network whose config names none (host-local's own default); it must be the node's, mounted at the same path")
	fs.DurationVar(&cfg.resyncInterval, "resync-interval", cni.DefaultResyncInterval, "how often the cache is listed again for attachments that appeared")
	fs.DurationVar(&cfg.reservationGrace, "reservation-grace", cni.DefaultReservationGrace,
		"how old a host-local reservation of no sandbox and no cache entry must be before it is freed (a dry run logs it instead): "+
			"longer than any sandbox is created; positive, at most 8760h")
	if err := cfg.Parse(fs, args); err != nil {
		return cfg, err
	}
	switch {
	case cfg.node.CRIEndpoint == "":
		return cfg, fmt.Errorf("%w: --cri-endpoint is required: without the runtime, no leaked sandbox of a live pod is seen", program.ErrUsage)
	case cfg.resyncInterval < deletion.MinSweepInterval || cfg.resyncInterval > deletion.MaxDuration:
		return cfg, fmt.Errorf("%w: --resync-interval must be at least %v (a shorter one spins a core) and at most %v, got %v",
			program.ErrUsage, deletion.MinSweepInterval, deletion.MaxDuration, cfg.resyncInterval)
	case cfg.reservationGrace <= 0 || cfg.reservationGrace > deletion.MaxDuration:
		return cfg, fmt.Errorf("%w: --reservation-grace must be positive and at most %v, got %v", program.ErrUsage, deletion.MaxDuration, cfg.reservationGrace)
	case slices.Contains(strings.Split(cfg.pluginDirs, ","), ""):
		return cfg, fmt.Errorf("%w: --cni-bin-dir must name directories, comma-separated, none empty, got %q", program.ErrUsage, cfg.pluginDirs)
	}
	return cfg, cfg.node.Validate()
}

// trackNoPod is the wiring's Filter: the PUs come from libcni's cache (the
// Inventory at start, Resync after), each with its pod's oldest sandbox.
// A PU tracked from the informer would record the pod's current sandbox
// instead and hide an older, leaked one. Pod deletions still trigger a
// check at once.
func trackNoPod(*corev1.Pod) bool { return false }

// run is the collector: its command line, logger, runtime and CNI cache,
// then the assembly every program shares.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	cfg, err := parseFlags(args, getenv, stderr)
	if err != nil {
		return err
	}
	// A line that records what became of a PU or an attachment is never
	// sampled out.
	log := cfg.NewLogger(stderr, cni.LogMessageFreed, cni.LogMessageReservationFreed, cni.LogMessageReservationWouldFree,
		cni.LogMessageEntrySkipped, cni.LogMessageReservationSkipped)
	runtime, err := cri.New(cfg.node.CRIEndpoint, cri.Options{})
	if err != nil {
		return err
	}
	defer runtime.Close() // the only thing to close; the manager stops everything else
	// libcni's cache and the plugins' DEL; the runtime's sandboxes order
	// each pod's, and keep the network of a pod it still runs, whatever
	// the API says; host-local's reservations that no sandbox or cache
	// entry accounts for are freed at each resync, or, in a dry run, only
	// listed. What is done with them, by network and reason, is on
	// /metrics, registered once the command line is known to run.
	var reservations reservationMetrics
	collector, err := cni.New(cni.Options{CacheDir: cfg.cacheDir, PluginDirs: strings.Split(cfg.pluginDirs, ","), ConfDir: cfg.confDir, HostLocalDataDir: cfg.hostLocalDataDir,
		ResyncInterval: cfg.resyncInterval, ReservationGrace: cfg.reservationGrace, Runtime: runtime,
		// The engine's rate bounds the reservations' frees too: whatever goes wrong upstream, no more start a second.
		ReservationRate: rate.Limit(cfg.MaxDestroysPerSecond), ReservationBurst: cfg.DestroyBurst, DryRun: cfg.DryRun, Observer: &reservations, Logger: log.WithName("cni")})
	if errors.Is(err, cni.ErrInvalidOptions) { // a directory that is not there, or not a directory: the command line's fault
		return fmt.Errorf("%w: --cni-cache-dir, --cni-bin-dir, --cni-conf-dir or --host-local-data-dir: %w", program.ErrUsage, err)
	}
	if err != nil {
		return err
	}
	if reservations.ReservationMetrics, err = k8s.NewReservationMetrics(nil); err != nil {
		return err
	}
	return program.Run(ctx, cfg.Flags, program.Options{Name: "the CNI collector", Logger: log, Policy: collector, Runtime: runtime,
		// The collector is the engine's Inventory (the cache, listed at
		// start), its PolicyHandler (DEL) and its Requeuer (the next
		// sandbox of a pod whose older one was freed); a dead sandbox's
		// attachments go while its pod waits for a new one.
		Engine: deletion.Options{NodeName: cfg.node.Node, Inventory: collector, Requeuer: collector, SandboxProber: collector},
		// A mirror pod is read as the static pod it stands for, whose UID
		// is the one in the cache.
		Pods:   k8s.StaticPodUIDs,
		Filter: trackNoPod,
		Beside: []func(context.Context, *deletion.Engine) error{func(ctx context.Context, e *deletion.Engine) error { return collector.Resync(ctx, e) }},
		Ready:  map[string]healthz.Checker{"cri": func(req *http.Request) error { return runtime.Ping(req.Context()) }},
		// What holds an address and what became of it, for kubectl podsweeper explain ip.
		Status: map[string]http.Handler{cni.AddressPath: collector.AddressHandler()},
		Values: []any{"node", cfg.node.Node, "criEndpoint", cfg.node.CRIEndpoint, "reservationGrace", cfg.reservationGrace, "cacheDir", cfg.cacheDir, "hostLocalDataDir", cfg.hostLocalDataDir, "pluginDirs", cfg.pluginDirs, "confDir", cfg.confDir},
	})
}

// reservationMetrics is the collector's Observer of host-local's reservations: k8s.ReservationMetrics, set once
// the command line is known to run and before the collector runs, so that a refused one registers nothing.
type reservationMetrics struct{ *k8s.ReservationMetrics }
