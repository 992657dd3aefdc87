package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/internal/procbench"
	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/internal/testnode"
)

const (
	// processPods is the kubelet's default --max-pods: a full node.
	processPods = 110
	// processIdle is the window whose CPU is measured, after every process
	// tracks every pod and one more sweep has passed.
	processIdle = 60 * time.Second
	// profileEnv, when set to a directory, makes BenchmarkProcess write a
	// CPU profile of each process there, taken after the measured window
	// (a profile's own cost stays out of the figures).
	profileEnv = "PODSWEEPER_PROFILE_DIR"
)

// BenchmarkProcess measures the node agent as it runs on a node, whole:
// its binary (built without the race detector) on a real kubelet with the
// CRI fake, 110 running pods made from the realistic fixture by server-side
// apply (a Deployment's pod: two containers with env and resources; the
// kubelet writes their status), the default 5 s interval. Four processes
// run side by side on the same node over the same window: the agent with
// its defaults (a slim pod cache, and a list of the runtime's sandboxes at
// most 5 s old), the agent with --slim-pod-cache=false, the agent with
// --cri-cache-max-age=0 (a ListPodSandbox call per check, as before), and
// the seed's loop (internal/seedref/seedagent: whole pods, a deep copy and
// a ListPodSandbox call per PU every 5 s). Once each tracks the 110 PUs
// and one more interval has passed, it reports, for each, the CPU of the
// whole process over 60 s idle (user and system, every thread: the engine,
// the cache's reads, the CRI calls, the informer, the runtime), its RSS and
// its live heap after a GC. The work is done once, whatever b.N:
//
//	make bench-process
//	KUBEBUILDER_ASSETS=$PWD/bin/envtest go test -run '^$' -bench '^BenchmarkProcess$' -benchtime=1x ./examples/node-agent/
//
// With PODSWEEPER_PROFILE_DIR set, it then takes a 30 s CPU profile of each.
func BenchmarkProcess(b *testing.B) {
	c := testnode.StartCluster(b)
	testkube.ApplyKustomization(b, c.Client, "deploy")
	n := c.StartNode(b, "bench-node")
	c.CreateNamespace(b, "bench")
	start := time.Now()
	procbench.ApplyPods(b, c.Clientset, "bench", "web", 0, processPods, func(int) string { return n.Name }, true)
	phases := map[corev1.PodPhase]int{}
	require.Eventually(b, func() bool {
		pods, err := c.Clientset.CoreV1().Pods("bench").List(b.Context(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		clear(phases)
		for _, p := range pods.Items {
			phases[p.Status.Phase]++
		}
		return phases[corev1.PodRunning] == processPods
	}, 5*time.Minute, time.Second, "the kubelet runs the %d pods; pods by phase: %v", processPods, phases)
	b.Logf("%d pods running in %v", processPods, time.Since(start).Round(time.Second))

	bin := b.TempDir()
	procbench.Build(b, filepath.Join(bin, "node-agent"), ".")
	procbench.Build(b, filepath.Join(bin, "seedagent"), "../../internal/seedref/seedagent")
	kubeconfig := agentKubeconfig(b, c.KubeConfig)

	procs := []*benchProcess{
		startBenchAgent(b, filepath.Join(bin, "node-agent"), "slim", kubeconfig, n.Name, n.CRIEndpoint),
		startBenchAgent(b, filepath.Join(bin, "node-agent"), "full", kubeconfig, n.Name, n.CRIEndpoint, "--slim-pod-cache=false"),
		startBenchAgent(b, filepath.Join(bin, "node-agent"), "slim-cri-per-check", kubeconfig, n.Name, n.CRIEndpoint, "--cri-cache-max-age=0"),
		startSeedAgent(b, filepath.Join(bin, "seedagent"), kubeconfig, n.Name, n.CRIEndpoint),
	}
	measureIdle(b, procs, processPods)
	profileAll(b, procs)
}

// profileAll writes a CPU profile of each process of procs when
// PODSWEEPER_PROFILE_DIR names a directory, after the measured window.
func profileAll(b *testing.B, procs []*benchProcess) {
	b.Helper()
	if dir := os.Getenv(profileEnv); dir != "" {
		for _, p := range procs {
			p.profile(b, dir)
		}
	}
}

// measureIdle waits for every process of procs to track pods PUs and
// reports, for each, the CPU of the whole process over processIdle, its
// RSS and its live heap after a GC, with the load average around the
// window. Every process must still
// track every PU at the end, and have destroyed nothing.
func measureIdle(b *testing.B, procs []*benchProcess, pods int) {
	b.Helper()
	for _, p := range procs {
		require.Eventually(b, func() bool { return p.tracked(b) == pods }, 2*time.Minute, 100*time.Millisecond,
			"%s tracks the %d PUs; its log:\n%s", p.name, pods, p.log)
	}
	// One more interval: the first checks after the start, and the
	// garbage of the initial list, stay out of the window.
	time.Sleep(deletionInterval + time.Second)

	load := procbench.LoadAvg()
	before := make([]time.Duration, len(procs))
	for i, p := range procs {
		before[i] = p.cpu(b)
	}
	windowStart := time.Now()
	time.Sleep(processIdle) // the measured window: real time, real processes
	window := time.Since(windowStart)
	b.Logf("load average %s at the start of the window, %s at its end", load, procbench.LoadAvg())
	for i, p := range procs {
		used := p.cpu(b) - before[i]
		cores := used.Seconds() / window.Seconds()
		rss, err := procbench.RSS(p.cmd.Process.Pid)
		require.NoError(b, err)
		heap, err := procbench.Heap(b.Context(), p.pprofAddr)
		require.NoError(b, err)
		require.Equal(b, pods, p.tracked(b), "%s still tracks every PU", p.name)
		require.NotContains(b, p.log.String(), "destroying PU", "%s destroyed nothing while idle", p.name)
		b.ReportMetric(cores, "cores-"+p.name)
		b.ReportMetric(float64(rss)/(1<<20), "rss-MiB-"+p.name)
		b.ReportMetric(float64(heap)/(1<<20), "heap-MiB-"+p.name)
		b.Logf("%s: %v of CPU in %v (%.5f of a core), RSS %.1f MiB, live heap %.1f MiB",
			p.name, used, window.Round(time.Millisecond), cores, float64(rss)/(1<<20), float64(heap)/(1<<20))
	}
}

// deletionInterval is the agent's default --sweep-interval, the seed's ticker.
const deletionInterval = 5 * time.Second

// benchProcess is one process of BenchmarkProcess.
type benchProcess struct {
	name      string
	cmd       *exec.Cmd
	pprofAddr string
	log       *testkube.SyncBuffer
	tracked   func(testing.TB) int
}

// startProcess starts bin with args; it is stopped (SIGTERM) when the
// benchmark ends.
func startProcess(b *testing.B, name, bin string, args ...string) *benchProcess {
	b.Helper()
	p := &benchProcess{name: name, log: &testkube.SyncBuffer{}}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	require.NoError(b, p.cmd.Start())
	done := make(chan struct{})
	go func() {
		_ = p.cmd.Wait()
		close(done)
	}()
	b.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
	})
	return p
}

