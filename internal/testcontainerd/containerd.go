package testcontainerd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
)

// containerdConfig is the node's containerd config. What each setting is
// for:
//   - root and state are containerd's defaults: inside the node they are
//     in the test's /var/lib and /run;
//   - the opt plugin's path, the image verifiers' and NRI's directories are
//     the test's (by default containerd creates /opt/containerd on the host);
//   - restrict_oom_score_adj: without CAP_SYS_RESOURCE runc fails to lower
//     the containers' oom_score_adj;
//   - the sandbox image is pinned and imported, never pulled;
//   - the cgroupfs driver (SystemdCgroup false), runc and its shim by path;
//   - no AppArmor, SELinux, CRIU, CDI or NRI, which this node does not have.
const containerdConfig = `version = 3
root = '/var/lib/containerd'
state = '/run/containerd'
imports = []
disabled_plugins = ['io.containerd.nri.v1.nri', 'io.containerd.snapshotter.v1.btrfs', 'io.containerd.snapshotter.v1.zfs',
  'io.containerd.snapshotter.v1.devmapper', 'io.containerd.snapshotter.v1.blockfile', 'io.containerd.snapshotter.v1.erofs']

[grpc]
  address = '/run/containerd/containerd.sock'

[plugins]
  [plugins.'io.containerd.internal.v1.opt']
    path = %[1]q
  [plugins.'io.containerd.image-verifier.v1.bindir']
    bin_dir = %[2]q
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = %[3]q
  [plugins.'io.containerd.cri.v1.runtime']
    restrict_oom_score_adj = true
    disable_apparmor = true
    enable_selinux = false
    enable_criu = false
    cdi_spec_dirs = []
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        runtime_path = %[4]q
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = %[5]q
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = [%[6]s]
      conf_dir = %[7]q
      max_conf_num = 1
`

// StartContainerd starts containerd inside the node, waits for its CRI to
// answer and imports the pause image into it (the "k8s.io" namespace, as
// the CRI reads it). Start starts it; Reboot starts it again.
func (n *Node) StartContainerd(t testing.TB) {
	t.Helper()
	n.mu.Lock()
	running := n.containerd != nil
	n.mu.Unlock()
	require.False(t, running, "containerd runs already")
	var dirs []string
	for _, d := range n.CNIPluginDirs {
		dirs = append(dirs, fmt.Sprintf("%q", d))
	}
	config := filepath.Join(n.Dir, "containerd.toml")
	require.NoError(t, os.WriteFile(config, fmt.Appendf(nil, containerdConfig,
		filepath.Join(n.Dir, "opt"), filepath.Join(n.Dir, "opt", "image-verifier", "bin"), PauseImage,
		n.bins.shim, n.bins.runc, strings.Join(dirs, ", "), n.CNIConfDir), 0o644))
	start := time.Now()
	cmd := n.Command(context.Background(), n.bins.containerd, "--config", config)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(n.bins.containerd)+":"+os.Getenv("PATH"))
	p := startProcess(t, cmd, filepath.Join(n.Dir, "containerd.log"))
	n.mu.Lock()
	n.containerd = p
	n.mu.Unlock()
	n.waitCRI(t, p)
	ready := time.Since(start)
	n.ctr(t, "-n", "k8s.io", "images", "import", "--platform", "linux/amd64", n.bins.pauseImage)
	t.Logf("node %s: containerd ready in %v, the pause image imported %v later", n.Name,
		ready.Round(time.Millisecond), (time.Since(start) - ready).Round(time.Millisecond))
}

