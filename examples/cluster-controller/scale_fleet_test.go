package main

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/internal/procbench"
	"github.com/podsweeper/podsweeper/internal/testkube"
)

// agentProc is a node agent, the binary built from examples/node-agent,
// in a process of its own on one KWOK node.
type agentProc struct {
	bin, kubeconfig        string // to start it again
	node                   int
	cmd                    *exec.Cmd
	metricsAddr, probeAddr string
	log                    *childLog
	done                   chan struct{}
	err                    error
}

// startAgent runs the node agent as its ServiceAccount (its deploy/'s
// RBAC) on node n: no container runtime (--cri-endpoint=""), a journal of
// its own, metrics (plain HTTP) and probes on free loopback ports, no pprof.
func startAgent(t *testing.T, bin, kubeconfig string, n int) *agentProc {
	t.Helper()
	a := &agentProc{bin: bin, kubeconfig: kubeconfig, node: n, metricsAddr: testkube.FreeAddr(t), probeAddr: testkube.FreeAddr(t), log: &childLog{}, done: make(chan struct{})}
	a.cmd = exec.Command(bin, "--kubeconfig="+kubeconfig, "--node="+nodeName(n), "--cri-endpoint=",
		"--state-file="+filepath.Join(t.TempDir(), "journal.db"),
		"--metrics-bind-address="+a.metricsAddr, "--metrics-secure=false",
		"--health-probe-bind-address="+a.probeAddr, "--pprof-bind-address=0", "--status-bind-address=0",
		"--zap-time-encoding=rfc3339nano")
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	require.NoError(t, a.cmd.Start())
	go func() {
		a.err = a.cmd.Wait()
		close(a.done)
	}()
	t.Cleanup(func() {
		_ = a.cmd.Process.Kill()
		<-a.done
	})
	return a
}

func (a *agentProc) ready(t *testing.T) bool {
	return testkube.Get(t, "http://"+a.probeAddr+"/readyz") != ""
}

func (a *agentProc) tracked(t *testing.T) int {
	return int(procbench.Metric(testkube.Get(t, "http://"+a.metricsAddr+"/metrics"), k8s.MetricTrackedPUs))
}

func (a *agentProc) exited() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

// waitAgents polls until every agent is ready and tracks its node's pods.
// An agent that exited because another process took one of its ports
// first (testkube.FreeAddr's port is free when picked, not when bound: with
// a hundred agents starting at once, one sometimes is not) is started again
// on others.
func (c *scaleCluster) waitAgents(t *testing.T, agents []*agentProc, timeout time.Duration) {
	t.Helper()
	var waiting *agentProc
	if !assert.Eventually(t, func() bool {
		for i, a := range agents {
			if a.exited() && strings.Contains(a.log.tail(), "address already in use") {
				logScale(t, "fleet: the agent of %s started again: a port of its was taken", nodeName(a.node))
				agents[i] = startAgent(t, a.bin, a.kubeconfig, a.node)
				return false
			}
			if a.exited() || !a.ready(t) || a.tracked(t) != c.perNode {
				waiting = a
				return false
			}
		}
		return true
	}, timeout, 100*time.Millisecond) {
		require.FailNowf(t, "node agents not ready", "the agent of %s (exited: %t, %v); logs:\n%s",
			nodeName(waiting.node), waiting.exited(), waiting.err, waiting.log.tail())
	}
}

// fleetSizes reads $PODSWEEPER_SCALE_AGENTS.
func fleetSizes(t *testing.T) []int {
	var sizes []int
	for s := range strings.SplitSeq(os.Getenv(scaleAgentsEnv), ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		require.NoError(t, err, scaleAgentsEnv)
		if n > 0 {
			sizes = append(sizes, n)
		}
	}
	require.True(t, slices.IsSorted(sizes), "%s: ascending", scaleAgentsEnv)
	return sizes
}

