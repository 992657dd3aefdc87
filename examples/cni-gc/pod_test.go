package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcontainerd"
	"github.com/podsweeper/podsweeper/internal/testdeploy"
)

// The collector as an operator installs it cures the reboot leak on a
// real containerd node. Five pods fill the node's /29; the node loses
// containerd's state and keeps /var/lib/cni (testcontainerd's
// ReproduceRebootLeak), and every pod is stuck, host-local refusing its new
// sandboxes an address. Then the collector's image (`make images`) is
// imported into the node's containerd, its chart rendered by helm and
// applied through the API server, and the pod of its DaemonSet run by the
// kubelet: hostNetwork, so it needs no address from the full range, with
// its ServiceAccount's token, its RBAC (pods read), its hostPath mounts of
// the runtime's CNI directories and socket, and its probes. The node has
// no kube-proxy: the chart's kubeAPI.host and kubeAPI.port point the pod at
// the node's address, which the node relays to the API server (see
// internal/testdeploy). Besides the image and that address, the values
// name the node's CNI directories, as an operator names their runtime's.
//
// The collector frees the five leaked attachments, and only them, and
// every pod is Running again. Throughout, every ready sandbox of the pods
// keeps its address in host-local, its cache entry and its eth0 with that
// address: no attachment of a running sandbox is freed at any point.
// Measured as for the binary: from the collector's start (its first log
// line, as the kubelet stamped it) and from its pod Ready, to the range
// freed (the last free's log line) and to the last pod Running.
func TestPodFromTheChartCuresTheRebootLeak(t *testing.T) {
	e := testdeploy.Start(t, "node-leak", testcontainerd.Options{})
	n := e.Node
	e.Cluster.CreateNamespace(t, "leak")
	pods := n.ReproduceRebootLeak(t, "leak", 5)
	leaked := map[string]bool{} // the sandboxes host-local holds the range for
	for _, id := range n.Addresses(t) {
		leaked[id] = true
	}
	require.Len(t, leaked, 5)

	// After the reboot: containerd's root went with it.
	img := e.ImportImage(t, "cni-gc")
	values := e.Values(t, img)
	values["cni"] = map[string]any{"cacheDir": "/var/lib/cni", "binDirs": n.CNIPluginDirs, "confDir": n.CNIConfDir, "netnsDir": "/run/netns"}
	const ns = "podsweeper-cni-gc"
	objs := testdeploy.Render(t, "chart", "podsweeper-cni-gc", ns, values)
	e.Apply(t, ns, objs)
	created := time.Now()
	gc := e.RunDaemonSet(t, ns, testdeploy.Named(t, objs, "DaemonSet"))

	ctx := context.Background()
	w := &attachmentWatch{t: t, n: n, uids: map[string]string{}, everReady: map[string]bool{}, checked: map[string]time.Time{},
		violations: map[string]bool{}}
	for _, p := range pods {
		w.uids[string(p.UID)] = p.Name
	}
	var gcReady, freed, allRunning time.Time
	running := map[string]time.Time{}
	deadline := time.Now().Add(testdeploy.ReadyTimeout)
	for allRunning.IsZero() || gcReady.IsZero() {
		now := time.Now()
		if now.After(deadline) {
			t.Fatalf("%v after the collector's pod was made: Ready %v, range freed %v, Running %v\nthe collector's pod:\n%s",
				testdeploy.ReadyTimeout, !gcReady.IsZero(), !freed.IsZero(), running, e.Describe(t, podNow(t, e, gc)))
		}
		if gcReady.IsZero() && testdeploy.Ready(podNow(t, e, gc)) {
			gcReady = now
		}
		if freed.IsZero() && !holdsAny(n.Addresses(t), leaked) {
			freed = now
		}
		for _, p := range pods {
			if _, ok := running[p.Name]; !ok && testcontainerd.Running(podNow(t, e, p)) {
				running[p.Name] = now
			}
		}
		if len(running) == len(pods) && allRunning.IsZero() {
			allRunning = now
		}
		w.check(ctx)
		time.Sleep(100 * time.Millisecond)
	}
	// A few more rounds of the collector (its sweep is 5 s) over the running pods.
	for end := time.Now().Add(12 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		w.check(ctx)
	}
	assert.Empty(t, w.violations, "every ready sandbox kept its attachment throughout")

	gc = podNow(t, e, gc)
	assert.True(t, gc.Spec.HostNetwork)
	log := n.ContainerLog(t, gc, "cni-gc")
	require.NotEmpty(t, log)
	started := log[0].Time
	var frees []collectorFree
	for _, l := range log {
		var line struct {
			Msg       string `json:"msg"`
			SandboxID string `json:"sandboxID"`
			IfName    string `json:"ifName"`
			Reason    string `json:"reason"`
		}
		require.NoError(t, json.Unmarshal([]byte(l.Text), &line), "the collector logs JSON lines only: %q", l.Text)
		if line.Msg == cni.LogMessageFreed {
			frees = append(frees, collectorFree{at: l.Time, sandbox: line.SandboxID, ifName: line.IfName, reason: line.Reason})
		}
	}
	// containerd attaches each sandbox to its own loopback network too
	// (cni-loopback, lo): the collector frees both of each leaked sandbox.
	freedEth0 := map[string]int{}
	for _, f := range frees {
		assert.True(t, leaked[f.sandbox], "sandbox %s, whose %s was freed, is one of those the reboot leaked", f.sandbox, f.ifName)
		assert.False(t, w.everReady[f.sandbox], "sandbox %s, freed, was never a ready one", f.sandbox)
		if f.ifName == "eth0" {
			freedEth0[f.sandbox]++
		}
	}
	for id := range leaked {
		assert.Equal(t, 1, freedEth0[id], "the eth0 of leaked sandbox %s freed once", id)
	}
	for _, p := range pods {
		got := podNow(t, e, p)
		assert.Equal(t, p.UID, got.UID, "pod %s is the same pod, Running again", p.Name)
	}
	require.NotEmpty(t, frees)
	lastFree := frees[len(frees)-1].at
	t.Logf("the collector's pod: started %v after it was created, Ready (seen) %v after; %d attachments freed (reason %s)",
		started.Sub(created).Round(time.Millisecond), gcReady.Sub(created).Round(time.Millisecond), len(frees), frees[0].reason)
	t.Logf("collector start → range freed %v, → last pod Running %v; pod Ready → range freed %v, → last pod Running %v",
		lastFree.Sub(started).Round(time.Millisecond), allRunning.Sub(started).Round(time.Millisecond),
		lastFree.Sub(gcReady).Round(time.Millisecond), allRunning.Sub(gcReady).Round(time.Millisecond))
	t.Logf("%d rounds over the ready sandboxes (each one's address file and cache entry), %d checks of a sandbox's eth0", w.rounds, w.eth0Checks)
}

