package testcontainerd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podsweeper/podsweeper/internal/testnode"
)

// PauseImage is the image `make containerd` writes (bin/containerd/pause.tar,
// hack/containerd.mk names it the same): the node's pinned sandbox image,
// and the image of the pods NewPod returns. It is imported, never pulled.
const PauseImage = "podsweeper.test/pause:1"

// The node's network: its own address (on a veth whose peer is in the node
// too: the kubelet wants a default route, and nothing is routed anywhere),
// and the pods' network as containerd's CNI config names it.
const (
	NodeIP = "172.31.255.2"
	// DefaultSubnet is Options.Subnet when left empty: host-local hands
	// out its addresses but the gateway's (.1) and the broadcast (.7), 5
	// addresses, so that a test can fill the range.
	DefaultSubnet = "10.88.0.0/29"
	// NetworkName and BridgeName are the default network's.
	NetworkName = "podnet"
	BridgeName  = "cni0"
)

// readyTimeout bounds each wait of Start: containerd answering (0.2-0.7 s on
// 2 cores), the node Ready (about 1 s).
const readyTimeout = 60 * time.Second

// Options configure Start. The zero value is a node with the default network.
type Options struct {
	// Subnet is host-local's range in the default network config. "":
	// DefaultSubnet.
	Subnet string
	// ConfList, when set, is the node's network config instead of the
	// default (bridge cni0 and host-local on Subnet, network NetworkName):
	// a conflist as containerd reads it from its conf_dir. A plugin it names
	// is looked up in PluginDirs, then in CNI_PLUGINS_DIR.
	ConfList []byte
	// PluginDirs come before CNI_PLUGINS_DIR in containerd's CNI bin_dirs:
	// where a test puts plugins that wrap the real ones.
	PluginDirs []string
	// SharedMounts makes the node's /run and /var/lib shared mounts, as
	// systemd makes every mount of a real node (in the node's mount
	// namespace only: it is private from the host's). containerd refuses
	// a container's HostToContainer or Bidirectional mount whose source is
	// on a private mount: a DaemonSet that mounts /run/netns needs it.
	SharedMounts bool
}

// Node is a containerd node: its init, containerd and the kubelet in
// private namespaces, registered on the cluster.
type Node struct {
	// Name is the node's name, which pods' spec.nodeName names.
	Name string
	// Dir is the node's directory: every path below is in it, and is the
	// same path inside the node and outside (only /var/lib, /run, /var/log,
	// /proc and /sys differ inside).
	Dir string
	// CRIEndpoint is containerd's CRI socket as seen from the host,
	// unix:///..., for CRI clients outside the node.
	CRIEndpoint string
	// CNICacheDir is libcni's cache directory (the node's /var/lib/cni) as
	// seen from the host; host-local keeps its addresses under
	// CNICacheDir/networks/<network>/.
	CNICacheDir string
	// CNIConfDir is containerd's network config directory, CNIPluginDirs
	// its plugin directories, in order.
	CNIConfDir    string
	CNIPluginDirs []string
	// StaticPodDir is the kubelet's static pod path.
	StaticPodDir string
	// KubeConfig is the path of an administrator's kubeconfig, valid both
	// inside the node (through its proxy) and outside.
	KubeConfig string
	// Network is the name of the node's network, as its config names it.
	Network string
	// APIServerAddr is where a pod on the node reaches the API server,
	// host:port: the node's address (NodeIP), on which the node relays to
	// the API server as it does on the loopback, with the API server's
	// port. A hostNetwork pod reaches it there too. Its certificate names
	// that address only on a cluster started with
	// testnode.ClusterOptions.ServingIPs holding NodeIP.
	APIServerAddr string

	cluster *testnode.Cluster
	bins    binaries
	cgroups *cgroups
	init    *exec.Cmd
	initErr chan error
	proxy   *proxy

	mu         sync.Mutex
	containerd *process
	kubelet    *process
}

