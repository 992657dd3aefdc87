// Package cni frees the pod network that CNI plugins leaked: the IP
// addresses, veth pairs and bridge ports that a plugin allocated with ADD
// and never released, because the runtime never called DEL or DEL failed
// (a sandbox's cleanup that ran with an expired context, containerd#5438;
// a sandbox retried after its ADD succeeded). containerd calls no CNI GC at
// all, and the peers that collected such leaks from the outside freed live
// pods' addresses; this package decides "gone" the way the rest of
// podsweeper does, by pod UID and sandbox, confirmed against the API
// server, and frees with the plugins' own DEL.
//
// It reads what the runtime's CNI library recorded: libcni (the library
// containerd and CRI-O call) writes one file per attachment,
// <CacheDir>/results/<network>-<sandboxID>-<ifName>, after every plugin's
// ADD succeeded, with the config, the arguments (K8S_POD_NAMESPACE,
// K8S_POD_NAME, K8S_POD_UID) and the network namespace it was added with.
// One *Collector is the engine's three ports:
//
//   - Inventory (ListPUs): one PU per pod UID that holds attachments, with
//     the pod's namespace and name and its oldest sandbox in the cache;
//   - PolicyHandler (DestroyPU): DelNetworkList with each attachment's
//     cached config and runtime config, as the runtime would have run it,
//     for every attachment of a pod that is gone, or for those of one old
//     sandbox of a pod that lives on;
//   - Requeuer (Requeue): once an old sandbox is freed, list again at once;
//
// and Resync lists the cache every Options.ResyncInterval while the agent
// runs, and tracks what the engine does not hold yet.
//
// # One PU per pod, its oldest sandbox first
//
// The engine keeps one PU per pod UID, but a live pod may hold a leaked
// attachment of an earlier sandbox beside its current one: a sandbox whose
// ADD succeeded but which never became ready leaves one, and the kubelet
// then creates the next. A PUID per (pod, sandbox) would break the decision
// table, which destroys a PU whose PUID is not the pod's UID (row 4). So
// the PU of a pod carries the pod's oldest sandbox in the cache, and the
// table does the rest: while that sandbox is the pod's current one (the CRI
// SandboxExtractor, adapters/cri, reports it) the PU is kept (row 9); once
// the pod runs in another sandbox it is destroyed as SandboxChanged (row
// 10), which frees that one sandbox's attachments; the engine then calls
// Requeue, Resync lists the cache at once, and the PU of the pod's next
// sandbox in the cache is tracked, and so on until the current one. A pod
// with three leaked sandboxes thus frees them oldest first, one check
// each, and keeps the current one. "Oldest" is what the runtime tells
// first: a dead sandbox (listed stopped, or not listed with its network
// namespace gone) before any other, one it may be creating (not listed,
// its namespace there) after those it tells nothing of, one it lists
// ready last, whatever the times say. When Resync lists a pod with another
// sandbox than the time before while the cache still holds that one (the
// runtime told their order meanwhile), it untracks the pod's PU and tracks
// it with the sandbox listed now. Once the pod is gone (row 1), recreated
// under its name (row 4) or bound elsewhere (row 3), every attachment of
// its UID is freed, whatever the sandbox.
//
// Resync is needed because leaks appear while the agent runs, not only
// before it starts: the Inventory is listed once, when the engine starts,
// and a pod created later, whose first sandbox leaked, would otherwise wait
// for the agent's next restart. For the same reason the PUs must come from
// the cache only: a PU tracked from the pod informer has no sandbox, and
// its first check records the pod's current sandbox (row 7), which would
// hide the older leaked one. An agent wires the informer with a Filter that
// tracks no pod, so that pod deletions still trigger checks at once
// (examples/cni-gc).
//
// The cache knows a static pod by the UID the kubelet runs it under, not
// by its mirror pod's in the API: the engine's PodGetter and Confirmer
// must read a mirror pod as the static pod (adapters/k8s.StaticPodUIDs),
// or row 4 would read every live static pod as recreated under its name
// and free its network.
//
// # What it never does
//
//   - It never DELs an attachment of a pod's current sandbox: a sandbox is
//     freed for SandboxChanged only when the engine saw the pod run in
//     another one; and DestroyPU refuses to free it even then
//     (ErrNewestSandbox) until it is known not to be one the runtime is
//     still creating (containerd lists a sandbox only after ADD, create and
//     start): the runtime (Options.Runtime) lists it stopped, or a sandbox
//     of the pod was created strictly later, or the runtime does not list it
//     and its network namespace is gone (containerd and CRI-O create it
//     before ADD). Times are the runtime's CreatedAt where it lists the
//     sandbox, the cache entries' write times otherwise, which a restored or
//     copied cache does not keep. A sandbox refused for
//     Options.NewestSandboxTimeout is given up (ErrOrderUnknown, permanent):
//     left as it is until the collector restarts or its pod is gone, not
//     retried forever.
//   - It never frees a pod of which the runtime lists a ready sandbox, or
//     may be creating one (not listed, its network namespace there, for
//     Options.NewestSandboxTimeout at most),
//     whatever the API says (ErrSandboxRunning): the kubelet runs a static
//     pod whose mirror pod is missing (admission refused it, or it was
//     deleted and not yet made again), and its network is in use. Gone
//     needs two sources: the API server's live read, and the runtime's. A
//     sandbox listed both ready and stopped is ready.
//   - It never runs a DEL in a network namespace it cannot trust: the
//     cached path is passed only when it is a bind-mounted nsfs outside
//     /proc, not a link (as containerd and CRI-O pin one under
//     /run/netns). A /proc/<pid>/ns/net path, or a link to one, names
//     whatever namespace the process of that PID is in now, an unrelated
//     live one once the PID is reused; the DEL then runs without one, and
//     the plugins release what they hold. A namespace is gone only when
//     its path is, from a directory that is there: a file there that is no
//     namespace may be one whose bind mount the collector's container does
//     not see, and a directory it does not see says nothing.
//   - It never touches a network whose cached config, or whose config in
//     Options.ConfDir, says "disableGC": true.
//   - It never calls the plugins' GC verb: the spec forbids GC concurrent
//     with the runtime's ADD and DEL, which an outside collector cannot
//     promise. It runs the DEL of attachments that are orphaned only.
//   - It never removes a cache file itself: libcni does, after a DEL whose
//     plugins all succeeded. A DEL that fails keeps the file and is retried
//     by the engine with backoff. A cached config that would run no plugin
//     (a conflist of none, a config of another network) is never "freed":
//     the entry stays, and DestroyPU answers ports.Permanent.
//   - It skips, with a log line, and never deletes, entries without
//     K8S_POD_UID, K8S_POD_NAMESPACE and K8S_POD_NAME (another runtime may
//     share the network) and entries it cannot read.
//
// # What it cannot see
//
// An ADD that failed half-way leaves no cache file: the address a chained
// plugin allocated before a later one failed (containerd#12130) is not in
// the cache, and this package cannot free it. CRI-O removes a sandbox's
// cache files when its teardown fails, so on CRI-O the cache does not keep
// every leak either. A pod deleted with a grace period of 0 is gone from
// the API while the kubelet may still tear it down: the collector's DEL
// may then run beside the runtime's, which the spec allows (DEL is
// idempotent).
//
// The collector must run where the plugins would: in the host's network
// namespace, with the host's CacheDir, PluginDirs, ConfDir and the
// directory of the pods' network namespaces (/run/netns) at the same
// paths, and the privileges the plugins need (examples/cni-gc).
package cni
