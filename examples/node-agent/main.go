package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/podsweeper/podsweeper/adapters/bolt"
	"github.com/podsweeper/podsweeper/adapters/cri"
	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
	"github.com/podsweeper/podsweeper/program"
)

func main() {
	program.Main("node-agent", run)
}

// config is the agent's command line: the shared flags, the node's, the pod cache's and its own.
type config struct {
	program.Flags
	node      program.NodeFlags
	podCache  program.PodCacheFlags
	stateFile string
	// --all-pods; deletion.Options.DestroyTerminated; the runtime as deletion.Options.SandboxProber (row 12).
	allPods, destroyTerminated, destroyDeadSandboxes bool
	criCacheMaxAge                                   time.Duration // cri.CacheOptions.MaxAge
}

// parseFlags reads the command line; getenv supplies the --node default
// ($NODE_NAME, set from the downward API in deploy/daemonset.yaml).
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	cfg := config{Flags: program.Defaults()}
	fs := flag.NewFlagSet("node-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.node.Bind(fs, getenv, `each pod's sandbox, so that a sandbox restart destroys the PU of the old one; "" turns sandbox restart detection off`)
	cfg.podCache.Bind(fs)
	fs.StringVar(&cfg.stateFile, "state-file", "/var/lib/podsweeper/journal.db", // deploy/ mounts its directory from the host
		"the journal of tracked PUs, read at start to destroy the PUs of pods gone while the agent was down; its directory must exist")
	fs.BoolVar(&cfg.allPods, "all-pods", false,
		"track host-network and mirror (static) pods too; by default they are skipped, for a network-policy agent creates no PU for them")
	fs.BoolVar(&cfg.destroyTerminated, "destroy-terminated", false,
		"destroy the PU of a pod that has finished (phase Succeeded or Failed) with reason PodTerminated, instead of keeping it as long as the pod object exists")
	fs.DurationVar(&cfg.criCacheMaxAge, "cri-cache-max-age", cri.DefaultCacheMaxAge, "how old the list of the runtime's ready sandboxes that the periodic checks "+
		"read may be; a check a pod event triggered, and any answer that would record a sandbox or destroy a PU, asks the runtime itself. 0: ask the runtime at every check")
	fs.BoolVar(&cfg.destroyDeadSandboxes, "destroy-dead-sandboxes", false, "destroy a PU as soon as the runtime lists its sandbox not ready (stopped), with reason "+
		"SandboxDead, even while the pod waits for a new sandbox: for a policy engine whose PU is one sandbox's. The pod is requeued and its PU tracked again, "+
		"as after a sandbox restart. false keeps the PU until the pod is gone or its new sandbox is ready; needs --cri-endpoint")
	if err := cfg.Parse(fs, args); err != nil {
		return cfg, err
	}
	switch {
	case cfg.criCacheMaxAge < 0 || cfg.criCacheMaxAge > deletion.MaxDuration:
		return cfg, fmt.Errorf("%w: --cri-cache-max-age must be 0 to %v, got %v", program.ErrUsage, deletion.MaxDuration, cfg.criCacheMaxAge)
	case cfg.stateFile == "":
		return cfg, fmt.Errorf("%w: --state-file is required", program.ErrUsage)
	case cfg.destroyDeadSandboxes && cfg.node.CRIEndpoint == "":
		return cfg, fmt.Errorf("%w: --destroy-dead-sandboxes needs the runtime: give --cri-endpoint", program.ErrUsage)
	}
	return cfg, cfg.node.Validate()
}

// run is the agent: its command line, logger, journal and runtime, then the
// assembly every program shares; it closes what it opened once that returns.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) (err error) {
	cfg, err := parseFlags(args, getenv, stderr)
	if err != nil {
		return err
	}
	log := cfg.NewLogger(stderr, logDestroying)
	journal, err := bolt.Open(cfg.stateFile, bolt.Options{Logger: log.WithName("journal")})
	if errors.Is(err, bolt.ErrInvalidOptions) { // its directory is missing: the command line's fault, not the journal's
		return fmt.Errorf("%w: --state-file: %w", program.ErrUsage, err)
	}
	if err != nil {
		return fmt.Errorf("opening --state-file: %w", err)
	}
	defer func() { err = errors.Join(err, journal.Close()) }()
	runtime, runtimeReady, err := cfg.node.Runtime(log.WithName("cri"))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, runtime.Close()) }()
	requeued := make(chan event.GenericEvent) // pods whose sandbox changed, from the engine to retrack
	o := program.Options{Name: "node agent", Logger: log, Policy: destroyer(log.WithName("policy")), Events: true,
		Cache: cfg.podCache.Options(),
		Engine: deletion.Options{
			NodeName: cfg.node.Node, DestroyTerminated: cfg.destroyTerminated, Requeuer: k8s.NewChannelRequeuer(requeued),
			Inventory: journal, Observer: journal, // the PUs of the previous run; each PU on disk before Track returns
		},
		Beside:  []func(context.Context, *deletion.Engine) error{retrack(requeued, log.WithName("requeue"))},
		Runtime: runtime, RuntimeListMaxAge: cfg.criCacheMaxAge, Ready: map[string]healthz.Checker{"cri": runtimeReady},
		Values: []any{"node", cfg.node.Node, "criEndpoint", cfg.node.CRIEndpoint, "stateFile", cfg.stateFile},
	}
	if !cfg.allPods {
		o.Filter = k8s.PodsWithOwnNetwork // no PU for host-network and mirror pods
	}
	if cfg.destroyDeadSandboxes && runtime != nil {
		o.Engine.SandboxProber = runtime // the runtime says a sandbox is dead while its pod waits for a new one
	}
	return program.Run(ctx, cfg.Flags, o)
}

const logDestroying = "destroying PU" // destroyer's line for each PU, never sampled out

// destroyer is the agent's PolicyHandler: a real agent tears down the PU here.
func destroyer(log logr.Logger) ports.PolicyHandler {
	return ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
		log.Info(logDestroying, "puID", ev.PUID, "pod", ev.Pod.String(), "sandboxID", ev.SandboxID, "reason", string(ev.Reason))
		return nil
	})
}

// retrack stands for a real agent's pod controller, which makes the PU of a
// requeued pod's new sandbox: it tracks the pod's PU again, and its first
// check records the new sandbox.
func retrack(requeued <-chan event.GenericEvent, log logr.Logger) func(context.Context, *deletion.Engine) error {
	return func(ctx context.Context, engine *deletion.Engine) error {
		for {
			select {
			case <-ctx.Done():
				return nil
			case ev := <-requeued:
				pu := ports.PU{PUID: string(ev.Object.GetUID()), Pod: client.ObjectKeyFromObject(ev.Object)}
				log.Info("pod requeued: its sandbox changed", "pod", pu.Pod.String(), "uid", pu.PUID)
				if err := engine.Track(pu); err != nil {
					log.Error(err, "tracking the requeued pod's PU failed", "pod", pu.Pod.String())
				}
			}
		}
	}
}