// Start starts a node named name on the cluster c: its init in private
// namespaces, containerd (with the pause image imported), and the kubelet,
// and waits for the node to be Ready. Everything is stopped when the test
// ends, the logs printed if it failed. It skips the test when a node cannot
// run here (not root, a binary missing), except under CI=true, where it
// fails; and it watches the host (testnode.WatchHost).
func Start(t testing.TB, c *testnode.Cluster, name string, opts Options) *Node {
	t.Helper()
	bins := requireBinaries(t)
	testnode.WatchHost(t)
	if opts.Subnet == "" {
		opts.Subnet = DefaultSubnet
	}
	// Not t.TempDir(): containerd's sockets live under Dir/run and a unix
	// socket's path is at most 108 bytes.
	dir, err := os.MkdirTemp("", "tc")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	n := &Node{
		Name:         name,
		Dir:          dir,
		CRIEndpoint:  "unix://" + filepath.Join(dir, "run", "containerd", "containerd.sock"),
		CNICacheDir:  filepath.Join(dir, "var-lib", "cni"),
		CNIConfDir:   filepath.Join(dir, "net.d"),
		StaticPodDir: filepath.Join(dir, "manifests"),
		KubeConfig:   filepath.Join(dir, "admin.kubeconfig"),
		cluster:      c,
		bins:         bins,
	}
	n.CNIPluginDirs = append(append([]string{}, opts.PluginDirs...), bins.cni)
	for _, d := range []string{"var-lib/cni", "run", "var-log", "opt", "net.d", "manifests", "sysctl", "cwd"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	conf := opts.ConfList
	if conf == nil {
		conf = DefaultConfList(opts.Subnet)
	}
	n.Network = confName(t, conf)
	require.NoError(t, os.WriteFile(filepath.Join(n.CNIConfDir, "10-"+n.Network+".conflist"), conf, 0o644))
	require.NoError(t, os.WriteFile(n.KubeConfig, c.AdminKubeConfig(t, "admin-"+name), 0o600))

	n.cgroups = newCgroups(t, "podsweeper-"+filepath.Base(dir))
	n.startInit(t, opts.SharedMounts)
	t.Cleanup(func() { n.teardown(t) })
	n.APIServerAddr = net.JoinHostPort(NodeIP, apiServerPort(t, c.Config.Host))
	n.proxy = startProxy(t, n.netnsPath(), c.Config.Host, n.APIServerAddr)
	n.StartContainerd(t)
	n.startKubelet(t)
	return n
}

// apiServerPort returns the port of the API server whose URL is host.
func apiServerPort(t testing.TB, host string) string {
	t.Helper()
	u, err := url.Parse(host)
	require.NoError(t, err)
	require.NotEmpty(t, u.Port(), "the API server's URL %s has a port", host)
	return u.Port()
}

// DefaultConfList returns the default network config: the bridge plugin
// (bridge cni0, the pods' gateway) with host-local on subnet, network
// NetworkName, as containerd reads it from its conf_dir.
func DefaultConfList(subnet string) []byte {
	return fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":%q,"plugins":[{"type":"bridge","bridge":%q,"isGateway":true,"ipMasq":false,`+
		`"ipam":{"type":"host-local","ranges":[[{"subnet":%q}]]}}]}`, NetworkName, BridgeName, subnet)
}

// binaries are the paths of what a node runs.
type binaries struct {
	containerd, shim, ctr, runc, pause, pauseImage string
	cni, kubelet                                   string
}

// requireBinaries finds the node's binaries, or skips the test (fails it
// under CI=true) when it cannot run a node here.
func requireBinaries(t testing.TB) binaries {
	t.Helper()
	if os.Geteuid() != 0 {
		testnode.Unavailable(t, "not root: a container node runs in private mount, network, PID and cgroup namespaces")
	}
	dir := os.Getenv("CONTAINERD_BIN_DIR")
	cni := os.Getenv("CNI_PLUGINS_DIR")
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" || cni == "" || assets == "" {
		testnode.Unavailable(t, "CONTAINERD_BIN_DIR, CNI_PLUGINS_DIR and KUBEBUILDER_ASSETS must be set: run `make test`")
	}
	b := binaries{
		containerd: filepath.Join(dir, "containerd"), shim: filepath.Join(dir, "containerd-shim-runc-v2"),
		ctr: filepath.Join(dir, "ctr"), runc: filepath.Join(dir, "runc"), pause: filepath.Join(dir, "pause"),
		pauseImage: filepath.Join(dir, "pause.tar"), cni: cni, kubelet: filepath.Join(assets, "kubelet"),
	}
	for _, p := range []string{b.containerd, b.shim, b.ctr, b.runc, b.pause, b.pauseImage, b.kubelet,
		filepath.Join(cni, "bridge"), filepath.Join(cni, "host-local"), filepath.Join(cni, "loopback")} {
		if _, err := os.Stat(p); err != nil {
			testnode.Unavailable(t, "%v: run `make containerd cni-plugins envtest` (or `make test`)", err)
		}
	}
	for _, tool := range []string{"unshare", "nsenter", "ip", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			testnode.Unavailable(t, "%s is not installed (util-linux, iproute2)", tool)
		}
	}
	return b
}

