package main

import (
	"github.com/podsweeper/podsweeper/examples/node-agent/agent"
	"io"
	"os"
	"os/exec"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/program"
)

// TestChartAndKustomizeRenders renders deploy/ (kustomize) and chart/
// (helm, with its defaults and with testdata/chart-values.yaml), sends
// every object of each render to a real API server with server-side
// dry-run, and checks that the three grant the same RBAC, run a pod that
// checkAgentPod accepts, and pass flags the agent's own parser takes: the
// chart's defaults are the kustomize base's agent and the flags' defaults,
// and each non-default value reaches the flag it names. The defaults render
// no PrometheusRule and no dashboard; the values turn both on, with their
// labels, selector, runbook base and a threshold of theirs.
func TestChartAndKustomizeRenders(t *testing.T) {
	r := testkube.RenderBoth(t, "DaemonSet", "podsweeper", "agent", "net-agents")
	kustSpec, defSpec, nonSpec, nonC := r.KustomizeSpec, r.DefaultsSpec, r.ValuesSpec, r.ValuesC

	kustCfg := checkAgentPod(t, kustSpec)
	defCfg := checkAgentPod(t, defSpec)
	nonCfg := checkAgentPod(t, nonSpec)
	flagDefaults, err := agent.ParseFlags(nil, env(map[string]string{"NODE_NAME": "node-a"}), io.Discard)
	require.NoError(t, err)
	for _, cfg := range []*agent.Config{&kustCfg, &defCfg, &nonCfg, &flagDefaults} {
		cfg.Zap = flagDefaults.Zap // a parsed --zap-log-level holds a level no two parses share
	}
	assert.Equal(t, kustCfg, defCfg, "the chart's defaults run the agent of deploy/")
	assert.Equal(t, flagDefaults, defCfg, "the chart's defaults are the flags'")

	assert.Equal(t, agent.Config{
		Flags: program.Flags{KubeAPIQPS: 20, KubeAPIBurst: 40, MetricsBindAddress: ":9443", MetricsSecure: true, HealthProbeBindAddress: ":9081",
			SweepInterval: 10 * time.Second, Workers: 8, DryRun: true, MaxDestroysPerSecond: 2.5, DestroyBurst: 5, PprofBindAddress: "0",
			StatusBindAddress: "127.0.0.1:9084", Zap: flagDefaults.Zap},
		Node:      program.NodeFlags{Node: "node-a", CRIEndpoint: "unix:///var/run/crio/crio.sock"},
		StateFile: "/var/lib/podsweeper/journal.db", AllPods: true, DestroyTerminated: true,
		PodCache: program.PodCacheFlags{Slim: false}, CRICacheMaxAge: 2 * time.Second, DestroyDeadSandboxes: true,
	}, nonCfg, "every value reaches its flag")
	assert.Equal(t, "registry.example/podsweeper-node-agent@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", nonC.Image)
	assert.Contains(t, nonC.Args, "--zap-log-level=debug")
	assert.Empty(t, testkube.Env(r.DefaultsC), "the chart's defaults leave the kubernetes Service's address to the kubelet")
	assert.Equal(t, map[string]string{"KUBERNETES_SERVICE_HOST": "api.cluster.example", "KUBERNETES_SERVICE_PORT": "6443"},
		testkube.Env(nonC), "kubeAPI.host and kubeAPI.port reach the in-cluster config")
	var stateDir string
	for _, v := range nonSpec.Volumes {
		if v.Name == "state" {
			stateDir = v.HostPath.Path
		}
	}
	assert.Equal(t, "/srv/podsweeper", stateDir)
	assert.Equal(t, []int64{998}, nonSpec.SecurityContext.SupplementalGroups)
	assert.Equal(t, map[string]string{"kubernetes.io/os": "linux"}, nonSpec.NodeSelector)
	assert.Equal(t, "dedicated", nonSpec.Tolerations[0].Key)
	assert.True(t, nonC.Resources.Limits.Memory().Equal(resource.MustParse("256Mi")))
	ports := map[string]int32{}
	for _, p := range nonC.Ports {
		ports[p.Name] = p.ContainerPort
	}
	assert.Equal(t, map[string]int32{"metrics": 9443, "probes": 9081}, ports)

	rules := testkube.AssertMonitoring(t, r, `job="net-agents/agent",cluster="eu-1"`,
		map[string]string{"release": "monitoring"}, map[string]string{"grafana_dashboard": "podsweeper"}, "net-agents")
	for _, rl := range rules {
		assert.True(t, strings.HasPrefix(rl.Annotations["runbook_url"], "https://runbooks.example/podsweeper.md#"), "%s: runbookBaseURL reaches its runbook_url", rl.Alert)
		if rl.Alert == "PodsweeperDestroyBacklog" {
			assert.Contains(t, rl.Expr, "> 1800", "prometheusRule.alerts.destroyBacklog.oldestPendingSeconds reaches its rule")
		}
	}
}