// fleetPoint is what a restart of the API server cost under a fleet.
type fleetPoint struct {
	agents   int
	cpu      float64 // seconds of CPU of the new API server until settled
	requests float64 // the new API server's requests until settled
	rss      float64 // the new API server's RSS once every agent is back, MiB: a server of the same age at every fleet size
}

// fleet is the node agents' part of TestScaleBench: for each fleet size,
// as many agents (one a node, the first nodes), then the API server's
// watches and memory, then a restart of it under them; then a churn of
// the fleet's pods, each destroyed exactly once by its node's agent.
func (c *scaleCluster) fleet(t *testing.T) {
	sizes := fleetSizes(t)
	if len(sizes) == 0 {
		return
	}
	require.LessOrEqual(t, sizes[len(sizes)-1], c.nodes, "no more agents than nodes")
	size := fmt.Sprintf("%dx%d", c.nodes, c.total())
	bin := filepath.Join(t.TempDir(), "node-agent")
	procbench.Build(t, bin, "../node-agent")
	kubeconfig := testkube.ImpersonatingKubeconfig(t, c.kubeconfig, nodeAgentUser)
	var agents []*agentProc
	var points []fleetPoint
	for _, k := range sizes {
		start := time.Now()
		for len(agents) < k {
			agents = append(agents, startAgent(t, bin, kubeconfig, len(agents)))
		}
		c.waitAgents(t, agents, 10*time.Minute)
		up := time.Since(start)
		m := c.apiMetrics(t)
		// apiserver_registered_watchers is gone from kube-apiserver 1.37:
		// the watches under way are its long-running WATCH requests.
		watchers := sumOf(m, "apiserver_longrunning_requests", map[string]string{"verb": "WATCH", "resource": "pods"})
		pid := c.apiServerPID(t)
		rss, err := procbench.RSS(pid)
		require.NoError(t, err)
		var agentRSS int64
		for _, a := range agents {
			r, err := procbench.RSS(a.cmd.Process.Pid)
			require.NoError(t, err)
			agentRSS += r
		}
		logScale(t, "size=%s fleet=%d phase=ready s-to-ready=%.1f api-pod-watchers=%.0f api-watches=%.0f api-rss-MiB=%.1f agent-rss-MiB=%.1f load=%q",
			size, k, up.Seconds(), watchers, sumOf(m, "apiserver_longrunning_requests", map[string]string{"verb": "WATCH"}),
			mib(rss), mib(agentRSS)/float64(k), procbench.LoadAvg())
		points = append(points, c.restartAPIServer(t, size, agents))
	}
	if len(points) >= 2 {
		cpuSlope, cpuAt := fitLine(points, func(p fleetPoint) float64 { return p.cpu }, 1000)
		reqSlope, reqAt := fitLine(points, func(p fleetPoint) float64 { return p.requests }, 1000)
		rssSlope, rssAt := fitLine(points, func(p fleetPoint) float64 { return p.rss }, 1000)
		logScale(t, "size=%s fleet=extrapolated agents=1000 restart-cpu-s-per-agent=%.4f restart-cpu-s=%.1f restart-requests-per-agent=%.2f restart-requests=%.0f api-rss-MiB-per-agent=%.2f api-rss-MiB=%.0f (a line through %d fleet sizes, extrapolated)",
			size, cpuSlope, cpuAt, reqSlope, reqAt, rssSlope, rssAt, len(points))
	}
	c.fleetChurn(t, size, agents)
}

// fitLine fits y = a + b·agents by least squares over points and returns
// b and the line's value at x.
func fitLine(points []fleetPoint, y func(fleetPoint) float64, x float64) (slope, at float64) {
	var n, sx, sy, sxx, sxy float64
	for _, p := range points {
		n++
		sx += float64(p.agents)
		sy += y(p)
		sxx += float64(p.agents) * float64(p.agents)
		sxy += float64(p.agents) * y(p)
	}
	slope = (n*sxy - sx*sy) / (n*sxx - sx*sx)
	return slope, (sy-slope*sx)/n + slope*x
}

