package testnode

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	fakeremote "k8s.io/cri-client/pkg/fake"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// PodUIDLabel is the label the kubelet puts on a pod's sandboxes and
// containers: the pod's UID.
const PodUIDLabel = "io.kubernetes.pod.uid"

// Image is the image of the pods NewPod returns; the fake runtime "pulls"
// any image.
const Image = "registry.example/app:1"

// readyTimeout bounds how long StartNode waits for the node to be Ready
// (about 1 s on 2 cores).
const readyTimeout = 60 * time.Second

// Cluster is envtest's API server and etcd, which nodes join.
type Cluster struct {
	// Config is an administrator's (system:masters) configuration.
	Config *rest.Config
	// Client and Clientset act as that administrator.
	Client    client.Client
	Clientset kubernetes.Interface
	// KubeConfig is envtest's kubeconfig for that administrator.
	KubeConfig []byte

	env *envtest.Environment
	// serviceAccounts: ClusterOptions.ServiceAccounts.
	serviceAccounts bool
	// egress: ClusterOptions.NodeEgress's proxy; nil without.
	egress *egress
}

// StartCluster starts a kube-apiserver and etcd from KUBEBUILDER_ASSETS
// (which `make test` sets; the kubelet must be there too), stopped when the
// test ends. It skips the test when nodes cannot be started (no assets, or a
// user who may not unshare a mount namespace), except under CI=true, where it
// fails. It watches the host too (WatchHost).
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	return StartClusterWith(t, ClusterOptions{})
}

// AdminKubeConfig adds a user named name to the cluster's administrators
// (system:masters) and returns a kubeconfig that acts as that user: what
// a node's kubelet, or an agent on it, runs with.
func (c *Cluster) AdminKubeConfig(t testing.TB, name string) []byte {
	t.Helper()
	user, err := c.env.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
	require.NoError(t, err)
	kubeconfig, err := user.KubeConfig()
	require.NoError(t, err)
	return kubeconfig
}

// UserKubeConfig adds a user named name, a member of groups and of no
// administrators' group, and returns a kubeconfig that acts as that user:
// what RBAC grants them, and nothing more.
func (c *Cluster) UserKubeConfig(t testing.TB, name string, groups ...string) []byte {
	t.Helper()
	user, err := c.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	require.NoError(t, err)
	kubeconfig, err := user.KubeConfig()
	require.NoError(t, err)
	return kubeconfig
}

// Unavailable skips the test, or fails it under CI=true: what a test does
// when what it needs (root, binaries) is not there.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}

// requireNodes skips (or fails, under CI=true) a test that cannot start a
// node: the assets must hold a kubelet, and the user must be able to run
// it in a private mount namespace.
func requireNodes(t testing.TB) {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		Unavailable(t, "KUBEBUILDER_ASSETS is not set: run `make test` to test on a real kubelet")
	}
	if _, err := os.Stat(filepath.Join(assets, "kubelet")); err != nil {
		Unavailable(t, "no kubelet in KUBEBUILDER_ASSETS (%v): run `make envtest`", err)
	}
	out, err := exec.Command("unshare", "-m", "--propagation", "private", "true").CombinedOutput()
	if err != nil {
		Unavailable(t, "cannot unshare a mount namespace (%v: %s): the kubelet only runs in a private one, "+
			"where it cannot change the host's kernel settings; run the tests as root", err, strings.TrimSpace(string(out)))
	}
}

// Node is a kubelet on the cluster with the fake runtime as its container
// runtime.
type Node struct {
	// Name is the node's name, which pods' spec.nodeName names.
	Name string
	// CRIEndpoint is the fake runtime's socket, unix:///..., as the
	// kubelet's --container-runtime-endpoint names it.
	CRIEndpoint string
	// LogPath is the kubelet's log file, printed when the test fails.
	LogPath string

	// services is the fake runtime: its state is kept across StopRuntime
	// and StartRuntime, which start and stop the gRPC server serving it.
	services *fakeremote.RemoteRuntime
	// graceful makes StopContainer take the grace period it is given.
	graceful atomic.Bool
	// stopWait is the grace period, in seconds, of the last StopContainer
	// that waited for it.
	stopWait atomic.Int64

	mu     sync.Mutex
	server *grpc.Server // nil while stopped
}

