// Command node-agent is a node agent built on podsweeper: it runs on every
// node (as a DaemonSet), tracks a PU for every pod bound to its node that
// has a network of its own (not host-network, not a mirror pod) and logs
// each destroy, where a real agent would tear down the pod's firewall rules,
// network namespace binding or identity. Every one of those lines is in the
// log, and the engine's that record a destroy, a PU given up on or a veto:
// the logger's sampling never drops them (adapters/k8s.NewLogger).
//
//	node-agent --node=$NODE_NAME [--kubeconfig=~/.kube/config]
//	           [--cri-endpoint=unix:///run/containerd/containerd.sock]
//	           [--metrics-bind-address=:8443] [--metrics-secure=true] [--health-probe-bind-address=:8081]
//	           [--pprof-bind-address=127.0.0.1:8082] [--status-bind-address=127.0.0.1:8084]
//	           [--kube-api-qps=50] [--kube-api-burst=100]
//	           [--sweep-interval=5s] [--workers=4] [--dry-run] [--max-destroys-per-second=0] [--destroy-burst=1]
//	           [--state-file=/var/lib/podsweeper/journal.db] [--all-pods] [--destroy-terminated]
//	           [--slim-pod-cache=true] [--cri-cache-max-age=5s] [--destroy-dead-sandboxes] [--zap-devel]
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
// It uses controller-runtime's manager with a pod cache holding only the
// node's pods (adapters/k8s.NodeCacheOptions), slim unless
// --slim-pod-cache=false (only what podsweeper reads of each pod), the engine wired to the pod
// informer (adapters/k8s.SetupWithManager). It skips host-network pods and
// mirror (static) pods (adapters/k8s.PodsWithOwnNetwork; --all-pods tracks
// them too): a network-policy agent creates no PU for them, so destroying
// one would fail for as long as it was retried. With --destroy-terminated
// the PU of a pod that has finished (phase Succeeded or Failed, as a Job's
// pod does) is destroyed with reason PodTerminated
// (deletion.Options.DestroyTerminated); by default it is kept as long as the
// pod object exists. It serves podsweeper's
// Prometheus metrics on the manager's /metrics and the engine's Status as
// JSON on /debug/podsweeper (adapters/k8s.NewStatusHandler): over HTTPS, to
// clients whose token the API server authenticates and authorizes
// (controller-runtime's filter; deploy/metrics-reader.yaml is the role to
// bind), or with --metrics-secure=false over plain HTTP on a loopback
// address only. It asks the container runtime on
// --cri-endpoint for each pod's sandbox (adapters/cri), so that a sandbox
// restart destroys the PU of the old sandbox and requeues the pod: its
// periodic checks read one list of the runtime's sandboxes at most
// --cri-cache-max-age old (cri.SandboxCache), a check a pod event triggered
// asks the runtime itself, and so does any answer of the list that would
// record a sandbox or destroy a PU (deletion.Options.SandboxConfirmer).
// With --destroy-dead-sandboxes it also asks the runtime whether a PU's
// sandbox is dead (deletion.Options.SandboxProber, row 12), and destroys
// the PU at once, for SandboxDead, while its pod waits for a new one. Without
// the runtime's socket it runs on, says once that sandbox restarts are not
// detected, and its /readyz check "cri" fails; with it, "cri" fails while
// the runtime does not answer. /readyz also waits for the pod cache to
// sync ("pod-cache") and for the engine to run and keep up ("podsweeper",
// its ReadinessCheck; /healthz serves its LivenessCheck, which a backlog
// does not fail). It keeps a journal of its PUs in
// --state-file (adapters/bolt), whose directory it does not create, nor
// the one a link there points into (a missing one is refused with status
// 2: a hostPath the DaemonSet does not mount would keep the journal where
// it does not survive a restart; so is
// a --state-file that names a directory, a loop of links, or anything but
// a file): at
// start, before its first check, the
// engine tracks again every PU of the previous run, with its sandbox, and destroys
// those whose pods went away or whose sandbox was replaced while the agent
// was down. Every destroy the pod cache decides is confirmed with a
// direct read of the API server first. deploy/ has the DaemonSet (which
// mounts the journal's directory from the host and the runtime's socket
// directory read-only) and the RBAC it needs: get, list and watch on pods,
// create and patch on events.k8s.io Events (a PUDestroyed Event of each
// destroy, regarding the pod, or its node when the pod is gone:
// adapters/k8s.Events), and the token and access reviews of its metrics
// filter; nothing else.
package main
