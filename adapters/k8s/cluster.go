package k8s

import (
	"fmt"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/podsweeper/podsweeper/deletion"
)

// SetupClusterWithManager wires c into mgr for every pod of the cluster, for
// a central controller that holds a PU per pod outside the nodes (an
// endpoint object, a registration entry, a DNS record, a cloud lease) and
// runs as a Deployment of several replicas. It is SetupWithManager without
// a node: c must have no node (deletion.Options.NodeName empty, so that the
// decision table's node row never applies), the handler tracks every pod
// that opts.Filter accepts, bound to a node or not, and c is added to mgr
// as a Runnable that needs leader election. mgr must be built with
// manager.Options.LeaderElection set (and a LeaderElectionID and, outside
// the cluster, a LeaderElectionNamespace): the manager then runs c only on
// the replica that holds its Lease. Without leader election a manager runs
// such Runnables at once, on every replica, and each replica would destroy
// every PU; SetupClusterWithManager cannot see the manager's options to
// refuse that.
//
// The new leader knows the PUs from two sources. When it takes the lease
// the pod event handler is registered on the informer, which hands it every
// pod of its cache: the live pods' PUs are tracked. The PUs of the pods
// deleted before then, during the failover say, are in no cache: give c an
// Inventory (deletion.Options.Inventory, the external system's list of its
// PUs), which c lists before its first check, so that they are checked and
// destroyed too. Without an Inventory they are left behind.
//
// On losing the lease, controller-runtime's manager cancels the context of
// its Runnables at once (its graceful shutdown timeout set to zero) and its
// Start returns an error: the program must then exit, as controller-runtime
// expects. The manager loses the lease only after client-go has tried to
// release it, which can come after another replica may take it: give the
// manager a LeaseFence as its lock and as opts.LeaseFence, and c stops a
// renew deadline and a retry period after its last renewal instead, before
// any other replica can lead. From the moment that context is done c starts no check and no
// DestroyPU; a port call already under way (a read, or a DestroyPU) sees a
// cancelled context and may still complete, since a lease lost on a renew
// deadline is no fence, and the next leader may call DestroyPU for the same
// PU. DestroyPU must thus treat a PU that is already gone as destroyed. On
// an orderly stop (the context given to mgr.Start is cancelled, SIGTERM) the
// manager waits for c's Start to return, which waits up to
// deletion.Options.ShutdownTimeout for the checks in flight, before it
// releases the lease (with LeaderElectionReleaseOnCancel) or lets it
// expire: the next leader lists the Inventory after every destroy of the
// old one has ended.
//
// A standby replica runs the manager's cache (every pod of the cluster)
// but neither the handler nor c: it tracks nothing and costs no checks
// until it leads. Serve c's health with LeaderLivenessCheck and
// LeaderReadinessCheck rather than c's own checks: c.ReadinessCheck fails
// while c has not started.
func SetupClusterWithManager(mgr manager.Manager, c *deletion.Engine, opts SetupOptions) error {
	return setup(mgr, c, opts, true)
}

// LeaderHealthCheck is LeaderReadinessCheck.
//
// Deprecated: serve LeaderLivenessCheck on /healthz and
// LeaderReadinessCheck on /readyz.
func LeaderHealthCheck(mgr manager.Manager, c *deletion.Engine) healthz.Checker {
	return LeaderReadinessCheck(mgr, c)
}

// LeaderReadinessCheck returns the readiness check of a leader-elected
// engine: it passes while mgr has not been elected (a standby replica is
// ready without running c), and is c.ReadinessCheck once it has. On a new
// leader it fails for the short while between taking the Lease and c's
// start, while the pod handler is handed the cache's pods. Add it with
// mgr.AddReadyzCheck. With a nil mgr or c, the check always fails with an
// error wrapping ErrInvalidSetup.
func LeaderReadinessCheck(mgr manager.Manager, c *deletion.Engine) healthz.Checker {
	return leaderCheck(mgr, c, func(e *deletion.Engine) healthz.Checker { return e.ReadinessCheck })
}

// LeaderLivenessCheck returns the liveness check of a leader-elected
// engine: it passes while mgr has not been elected, and is c.LivenessCheck
// once it has, which a backlog does not fail. Add it with
// mgr.AddHealthzCheck. With a nil mgr or c, the check always fails with an
// error wrapping ErrInvalidSetup.
func LeaderLivenessCheck(mgr manager.Manager, c *deletion.Engine) healthz.Checker {
	return leaderCheck(mgr, c, func(e *deletion.Engine) healthz.Checker { return e.LivenessCheck })
}

// leaderCheck is check of c once mgr has been elected, and passes before.
func leaderCheck(mgr manager.Manager, c *deletion.Engine, check func(*deletion.Engine) healthz.Checker) healthz.Checker {
	if mgr == nil || c == nil {
		err := fmt.Errorf("%w: a leader's health check needs a manager and a deletion engine", ErrInvalidSetup)
		return func(*http.Request) error { return err }
	}
	elected, checker := mgr.Elected(), check(c)
	return func(req *http.Request) error {
		select {
		case <-elected:
			return checker(req)
		default:
			return nil
		}
	}
}