// StartNode starts a node named name: the fake runtime on a unix socket and
// a kubelet in a private mount namespace, and waits for the node to be
// Ready. Both are stopped when the test ends; the kubelet's log is printed
// if the test failed.
func (c *Cluster) StartNode(t testing.TB, name string) *Node {
	t.Helper()
	// Not t.TempDir(), whose path holds the test's name: the runtime's socket
	// and the kubelet's (under its root dir) need short paths, for a unix
	// socket's path is at most 108 bytes. Removed once the kubelet and the
	// runtime have stopped.
	dir, err := os.MkdirTemp("", "tn")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	n := &Node{
		Name:        name,
		CRIEndpoint: "unix://" + filepath.Join(dir, "cri.sock"),
		LogPath:     filepath.Join(dir, "kubelet.log"),
		services:    fakeRuntime(dir),
	}
	n.StartRuntime(t)
	t.Cleanup(n.stopRuntime)

	cmd := n.kubelet(t, dir, c.AdminKubeConfig(t, "kubelet-"+name))
	stop := startInGroup(t, cmd)
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("the kubelet of node %s (%s), last lines:\n%s", name, n.LogPath, tail(n.LogPath, 200))
		}
	})

	start := time.Now()
	ok := assert.Eventually(t, func() bool {
		node, err := c.Clientset.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue
			}
		}
		return false
	}, readyTimeout, 50*time.Millisecond, "node %s Ready", name)
	if !ok {
		t.FailNow()
	}
	t.Logf("node %s Ready %v after the kubelet started", name, time.Since(start).Round(time.Millisecond))
	return n
}

// fakeRuntime returns cri-client's fake runtime set up as the kubelet needs
// it: ready, the cgroupfs driver, an image filesystem, and images of a known
// size (without one every ImageStatus fails and no pod starts).
func fakeRuntime(dir string) *fakeremote.RemoteRuntime {
	f := fakeremote.NewFakeRemoteRuntime()
	f.RuntimeService.Lock()
	f.RuntimeService.FakeLinuxConfiguration = &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: runtimeapi.CgroupDriver_CGROUPFS}
	// What the fake's own Start sets; StartRuntime serves it with a server of its own.
	f.RuntimeService.FakeStatus = &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: true},
	}}
	f.RuntimeService.Unlock()
	f.ImageService.SetFakeFilesystemUsage([]*runtimeapi.FilesystemUsage{{
		Timestamp:  time.Now().UnixNano(),
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: filepath.Join(dir, "images")},
		UsedBytes:  &runtimeapi.UInt64Value{Value: 1 << 20},
		InodesUsed: &runtimeapi.UInt64Value{Value: 1},
	}})
	f.ImageService.SetFakeImageSize(1 << 20)
	return f
}

// hostSettings are the kernel settings the kubelet sets, with the values
// it wants: inside its mount namespace, files holding them cover the host's.
var hostSettings = []struct{ path, value string }{
	{"/proc/sys/vm/overcommit_memory", "1"},
	{"/proc/sys/vm/panic_on_oom", "0"},
	{"/proc/sys/kernel/panic", "10"},
	{"/proc/sys/kernel/panic_on_oops", "1"},
	{"/proc/sys/kernel/keys/root_maxkeys", "1000000"},
	{"/proc/sys/kernel/keys/root_maxbytes", "25000000"},
}