// startBenchAgent runs the node agent's binary for the node named node,
// whose runtime's CRI socket is criEndpoint, with its defaults but for the
// addresses (loopback, plain HTTP), its journal and the extra flags.
func startBenchAgent(b *testing.B, bin, name, kubeconfig, node, criEndpoint string, extra ...string) *benchProcess {
	b.Helper()
	metricsAddr, pprofAddr := testkube.FreeAddr(b), testkube.FreeAddr(b)
	p := startProcess(b, "agent-"+name, bin, append([]string{"--kubeconfig=" + kubeconfig, "--node=" + node, "--cri-endpoint=" + criEndpoint,
		"--state-file=" + filepath.Join(b.TempDir(), "journal.db"), "--metrics-bind-address=" + metricsAddr, "--metrics-secure=false",
		"--health-probe-bind-address=" + testkube.FreeAddr(b), "--pprof-bind-address=" + pprofAddr}, extra...)...)
	p.pprofAddr = pprofAddr
	p.tracked = func(tb testing.TB) int {
		return int(procbench.Metric(testkube.Get(tb, "http://"+metricsAddr+"/metrics"), k8s.MetricTrackedPUs))
	}
	return p
}

// startSeedAgent runs the seed's loop as a node agent for the node named
// node, whose runtime's CRI socket is criEndpoint.
func startSeedAgent(b *testing.B, bin, kubeconfig, node, criEndpoint string) *benchProcess {
	b.Helper()
	statusAddr, pprofAddr := testkube.FreeAddr(b), testkube.FreeAddr(b)
	p := startProcess(b, "seed", bin, "--kubeconfig="+kubeconfig, "--node="+node, "--cri-endpoint="+criEndpoint,
		"--status-bind-address="+statusAddr, "--pprof-bind-address="+pprofAddr)
	p.pprofAddr = pprofAddr
	p.tracked = func(tb testing.TB) int {
		v, err := strconv.Atoi(testkube.Get(tb, "http://"+statusAddr+"/tracked"))
		if err != nil {
			return -1
		}
		return v
	}
	return p
}

// cpu returns the process's CPU time so far.
func (p *benchProcess) cpu(b *testing.B) time.Duration {
	b.Helper()
	d, err := procbench.CPU(p.cmd.Process.Pid)
	require.NoError(b, err, p.name)
	return d
}

// profile writes a 30 s CPU profile of the process to dir/<name>.pprof.
func (p *benchProcess) profile(b *testing.B, dir string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.pprofAddr+"/debug/pprof/profile?seconds=30", nil)
	require.NoError(b, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(b, err)
	defer resp.Body.Close()
	f, err := os.Create(filepath.Join(dir, p.name+".pprof"))
	require.NoError(b, err)
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	require.NoError(b, err)
	b.Logf("CPU profile of %s: %s", p.name, f.Name())
}
