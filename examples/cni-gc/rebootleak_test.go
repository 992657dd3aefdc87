package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/internal/procbench"
	"github.com/podsweeper/podsweeper/internal/testcontainerd"
	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/internal/testnode"
	"github.com/podsweeper/podsweeper/ports"
)

// The reboot leak host-local's users know by name, cured by the collector
// as deployed: five pods fill the node's /29, the node loses containerd's
// state and keeps /var/lib/cni, and every pod is stuck with "no IP
// addresses available in range set" (internal/testcontainerd's
// ReproduceRebootLeak). Then the collector's binary, built with go build,
// starts inside the node with deploy/daemonset.yaml's flags, environment
// (its paths the node's where they differ) and capabilities, and the RBAC
// of its ServiceAccount: it frees the five dead sandboxes' attachments (row
// 12: the pods live on, their sandboxes are dead and no new one is ready),
// and the kubelet has every pod Running again. Throughout, every pod seen
// Running keeps its sandbox, its address in host-local and the eth0 of its
// network namespace, and the collector frees nothing but the dead
// sandboxes; at the end it holds each pod's new sandbox and keeps it.
func TestCollectorAsDeployedCuresTheRebootLeak(t *testing.T) {
	const pods = 5 // the /29's addresses
	c := testnode.StartCluster(t)
	testkube.ApplyKustomization(t, c.Client, "deploy")
	n := testcontainerd.Start(t, c, "node-reboot", testcontainerd.Options{})
	c.CreateNamespace(t, "leak")
	// Built first: the build's CPU stays out of the cure's figures.
	bin := filepath.Join(t.TempDir(), "cni-gc")
	procbench.Build(t, bin, ".")
	args, env, cfg := deployedCommandLine(t, n)
	privileges := deployedPrivileges(t)

	stuck := n.ReproduceRebootLeak(t, "leak", pods)
	dead := n.Addresses(t) // address → the dead sandbox holding it
	require.Len(t, dead, pods)
	deadSandboxes := map[string]bool{}
	for _, id := range dead {
		deadSandboxes[id] = true
	}
	deadAttachments := map[string]bool{} // libcni's cache files of the dead sandboxes: lo and eth0 each
	for file, e := range n.CacheEntries(t) {
		require.True(t, deadSandboxes[e.ContainerID], "the cache holds the dead sandboxes only: %s", file)
		deadAttachments[file] = true
	}

	clock := startCureClock(c.Client, n, stuck, dead)
	logs := &testkube.SyncBuffer{}
	cmd := n.Command(context.Background(), "setpriv", append(append(privileges, bin), args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logs, logs
	started := time.Now()
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			t.Logf("the collector's log:\n%s", logs)
		}
	})

	// Until every pod is Running, and then until the collector holds and
	// keeps every new sandbox: no running sandbox loses its network.
	live := map[string]runningSandbox{} // pod name → its sandbox once seen Running
	status := n.HTTPClient()
	deadline := started.Add(cureTimeout)
	var keptSince time.Time
	for {
		select {
		case err := <-exited:
			t.Fatalf("the collector exited (%v); its log:\n%s", err, logs)
		default:
		}
		for _, p := range stuck {
			if _, ok := live[p.Name]; ok {
				continue
			}
			got := &corev1.Pod{}
			require.NoError(t, c.Client.Get(context.Background(), client.ObjectKeyFromObject(p), got))
			if !testcontainerd.Running(got) {
				continue
			}
			require.Equal(t, p.UID, got.UID, "pod %s is the same pod", p.Name)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			id, err := n.ReadySandbox(ctx, string(got.UID))
			cancel()
			require.NoError(t, err)
			if id == "" {
				continue // Running in the API, not ready in the runtime any more: seen next round
			}
			require.False(t, deadSandboxes[id], "pod %s runs in a new sandbox", p.Name)
			live[p.Name] = runningSandbox{uid: string(got.UID), id: id, ip: got.Status.PodIP, netns: n.NetNS(t, id)}
		}
		for _, name := range slices.Sorted(maps.Keys(live)) {
			live[name].intact(t, n, name)
		}
		if len(live) == pods && keptSince.IsZero() && collectorKeeps(status, cfg.MetricsBindAddress, live) {
			keptSince = time.Now()
		}
		// Two more sweeps once it keeps them all, every one checked again.
		if !keptSince.IsZero() && time.Since(keptSince) > 2*cfg.SweepInterval {
			break
		}
		require.True(t, time.Now().Before(deadline), "within %v of the collector's start: %d of %d pods Running again, kept by the collector: %v",
			cureTimeout, len(live), pods, !keptSince.IsZero())
		time.Sleep(100 * time.Millisecond)
	}
	fig := clock.stop()

	// It freed the dead sandboxes' attachments, once each, for
	// SandboxDead, and nothing else.
	freed := freedAttachments(t, logs.String())
	assert.Equal(t, slices.Sorted(maps.Keys(deadAttachments)), slices.Sorted(maps.Keys(freed)), "the collector freed exactly the dead sandboxes' attachments")
	for file, reasons := range freed {
		assert.Equal(t, []string{string(ports.ReasonSandboxDead)}, reasons, "attachment %s freed once, for its sandbox's death", file)
	}
	held := n.Addresses(t)
	assert.Len(t, held, pods, "host-local holds one address a pod")
	for name, l := range live {
		assert.Equal(t, l.id, held[l.ip], "pod %s's address is its new sandbox's", name)
	}
	for file, e := range n.CacheEntries(t) {
		assert.False(t, deadSandboxes[e.ContainerID], "the cache entry %s of a dead sandbox is gone", file)
	}

	require.Len(t, fig.freed, pods, "every dead sandbox's address file went")
	require.Len(t, fig.ready, pods, "every pod Ready")
	t.Logf("deployed command line: setpriv %s %s %s", strings.Join(privileges, " "), filepath.Base(bin), strings.Join(args, " "))
	t.Logf("collector start → range freed: first address %v, all %d %v; → first pod Ready %v, last pod Ready %v",
		fig.firstFreed().Round(time.Millisecond), pods, fig.lastFreed().Round(time.Millisecond),
		fig.firstReady().Round(time.Millisecond), fig.lastReady().Round(time.Millisecond))
	t.Logf("load average %s", procbench.LoadAvg())
}