// confName returns the network name of a conflist.
func confName(t testing.TB, conf []byte) string {
	t.Helper()
	var c struct {
		Name string `json:"name"`
	}
	require.NoError(t, json.Unmarshal(conf, &c), "the node's network config")
	require.NotEmpty(t, c.Name, "the node's network config has no name")
	return c.Name
}

// startInit starts the node's init: PID 1 of new mount, network and PID
// namespaces, which joins the node's cgroups, enters a cgroup namespace of
// its own through unshare (a Go unshare(CLONE_NEWCGROUP) would apply to one
// thread only), prepares the node's mounts and network, and execs the pause
// binary, which reaps the node's orphans (containerd's shims among them)
// until it is killed.
func (n *Node) startInit(t testing.TB, shared bool) {
	t.Helper()
	q := quote
	var s1 []string
	s1 = append(s1,
		"set -e",
		// First of all: nothing mounted here may propagate to the host.
		"mount -n --make-rprivate /",
	)
	for _, f := range n.cgroups.procs() {
		// $$ is 1 here; the kernel reads it in this PID namespace.
		s1 = append(s1, "echo $$ > "+q(f))
	}
	s2 := []string{
		"set -e",
		"mount -n -t proc proc /proc",
		"mount -n -t sysfs sysfs /sys",
		"mount -n -t tmpfs -o mode=0755 tmpfs /sys/fs/cgroup",
	}
	s2 = append(s2, n.cgroups.mountScript()...)
	s2 = append(s2,
		"mount -n --bind "+q(filepath.Join(n.Dir, "var-lib"))+" /var/lib",
		"mount -n --bind "+q(filepath.Join(n.Dir, "run"))+" /run",
		"mount -n --bind "+q(filepath.Join(n.Dir, "var-log"))+" /var/log",
	)
	if shared {
		s2 = append(s2, "mount -n --make-rshared /run", "mount -n --make-rshared /var/lib")
	}
	for i, s := range testnode.KubeletSettings() {
		f := filepath.Join(n.Dir, "sysctl", fmt.Sprintf("%d-%s", i, filepath.Base(s[0])))
		require.NoError(t, os.WriteFile(f, []byte(s[1]+"\n"), 0o644))
		s2 = append(s2, "mount -n --bind "+q(f)+" "+s[0])
	}
	s2 = append(s2,
		"ip link set lo up",
		"ip link add eth0 type veth peer name eth0-peer",
		"ip link set eth0-peer up",
		"ip addr add "+NodeIP+"/24 dev eth0",
		"ip link set eth0 up",
		"ip route add default via 172.31.255.1 dev eth0",
		"touch "+q(filepath.Join(n.Dir, "init-ready")),
		"exec "+q(n.bins.pause),
	)
	s1 = append(s1, "exec unshare --cgroup sh -c "+q(strings.Join(s2, "\n")))
	cmd := exec.Command("sh", "-c", strings.Join(s1, "\n"))
	log, err := os.Create(filepath.Join(n.Dir, "init.log"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = log.Close() })
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWNET | syscall.CLONE_NEWPID}
	require.NoError(t, cmd.Start())
	n.init = cmd
	n.initErr = make(chan error, 1)
	go func() { n.initErr <- cmd.Wait() }()
	start := time.Now()
	for {
		if _, err := os.Stat(filepath.Join(n.Dir, "init-ready")); err == nil {
			break
		}
		select {
		case err := <-n.initErr:
			n.initErr <- err
			t.Fatalf("the node's init exited (%v):\n%s", err, tail(filepath.Join(n.Dir, "init.log"), 50))
		case <-time.After(10 * time.Millisecond):
		}
		if time.Since(start) > readyTimeout {
			t.Fatalf("the node's init is not ready after %v:\n%s", readyTimeout, tail(filepath.Join(n.Dir, "init.log"), 50))
		}
	}
	t.Logf("node %s: init (pid %d) ready in %v", n.Name, cmd.Process.Pid, time.Since(start).Round(time.Millisecond))
}

