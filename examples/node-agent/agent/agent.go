package agent

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

// Config is the agent's command line: the shared flags, the node's, the
// pod cache's and its own.
type Config struct {
	program.Flags
	// Node is --node and --cri-endpoint.
	Node program.NodeFlags
	// PodCache is --slim-pod-cache.
	PodCache program.PodCacheFlags
	// StateFile is --state-file: the journal (adapters/bolt).
	StateFile string
	// AllPods is --all-pods: no k8s.PodsWithOwnNetwork filter.
	AllPods bool
	// DestroyTerminated is --destroy-terminated
	// (deletion.Options.DestroyTerminated).
	DestroyTerminated bool
	// DestroyDeadSandboxes is --destroy-dead-sandboxes: the runtime as
	// deletion.Options.SandboxProber (row 12).
	DestroyDeadSandboxes bool
	// CRICacheMaxAge is --cri-cache-max-age (cri.CacheOptions.MaxAge).
	CRICacheMaxAge time.Duration
}

// ParseFlags reads the agent's command line; getenv supplies the --node
// default ($NODE_NAME, set from the downward API in the DaemonSet). -h
// writes the usage to stderr and returns flag.ErrHelp; a bad value
// returns an error that wraps program.ErrUsage.
func ParseFlags(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	cfg := Config{Flags: program.Defaults()}
	fs := flag.NewFlagSet("node-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.Node.Bind(fs, getenv, `each pod's sandbox, so that a sandbox restart destroys the PU of the old one; "" turns sandbox restart detection off`)
	cfg.PodCache.Bind(fs)
	fs.StringVar(&cfg.StateFile, "state-file", "/var/lib/podsweeper/journal.db", // deploy/ mounts its directory from the host
		"the journal of tracked PUs, read at start to destroy the PUs of pods gone while the agent was down; its directory must exist")
	fs.BoolVar(&cfg.AllPods, "all-pods", false,
		"track host-network and mirror (static) pods too; by default they are skipped, for a network-policy agent creates no PU for them")
	fs.BoolVar(&cfg.DestroyTerminated, "destroy-terminated", false,
		"destroy the PU of a pod that has finished (phase Succeeded or Failed) with reason PodTerminated, instead of keeping it as long as the pod object exists")
	fs.DurationVar(&cfg.CRICacheMaxAge, "cri-cache-max-age", cri.DefaultCacheMaxAge, "how old the list of the runtime's ready sandboxes that the periodic checks "+
		"read may be; a check a pod event triggered, and any answer that would record a sandbox or destroy a PU, asks the runtime itself. 0: ask the runtime at every check")
	fs.BoolVar(&cfg.DestroyDeadSandboxes, "destroy-dead-sandboxes", false, "destroy a PU as soon as the runtime lists its sandbox not ready (stopped), with reason "+
		"SandboxDead, even while the pod waits for a new sandbox: for a policy engine whose PU is one sandbox's. The pod is requeued and its PU tracked again, "+
		"as after a sandbox restart. false keeps the PU until the pod is gone or its new sandbox is ready; needs --cri-endpoint")
	if err := cfg.Parse(fs, args); err != nil {
		return cfg, err
	}
	switch {
	case cfg.CRICacheMaxAge < 0 || cfg.CRICacheMaxAge > deletion.MaxDuration:
		return cfg, fmt.Errorf("%w: --cri-cache-max-age must be 0 to %v, got %v", program.ErrUsage, deletion.MaxDuration, cfg.CRICacheMaxAge)
	case cfg.StateFile == "":
		return cfg, fmt.Errorf("%w: --state-file is required", program.ErrUsage)
	case cfg.DestroyDeadSandboxes && cfg.Node.CRIEndpoint == "":
		return cfg, fmt.Errorf("%w: --destroy-dead-sandboxes needs the runtime: give --cri-endpoint", program.ErrUsage)
	}
	return cfg, cfg.Node.Validate()
}

// Options are what an agent built on this one brings: its PolicyHandler.
type Options struct {
	// Policy returns the agent's PolicyHandler, given the agent's logger
	// (named "policy"). Required.
	Policy func(log logr.Logger) ports.PolicyHandler
	// Keep are the messages of the PolicyHandler's log lines that record
	// what became of a PU: the log's sampling never drops them
	// (program.Flags.NewLogger).
	Keep []string
}

// Main runs the agent with o until SIGTERM or SIGINT, with the process's
// arguments, environment and standard error, then exits as program.Exit
// says: a main package's whole body.
func Main(o Options) {
	program.Main("node-agent", func(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
		return Run(ctx, args, getenv, stderr, o)
	})
}

// Run is the agent: its command line (ParseFlags), logger, journal and
// runtime, then the assembly every program shares (program.Run) with
// o.Policy as its PolicyHandler; it closes what it opened once that
// returns.
func Run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, o Options) (err error) {
	if o.Policy == nil {
		return errors.New("agent: Options.Policy is nil: give the agent its PolicyHandler")
	}
	cfg, err := ParseFlags(args, getenv, stderr)
	if err != nil {
		return err
	}
	log := cfg.NewLogger(stderr, o.Keep...)
	policy := o.Policy(log.WithName("policy"))
	if policy == nil {
		return errors.New("agent: Options.Policy returned nil: give the agent its PolicyHandler")
	}
	journal, err := bolt.Open(cfg.StateFile, bolt.Options{Logger: log.WithName("journal")})
	if errors.Is(err, bolt.ErrInvalidOptions) { // its directory is missing, or it is one: the command line's fault, not the journal's
		return fmt.Errorf("%w: --state-file: %w", program.ErrUsage, err)
	}
	if err != nil {
		return fmt.Errorf("opening --state-file: %w", err)
	}
	defer func() { err = errors.Join(err, journal.Close()) }()
	runtime, runtimeReady, err := cfg.Node.Runtime(log.WithName("cri"))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, runtime.Close()) }()
	requeued := make(chan event.GenericEvent) // pods whose sandbox changed, from the engine to retrack
	po := program.Options{Name: "node agent", Logger: log, Policy: policy, Events: true,
		Cache: cfg.PodCache.Options(),
		Engine: deletion.Options{
			NodeName: cfg.Node.Node, DestroyTerminated: cfg.DestroyTerminated, Requeuer: k8s.NewChannelRequeuer(requeued),
			Inventory: journal, Observer: journal, // the PUs of the previous run; each PU on disk before Track returns
		},
		Beside:  []func(context.Context, *deletion.Engine) error{retrack(requeued, log.WithName("requeue"))},
		Runtime: runtime, RuntimeListMaxAge: cfg.CRICacheMaxAge, Ready: map[string]healthz.Checker{"cri": runtimeReady},
		Values: []any{"node", cfg.Node.Node, "criEndpoint", cfg.Node.CRIEndpoint, "stateFile", cfg.StateFile},
	}
	if !cfg.AllPods {
		po.Filter = k8s.PodsWithOwnNetwork // no PU for host-network and mirror pods
	}
	if cfg.DestroyDeadSandboxes && runtime != nil {
		po.Engine.SandboxProber = runtime // the runtime says a sandbox is dead while its pod waits for a new one
	}
	return program.Run(ctx, cfg.Flags, po)
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