// TestChartAppendsExtraArgs: extraArgs are appended to the container's
// arguments after every flag the chart sets, so that one given again
// there wins, and the program takes them.
func TestChartAppendsExtraArgs(t *testing.T) {
	objs := testkube.RenderHelm(t, "chart", "podsweeper", "podsweeper", testkube.ValuesFile(t, "extraArgs: [--zap-encoder=console, --workers=7]\n"))
	_, c := testkube.PodTemplate(t, objs, "DaemonSet")
	require.GreaterOrEqual(t, len(c.Args), 2)
	assert.Equal(t, []string{"--zap-encoder=console", "--workers=7"}, c.Args[len(c.Args)-2:], "after every flag the chart sets")
	cfg, err := agent.ParseFlags(c.Args, env(map[string]string{"NODE_NAME": "node-a"}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 7, cfg.Workers, "the last --workers wins")
}

// TestChartScrapesTheMetricsTheAlertsSelect: with serviceMonitor.enabled the
// chart renders a Service and a ServiceMonitor that the API server takes
// (prometheus-operator's CRD), scraping the pods' metrics port over HTTPS
// with the Prometheus's token, as the job the alerts select by default; it
// binds the Prometheus's ServiceAccount to the metrics-reader role, and
// refuses to render a scrape of metrics that are off or on loopback.
func TestChartScrapesTheMetricsTheAlertsSelect(t *testing.T) {
	testkube.CheckScrape(t, "DaemonSet", "agent", "net-agents", "")
}

// TestChartsTakeWhatTheirValuesReferenceSaysAndRefuseTypos: in each of the
// three charts, helm checks the values against values.schema.json at render
// and refuses a value of the wrong type, a value the chart does not have (a
// typo) or an empty image repository, naming it; a fractional rate or QPS given with --set (which helm reads
// as a string) renders its flag; a log level zap refuses (0, -1) is
// refused at render, as are a QPS below the programs' floor of 1 and a
// reservationGrace that is not a positive duration; a typo under resources or updateStrategy is refused,
// naming it, not rendered into the pod.
func TestChartsTakeWhatTheirValuesReferenceSaysAndRefuseTypos(t *testing.T) {
	helm := testkube.Tool(t, "HELM")
	for _, chart := range []string{"chart", "../cluster-controller/chart", "../cni-gc/chart"} {
		for set, want := range map[string]string{"destroyRate.perSecond=0.5": "--max-destroys-per-second=0.5",
			"kubeAPI.qps=2.5": "--kube-api-qps=2.5", "log.level=2": "--zap-log-level=2", "log.level=debug": "--zap-log-level=debug"} {
			out, err := exec.Command(helm, "template", "r", chart, "--set", set).CombinedOutput()
			require.NoError(t, err, "%s --set %s: %s", chart, set, out)
			assert.Contains(t, string(out), want, "%s --set %s", chart, set)
		}
		for values, want := range map[string]string{ // refused with a message that names the value
			"workers: many\n":                    "at '/workers': got string, want integer",
			"extraArgs: --zap-encoder=console\n": "at '/extraArgs': got string, want array",
			"extraArgs: [1]\n":                   "at '/extraArgs/0': got number, want string",
			"dryRun: \"yes\"\n":                  "at '/dryRun': got string, want boolean",
			"probes: {port: 70000}\n":            "at '/probes/port'",
			"worker: 3\n":                        "'worker' not allowed",
			"image: {repository: \"\"}\n":        "at '/image/repository'",
		} {
			out := testkube.RenderHelmRefused(t, chart, "podsweeper", "podsweeper", testkube.ValuesFile(t, values))
			assert.Contains(t, out, want, "%s: %q", chart, values)
		}
		refused := []string{"log.level=0", "log.level=-1", "destroyRate.perSecond=fast", "resources.limits.memroy=1Gi", "resources.limit.memory=1Gi",
			"kubeAPI.qps=0.5", "kubeAPI.qps=1e-40", "kubeAPI.qps=0"} // the programs' floor: 1
		if chart == "../cni-gc/chart" {
			refused = append(refused, "reservationGrace=0s", "reservationGrace=-1m", "reservationGrace=soon")
		}
		if chart != "../cluster-controller/chart" {
			refused = append(refused, "updateStrategy.rollingUpdate.maxUnavailabel=2", "updateStrategy.type=Recreate")
		}
		for _, set := range refused {
			out, err := exec.Command(helm, "template", "r", chart, "--set", set).CombinedOutput()
			assert.Error(t, err, "%s --set %s renders:\n%s", chart, set, out)
			assert.Contains(t, string(out), "schema", "%s --set %s", chart, set)
		}
	}
}

// TestStateDirValueSaysWhereTheStateFileIs: the values reference says what
// --state-file the chart passes: the hostPath stateDir is mounted at the
// journal's directory in the container, whatever stateDir is, so the flag
// names the file there, not <stateDir>/journal.db.
func TestStateDirValueSaysWhereTheStateFileIs(t *testing.T) {
	objs := testkube.RenderHelm(t, "chart", "podsweeper", "podsweeper", testkube.ValuesFile(t, "stateDir: /srv/podsweeper\n"))
	spec, c := testkube.PodTemplate(t, objs, "DaemonSet")
	var stateFile, mount, hostPath string
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--state-file="); ok {
			stateFile = v
		}
	}
	for _, m := range c.VolumeMounts {
		if m.Name == "state" {
			mount = m.MountPath
		}
	}
	for _, v := range spec.Volumes {
		if v.Name == "state" {
			hostPath = v.HostPath.Path
		}
	}
	require.Equal(t, "/srv/podsweeper", hostPath)
	require.NotEmpty(t, stateFile)
	assert.Equal(t, mount, path.Dir(stateFile), "--state-file is in the directory stateDir is mounted at")

	values, err := os.ReadFile("chart/values.yaml")
	require.NoError(t, err)
	comment := strings.Join(strings.Fields(strings.ReplaceAll(string(values), "\n#", " ")), " ")
	assert.Contains(t, comment, "mounted in the container at "+mount)
	assert.Contains(t, comment, "--state-file is "+stateFile)
}