// netnsPath is the node's network namespace, as the host sees it.
func (n *Node) netnsPath() string { return fmt.Sprintf("/proc/%d/ns/net", n.init.Process.Pid) }

// Command returns a command that runs name with args inside the node: it
// joins the node's cgroups, then its mount, network, PID and cgroup
// namespaces (nsenter, which forks the command into the node's PID
// namespace and waits for it), in a process group of its own, in the
// directory Dir/cwd. Cancelling ctx SIGKILLs the group: nsenter and the
// command in the node alike.
func (n *Node) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	var join []string
	for _, f := range n.cgroups.procs() {
		join = append(join, "echo $$ > "+quote(f))
	}
	script := strings.Join(append(join,
		fmt.Sprintf(`exec nsenter -t %d -m -n -p -C --wd=%s -- "$@"`, n.init.Process.Pid, quote(filepath.Join(n.Dir, "cwd")))), "\n")
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", script, "sh", name}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Cancel kills the group: nsenter's child, in the node, with nsenter.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Run runs name with args inside the node (Command) and returns its
// combined output; it fails the test if the command fails.
func (n *Node) Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := n.Command(ctx, name, args...).CombinedOutput()
	require.NoError(t, err, "%s %s inside node %s: %s", name, strings.Join(args, " "), n.Name, out)
	return string(out)
}

// process is a long-running process of the node (containerd, the kubelet).
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// startProcess starts cmd (a Command) with its output in the file log.
func startProcess(t testing.TB, cmd *exec.Cmd, logPath string) *process {
	t.Helper()
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = log.Close()
		close(p.exited)
	}()
	return p
}

// kill SIGKILLs p's process group and waits for it to exit.
func (p *process) kill() {
	if p == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
}

// teardown SIGKILLs the init, which ends the node's PID namespace (every
// process in it) and with it its mounts and network, then waits for the
// processes started into it and removes its cgroups.
func (n *Node) teardown(t testing.TB) {
	t.Helper()
	if t.Failed() {
		for _, f := range []string{"init.log", "containerd.log", "kubelet.log"} {
			t.Logf("node %s, %s, last lines:\n%s", n.Name, f, tail(filepath.Join(n.Dir, f), 80))
		}
	}
	_ = n.init.Process.Signal(syscall.SIGKILL)
	<-n.initErr
	n.mu.Lock()
	procs := []*process{n.containerd, n.kubelet}
	n.mu.Unlock()
	for _, p := range procs {
		p.kill()
	}
	if n.proxy != nil {
		n.proxy.close()
	}
	if err := n.cgroups.remove(10 * time.Second); err != nil {
		t.Errorf("removing the node's cgroups: %v", err)
	}
}

// NewPod returns a pod of one container bound to the node, the pause
// image never pulled (imagePullPolicy Never), no ServiceAccount token
// (envtest runs no ServiceAccount admission), restartPolicy Always.
func (n *Node) NewPod(namespace, name string) *corev1.Pod {
	no := false
	var grace int64 = 2
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{
			NodeName:                      n.Name,
			AutomountServiceAccountToken:  &no,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "app", Image: PauseImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"/pause"}}},
		},
	}
}

// tail returns the last lines of the file at path.
func tail(path string, lines int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for s.Scan() {
		out = append(out, s.Text())
		if len(out) > lines {
			out = out[1:]
		}
	}
	return strings.Join(out, "\n")
}

// quote quotes s for sh.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
