// Command kubectl-podsweeper is a kubectl plugin (kubectl podsweeper) that
// answers, from the command line, why podsweeper's programs keep or
// destroy a pod's PU:
//
//	kubectl podsweeper explain pod NAMESPACE/NAME [--node NODE] [-o json]
//	kubectl podsweeper explain pod --uid UID [--node NODE] [-o json]
//	kubectl podsweeper explain ip ADDRESS --node NODE [-o json]
//	kubectl podsweeper status --node NODE [-o json]
//	kubectl podsweeper report [-o json]
//
// with kubectl's own flags for the cluster (--kubeconfig, --context, and
// the rest of clientcmd's); --namespace (-n) is the programs' namespace,
// by default every namespace the user may list pods of.
//
// explain pod says, for each program that holds a PU of the pod (found by
// its name, or by its UID with --uid: a PU's ID is its pod's UID), the
// PU, its state, the row of the decision table its last check took and
// why, a veto of the confirming read, its failed destroy attempts and the
// next, its last error, and what a dry run would do; and the pod's
// podsweeper Events (PUDestroyed, PUAbandoned: those of the cluster
// controller regard the pod, those of the node agent the pod, or for a
// pod that is gone the node, naming the pod; cni-gc posts none). explain ip says what holds a pod address on a node,
// as cni-gc there sees it (its page cni.AddressPath): the attachments of
// libcni's cache whose result holds it (sandbox, network, interface, and
// the pod the cache recorded, with whether it lives now and cni-gc's PU of
// it), or host-local's reservations of it (network, file, container); and
// whether and why cni-gc frees it: the row of the freeing table
// (docs/sdk/cni-freeing.md) and the verdict of its last decision on the
// attachment's sandbox, the state of each reservation as its last sweep
// left it, and its latest frees. It decides nothing itself: it says what
// cni-gc decided. An address no one holds is said so (status 0, as for
// an unknown pod). status lists every PU of the programs on a node;
// report every program's dry run's report in one table.
//
// The programs are the pods of the charts (app.kubernetes.io/name
// podsweeper-node-agent, podsweeper-cluster-controller, podsweeper-cni-gc),
// and for a node's program (node-agent, cni-gc) the pod on the pod's node.
// Each serves its status page (/debug/podsweeper) and its dry run's report
// (/debug/podsweeper/dry-run) on a loopback listener of its own
// (--status-bind-address, plain HTTP), which the plugin reaches through
// the API server as the user: a port-forward (pods/portforward, over
// WebSockets or SPDY) to the program's pod, whose streams it dials
// directly, with no local port opened. RBAC is the gate: each chart ships
// a ClusterRole and a Role named <fullname>-explain (<release>-podsweeper-<program>) that grant what it
// needs (docs/operating/explain.md); a user without them gets one line
// that says "forbidden" and which permission is missing, and status 1:
// impersonate users with --as when the user may not be who they ask to
// be. A 403 is the user's own only when the API server says so (a
// SelfSubjectAccessReview, or the refusal's status when none can be
// made); any other, a kubelet's refusal of the API server say, makes the
// program "could not be asked".
//
// What the commands print is rendered by pure functions of the programs'
// JSON answers and the Events (render.go), whose outputs for each case
// are golden files under testdata/ that docs/operating/explain.md shows.
package main
