package main

import (
	"context"
	"io"

	"github.com/go-logr/logr"

	"github.com/podsweeper/podsweeper/examples/node-agent/agent"
	"github.com/podsweeper/podsweeper/ports"
)

func main() {
	agent.Main(options())
}

// options is the template's: its PolicyHandler logs each PU it destroys.
// An agent of your own gives its PolicyHandler in their place.
func options() agent.Options {
	return agent.Options{Policy: destroyer, Keep: []string{logDestroying}}
}

// run is the agent with the template's PolicyHandler, as the tests drive it.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	return agent.Run(ctx, args, getenv, stderr, options())
}

const logDestroying = "destroying PU" // destroyer's line for each PU, never sampled out

// destroyer is the agent's PolicyHandler: a real agent tears down the PU here.
func destroyer(log logr.Logger) ports.PolicyHandler {
	return ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
		log.Info(logDestroying, "puID", ev.PUID, "pod", ev.Pod.String(), "sandboxID", ev.SandboxID, "reason", string(ev.Reason))
		return nil
	})
}