func TestFitLine(t *testing.T) {
	slope, at := fitLine([]fleetPoint{{agents: 10, cpu: 3}, {agents: 20, cpu: 5}, {agents: 50, cpu: 11}},
		func(p fleetPoint) float64 { return p.cpu }, 1000)
	assert.InDelta(t, 0.2, slope, 1e-9)
	assert.InDelta(t, 201, at, 1e-9)
}

// restartAPIServer stops the API server and starts it again (same port,
// same certificates, etcd running on), then polls until every agent is
// ready and has had a request answered by the new server (its watch of
// pods made again: client-go's rest_client_requests_total{code="200"}
// grew since the stop); it logs what that cost: the new server's requests
// by verb and resource (apiserver_request_total: requests ended; the
// watches under way are apiserver_longrunning_requests), the agents'
// requests, the new server's CPU, and the times.
func (c *scaleCluster) restartAPIServer(t *testing.T, size string, agents []*agentProc) fleetPoint {
	t.Helper()
	api := c.env.ControlPlane.GetAPIServer()
	answered := func(a *agentProc, labels map[string]string) float64 {
		return procbench.Sum(testkube.Get(t, "http://"+a.metricsAddr+"/metrics"), "rest_client_requests_total", labels)
	}
	ok200 := map[string]string{"code": "200"}
	before := make([]float64, len(agents))
	var agentBefore float64
	for i, a := range agents {
		before[i] = answered(a, ok200)
		agentBefore += answered(a, nil)
	}
	stopped := time.Now()
	require.NoError(t, api.Stop())
	require.NoError(t, api.Start())
	started := time.Now()
	pid := c.apiServerPID(t)
	var waiting int
	if !assert.Eventually(t, func() bool {
		waiting = 0
		for i, a := range agents {
			if !a.ready(t) || answered(a, ok200) <= before[i] {
				waiting++
			}
		}
		return waiting == 0
	}, 10*time.Minute, 100*time.Millisecond) {
		require.FailNowf(t, "the agents did not come back", "%d of %d not ready or not answered by the new API server", waiting, len(agents))
	}
	settled := time.Since(started)
	cpu, err := procbench.CPU(pid)
	require.NoError(t, err)
	rss, err := procbench.RSS(pid)
	require.NoError(t, err)
	m := c.apiMetrics(t)
	byVerb := verbCounts{}
	for _, s := range m["apiserver_request_total"].GetMetric() {
		l := labelsOf(s)
		if l["resource"] == "" {
			continue // /metrics, /readyz and the like
		}
		res := l["resource"]
		if l["subresource"] != "" {
			res += "/" + l["subresource"]
		}
		byVerb[l["verb"]+" "+res] += s.GetCounter().GetValue()
	}
	var agentAfter float64
	for _, a := range agents {
		agentAfter += answered(a, nil)
	}
	logScale(t, "size=%s fleet=%d phase=api-server-restart s-to-stop=%.1f s-to-agents-back=%.2f api-cpu-s=%.2f api-rss-MiB=%.1f agent-requests=%.0f api-pod-watches=%.0f api-watches=%.0f api-requests=%q",
		size, len(agents), started.Sub(stopped).Seconds(), settled.Seconds(), cpu.Seconds(), mib(rss), agentAfter-agentBefore,
		sumOf(m, "apiserver_longrunning_requests", map[string]string{"verb": "WATCH", "resource": "pods"}),
		sumOf(m, "apiserver_longrunning_requests", map[string]string{"verb": "WATCH"}), byVerb.String())
	return fleetPoint{agents: len(agents), cpu: cpu.Seconds(), requests: byVerb.total(), rss: mib(rss)}
}