// kubelet returns the command that runs the kubelet in a private mount
// namespace: unshare, then a shell that bind-mounts the settings' files and
// the test's /run, /var/lib and /var/log, then execs the kubelet. Every
// mount has -n: without it mount(8) records it in libmount's utab, creating
// /run/mount on the host's /run, which the namespace shares until the
// test's is bound over it. It runs in a
// directory of its own: the fake runtime reports containers with an empty
// log path, and the kubelet's log rotation then removes the files of its
// working directory (run in the package's directory, it empties it).
func (n *Node) kubelet(t testing.TB, dir string, kubeconfig []byte) *exec.Cmd {
	t.Helper()
	mkdir := func(name string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(p, 0o755))
		return p
	}
	write := func(path, content string) string {
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	settings := mkdir("sysctl")
	// /run first: the kubelet's own mounts (its root dir made rshared, its
	// volumes) run mount(8) without -n, which writes libmount's utab under
	// /run/mount; a directory of the test over /run keeps it off the host.
	script := []string{"set -e", "mount -n --bind " + quote(mkdir("run")) + " /run"}
	for i, s := range hostSettings {
		f := write(filepath.Join(settings, fmt.Sprintf("%d-%s", i, filepath.Base(s.path))), s.value+"\n")
		script = append(script, "mount -n --bind "+quote(f)+" "+s.path)
	}
	script = append(script,
		"mount -n --bind "+quote(mkdir("var-lib"))+" /var/lib",
		"mount -n --bind "+quote(mkdir("var-log"))+" /var/log",
		`exec "$0" "$@"`)

	config := write(filepath.Join(dir, "kubelet.yaml"), fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
protectKernelDefaults: false
containerRuntimeEndpoint: %s
address: 127.0.0.1
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
podLogsDir: %s
volumePluginDir: %s
registerNode: true
nodeStatusUpdateFrequency: 2s
syncFrequency: 10s
evictionHard:
  memory.available: "1Mi"
`, n.CRIEndpoint, freePort(t), freePort(t), mkdir("pod-logs"), mkdir("volume-plugins")))
	kc := write(filepath.Join(dir, "kubelet.kubeconfig"), string(kubeconfig))

	root := mkdir("root")
	args := []string{"-m", "--propagation", "private", "sh", "-c", strings.Join(script, "\n"),
		filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubelet"),
		"--config=" + config, "--kubeconfig=" + kc, "--hostname-override=" + n.Name,
		"--root-dir=" + root, "--cert-dir=" + mkdir("pki"), "--v=2"}
	cmd := exec.Command("unshare", args...)
	cmd.Dir = mkdir("cwd")
	log, err := os.Create(n.LogPath)
	require.NoError(t, err)
	t.Cleanup(func() { _ = log.Close() })
	cmd.Stdout, cmd.Stderr = log, log
	return cmd
}

// quote quotes s for sh.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// startInGroup starts cmd in a process group of its own and returns the
// function that stops it: SIGTERM to the group, SIGKILL after 10 s. (No
// Pdeathsig: it fires when the OS thread that started the process exits,
// which the Go runtime may do while the test runs.)
func startInGroup(t testing.TB, cmd *exec.Cmd) (stop func()) {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			pgid := cmd.Process.Pid
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				<-exited
			}
		})
	}
}

// freePort returns a loopback port free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for s.Scan() {
		lines = append(lines, s.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// NewPod returns a pod of one container bound to the node, as a controller
// would create it once scheduled: no ServiceAccount token (envtest runs no
// ServiceAccount admission), restartPolicy Always.
func (n *Node) NewPod(namespace, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{
			NodeName:                     n.Name,
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "app", Image: Image, ImagePullPolicy: corev1.PullIfNotPresent}},
		},
	}
}

// CreateNamespace creates a namespace for the test; on a cluster started
// with ClusterOptions.ServiceAccounts, with its default ServiceAccount and
// the cluster's CA in it, as kube-controller-manager would add them.
func (c *Cluster) CreateNamespace(t testing.TB, name string) {
	t.Helper()
	require.NoError(t, c.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	c.namespaceDefaults(t, name)
}

// runtime returns a CRI client of the node's runtime, as the kubelet uses it.
func (n *Node) runtime(ctx context.Context) (internalapi.RuntimeService, error) {
	return remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(n.CRIEndpoint).
		WithConnectionTimeout(10 * time.Second).WithTracerProvider(nil).Build(ctx)
}

// ReadySandbox returns the ID of the pod's ready sandbox, asking the
// runtime through the CRI; "" when it has none.
func (n *Node) ReadySandbox(ctx context.Context, uid string) (string, error) {
	rt, err := n.runtime(ctx)
	if err != nil {
		return "", err
	}
	defer rt.Close(ctx)
	sandboxes, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{PodUIDLabel: uid},
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	})
	if err != nil {
		return "", err
	}
	switch len(sandboxes) {
	case 0:
		return "", nil
	case 1:
		return sandboxes[0].Id, nil
	default:
		return "", fmt.Errorf("pod %s has %d ready sandboxes", uid, len(sandboxes))
	}
}

// SandboxCreatedAt returns when the runtime created the sandbox id.
func (n *Node) SandboxCreatedAt(t testing.TB, id string) time.Time {
	t.Helper()
	rs := n.services.RuntimeService
	rs.Lock()
	defer rs.Unlock()
	s, ok := rs.Sandboxes[id]
	require.True(t, ok, "no sandbox %s", id)
	return time.Unix(0, s.CreatedAt)
}

// StopSandbox stops the pod's ready sandbox through the CRI, as a runtime
// does when the sandbox dies, and returns its ID. The kubelet then creates a
// new one (next attempt), which ReadySandbox reports once it is ready.
func (n *Node) StopSandbox(t testing.TB, pod *corev1.Pod) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := n.ReadySandbox(ctx, string(pod.UID))
	require.NoError(t, err)
	require.NotEmpty(t, id, "pod %s/%s has no ready sandbox", pod.Namespace, pod.Name)
	rt, err := n.runtime(ctx)
	require.NoError(t, err)
	defer rt.Close(ctx)
	require.NoError(t, rt.StopPodSandbox(ctx, id))
	return id
}

// RestartSandbox stops the pod's sandbox (StopSandbox) and waits for the
// kubelet to create its next one. It returns both IDs.
func (n *Node) RestartSandbox(t testing.TB, pod *corev1.Pod) (old, current string) {
	t.Helper()
	old = n.StopSandbox(t, pod)
	return old, n.WaitNewSandbox(t, pod, old)
}

// WaitNewSandbox waits for the kubelet to create a sandbox of pod other
// than old, and returns its ID.
func (n *Node) WaitNewSandbox(t testing.TB, pod *corev1.Pod, old string) (current string) {
	t.Helper()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		id, err := n.ReadySandbox(ctx, string(pod.UID))
		current = id
		return err == nil && id != "" && id != old
	}, 60*time.Second, 50*time.Millisecond, "the kubelet creates a new sandbox for pod %s/%s", pod.Namespace, pod.Name)
	return current
}

// ExitContainer makes the pod's running container exit with code, as if
// its process had ended: the fake runtime reports it exited, and the kubelet
// sees it at its next relist (every second). ExitContainer fails the test
// if no such container runs.
func (n *Node) ExitContainer(t testing.TB, pod *corev1.Pod, container string, code int32) {
	t.Helper()
	rs := n.services.RuntimeService
	rs.Lock()
	defer rs.Unlock()
	for _, c := range rs.Containers {
		if c.Labels[PodUIDLabel] != string(pod.UID) || c.GetMetadata().GetName() != container ||
			c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		c.State = runtimeapi.ContainerState_CONTAINER_EXITED
		c.FinishedAt = time.Now().UnixNano()
		c.ExitCode = code
		c.Reason = "Completed"
		if code != 0 {
			c.Reason = "Error"
		}
		return
	}
	t.Fatalf("no running container %q in pod %s/%s", container, pod.Namespace, pod.Name)
}

// StopRuntime takes the runtime's socket away: its gRPC server stops and
// the socket file is removed. Its state (sandboxes, containers, images) is
// kept for StartRuntime.
func (n *Node) StopRuntime(t testing.TB) {
	t.Helper()
	n.stopRuntime()
	path := strings.TrimPrefix(n.CRIEndpoint, "unix://")
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("removing the runtime's socket: %v", err)
	}
}

func (n *Node) stopRuntime() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.server != nil {
		n.server.Stop()
		n.server = nil
	}
}

// StartRuntime serves the runtime on its socket again (a new gRPC server,
// the same state). StartNode starts it.
func (n *Node) StartRuntime(t testing.TB) {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	require.Nil(t, n.server, "the runtime is serving already")
	path := strings.TrimPrefix(n.CRIEndpoint, "unix://")
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("removing a stale socket: %v", err)
	}
	l, err := net.Listen("unix", path)
	require.NoError(t, err)
	s := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(s, runtimeServer{n.services, &n.graceful, &n.stopWait})
	runtimeapi.RegisterImageServiceServer(s, n.services)
	go func() { _ = s.Serve(l) }()
	n.server = s
}

// StopTakesGracePeriod makes the runtime stop a container only at the end of
// the grace period the kubelet gives it, as a process that ignores SIGTERM
// is killed then (on), or at once, as the fake does (off, the default).
// With it on, a pod deleted with a grace period of a few seconds is seen
// terminating for that long.
func (n *Node) StopTakesGracePeriod(on bool) { n.graceful.Store(on) }

// LastGracePeriod returns the grace period the last container stopped with
// StopTakesGracePeriod on was given by the kubelet, and waited for; 0 if
// none. The kubelet gives the pod's deletion grace period, or its minimum of
// 2 s when it computes less.
func (n *Node) LastGracePeriod() time.Duration { return time.Duration(n.stopWait.Load()) * time.Second }

// runtimeServer is the fake runtime whose StopContainer may take the grace
// period.
type runtimeServer struct {
	*fakeremote.RemoteRuntime
	graceful *atomic.Bool
	stopWait *atomic.Int64
}

// StopContainer waits for the request's timeout (the grace period, in
// seconds) when graceful is set, then stops the container.
func (s runtimeServer) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	if s.graceful.Load() && req.Timeout > 0 {
		t := time.NewTimer(time.Duration(req.Timeout) * time.Second)
		select {
		case <-t.C:
			s.stopWait.Store(req.Timeout)
		case <-ctx.Done():
			t.Stop()
		}
	}
	return s.RemoteRuntime.StopContainer(ctx, req)
}

// KubeletSettings returns the kernel settings the kubelet sets, each as
// its /proc/sys path and the value it wants: a node that runs a kubelet
// covers each with a file of that value inside its mount namespace.
func KubeletSettings() [][2]string {
	out := make([][2]string, 0, len(hostSettings))
	for _, s := range hostSettings {
		out = append(out, [2]string{s.path, s.value})
	}
	return out
}
