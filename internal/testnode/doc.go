// Package testnode starts real Kubernetes nodes for tests: a kubelet built
// from source (bin/envtest/kubelet, which `make envtest` builds) joins
// envtest's API server, with cri-client's gRPC fake runtime
// (k8s.io/cri-client/pkg/fake) as its container runtime. The kubelet runs
// pods bound to its node by spec.nodeName as on a real node: it creates
// their sandboxes and containers through the CRI, terminates them
// gracefully, removes the pod objects and restarts a sandbox that stopped.
// No scheduler or controller-manager runs.
//
// StartCluster starts the API server and etcd; StartClusterWith does with
// ClusterOptions: a serving certificate that names the addresses pods
// reach it at, and ServiceAccount tokens for the pods (the admission
// plugin envtest turns off; CreateNamespace then adds what the controller
// manager would: the default ServiceAccount, the kube-root-ca.crt
// ConfigMap). Cluster.StartNode starts a node on it (several nodes may
// share one cluster). Each node has its own
// fake runtime on a unix socket, its own kubelet (a child process in its own
// process group, with its own root dir, cert dir, ports and node name) and is
// stopped when the test ends. Node.RestartSandbox (a sandbox dies and the
// kubelet creates the next), Node.ExitContainer (a container's process
// ends), Node.StopRuntime/StartRuntime (the runtime's socket goes away and
// comes back) and Node.StopTakesGracePeriod (containers that take their
// grace period to stop, where the fake stops them at once) are what a node
// does to pods that the tests need to cause.
//
// The kubelet left to itself rewrites kernel settings of the machine
// (vm.overcommit_memory, kernel.panic, kernel.panic_on_oops) and creates
// directories under /var/lib and /usr/libexec. It is therefore only ever
// started inside a private mount namespace (unshare -m --propagation
// private) where regular files holding the values it wants are bind-mounted
// over those /proc/sys files and directories of the test over /var/lib and
// /var/log; everything it mounts stays in that namespace and is gone when it
// exits. A test run by a user who cannot unshare (not root) is skipped,
// except under CI=true, where it fails. WatchHost checks after a test that
// the host is unchanged: the kernel settings a node could write, the
// directories it could create (/var/lib/kubelet, /usr/libexec/kubernetes,
// /run/mount, /opt, /var/lib/cni, /run/netns, containerd's), the links and
// the mounts; internal/testcontainerd's nodes are checked the same way.
//
// It is for tests only: it calls t.Fatal, t.Skip and t.Cleanup.
package testnode
