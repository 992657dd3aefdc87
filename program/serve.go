package program

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
)

// ServeOptions are what Serve adds beside the shared endpoints.
type ServeOptions struct {
	// Report is the dry run's report (Flags.DryRunReport), served on
	// k8s.DryRunPath; nil: none.
	Report *k8s.DryRunReport
	// LeaderElected: the engine runs on the replica that holds the
	// manager's Lease only (k8s.SetupClusterWithManager), so that the
	// probes pass on a standby (k8s.LeaderLivenessCheck).
	LeaderElected bool
	// Ready are readiness checks of the program's own, by name (the
	// container runtime's, say).
	Ready map[string]healthz.Checker
	// Registry receives the backlog metrics; nil: controller-runtime's,
	// which the manager serves on /metrics.
	Registry prometheus.Registerer
}

// Serve adds the shared endpoints of engine to mgr, for the flags f:
//   - the backlog metrics (k8s.NewBacklogCollector) beside the engine's;
//   - with the metrics on, the status page (k8s.StatusPath: why each PU is
//     kept) and, in a dry run, the report (k8s.DryRunPath), beside
//     /metrics and behind the same filter;
//   - with the probes on, /healthz: the engine runs and its workers keep up
//     (a backlog is no reason to restart a program: it would start its work
//     over and add a relist to the load), and /readyz: the engine keeps up,
//     and opts.Ready pass.
func Serve(mgr manager.Manager, engine *deletion.Engine, f Flags, opts ServeOptions) error {
	reg := opts.Registry
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	if err := reg.Register(k8s.NewBacklogCollector(engine)); err != nil {
		return fmt.Errorf("registering the backlog metrics: %w", err)
	}
	if f.MetricsBindAddress != Off {
		if err := mgr.AddMetricsServerExtraHandler(k8s.StatusPath, k8s.NewStatusHandler(engine)); err != nil {
			return err
		}
		if opts.Report != nil {
			if err := mgr.AddMetricsServerExtraHandler(k8s.DryRunPath, opts.Report); err != nil {
				return err
			}
		}
	}
	if f.HealthProbeBindAddress == Off {
		return nil
	}
	live, ready := healthz.Checker(engine.LivenessCheck), healthz.Checker(engine.ReadinessCheck)
	if opts.LeaderElected {
		live, ready = k8s.LeaderLivenessCheck(mgr, engine), k8s.LeaderReadinessCheck(mgr, engine)
	}
	err := errors.Join(
		mgr.AddHealthzCheck("ping", healthz.Ping),
		mgr.AddHealthzCheck("podsweeper", live),
		mgr.AddReadyzCheck("podsweeper", ready),
	)
	for name, check := range opts.Ready {
		err = errors.Join(err, mgr.AddReadyzCheck(name, check))
	}
	return err
}

// CacheSynced is a readiness check that passes once c has synced (its pod
// informer included): before, the wiring has not seen the pods and the
// engine reads an empty cache. It waits for the sync no longer than the
// probe's request, and at most half a second, below the kubelet's default
// probe timeout of 1s, so that a probe never hangs.
func CacheSynced(c interface {
	WaitForCacheSync(ctx context.Context) bool
}) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), cacheSyncWait)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("the pod cache has not synced yet")
		}
		return nil
	}
}

// cacheSyncWait bounds how long CacheSynced waits.
const cacheSyncWait = 500 * time.Millisecond