// apiServerPID finds the kube-apiserver process serving c.cfg.Host in /proc.
func (c *scaleCluster) apiServerPID(t *testing.T) int {
	t.Helper()
	u, err := url.Parse(c.cfg.Host)
	require.NoError(t, err)
	port := "--secure-port=" + u.Port()
	procs, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if filepath.Base(args[0]) == "kube-apiserver" && slices.Contains(args, port) {
			return pid
		}
	}
	require.FailNow(t, "no kube-apiserver process with "+port)
	return 0
}

// sumOf sums the samples of the gauge or counter name whose labels include labels.
func sumOf(m apiMetrics, name string, labels map[string]string) float64 {
	var sum float64
	for _, s := range m[name].GetMetric() {
		l := labelsOf(s)
		match := true
		for k, v := range labels {
			match = match && l[k] == v
		}
		if match {
			sum += s.GetGauge().GetValue() + s.GetCounter().GetValue()
		}
	}
	return sum
}

// fleetChurn deletes a third of the pods of every agent's node at once,
// waits until each agent has destroyed their PUs, then stops the agents
// and checks their whole lives: the PU of each deleted pod destroyed once,
// by its node's agent, and no other.
func (c *scaleCluster) fleetChurn(t *testing.T, size string, agents []*agentProc) {
	t.Helper()
	before := c.deletedSoFar()
	var pods []int
	for _, a := range agents {
		ps := c.podsOf(a.node)
		pods = append(pods, ps[:len(ps)/3]...)
	}
	first := time.Now()
	c.parallelOf(t, pods, func(i int) error { return c.deletePod(t.Context(), i, false) })
	deleted := c.deletedSince(before)
	count := func() int {
		n := 0
		for _, a := range agents {
			for _, l := range a.log.destroys() {
				if _, ok := deleted[types.UID(l.puid)]; ok {
					n++
				}
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return count() >= len(deleted) }, 5*time.Minute, 100*time.Millisecond,
		"every PU of the %d pods deleted destroyed", len(deleted))
	var lat, fromGone []time.Duration
	var last time.Time
	c.mu.Lock()
	for _, a := range agents {
		for _, l := range a.log.destroys() {
			if at, ok := deleted[types.UID(l.puid)]; ok {
				lat = append(lat, l.at.Sub(at))
				if gone, ok := c.gone[types.UID(l.puid)]; ok {
					fromGone = append(fromGone, l.at.Sub(gone))
				}
				last = maxTime(last, l.at)
			}
		}
	}
	c.mu.Unlock()
	slices.Sort(lat)
	slices.Sort(fromGone)
	for _, a := range agents {
		require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	}
	once := map[string]int{}
	for _, a := range agents {
		select {
		case <-a.done:
			assert.NoError(t, a.err, "the agent of %s; logs:\n%s", nodeName(a.node), a.log.tail())
		case <-time.After(30 * time.Second):
			require.Fail(t, "an agent did not stop on SIGTERM", "%s; logs:\n%s", nodeName(a.node), a.log.tail())
		}
		for _, l := range a.log.destroys() {
			once[l.puid]++
			assert.Contains(t, l.pod, "/", "a destroy line of %s decoded", nodeName(a.node))
		}
	}
	for uid := range deleted {
		assert.Equal(t, 1, once[string(uid)], "destroys of the PU of deleted pod %s", uid)
	}
	assert.Len(t, once, len(deleted), "no other PU destroyed")
	logScale(t, "size=%s fleet=%d scenario=agents-churn deleted=%d s-last-destroy=%.2f ms-p50-delete-to-destroy=%.0f ms-p99-delete-to-destroy=%.0f ms-p50-gone-to-destroy=%.0f ms-p99-gone-to-destroy=%.0f exactly-once=%t",
		size, len(agents), len(deleted), last.Sub(first).Seconds(), ms(procbench.Percentile(lat, 50)), ms(procbench.Percentile(lat, 99)),
		ms(procbench.Percentile(fromGone, 50)), ms(procbench.Percentile(fromGone, 99)), !t.Failed())
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
