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
// runs, tracks what the engine does not hold yet, and frees host-local's
// reservations that no cache entry accounts for ("host-local's
// reservations").
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
// each, and keeps the current one; one whose DEL fails (its plugin gone
// from the node, say) is passed over for the pod's other sandboxes that
// may go (all but its ready one while the pod runs in one; its dead ones
// while it runs in none), and tried again once they are freed, so that it
// holds none of them; it comes before those that may not go (a sandbox
// of a pod that runs in none, being created for all the collector knows),
// so that it is tried again. "Oldest" is in the order "When a
// sandbox may be freed" gives, whatever the times say. When Resync lists a
// pod with another sandbox than the time before while the cache still
// holds that one (the runtime told their order meanwhile), it untracks the
// pod's PU and tracks it with the sandbox listed now. Once the pod is gone
// (row 1), recreated under its name (row 4) or bound elsewhere (row 3),
// every attachment of its UID is freed, whatever the sandbox, as that
// section says.
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
// # When a sandbox may be freed
//
// Gone needs two sources. The engine destroys a PU on the API server's
// answer (the pod gone, recreated under its name, bound elsewhere,
// finished) or on the runtime's current sandbox of a live pod (its sandbox
// changed, or dead with no other yet); the collector then frees a sandbox
// only when a second source tells it is dead, or that it is not the pod's
// newest. Its sources are the runtime (Options.Runtime), the network
// namespace the sandbox's attachments were added with, and when the pod's
// sandboxes were created: the runtime's CreatedAt where it lists the
// sandbox, the cache entries' write times otherwise (which a restored or
// copied cache does not keep). One pure function, decide (decide.go),
// holds the rule as a numbered table, with a table test and a fuzz test;
// DestroyPU, SandboxDead and ListPUs' order all ask it, and
// docs/sdk/cni-freeing.md has the table.
//
//   - A sandbox the runtime lists ready is never freed: it is the pod's
//     current one. A gone pod of which the runtime lists a ready sandbox,
//     or may be creating one, keeps every sandbox (ErrSandboxRunning): the
//     kubelet runs a static pod whose mirror pod is missing, and its
//     network is in use, whatever the API says. A sandbox listed both
//     ready and stopped is ready.
//   - A sandbox is dead when the runtime lists it stopped, or does not
//     list it and its network namespace is gone (the runtime removes it
//     with the sandbox; a reboot empties /run): one of its attachments
//     names a path that is gone, and none names one that is there. A dead
//     sandbox is freed.
//   - A sandbox the runtime does not list, whose network namespace is
//     there, may be one it is creating: containerd and CRI-O create the
//     namespace before ADD, and containerd lists the sandbox only after
//     ADD, create and start. It is freed for a sandbox change only once a
//     sandbox of its pod was created strictly later (until then
//     ErrNewestSandbox; after Options.NewestSandboxTimeout of refusals,
//     ErrOrderUnknown, permanent: left as it is until the collector
//     restarts or its pod is gone, not retried forever), and with its gone
//     pod only once it has been refused for NewestSandboxTimeout, longer
//     than any sandbox is created.
//   - Without a Runtime, nothing but a gone network namespace tells that a
//     sandbox is dead: every other sandbox of a gone pod is kept
//     (ErrNoEvidence), and one of a sandbox change is refused as above.
//
// A pod's sandboxes are listed (ListPUs) in the same light: dead first,
// then those nothing is told of, then those that may be being created, the
// ready one last; then by creation.
//
// # host-local's reservations
//
// Some leaks never reach the cache: a chained plugin that fails ADD after
// host-local reserved an address (containerd#12130; multus#1449), a
// runtime that exits between ADD and saving its result (containerd#12923),
// CRI-O removing the cache entries of a teardown that failed (cri-o#9372).
// host-local keeps each reservation as a file <dataDir>/<network>/<ip>
// holding the container ID and the interface name. So at its start and
// after each list (on a goroutine of its own, one round at a time, so that
// no list waits for a DEL), Resync also reads, without host-local's lock, the
// reservations of every network of Options.ConfDir whose plugins run
// host-local (in a conflist or a single .conf, itself or as a plugin's
// "ipam"), in the "dataDir" it sets (Options.HostLocalDataDir when none),
// and asks decide's table (rows 12 to 18, decideReservation) about each.
// A reservation is freed only when its container is no sandbox the
// Runtime lists, ready or not, no cache entry names it, and it was
// reserved Options.ReservationGrace ago or more (a sandbox being created
// is listed by containerd only after its ADD); without a Runtime to ask,
// nothing is. It is freed as the runtime would have freed it: a DEL of
// the network's current config with its container ID and interface name,
// without a network namespace, so that host-local releases it under its
// own lock; a DEL that succeeds while host-local still holds it is an
// error. At most Options.ReservationRate are freed a second. Each DEL is
// decided again right before it runs, on ConfDir read then and, once time
// has passed since the round's list (a turn waited for under the rate, a
// DEL run before it), on the Runtime asked then: a disableGC set, or a
// sandbox the Runtime lists again, while the round runs keeps the
// reservation. A reservation whose network's config is gone is reported,
// never touched; so is one in a network's directory that is a link (to
// another disk, say), which host-local's DEL does not follow to release
// it. Options.DryRun frees none and lists them (WouldFree);
// Options.Observer hears of each by network and reason.
//
// AddressHandler tells, of one address, what the Collector holds and
// decided of it, and decides nothing: the cache entries whose result holds
// it, the last decision on each one's sandbox (the row of decide's table),
// host-local's reservations of it as the last round of their sweep decided
// them, and its latest frees (kubectl podsweeper explain ip reads it).
//
// # What it never does
//
//   - It never frees a sandbox but as "When a sandbox may be freed" says:
//     never the pod's current one, never one the runtime may be creating,
//     never on the API's answer alone.
//   - It never runs a DEL in a network namespace it cannot trust: the
//     cached path is passed only when it is a bind-mounted nsfs outside
//     /proc, not a link (as containerd and CRI-O pin one under
//     /run/netns). A /proc/<pid>/ns/net path, or a link to one, names
//     whatever namespace the process of that PID is in now, an unrelated
//     live one once the PID is reused; the DEL then runs without one, and
//     the plugins release what they hold. A /proc path never tells that a
//     namespace is gone: the collector may not share the host's PID
//     namespace, where a live sandbox's PID is not. A namespace is gone only when
//     its path is, from a directory that is there: a file there that is no
//     namespace may be one whose bind mount the collector's container does
//     not see, and a directory it does not see says nothing.
//   - It never touches a network whose cached config (of any entry of the
//     cache, one it does not use included), or whose config in
//     Options.ConfDir, says "disableGC": true. ConfDir is read again right
//     before each DEL, of an attachment or of a reservation, so that one
//     set while another DEL runs is heeded. While a config of ConfDir is
//     being written (not whole JSON yet), the network it names is not read:
//     its attachments and reservations are kept by no row (row -1 on the
//     address page) until it can be read, and the other networks are
//     decided as ever; one cut where another top-level key may follow
//     (after a comma, inside a key), whose name cannot be told yet, keeps
//     every network (docs/sdk/cni-freeing.md); a whole file that is no
//     network's config is passed over.
//   - It never calls the plugins' GC verb: the spec forbids GC concurrent
//     with the runtime's ADD and DEL, which an outside collector cannot
//     promise. It runs the DEL of attachments that are orphaned only.
//   - It never takes host-local's lock, nor writes or removes its files:
//     host-local releases a reservation on the DEL.
//   - It never removes a cache file itself: libcni does, after a DEL whose
//     plugins all succeeded. A DEL that fails keeps the file and is retried
//     by the engine with backoff. A cached config that would run no plugin
//     (a conflist of none, a config of another network) is never "freed":
//     the entry stays, and DestroyPU answers ports.Permanent.
//   - It skips, with a log line, and never deletes, entries without
//     K8S_POD_UID, K8S_POD_NAMESPACE and K8S_POD_NAME (another runtime may
//     share the network), entries it cannot read, and entries that are
//     links (libcni writes regular files, and its DEL would remove the link
//     alone). What such an entry holds is told on the address page, and
//     its cached config's disableGC keeps its network all the same, the
//     runtime's libcni reading it through the link; a PU whose entry it is
//     answers ErrUnusableEntry. An entry cut short (libcni writes it in
//     place) whose cached config is cut too keeps its network by no row
//     until it can be read, as a config of ConfDir being written does:
//     DestroyPU answers a plain error, and the engine tries again.
//   - A running sandbox the runtime lists without an ID may be any
//     sandbox: its pod is kept (row 2), and no reservation is freed while
//     it is listed (row 15), nor, on a sandbox change, a sandbox of its
//     pod for a later one (row 6). One sandbox listed as two pods' (twice,
//     or by its label and its metadata) makes the runtime's answer a
//     failure: either pod may run in it. A sandbox the cache holds as one
//     pod's and the runtime lists as another's is never a later sandbox
//     (row 6), and one listed twice at two creation times was created at
//     either: it is later only if both are.
//
// # What it cannot see
//
// An ADD that failed half-way leaves no cache file: what a chained plugin
// allocated before a later one failed (containerd#12130) is not in the
// cache. Of it, this package frees host-local's reservations only ("host-local's
// reservations"): another IPAM's addresses, and the veths and rules the
// other plugins made, stay. CRI-O removes a sandbox's cache files when
// its teardown fails, so on CRI-O the cache does not keep every leak
// either. A pod deleted with a grace period of 0 is gone from
// the API while the kubelet may still tear it down: the collector's DEL
// may then run beside the runtime's, which the spec allows (DEL is
// idempotent).
//
// The collector must run where the plugins would: in the host's network
// namespace, with the host's CacheDir, PluginDirs, ConfDir and the
// directory of the pods' network namespaces (/run/netns) at the same
// paths, and the privileges the plugins need (examples/cni-gc).
package cni
