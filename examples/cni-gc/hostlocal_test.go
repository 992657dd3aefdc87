package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/procbench"
	"github.com/podsweeper/podsweeper/internal/testcontainerd"
	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/internal/testnode"
)

// hostLocalRange is the node's range in TestCollectorAsDeployedFreesLeakedReservations:
// six addresses, .2 to .7 (.1 is the bridge's gateway).
const hostLocalRange = 6

// The leaks the cache never records, cured by the collector as deployed:
// on a containerd node whose network chains the bridge (host-local on a
// range of six) and a plugin that fails ADD and DEL on demand, the range is
// filled three ways. Two pods run. A third pod's first sandbox is caught
// between host-local's reservation and the end of its ADD when containerd
// is SIGKILLed (containerd#12923): containerd 2.4 saved the sandbox before
// its ADD, lists it again, not ready, and the kubelet's StopPodSandbox
// releases the address before the collector starts (a runtime that forgets
// the sandbox leaks it, and the collector's row 18 frees it: adapters/cni's
// tests). A pod deleted while its network's DEL fails (and fails on to the
// end) keeps its sandbox listed, not ready, and its address: on containerd
// a failed DEL leaks nothing the runtime forgot, and the collector keeps a
// reservation whose sandbox the runtime lists (row 15). Then every sandbox
// the kubelet tries for a fourth pod leaks the address host-local reserved
// before the chained plugin failed ADD, and DEL failed in containerd's
// cleanup (containerd drops the sandbox, and libcni caches nothing:
// containerd#12130), until the range is full and the pod is stuck. Then
// the collector's binary runs inside the node with deploy/daemonset.yaml's
// flags and capabilities, a reservation grace of 5 s and a resync every
// 2 s: first as a dry run, whose log lists exactly the leaked reservations
// and which frees nothing; then for real: it frees exactly the leaked
// reservations, each with a DEL through the network's config, and every
// pod is Running within 60 s of its start. Every second, every pod seen
// Running keeps its sandbox and its address in host-local, and the deleted
// pod's sandbox, while containerd lists it, keeps its address.
func TestCollectorAsDeployedFreesLeakedReservations(t *testing.T) {
	c := testnode.StartCluster(t)
	testkube.ApplyKustomization(t, c.Client, "deploy")
	plugins := t.TempDir()
	procbench.Build(t, filepath.Join(plugins, "chained"), "./testdata/chained")
	conf := fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":%q,"plugins":[{"type":"bridge","bridge":%q,"isGateway":true,"ipMasq":false,`+
		`"ipam":{"type":"host-local","ranges":[[{"subnet":"10.88.0.0/28","rangeStart":"10.88.0.2","rangeEnd":"10.88.0.7"}]]}},{"type":"chained"}]}`,
		testcontainerd.NetworkName, testcontainerd.BridgeName)
	n := testcontainerd.Start(t, c, "node-hl", testcontainerd.Options{ConfList: conf, PluginDirs: []string{plugins}})
	c.CreateNamespace(t, "hl")
	bin := filepath.Join(t.TempDir(), "cni-gc")
	procbench.Build(t, bin, ".")
	args, env, _ := deployedCommandLine(t, n)
	args = append(args, "--reservation-grace=5s", "--resync-interval=2s")
	privileges := deployedPrivileges(t)

	var pods []*corev1.Pod
	for i := range 2 {
		pods = append(pods, n.RunPod(t, n.NewPod("hl", fmt.Sprintf("running-%d", i))))
	}
	// containerd 2.4 mostly saved the sandbox before its ADD: started
	// again, it lists it, not ready, with no cache entry of the network,
	// and the kubelet's StopPodSandbox DELs it. Nothing leaks; the
	// collector, if it ran, would have to keep that reservation. Killed
	// earlier, containerd cannot recover the sandbox ("failed to recover
	// sandbox state") and never lists it: its reservation leaks, with no
	// cache entry, and the collector must free it with the others.
	killed := killTheRuntimeInADD(t, c, n, plugins, "killed")
	pods = append(pods, killed.pod)
	sbs, err := n.Sandboxes(context.Background(), "")
	require.NoError(t, err)
	killedListed := slices.ContainsFunc(sbs, func(sb *runtimeapi.PodSandbox) bool { return sb.GetId() == killed.id })
	if killedListed {
		require.True(t, slices.ContainsFunc(sbs, func(sb *runtimeapi.PodSandbox) bool {
			return sb.GetId() == killed.id && sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_NOTREADY
		}), "containerd, started again, lists the sandbox caught in ADD, not ready")
		require.Eventually(t, func() bool { return n.Addresses(t)[killed.ip] != killed.id }, 60*time.Second, 100*time.Millisecond,
			"the kubelet's StopPodSandbox releases %s of the sandbox caught in ADD", killed.ip)
	} else {
		t.Logf("containerd, started again, lost the sandbox caught in ADD: %s of %s leaks", killed.ip, killed.id)
	}
	n.WaitRunning(t, killed.pod)
	// The chained plugin fails DEL: the pod deleted keeps its sandbox, and
	// its address, while containerd lists it.
	require.NoError(t, os.WriteFile(filepath.Join(plugins, "fail-del"), nil, 0o644))
	deleted := n.RunPod(t, n.NewPod("hl", "deleted"))
	deletedSandbox := sandboxOf(t, n, deleted)
	require.NoError(t, c.Client.Delete(context.Background(), deleted))
	// And ADD: each sandbox tried leaks an address.
	require.NoError(t, os.WriteFile(filepath.Join(plugins, "fail-add"), nil, 0o644))
	stuck := n.NewPod("hl", "stuck")
	require.NoError(t, c.Client.Create(context.Background(), stuck))
	pods = append(pods, stuck)
	filled := time.Now().Add(3 * time.Minute)
	for len(n.Addresses(t)) < hostLocalRange {
		require.True(t, time.Now().Before(filled), "the failed ADDs fill the range of %d within 3 minutes: %v", hostLocalRange, n.Addresses(t))
		time.Sleep(200 * time.Millisecond)
	}
	require.Equal(t, deletedSandbox.id, n.Addresses(t)[deletedSandbox.ip], "the deleted pod's sandbox keeps its address while its DEL fails")
	// The kubelet stops the deleted pod's sandbox in its own time: the
	// range may fill before it has.
	require.Eventually(t, func() bool {
		sbs, err := n.Sandboxes(context.Background(), deletedSandbox.uid)
		require.NoError(t, err)
		require.Len(t, sbs, 1, "containerd lists the deleted pod's sandbox while its DEL fails")
		return sbs[0].GetState() == runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	}, 60*time.Second, 100*time.Millisecond, "the kubelet stops the deleted pod's sandbox, which stays listed, not ready")
	// The plugin fixed, but for the deleted pod's sandbox: containerd
	// lists it, not ready, while the collector runs.
	require.NoError(t, os.Remove(filepath.Join(plugins, "fail-add")))
	require.NoError(t, os.WriteFile(filepath.Join(plugins, "fail-del"), []byte(deletedSandbox.id+"\n"), 0o644))
	// A sandbox whose ADD was under way when the plugin was fixed may
	// still be created: containerd lists it only after ADD, create and
	// start. The leaked set is what two reads 3 s apart agree on.
	var leaked map[string]string
	for settled := time.Now().Add(time.Minute); ; {
		before := leakedReservations(t, n)
		time.Sleep(3 * time.Second)
		leaked = leakedReservations(t, n)
		if maps.Equal(before, leaked) {
			break
		}
		require.True(t, time.Now().Before(settled), "the leaked set settles within a minute: %v, then %v", before, leaked)
	}
	// Four addresses are held (two running pods, the killed pod's new
	// sandbox, the deleted pod's); of the two the failed ADDs took, one
	// may be the stuck pod's sandbox created meanwhile, and one whose ADD
	// was failing as the plugin was fixed released by containerd's own
	// cleanup: the range was full, and at least one address leaked.
	require.GreaterOrEqual(t, len(leaked), 1, "the failed ADDs leaked an address at least: %v", n.Addresses(t))
	if !killedListed {
		require.Equal(t, killed.id, leaked[killed.ip], "the sandbox containerd lost in ADD leaked its address")
	}
	loopbacks := 0 // containerd's own loopback network may be cached for a leaked sandbox: its DEL stopped at podnet's
	for file, e := range n.CacheEntries(t) {
		if slices.Contains(slices.Collect(maps.Values(leaked)), e.ContainerID) {
			require.NotEqual(t, testcontainerd.NetworkName, e.NetworkName, "libcni cached no ADD of a leaked sandbox to its network: %s", file)
			loopbacks++
		}
	}
	t.Logf("the range filled: %d of its addresses held, %d of sandboxes containerd does not list, and no cache entry of theirs in %s (%d of the loopback)",
		len(n.Addresses(t)), len(leaked), testcontainerd.NetworkName, loopbacks)

	// A dry run lists exactly the leaked reservations, and frees none.
	dry := startDeployedCollector(t, n, bin, append(slices.Clone(args), "--dry-run"), env, privileges)
	deadline := time.Now().Add(30 * time.Second)
	for len(reservationLines(t, dry.logs.String(), "dry run: would free a host-local reservation")) < len(leaked) {
		require.True(t, time.Now().Before(deadline), "the dry run lists the leaked reservations within 30 s; its log:\n%s", dry.logs)
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(5 * time.Second) // two resyncs more: nothing else is listed
	dry.stop()
	assert.Equal(t, leaked, reservationLines(t, dry.logs.String(), "dry run: would free a host-local reservation"), "the dry run's report is the leaked set")
	assert.Empty(t, reservationLines(t, dry.logs.String(), cni.LogMessageReservationFreed), "a dry run frees nothing")
	require.Len(t, leakedReservations(t, n), len(leaked), "still leaked after the dry run")

	gc := startDeployedCollector(t, n, bin, args, env, privileges)
	started := time.Now()
	rangeFree := make(chan time.Duration, 1)
	go func() { // the leaked files, every 20 ms: when the last one went
		dir := filepath.Join(n.CNICacheDir, "networks", n.Network)
		for time.Since(started) < 60*time.Second {
			left := 0
			for ip, id := range leaked {
				b, err := os.ReadFile(filepath.Join(dir, ip))
				if holder, _, _ := strings.Cut(string(b), "\r\n"); err == nil && holder == id {
					left++
				}
			}
			if left == 0 {
				rangeFree <- time.Since(started)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		close(rangeFree)
	}()
	live := map[string]runningSandbox{}
	var allRunning time.Duration
	for {
		select {
		case err := <-gc.exited:
			t.Fatalf("the collector exited (%v); its log:\n%s", err, gc.logs)
		default:
		}
		for _, p := range pods {
			if _, ok := live[p.Name]; ok {
				continue
			}
			got := &corev1.Pod{}
			require.NoError(t, c.Client.Get(context.Background(), client.ObjectKeyFromObject(p), got))
			if !testcontainerd.Running(got) {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			id, err := n.ReadySandbox(ctx, string(got.UID))
			cancel()
			require.NoError(t, err)
			if id != "" {
				live[p.Name] = runningSandbox{uid: string(got.UID), id: id, ip: got.Status.PodIP, netns: n.NetNS(t, id)}
			}
		}
		for _, name := range slices.Sorted(maps.Keys(live)) {
			live[name].intact(t, n, name)
		}
		deletedSandbox.keptWhileListed(t, n)
		if len(live) == len(pods) && allRunning == 0 {
			allRunning = time.Since(started)
		}
		if allRunning > 0 && time.Since(started) > allRunning+5*time.Second { // two resyncs more, every pod checked again
			break
		}
		require.True(t, time.Since(started) < 60*time.Second, "every pod Running within 60 s of the collector's start: %d of %d", len(live), len(pods))
		time.Sleep(time.Second)
	}
	gc.stop()
	assert.Equal(t, leaked, reservationLines(t, gc.logs.String(), cni.LogMessageReservationFreed), "the collector freed exactly the leaked reservations")
	assert.Empty(t, leakedReservations(t, n), "no leaked reservation is left")
	held := n.Addresses(t)
	assert.Len(t, held, len(pods)+1, "host-local holds one address a pod, and the deleted pod's sandbox's")
	assert.Equal(t, deletedSandbox.id, held[deletedSandbox.ip], "the deleted pod's sandbox, listed while its DEL fails, keeps its address")
	for name, l := range live {
		assert.Equal(t, l.id, held[l.ip], "pod %s's address is its sandbox's", name)
	}
	calls, err := os.ReadFile(filepath.Join(plugins, "calls.log"))
	require.NoError(t, err)
	for ip, id := range leaked {
		assert.Contains(t, string(calls), "DEL "+id+" eth0 netns=\n", "the leak of %s was DELed through the chain, without a namespace", ip)
	}
	free, ok := <-rangeFree
	require.True(t, ok, "the leaked reservations went within 60 s")
	t.Logf("collector start → the %d leaked reservations freed %v, every pod Running %v; the DELs themselves took %v in all (the reference: a plain DEL of each)",
		len(leaked), free.Round(time.Millisecond), allRunning.Round(time.Millisecond), delsTook(t, gc.logs.String()).Round(time.Millisecond))
	t.Logf("load average %s", procbench.LoadAvg())
}

// caughtReservation is an address host-local reserved for a sandbox whose
// ADD the runtime's crash cut short.
type caughtReservation struct {
	pod *corev1.Pod
	id  string // the sandbox's container ID in host-local's file
	ip  string
}

// killTheRuntimeInADD creates a pod whose first sandbox's ADD takes 2 s
// after host-local reserved its address (the chained plugin's slow-add),
// SIGKILLs containerd (and the plugins it runs) within that time, and
// starts it again: the runtime exits between ADD and saving its result
// (containerd#12923). It returns the pod and the address that sandbox
// holds.
func killTheRuntimeInADD(t *testing.T, c *testnode.Cluster, n *testcontainerd.Node, plugins, name string) caughtReservation {
	t.Helper()
	slow := filepath.Join(plugins, "slow-add")
	require.NoError(t, os.WriteFile(slow, nil, 0o644))
	before := n.Addresses(t)
	p := n.NewPod("hl", name)
	require.NoError(t, c.Client.Create(context.Background(), p))
	r := caughtReservation{pod: p}
	require.Eventually(t, func() bool {
		for ip, id := range n.Addresses(t) {
			if _, ok := before[ip]; !ok {
				r.ip, r.id = ip, id
				return true
			}
		}
		return false
	}, 60*time.Second, 10*time.Millisecond, "host-local reserves an address for pod %s's first sandbox", name)
	n.StopContainerd()
	require.NoError(t, os.Remove(slow))
	n.StartContainerd(t)
	return r
}

// sandboxOf returns the running pod's ready sandbox and its network.
func sandboxOf(t *testing.T, n *testcontainerd.Node, pod *corev1.Pod) runningSandbox {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := n.ReadySandbox(ctx, string(pod.UID))
	require.NoError(t, err)
	require.NotEmpty(t, id, "pod %s has a ready sandbox", pod.Name)
	return runningSandbox{uid: string(pod.UID), id: id, ip: pod.Status.PodIP, netns: n.NetNS(t, id)}
}

// keptWhileListed fails if host-local no longer holds l's address for l's
// sandbox while containerd still lists that sandbox.
func (l runningSandbox) keptWhileListed(t *testing.T, n *testcontainerd.Node) {
	t.Helper()
	held := n.Addresses(t)[l.ip]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sbs, err := n.Sandboxes(ctx, l.uid)
	require.NoError(t, err)
	if slices.ContainsFunc(sbs, func(sb *runtimeapi.PodSandbox) bool { return sb.GetId() == l.id }) {
		require.Equal(t, l.id, held, "containerd lists sandbox %s, not ready: host-local still holds %s for it", l.id, l.ip)
	}
}

// leakedReservations returns the addresses host-local holds for a sandbox
// containerd does not list, each with that sandbox's ID.
func leakedReservations(t *testing.T, n *testcontainerd.Node) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rt, err := n.Runtime(ctx)
	require.NoError(t, err)
	sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{})
	require.NoError(t, err)
	out := map[string]string{}
	for ip, id := range n.Addresses(t) {
		if !slices.ContainsFunc(sbs, func(sb *runtimeapi.PodSandbox) bool { return sb.GetId() == id }) {
			out[ip] = id
		}
	}
	return out
}

// reservationLines reads the collector's JSON log lines whose message is
// msg: the address and container ID of each.
func reservationLines(t *testing.T, log, msg string) map[string]string {
	t.Helper()
	out := map[string]string{}
	s := bufio.NewScanner(strings.NewReader(log))
	s.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for s.Scan() {
		var line struct {
			Msg         string `json:"msg"`
			IP          string `json:"ip"`
			ContainerID string `json:"containerID"`
		}
		if json.Unmarshal(s.Bytes(), &line) != nil || line.Msg != msg {
			continue
		}
		out[line.IP] = line.ContainerID
	}
	require.NoError(t, s.Err())
	return out
}

// delsTook adds up the "took" of the collector's lines of reservations
// freed: how long their DELs ran.
func delsTook(t *testing.T, log string) time.Duration {
	t.Helper()
	var all time.Duration
	for line := range strings.Lines(log) {
		var l struct {
			Msg  string `json:"msg"`
			Took string `json:"took"`
		}
		if json.Unmarshal([]byte(line), &l) != nil || l.Msg != cni.LogMessageReservationFreed {
			continue
		}
		d, err := time.ParseDuration(l.Took)
		require.NoError(t, err, "took in %s", line)
		all += d
	}
	return all
}

// deployedCollector is the collector's binary running inside a node.
type deployedCollector struct {
	logs   *testkube.SyncBuffer
	exited chan error
	stop   func()
}

// startDeployedCollector runs bin with args and env inside the node n,
// with the DaemonSet's privileges; stop (also run when the test ends)
// sends it SIGTERM and waits for it.
func startDeployedCollector(t *testing.T, n *testcontainerd.Node, bin string, args, env, privileges []string) *deployedCollector {
	t.Helper()
	d := &deployedCollector{logs: &testkube.SyncBuffer{}, exited: make(chan error, 1)}
	cmd := n.Command(context.Background(), "setpriv", append(append(slices.Clone(privileges), bin), args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = d.logs, d.logs
	require.NoError(t, cmd.Start())
	go func() { d.exited <- cmd.Wait() }()
	stopped := false
	d.stop = func() {
		if stopped {
			return
		}
		stopped = true
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-d.exited
		}
	}
	t.Cleanup(func() {
		d.stop()
		if t.Failed() {
			t.Logf("the collector's log:\n%s", d.logs)
		}
	})
	return d
}

// churnCycles is how many pods TestCollectorKeepsLiveReservationsThroughChurn
// creates and deletes: 100 in make test, PODSWEEPER_CHURN_CYCLES for a
// long run.
func churnCycles(t *testing.T) int {
	if v := os.Getenv("PODSWEEPER_CHURN_CYCLES"); v != "" {
		var n int
		_, err := fmt.Sscan(v, &n)
		require.NoError(t, err, "PODSWEEPER_CHURN_CYCLES")
		return n
	}
	return 100
}

// Pods created and deleted, five at a time on the range of six, while the
// collector as deployed runs with a reservation grace of 5 s and a resync
// every second, each sandbox's ADD taking 2 s after host-local reserved its
// address (the chained plugin's slow-add: meanwhile no cache entry of the
// network names the sandbox and containerd does not list it): no
// reservation is freed at all (none leaked), every pod
// seen Running keeps its address in host-local for its sandbox (watched
// every second), no address is held by two running pods, no sandbox fails
// for want of an address, and the range is empty at the end.
func TestCollectorKeepsLiveReservationsThroughChurn(t *testing.T) {
	cycles := churnCycles(t)
	c := testnode.StartCluster(t)
	testkube.ApplyKustomization(t, c.Client, "deploy")
	plugins := t.TempDir()
	procbench.Build(t, filepath.Join(plugins, "chained"), "./testdata/chained")
	conf := fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":%q,"plugins":[{"type":"bridge","bridge":%q,"isGateway":true,"ipMasq":false,`+
		`"ipam":{"type":"host-local","ranges":[[{"subnet":"10.88.0.0/28","rangeStart":"10.88.0.2","rangeEnd":"10.88.0.7"}]]}},{"type":"chained"}]}`,
		testcontainerd.NetworkName, testcontainerd.BridgeName)
	require.NoError(t, os.WriteFile(filepath.Join(plugins, "slow-add"), nil, 0o644))
	n := testcontainerd.Start(t, c, "node-churn", testcontainerd.Options{ConfList: conf, PluginDirs: []string{plugins}})
	c.CreateNamespace(t, "churn")
	bin := filepath.Join(t.TempDir(), "cni-gc")
	procbench.Build(t, bin, ".")
	args, env, _ := deployedCommandLine(t, n)
	args = append(args, "--reservation-grace=5s", "--resync-interval=1s")
	gc := startDeployedCollector(t, n, bin, args, env, deployedPrivileges(t))
	require.Eventually(t, func() bool { return strings.Contains(gc.logs.String(), "starting the CNI collector") }, 60*time.Second, 20*time.Millisecond)

	started := time.Now()
	batch := hostLocalRange - 1
	for done := 0; done < cycles; done += batch {
		var pods []*corev1.Pod
		for i := range min(batch, cycles-done) {
			p := n.NewPod("churn", fmt.Sprintf("p-%d", done+i))
			require.NoError(t, c.Client.Create(context.Background(), p))
			pods = append(pods, p)
		}
		running := map[string]runningSandbox{}
		for len(running) < len(pods) {
			for _, p := range pods {
				if _, ok := running[p.Name]; ok {
					continue
				}
				got := &corev1.Pod{}
				require.NoError(t, c.Client.Get(context.Background(), client.ObjectKeyFromObject(p), got))
				if !testcontainerd.Running(got) {
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				id, err := n.ReadySandbox(ctx, string(got.UID))
				cancel()
				require.NoError(t, err)
				if id != "" {
					p.UID = got.UID
					running[p.Name] = runningSandbox{uid: string(got.UID), id: id, ip: got.Status.PodIP, netns: n.NetNS(t, id)}
				}
			}
			held := n.Addresses(t)
			ips := map[string]string{}
			for name, l := range running {
				require.Equal(t, l.id, held[l.ip], "pod %s keeps %s for its sandbox", name, l.ip)
				require.Empty(t, ips[l.ip], "%s is held by %s and %s", l.ip, ips[l.ip], name)
				ips[l.ip] = name
			}
			require.True(t, time.Since(started) < time.Duration(cycles)*10*time.Second, "the pods run: %d of %d", len(running), len(pods))
			time.Sleep(100 * time.Millisecond)
		}
		// A second more, with every resync of the collector, before they go.
		time.Sleep(time.Second)
		for name, l := range running {
			l.intact(t, n, name)
		}
		for _, p := range pods {
			for _, e := range n.Events(t, p) {
				require.False(t, strings.HasPrefix(e, "FailedCreatePodSandBox"), "pod %s: %s", p.Name, e)
			}
			require.NoError(t, c.Client.Delete(context.Background(), p))
		}
		for _, p := range pods {
			require.Eventually(t, func() bool {
				err := c.Client.Get(context.Background(), client.ObjectKeyFromObject(p), &corev1.Pod{})
				return client.IgnoreNotFound(err) == nil && err != nil
			}, 60*time.Second, 100*time.Millisecond, "pod %s deleted", p.Name)
		}
	}
	require.Eventually(t, func() bool { return len(n.Addresses(t)) == 0 }, 30*time.Second, 100*time.Millisecond,
		"the runtime's DELs empty the range: %v", n.Addresses(t))
	gc.stop()
	assert.Empty(t, reservationLines(t, gc.logs.String(), cni.LogMessageReservationFreed), "no reservation freed: none leaked")
	t.Logf("%d pods created and deleted in %v with the collector running", cycles, time.Since(started).Round(time.Millisecond))
}
