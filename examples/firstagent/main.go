// docs:begin first-agent-main

package main

import (
	"context"
	"errors"
	"flag"
	"io"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/program"
)

func main() { program.Main("first-agent", run) }

// config is the agent's command line: the flags every podsweeper program
// has, and --node and --cri-endpoint.
type config struct {
	program.Flags
	node program.NodeFlags
}

// run runs the agent in a cluster as the shipped node agent runs: the pod
// cache of its node, whose events track each pod's PU (the UID as PUID) and
// trigger its checks, its Firewall as the engine's PolicyHandler, every
// destroy confirmed by a read of the API server, metrics, probes, the dry
// run and the destroy rate of the shared flags.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) (err error) {
	cfg := config{Flags: program.Defaults()}
	fs := flag.NewFlagSet("first-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.node.Bind(fs, getenv, "each pod's sandbox")
	if err := cfg.Parse(fs, args); err != nil {
		return err
	}
	if err := cfg.node.Validate(); err != nil {
		return err
	}
	log := cfg.NewLogger(stderr)
	runtime, _, err := cfg.node.Runtime(log.WithName("cri"))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, runtime.Close()) }()
	return program.Run(ctx, cfg.Flags, program.Options{
		Name:    "first agent",
		Logger:  log,
		Policy:  NewFirewall(),
		Engine:  deletion.Options{NodeName: cfg.node.Node},
		Runtime: runtime,
	})
}

// docs:end first-agent-main
