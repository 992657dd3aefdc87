// Command cni-gc frees the pod network that CNI plugins leaked on a node:
// the addresses, veths and bridge ports of sandboxes whose pod is gone, or
// that a live pod replaced, and that the runtime never called DEL for. It
// runs on every node (a DaemonSet, deploy/), reads libcni's cache
// (/var/lib/cni/results, written by containerd and CRI-O after each ADD)
// and calls each plugin's own DEL with the cached config, as the runtime
// would have (adapters/cni).
//
//	cni-gc --node=$NODE_NAME [--kubeconfig=~/.kube/config]
//	       [--cri-endpoint=unix:///run/containerd/containerd.sock]
//	       [--cni-cache-dir=/var/lib/cni] [--cni-bin-dir=/opt/cni/bin] [--cni-conf-dir=/etc/cni/net.d]
//	       [--host-local-data-dir=/var/lib/cni/networks]
//	       [--metrics-bind-address=127.0.0.1:9812] [--metrics-secure=false] [--health-probe-bind-address=:9811]
//	       [--pprof-bind-address=0] [--status-bind-address=127.0.0.1:9813] [--kube-api-qps=50] [--kube-api-burst=100]
//	       [--sweep-interval=5s] [--resync-interval=30s] [--reservation-grace=5m0s] [--workers=4]
//	       [--dry-run] [--max-destroys-per-second=0] [--destroy-burst=1] [--zap-devel]
//
// The flags every podsweeper program has (program) are in the
// synopsis: --kube-api-qps and --kube-api-burst (the client's rate limit,
// however the cluster's config is given; a --kube-api-qps from 0 to 1 is
// refused), --dry-run (decide every destroy, destroy nothing, report each
// on /debug/podsweeper/dry-run), --max-destroys-per-second and
// --destroy-burst, the endpoints' addresses, and the log's (--zap-devel; --zap-log-level, --zap-encoder and the others of controller-runtime, which the synopsis leaves out). A
// command line the program cannot run with is refused with status 2
// before it connects to anything; so is a --cni-cache-dir or --cni-bin-dir
// that does not exist, which the collector never creates: they are the
// runtime's, mounted from the node, and a collector that made its own would
// see no attachment; and so is a --cni-conf-dir that is a file, a loop of
// links or a link to nothing (its target not mounted: it may hold a config
// that says disableGC), every read of which would fail (one that does not
// exist holds no config). --host-local-data-dir is where host-local keeps
// the reservations of a network whose config names no data directory; it,
// and every data directory a config names, must be the node's, mounted at
// the same path (the chart mounts cni.hostLocalDataDir and
// cni.hostLocalDataDirs outside cni.cacheDir): one not mounted reads empty,
// and host-local's DEL there fails (its pod's read-only filesystem).
//
// It is the node agent's wiring (examples/node-agent) with the Collector as
// its ports: the engine's Inventory (the cache, listed at start), its
// PolicyHandler (the DEL) and its Requeuer; Resync lists the cache every
// --resync-interval for attachments that appeared since, and frees
// host-local's reservations that no sandbox of the runtime and no cache
// entry accounts for, once older than --reservation-grace (a chained
// plugin's failed ADD leaves them; the package doc of adapters/cni, "host-local's
// reservations"). An attachment is
// freed only when the API server, read directly, says its pod is gone (or
// recreated under its name), or when the runtime, over the CRI, says the
// pod runs in a newer sandbox; and never while the runtime still runs a
// ready sandbox of the pod, whatever the API says (a static pod whose
// mirror pod is missing). The runtime's sandboxes also order each pod's
// (cni.Options.Runtime). A mirror pod is read as the static pod it
// stands for (k8s.StaticPodUIDs), whose UID the cache holds. The pod
// informer tracks no pod (its Filter rejects all): the PUs come from the
// cache, and pod deletions trigger a check at once. It serves Prometheus metrics and the engine's status page
// (/debug/podsweeper) on --metrics-bind-address, plain HTTP on loopback
// (the DaemonSet runs in the host's network namespace, which the plugins
// need), and /healthz and /readyz (the pod cache has synced, the engine
// keeps up, the runtime answers) on --health-probe-bind-address. Its status listener
// (--status-bind-address, loopback only) serves the status page and, for kubectl podsweeper
// explain ip, what holds an address (cni.AddressPath?ip=ADDR: the cache entries and host-local
// reservations of it, the last decision on each and its latest frees). With --dry-run it runs no DEL:
// it reports the pods whose attachments it would free on /debug/podsweeper/dry-run, and the
// host-local reservations it would free in its log, once each ("dry run: would free a host-local
// reservation", with the address and the container), counted by network in
// podsweeper_cni_reservations_would_free_total. Reservations are freed whenever attachments are:
// --dry-run stops both, a network's "disableGC" both of that network's, and --max-destroys-per-second
// and --destroy-burst bound each (the reservations under a budget of their own, of the same size: a
// reservation past it waits for its turn in its round);
// --reservation-grace (positive, at most 8760h) is how old a reservation must be. See README.md for what it frees and what it never
// touches.
package main
