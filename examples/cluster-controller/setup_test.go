package main

import (
	"context"
	"io"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
	"github.com/podsweeper/podsweeper/program"
)

// deps are the parts of the controller a test replaces in its
// program.Options.
type deps struct {
	// wrapPolicy, when set, wraps the PolicyHandler (the PU directory).
	wrapPolicy func(ports.PolicyHandler) ports.PolicyHandler
	// registry receives the podsweeper metrics; nil: controller-runtime's.
	registry prometheus.Registerer
	log      logr.Logger
	// leaseConfig, when set, is the config of the Lease's client; nil:
	// the manager's.
	leaseConfig *rest.Config
}

// apply replaces the parts of o that d sets.
func (d deps) apply(o *program.Options) {
	if d.wrapPolicy != nil {
		o.Policy = d.wrapPolicy(o.Policy)
	}
	o.Registry = d.registry
	if o.Lease != nil {
		o.Lease.Config = d.leaseConfig
	}
}

// setup builds the controller as run does, on rc, with d's parts: the
// manager and the engine, not started.
func setup(rc *rest.Config, cfg config, d deps) (manager.Manager, *deletion.Engine, error) {
	o, err := options(cfg, d.log)
	if err != nil {
		return nil, nil, err
	}
	o.Config = rc
	d.apply(&o)
	return program.Build(cfg.Flags, o)
}

// runWith runs the controller's command line as run does, with d's parts.
func runWith(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, d deps) error {
	cfg, err := parseFlags(args, getenv, stderr)
	if err != nil {
		return err
	}
	o, err := options(cfg, cfg.NewLogger(stderr, logDestroying))
	if err != nil {
		return err
	}
	d.apply(&o)
	return program.Run(ctx, cfg.Flags, o)
}