// cureTimeout bounds the wait from the collector's start until it holds
// and keeps every new sandbox: its first sweep (5 s), the kubelet's next
// sandbox attempts, and the resync that lists the new sandboxes (30 s).
const cureTimeout = 3 * time.Minute

// deployedCommandLine returns the collector's arguments and environment as
// deploy/daemonset.yaml runs it, for the node n: the DaemonSet's args, the
// CNI plugin and config directories replaced by the node's (its
// /opt/cni/bin and /etc/cni/net.d are the host's), a kubeconfig that acts
// as the DaemonSet's ServiceAccount, and NODE_NAME (the downward API's
// spec.nodeName). containerd's socket and libcni's cache are at the
// DaemonSet's paths inside the node, and its addresses are in the node's
// network namespace, as a hostNetwork pod's. It also returns the parsed
// command line.
func deployedCommandLine(t *testing.T, n *testcontainerd.Node) (args, env []string, cfg config) {
	t.Helper()
	var ds appsv1.DaemonSet
	testkube.ReadManifest(t, "deploy", "daemonset.yaml", &ds)
	spec := ds.Spec.Template.Spec
	require.Len(t, spec.Containers, 1)
	ctr := spec.Containers[0]
	nodeFromAPI := slices.ContainsFunc(ctr.Env, func(e corev1.EnvVar) bool {
		return e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
	})
	require.True(t, nodeFromAPI, "the DaemonSet sets NODE_NAME to its node")
	node := map[string]string{
		"--cni-bin-dir":  strings.Join(n.CNIPluginDirs, ","),
		"--cni-conf-dir": n.CNIConfDir,
	}
	replaced := 0
	for _, a := range ctr.Args {
		name, _, _ := strings.Cut(a, "=")
		require.NotEqual(t, "--kubeconfig", name, "the DaemonSet runs with its ServiceAccount's token")
		if v, ok := node[name]; ok {
			a = name + "=" + v
			replaced++
		}
		args = append(args, a)
	}
	require.Equal(t, len(node), replaced, "the DaemonSet's args name the plugins' and configs' directories: %q", ctr.Args)
	kubeconfig, err := os.ReadFile(n.KubeConfig)
	require.NoError(t, err)
	sa := "system:serviceaccount:" + ds.Namespace + ":" + spec.ServiceAccountName
	args = append(args, "--kubeconfig="+testkube.ImpersonatingKubeconfig(t, kubeconfig, sa))
	env = []string{"NODE_NAME=" + n.Name}
	cfg, err = parseFlags(args, func(string) string { return n.Name }, &bytes.Buffer{})
	require.NoError(t, err)
	return args, env, cfg
}

// deployedPrivileges returns the setpriv(1) arguments that leave a
// process of root only what the DaemonSet's container has: its
// securityContext runs it as root, drops every capability and adds a few
// (the plugins' DEL enters network namespaces and deletes links), and
// allows no privilege escalation. Its seccomp profile and read-only root
// filesystem are not reproduced.
func deployedPrivileges(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("setpriv"); err != nil {
		testnode.Unavailable(t, "setpriv is not installed (util-linux)")
	}
	var ds appsv1.DaemonSet
	testkube.ReadManifest(t, "deploy", "daemonset.yaml", &ds)
	sc := ds.Spec.Template.Spec.Containers[0].SecurityContext
	require.NotNil(t, sc)
	require.NotNil(t, sc.RunAsUser)
	require.Zero(t, *sc.RunAsUser, "the collector runs as root")
	require.NotNil(t, sc.Capabilities)
	require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	bounding := "-all"
	for _, c := range sc.Capabilities.Add {
		bounding += ",+" + strings.ToLower(string(c))
	}
	out := []string{"--bounding-set=" + bounding}
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		out = append(out, "--no-new-privs")
	}
	return append(out, "--")
}

// runningSandbox is a pod's sandbox seen Running, and its network.
type runningSandbox struct{ uid, id, ip, netns string }

