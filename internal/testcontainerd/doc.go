// Package testcontainerd starts a real container node for tests:
// containerd and runc (built from source by `make containerd` into
// CONTAINERD_BIN_DIR), the CNI reference plugins (bridge, host-local,
// loopback, from `make cni-plugins` into CNI_PLUGINS_DIR) and the kubelet
// that `make envtest` builds, registered against the tests' API server
// (internal/testnode.StartCluster). Pods run real sandboxes there: a pause
// process in namespaces of its own, a veth on the node's bridge, an
// address from host-local, the cache entry libcni writes after ADD.
//
// Everything runs in private namespaces, as the kernel's are not the
// tests' to change:
//
//   - the node's init (a pause binary: it reaps, and the node's PID
//     namespace lives as long as it does) is started in new mount, network
//     and PID namespaces, joins a cgroup of its own in every hierarchy (a
//     child of the test's), then enters a new cgroup namespace, so that every
//     cgroup runc makes lands under it;
//   - inside, it mounts a fresh sysfs, the cgroup hierarchies again, test
//     directories over /var/lib, /run and /var/log, files holding the
//     kubelet's values over the /proc/sys files it would write, and makes a
//     veth pair with the node's address and a default route (the kubelet
//     wants one). Every mount has -n: mount(8) without it would create
//     /run/mount (libmount's utab) on the host's /run;
//   - containerd (config: the opt plugin's path in the test directory,
//     restrict_oom_score_adj, a pinned local sandbox image, the cgroupfs
//     driver) and the kubelet join the node with nsenter, after writing
//     themselves into its cgroups; so does Node.Command;
//   - the kubelet reaches the API server, which listens on the host's
//     loopback, through a listener the test opens on the same address in
//     the node's network namespace (setns on one locked thread), proxied to
//     the host's; pods reach it on the node's address (Node.APIServerAddr),
//     relayed the same way;
//   - with Options.SharedMounts, /run and /var/lib are shared mounts inside
//     the node, as on a real one, for containers' HostToContainer mounts.
//
// Tear-down SIGKILLs the init (the PID namespace dies with it, and with it
// every mount and network namespace of the node) and removes the node's
// cgroups depth-first. Node.Reboot loses containerd's state and keeps
// /var/lib (libcni's cache and host-local's addresses), as a reboot with a
// wiped runtime does.
//
// Node.ImportImage loads an image archive into the node's containerd (ctr,
// inside the node), Node.DialContext connects from the node's network (to
// a pod's address), Node.ContainerLog reads a container's log as the
// kubelet keeps it; ShellImage is a busybox image for the init containers
// of manifests. internal/testdeploy runs the programs of examples/ on such
// a node from their images and charts.
//
// A test that cannot run a node (not root, no binaries) is skipped, except
// under CI=true, where it fails. Start watches the host as
// internal/testnode does (testnode.WatchHost): links, mounts, sysctls,
// /run/mount, /opt, /var/lib/cni, /run/netns, /var/lib/containerd and
// /run/containerd are checked when the test ends.
//
// It is for tests only: it calls t.Fatal, t.Skip and t.Cleanup.
package testcontainerd