// collectorFree is one "attachment freed" line of the collector's log.
type collectorFree struct {
	at                      time.Time
	sandbox, ifName, reason string
}

// attachmentWatch checks, each time it is asked, that every ready sandbox
// of the pods it watches keeps its attachment: the address host-local
// holds for it, its libcni cache entry and (once a second per sandbox)
// its eth0 holding that address in its network namespace. It records what
// it finds wrong (once each) instead of failing at once, so that the test
// goes on to say what else happened.
type attachmentWatch struct {
	t          *testing.T
	n          *testcontainerd.Node
	uids       map[string]string // pod UID → name
	everReady  map[string]bool
	checked    map[string]time.Time // eth0's last check, by sandbox
	violations map[string]bool
	rounds     int
	eth0Checks int
}

func (w *attachmentWatch) check(ctx context.Context) {
	w.t.Helper()
	sbs, err := w.n.Sandboxes(ctx, "")
	require.NoError(w.t, err)
	var ready []*runtimeapi.PodSandbox
	for _, sb := range sbs {
		if _, ours := w.uids[sb.GetLabels()[testcontainerd.PodUIDLabel]]; ours && sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready = append(ready, sb)
		}
	}
	if len(ready) == 0 {
		return
	}
	w.rounds++
	ips := map[string]string{} // sandbox → address
	for ip, id := range w.n.Addresses(w.t) {
		ips[id] = ip
	}
	for _, sb := range ready {
		id, pod := sb.GetId(), w.uids[sb.GetLabels()[testcontainerd.PodUIDLabel]]
		w.everReady[id] = true
		ip := ips[id]
		if ip == "" {
			w.violations[pod+": ready sandbox "+id+" holds no address"] = true
			continue
		}
		netns, err := cachedNetNS(w.n, id)
		if err != nil {
			w.violations[pod+": ready sandbox "+id+": "+err.Error()] = true
			continue
		}
		if time.Since(w.checked[id]) < time.Second {
			continue
		}
		w.checked[id] = time.Now()
		w.eth0Checks++
		eth0, err := w.n.PodInterface(netns)
		// A sandbox the kubelet stops in the meantime is no longer a ready one.
		if err != nil || !strings.Contains(eth0, ip+"/") {
			if still, _ := w.n.ReadySandbox(ctx, sb.GetLabels()[testcontainerd.PodUIDLabel]); still == id {
				w.violations[pod+": ready sandbox "+id+": eth0 without "+ip+": "+eth0] = true
			}
		}
	}
}

// cachedNetNS returns the network namespace libcni cached for the eth0 of
// the sandbox id. It reads that one file: libcni writes a cache file in
// place, so a sandbox being created has one that does not parse yet, but
// a ready sandbox's is whole.
func cachedNetNS(n *testcontainerd.Node, id string) (string, error) {
	b, err := os.ReadFile(filepath.Join(n.CNICacheDir, "results", n.Network+"-"+id+"-eth0"))
	if err != nil {
		return "", fmt.Errorf("its cache entry: %w", err)
	}
	var e testcontainerd.CacheEntry
	if err := json.Unmarshal(b, &e); err != nil {
		return "", fmt.Errorf("its cache entry: %w", err)
	}
	if e.ContainerID != id || e.NetNS == "" {
		return "", fmt.Errorf("its cache entry names sandbox %q, netns %q", e.ContainerID, e.NetNS)
	}
	return e.NetNS, nil
}

// holdsAny reports whether addresses (address → sandbox) hold one for a
// sandbox of ids.
func holdsAny(addresses map[string]string, ids map[string]bool) bool {
	for _, id := range addresses {
		if ids[id] {
			return true
		}
	}
	return false
}

// podNow returns pod as the API server has it now.
func podNow(t *testing.T, e *testdeploy.Env, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	require.NoError(t, e.Cluster.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), p))
	return p
}