// waitCRI waits until containerd's CRI says the runtime and its network are
// ready (the network once it has read the CNI config).
func (n *Node) waitCRI(t testing.TB, p *process) {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			t.Fatalf("containerd exited:\n%s", tail(filepath.Join(n.Dir, "containerd.log"), 60))
		default:
		}
		if _, err := os.Stat(strings.TrimPrefix(n.CRIEndpoint, "unix://")); err == nil {
			if last = n.criReady(); last == nil {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("containerd's CRI not ready after %v (%v):\n%s", readyTimeout, last, tail(filepath.Join(n.Dir, "containerd.log"), 60))
}

// criReady asks the CRI for its status: nil when the runtime and the
// network are ready.
func (n *Node) criReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rt, err := n.Runtime(ctx)
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	st, err := rt.Status(ctx, false)
	if err != nil {
		return err
	}
	ready := 0
	for _, c := range st.GetStatus().GetConditions() {
		// Other conditions (deprecation warnings: cgroup v1) are not readiness.
		if c.GetType() != runtimeapi.RuntimeReady && c.GetType() != runtimeapi.NetworkReady {
			continue
		}
		if !c.GetStatus() {
			return fmt.Errorf("%s: %s %s", c.GetType(), c.GetReason(), c.GetMessage())
		}
		ready++
	}
	if ready != 2 {
		return fmt.Errorf("conditions %v: no RuntimeReady and NetworkReady", st.GetStatus().GetConditions())
	}
	return nil
}

// Runtime returns a CRI client of the node's containerd, as the kubelet
// uses it. Close it.
func (n *Node) Runtime(ctx context.Context) (internalapi.RuntimeService, error) {
	return remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(n.CRIEndpoint).
		WithConnectionTimeout(10 * time.Second).WithTracerProvider(nil).Build(ctx)
}

// ctr runs containerd's ctr on the node's socket (from the host: the
// socket is in the test's directory) and fails the test if it fails.
func (n *Node) ctr(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, n.bins.ctr,
		append([]string{"--address", strings.TrimPrefix(n.CRIEndpoint, "unix://")}, args...)...).CombinedOutput()
	require.NoError(t, err, "ctr %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// StopContainerd SIGKILLs containerd (not its shims nor the containers:
// they run on, as when containerd crashes).
func (n *Node) StopContainerd() {
	n.mu.Lock()
	p := n.containerd
	n.containerd = nil
	n.mu.Unlock()
	p.kill()
}

// Sandboxes lists the node's pod sandboxes, as the CRI reports them
// (ready or not), those of the pod uid only when uid is not "".
func (n *Node) Sandboxes(ctx context.Context, uid string) ([]*runtimeapi.PodSandbox, error) {
	rt, err := n.Runtime(ctx)
	if err != nil {
		return nil, err
	}
	defer rt.Close(ctx)
	filter := &runtimeapi.PodSandboxFilter{}
	if uid != "" {
		filter.LabelSelector = map[string]string{PodUIDLabel: uid}
	}
	return rt.ListPodSandbox(ctx, filter)
}

// ReadySandbox returns the ID of the pod's ready sandbox; "" when it has
// none, an error when it has several.
func (n *Node) ReadySandbox(ctx context.Context, uid string) (string, error) {
	sbs, err := n.Sandboxes(ctx, uid)
	if err != nil {
		return "", err
	}
	var ready []string
	for _, sb := range sbs {
		if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready = append(ready, sb.GetId())
		}
	}
	switch len(ready) {
	case 0:
		return "", nil
	case 1:
		return ready[0], nil
	}
	return "", fmt.Errorf("pod %s has %d ready sandboxes: %v", uid, len(ready), ready)
}

// SandboxPID returns the PID, in the node's PID namespace, of the
// sandbox's pause process, as containerd's verbose status tells it.
func (n *Node) SandboxPID(t testing.TB, id string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rt, err := n.Runtime(ctx)
	require.NoError(t, err)
	defer rt.Close(ctx)
	st, err := rt.PodSandboxStatus(ctx, id, true)
	require.NoError(t, err)
	var info struct {
		Pid int `json:"pid"`
	}
	require.NoError(t, json.Unmarshal([]byte(st.GetInfo()["info"]), &info), "the sandbox's verbose info")
	require.NotZero(t, info.Pid, "the sandbox's pid")
	return info.Pid
}

// PodUIDLabel is the label the kubelet puts on a pod's sandboxes: its UID.
const PodUIDLabel = "io.kubernetes.pod.uid"
