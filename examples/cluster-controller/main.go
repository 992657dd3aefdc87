package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/program"
)

func main() {
	program.Main("cluster-controller", run)
}

// defaultLeaderElectionID is the Lease's name by default.
const defaultLeaderElectionID = "podsweeper-cluster-controller"

// config is the controller's command line: the shared flags, the pod
// cache's and its own.
type config struct {
	program.Flags
	podCache                                  program.PodCacheFlags
	puDir                                     string
	leaderElect, events                       bool
	leaseNS, leaseID                          string
	leaseDuration, renewDeadline, retryPeriod time.Duration
}

// parseFlags reads the command line; getenv supplies the default of
// --leader-election-namespace ($POD_NAMESPACE, set from the downward API in
// deploy/deployment.yaml).
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	cfg := config{Flags: program.Defaults()}
	// No client-side limit: the API server's priority and fairness decide,
	// as controller-runtime does (each destroy is confirmed with one read:
	// a limit of 5 a second would make a deletion of 1,000 pods take 200 s).
	cfg.KubeAPIQPS, cfg.SweepInterval, cfg.Workers = -1, time.Minute, 16
	fs := flag.NewFlagSet("cluster-controller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.podCache.Bind(fs)
	fs.StringVar(&cfg.puDir, "pu-dir", "", "the directory that stands for the external system: one file per PU, shared by every replica (required)")
	fs.BoolVar(&cfg.leaderElect, "leader-elect", true,
		"run the engine on the replica that holds the Lease only; false runs it at once, for a single replica outside the cluster")
	fs.StringVar(&cfg.leaseNS, "leader-election-namespace", getenv("POD_NAMESPACE"),
		"namespace of the Lease (default $POD_NAMESPACE; in the cluster, the pod's own namespace if empty; required outside a cluster)")
	fs.StringVar(&cfg.leaseID, "leader-election-id", defaultLeaderElectionID, "name of the Lease")
	fs.DurationVar(&cfg.leaseDuration, "leader-election-lease-duration", 15*time.Second,
		"how long a standby waits after the leader's last renewal before it takes the Lease, in whole seconds (as the Lease holds it)")
	fs.DurationVar(&cfg.renewDeadline, "leader-election-renew-deadline", 10*time.Second, "how long the leader tries to renew before it "+
		"gives up the lead and exits: its engine stops at the latest this and a retry period after the start of its last renewal; "+
		"the lease duration must exceed both by a second or more")
	fs.DurationVar(&cfg.retryPeriod, "leader-election-retry-period", 2*time.Second, "how often candidates try to take or renew the Lease")
	fs.BoolVar(&cfg.events, "events", true, "record a Kubernetes Event (events.k8s.io) for each destroy and each abandoned PU, in the namespace "+
		"of the PU's pod, regarding the pod (k8s.Events): one POST per destroy; false records none")
	if err := cfg.Parse(fs, args); err != nil {
		return cfg, err
	}
	if err := check(cfg); err != nil {
		return cfg, fmt.Errorf("%w: %w", program.ErrUsage, err)
	}
	return cfg, nil
}

// check refuses the controller's own flags it cannot run with, and a Lease
// the leader cannot hold: it stops destroying a renew deadline and a retry
// period after its last renewal (k8s.LeaseFence), the other replica may
// take the Lease a lease duration after it, dated to the second, and the
// leader's client must renew once a retry period at least.
func check(cfg config) error {
	switch {
	case cfg.puDir == "":
		return fmt.Errorf("--pu-dir is required")
	case !cfg.leaderElect:
		return nil
	case cfg.leaseID == "":
		return fmt.Errorf("--leader-election-id must not be empty")
	case len(validation.IsDNS1123Subdomain(cfg.leaseID)) > 0:
		return fmt.Errorf("--leader-election-id %q is no Lease's name: %s", cfg.leaseID, strings.Join(validation.IsDNS1123Subdomain(cfg.leaseID), "; "))
	case cfg.leaseNS != "" && len(validation.IsDNS1123Label(cfg.leaseNS)) > 0:
		return fmt.Errorf("--leader-election-namespace %q is no namespace's name: %s", cfg.leaseNS, strings.Join(validation.IsDNS1123Label(cfg.leaseNS), "; "))
	case cfg.KubeAPIQPS > 0 && cfg.KubeAPIQPS*cfg.retryPeriod.Seconds() < 1:
		return fmt.Errorf("--kube-api-qps %v cannot renew the Lease every --leader-election-retry-period (%v)", cfg.KubeAPIQPS, cfg.retryPeriod)
	}
	if err := k8s.CheckLeaseDurations(cfg.leaseDuration, cfg.renewDeadline, cfg.retryPeriod); err != nil {
		return fmt.Errorf("--leader-election-lease-duration, --leader-election-renew-deadline, --leader-election-retry-period: %w", err)
	}
	if _, err := k8s.LeaseNamespace(cfg.leaseNS); err != nil {
		return fmt.Errorf("--leader-election-namespace is required outside a cluster: give it, or set $POD_NAMESPACE: %w", err)
	}
	return nil
}

// options are the controller's parts: the PU directory is its Inventory,
// its PolicyHandler and the first to hear of each PU (it registers it);
// the engine has no node and runs, on the holder of the Lease, for every
// pod of the cluster.
func options(cfg config, log logr.Logger) (program.Options, error) {
	dir, err := newPUDir(cfg.puDir, log.WithName("pus"))
	if err != nil { // missing, or not a directory: the command line's fault, refused before connecting
		return program.Options{}, fmt.Errorf("%w: --pu-dir: %w", program.ErrUsage, err)
	}
	o := program.Options{Name: "cluster controller", Logger: log, Policy: dir, Events: cfg.events,
		// Every pod of the cluster, slim unless --slim-pod-cache=false
		// (BENCHMARKS.md has the process's heap either way).
		Cache: cfg.podCache.Options(),
		// A new leader lists the PUs first: those of the pods deleted while
		// no replica led are in no cache.
		Engine: deletion.Options{Inventory: dir, Observer: dir},
		Values: []any{"puDir", cfg.puDir, "leaderElect", cfg.leaderElect, "lease", cfg.leaseNS + "/" + cfg.leaseID, "events", cfg.events},
	}
	if cfg.leaderElect {
		o.Lease = &program.Lease{Fence: k8s.LeaseFenceOptions{Namespace: cfg.leaseNS, Name: cfg.leaseID, LeaseDuration: cfg.leaseDuration,
			RenewDeadline: cfg.renewDeadline, RetryPeriod: cfg.retryPeriod, Logger: log.WithName("lease")}}
	}
	return o, nil
}

// run runs the controller's command line until ctx is done, or until the
// Lease is lost or not renewed in time (k8s.LeaseFence): then it returns an
// error, and the process exits, as controller-runtime requires.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	cfg, err := parseFlags(args, getenv, stderr)
	if err != nil {
		return err
	}
	// A line that records what became of a PU, the engine's or the PU
	// directory's, is never sampled out.
	log := cfg.NewLogger(stderr, logDestroying)
	o, err := options(cfg, log)
	if err != nil {
		return err
	}
	return program.Run(ctx, cfg.Flags, o)
}