// intact fails unless the pod's ready sandbox is still l, host-local still
// holds l's address for it, libcni's cache still has its entry, and its
// network namespace's eth0 still has the address.
func (l runningSandbox) intact(t *testing.T, n *testcontainerd.Node, pod string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := n.ReadySandbox(ctx, l.uid)
	require.NoError(t, err)
	require.Equal(t, l.id, id, "pod %s still runs in sandbox %s", pod, l.id)
	intact(t, n, l.id, l.ip, l.netns)
}

// collectorKeeps reports whether the collector's status page (on its
// metrics address, in the node's network namespace) lists every live
// sandbox, and only those, each kept by row 9 (the pod's current sandbox).
func collectorKeeps(hc *http.Client, addr string, live map[string]runningSandbox) bool {
	resp, err := hc.Get("http://" + addr + k8s.StatusPath)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var status []k8s.PUStatus
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&status) != nil || len(status) != len(live) {
		return false
	}
	want := map[string]string{}
	for _, l := range live {
		want[l.uid] = l.id
	}
	for _, s := range status {
		if want[s.PUID] != s.SandboxID || s.LastRow != 9 {
			return false
		}
	}
	return true
}

// freedAttachments reads the collector's JSON log lines: for each
// attachment it freed, named as libcni's cache file
// (<network>-<sandbox>-<interface>), the reason of each time.
func freedAttachments(t *testing.T, log string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	s := bufio.NewScanner(strings.NewReader(log))
	s.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for s.Scan() {
		var line struct {
			Msg       string `json:"msg"`
			Network   string `json:"network"`
			SandboxID string `json:"sandboxID"`
			IfName    string `json:"ifName"`
			Reason    string `json:"reason"`
		}
		if json.Unmarshal(s.Bytes(), &line) != nil || line.Msg != cni.LogMessageFreed {
			continue
		}
		require.NotEmpty(t, line.SandboxID, "a freed attachment's line names its sandbox: %s", s.Text())
		file := line.Network + "-" + line.SandboxID + "-" + line.IfName
		out[file] = append(out[file], line.Reason)
	}
	require.NoError(t, s.Err())
	return out
}

// cureClock times the cure from the collector's start: when each dead
// sandbox's address file went (removed, or held for another sandbox
// since), and when each stuck pod was Ready again. It polls every 20 ms,
// in a goroutine of its own, beside the test's slower checks.
type cureClock struct {
	stopped chan struct{}
	done    chan cureFigures
}

// cureFigures are a cureClock's times, from the collector's start.
type cureFigures struct {
	freed map[string]time.Duration // address → when its dead sandbox's file went
	ready map[string]time.Duration // pod name → when it was Ready
}

// startCureClock starts the clock; its zero is now, right before the
// collector starts.
func startCureClock(c client.Client, n *testcontainerd.Node, pods []*corev1.Pod, dead map[string]string) *cureClock {
	k := &cureClock{stopped: make(chan struct{}), done: make(chan cureFigures, 1)}
	dir := filepath.Join(n.CNICacheDir, "networks", n.Network)
	start := time.Now()
	go func() {
		fig := cureFigures{freed: map[string]time.Duration{}, ready: map[string]time.Duration{}}
		var wg sync.WaitGroup
		var mu sync.Mutex
		wg.Go(func() { // the address files: a file read each, every 20 ms
			for {
				for ip, id := range dead {
					b, err := os.ReadFile(filepath.Join(dir, ip))
					holder, _, _ := strings.Cut(string(b), "\n")
					mu.Lock()
					if _, ok := fig.freed[ip]; !ok && (os.IsNotExist(err) || err == nil && strings.TrimSpace(holder) != id) {
						fig.freed[ip] = time.Since(start)
					}
					mu.Unlock()
				}
				select {
				case <-k.stopped:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
		wg.Go(func() { // the pods: a get each, every 20 ms
			for {
				for _, p := range pods {
					got := &corev1.Pod{}
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					err := c.Get(ctx, client.ObjectKeyFromObject(p), got)
					cancel()
					mu.Lock()
					if _, ok := fig.ready[p.Name]; !ok && err == nil && got.UID == p.UID && podReady(got) {
						fig.ready[p.Name] = time.Since(start)
					}
					mu.Unlock()
				}
				select {
				case <-k.stopped:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
		wg.Wait()
		k.done <- fig
	}()
	return k
}

// stop stops the clock and returns its figures.
func (k *cureClock) stop() cureFigures {
	close(k.stopped)
	return <-k.done
}

func (f cureFigures) firstFreed() time.Duration {
	return slices.Min(slices.Collect(maps.Values(f.freed)))
}
func (f cureFigures) lastFreed() time.Duration {
	return slices.Max(slices.Collect(maps.Values(f.freed)))
}
func (f cureFigures) firstReady() time.Duration {
	return slices.Min(slices.Collect(maps.Values(f.ready)))
}
func (f cureFigures) lastReady() time.Duration {
	return slices.Max(slices.Collect(maps.Values(f.ready)))
}

// podReady reports whether the pod's Ready condition is true.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
