// Command cluster-controller is a central controller built on podsweeper:
// it holds a PU for every pod of the cluster, outside the nodes, and runs
// as a Deployment of two replicas of which one, the holder of a Lease,
// destroys the PUs of the pods that are gone.
//
//	cluster-controller --pu-dir=/var/lib/podsweeper/pus [--kubeconfig=~/.kube/config]
//	                   [--leader-elect=true] [--leader-election-namespace=$POD_NAMESPACE]
//	                   [--leader-election-id=podsweeper-cluster-controller]
//	                   [--leader-election-lease-duration=15s] [--leader-election-renew-deadline=10s]
//	                   [--leader-election-retry-period=2s] [--health-probe-bind-address=:8081]
//	                   [--metrics-bind-address=:8443] [--metrics-secure=true] [--pprof-bind-address=127.0.0.1:8082]
//	                   [--status-bind-address=127.0.0.1:8084] [--kube-api-qps=-1] [--kube-api-burst=100] [--slim-pod-cache=true]
//	                   [--sweep-interval=1m] [--workers=16] [--events=true]
//	                   [--dry-run] [--max-destroys-per-second=0] [--destroy-burst=1] [--zap-devel]
//
// The flags every podsweeper program has (program) are in the
// synopsis: --kube-api-qps and --kube-api-burst (the client's rate limit,
// however the cluster's config is given; a --kube-api-qps from 0 to 1 is
// refused), --dry-run (decide every destroy, destroy nothing, report each
// on /debug/podsweeper/dry-run), --max-destroys-per-second and
// --destroy-burst, the endpoints' addresses, and the log's (--zap-devel; --zap-log-level, --zap-encoder and the others of controller-runtime, which the synopsis leaves out). A
// command line the program cannot run with is refused with status 2
// before it connects to anything.
//
// The external system is a stand-in: a directory with one file per PU,
// named by the pod's UID (pudir.go). The controller registers a PU for
// every pod it tracks (it writes the file, as a controller that creates a
// registration entry per pod does), lists them when it takes the Lease
// (the engine's Inventory) and destroys a PU by removing its file. Both
// replicas must see the same directory: deploy/ mounts a ReadWriteMany
// volume. A real controller calls its system's API in these three places.
//
// It uses controller-runtime's manager with leader election on a Lease
// (--leader-elect, on by default) and adapters/k8s.SetupClusterWithManager,
// which runs the engine, without a node, on the leader only; the standby
// keeps its pod cache warm and does nothing else. On taking the Lease the
// engine tracks every pod of the cache and lists the directory before its
// first check, so that the PUs of the pods deleted during a failover are
// destroyed too. The Lease's lock is an adapters/k8s.LeaseFence: the
// engine stops a renew deadline and a retry period after the start of the
// last renewal that succeeded, whatever the leader election's client is
// still waiting for, so that it has stopped (no destroy starts after that;
// one under way may finish) before the other replica can take the Lease;
// the command line refuses durations that would not leave it time
// (--leader-election-lease-duration at least the renew deadline, the retry
// period and a second; a renew deadline under a second, which a renewal's
// read and write of the Lease may not meet, or a retry period under
// 100ms) and a lease duration that is not whole seconds (a
// Lease holds whole seconds: 1500ms would be written as 1s), and, outside
// a cluster, a Lease without --leader-election-namespace ($POD_NAMESPACE
// unset), for which there is no pod's namespace to take. On losing the Lease, or on that fence, run returns
// an error: the process exits, as controller-runtime requires. On SIGTERM the
// engine ends its destroys under way (up to 2 s), then the manager releases
// the Lease, so that the other replica takes over at once.
//
// /healthz and /readyz pass on a standby and follow the engine on the
// leader (adapters/k8s.LeaderLivenessCheck and LeaderReadinessCheck);
// /readyz also waits for the pod cache to sync ("pod-cache"). The metrics,
// the status page (/debug/podsweeper) and the dry run's report are served
// on --metrics-bind-address (:8443 by default) over HTTPS, to clients whose
// token the API server authenticates and authorizes; --metrics-secure=false
// serves them over plain HTTP, on a loopback address only. The pod cache
// holds every pod of the cluster, slim (--slim-pod-cache): only what
// podsweeper reads, about a twentieth of the heap of whole pods. With a
// positive --kube-api-qps, the leader must be able to renew its Lease every
// --leader-election-retry-period: a slower one is refused.
//
// Each destroy, and each PU the engine gives up on, is recorded as a
// Kubernetes Event (adapters/k8s.Events) in the namespace of the PU's pod,
// regarding that pod: kubectl get events -n NS --field-selector
// reason=PUDestroyed shows them, beside the pod's own Events. --events=false
// records none. The lines of the log that record a destroy, a PU given up
// on and a veto are never sampled (adapters/k8s.NewLogger).
//
// deploy/ holds the Deployment, its ServiceAccount and RBAC (pods get, list
// and watch, and events.k8s.io Events create and patch, in every namespace;
// the Lease in its own namespace) and the volume of the directory.
package main
