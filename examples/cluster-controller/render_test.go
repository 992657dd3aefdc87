package main

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/program"
)

// TestChartAndKustomizeRenders renders deploy/ (kustomize) and chart/
// (helm, with its defaults and with testdata/chart-values.yaml), sends
// every object of each render to a real API server with server-side
// dry-run, and checks that the three grant the same RBAC, run pods that
// checkControllerPod accepts, and pass flags the controller's own parser
// takes: the chart's defaults are the kustomize base's controller and the
// flags' defaults, and each non-default value reaches the flag it names.
// The defaults render no PrometheusRule and no dashboard; the values turn
// both on, with their labels, selector and a threshold of theirs, and the
// dashboard's uid is the release's fullname.
func TestChartAndKustomizeRenders(t *testing.T) {
	r := testkube.RenderBoth(t, "Deployment", "podsweeper-cluster", "pus", "pu-controllers")
	kustSpec, defSpec, nonSpec, nonC := r.KustomizeSpec, r.DefaultsSpec, r.ValuesSpec, r.ValuesC
	non := r.Values
	require.NotEmpty(t, testkube.RBAC(t, r.Kustomize, "podsweeper-cluster", r.KustomizeSpec.ServiceAccountName).InNamespace)

	kustCfg := checkControllerPod(t, kustSpec, "podsweeper-cluster")
	defCfg := checkControllerPod(t, defSpec, "podsweeper-cluster")
	nonCfg := checkControllerPod(t, nonSpec, "pu-controllers")
	flagDefaults, err := parseFlags([]string{"--pu-dir", "/var/lib/podsweeper/pus"}, env(map[string]string{"POD_NAMESPACE": "podsweeper-cluster"}), io.Discard)
	require.NoError(t, err)
	for _, cfg := range []*config{&kustCfg, &defCfg, &nonCfg} {
		cfg.Zap = flagDefaults.Zap // a parsed --zap-log-level holds a level no two parses share
	}
	// The chart names the Lease after the release; deploy/ and the flag
	// keep the name of before (TestTwoReleasesInOneNamespaceHoldTwoLeases).
	assert.Equal(t, "podsweeper-podsweeper-cluster-controller", defCfg.leaseID, "the Lease is the release's")
	defCfg.leaseID = kustCfg.leaseID
	assert.Equal(t, kustCfg, defCfg, "the chart's defaults run the controller of deploy/")
	assert.Equal(t, flagDefaults, defCfg, "the chart's defaults are the flags'")
	assert.Equal(t, config{
		Flags: program.Flags{KubeAPIQPS: 30, KubeAPIBurst: 60, MetricsBindAddress: "127.0.0.1:9090", MetricsSecure: false,
			HealthProbeBindAddress: ":9081", PprofBindAddress: "0", StatusBindAddress: "127.0.0.1:9084", SweepInterval: 2 * time.Minute, Workers: 32,
			DryRun: true, MaxDestroysPerSecond: 100, DestroyBurst: 10, Zap: flagDefaults.Zap},
		puDir: "/data/pus", leaderElect: true, leaseNS: "pu-controllers",
		leaseID: "pus-lease", leaseDuration: 30 * time.Second, renewDeadline: 20 * time.Second, retryPeriod: 5 * time.Second,
		podCache: program.PodCacheFlags{Slim: false}, events: false,
	}, nonCfg, "every value reaches its flag")
	assert.Contains(t, nonC.Args, "--zap-log-level=debug")
	assert.Empty(t, testkube.Env(r.DefaultsC), "the chart's defaults leave the kubernetes Service's address to the kubelet")
	assert.Equal(t, map[string]string{"KUBERNETES_SERVICE_HOST": "api.cluster.example", "KUBERNETES_SERVICE_PORT": "6443"},
		testkube.Env(nonC), "kubeAPI.host and kubeAPI.port reach the in-cluster config")
	assert.Equal(t, "registry.example/podsweeper-cluster-controller:v9.9.9", nonC.Image)
	assert.Equal(t, corev1.PullAlways, nonC.ImagePullPolicy)
	assert.Equal(t, "shared-pus", nonSpec.Volumes[0].PersistentVolumeClaim.ClaimName)
	for _, u := range non {
		assert.NotEqual(t, "PersistentVolumeClaim", u.GetKind(), "an existing claim: the chart makes none")
	}
	require.NotNil(t, nonSpec.TerminationGracePeriodSeconds)
	assert.Equal(t, int64(60), *nonSpec.TerminationGracePeriodSeconds)
	require.NotNil(t, nonSpec.Affinity.NodeAffinity)
	assert.Nil(t, nonSpec.Affinity.PodAntiAffinity, "the affinity given replaces the default")
	assert.Equal(t, map[string]string{"kubernetes.io/os": "linux"}, nonSpec.NodeSelector)
	assert.Equal(t, "dedicated", nonSpec.Tolerations[0].Key)
	assert.True(t, nonC.Resources.Limits.Memory().Equal(resource.MustParse("4Gi")))
	for _, u := range non {
		if u.GetKind() == "Deployment" {
			var d appsv1.Deployment
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d))
			assert.Equal(t, int32(3), *d.Spec.Replicas)
		}
	}

	for _, rl := range testkube.AssertMonitoring(t, r, `job="pu-controllers/pus"`,
		map[string]string{"prometheus": "central"}, map[string]string{"grafana_dashboard": "true"}, "pus-podsweeper-cluster-controller") {
		if rl.Alert == "PodsweeperChecksBehind" {
			assert.Contains(t, rl.Expr, "> 600", "prometheusRule.alerts.checksBehind.oldestQueuedSeconds reaches its rule")
		}
	}
}

// TestChartAppendsExtraArgs: extraArgs are appended to the container's
// arguments after every flag the chart sets, so that one given again
// there wins, and the program takes them.
func TestChartAppendsExtraArgs(t *testing.T) {
	objs := testkube.RenderHelm(t, "chart", "podsweeper", "podsweeper", testkube.ValuesFile(t, "extraArgs: [--zap-encoder=console, --workers=7]\n"))
	_, c := testkube.PodTemplate(t, objs, "Deployment")
	require.GreaterOrEqual(t, len(c.Args), 2)
	assert.Equal(t, []string{"--zap-encoder=console", "--workers=7"}, c.Args[len(c.Args)-2:], "after every flag the chart sets")
	cfg, err := parseFlags(c.Args, env(map[string]string{"POD_NAMESPACE": "podsweeper"}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 7, cfg.Workers, "the last --workers wins")
}

// TestTwoReleasesInOneNamespaceHoldTwoLeases: the Lease's name is the
// release's fullname by default, so that two releases in one namespace
// each elect their own leader; leaderElection.id keeps a name given, the
// one a release installed before had (podsweeper-cluster-controller).
func TestTwoReleasesInOneNamespaceHoldTwoLeases(t *testing.T) {
	lease := func(release string, values ...string) string {
		t.Helper()
		_, c := testkube.PodTemplate(t, testkube.RenderHelm(t, "chart", release, "podsweeper", values...), "Deployment")
		cfg, err := parseFlags(c.Args, env(map[string]string{"POD_NAMESPACE": "podsweeper"}), io.Discard)
		require.NoError(t, err)
		return cfg.leaseID
	}
	a, b := lease("team-a"), lease("team-b")
	assert.NotEqual(t, a, b, "one Lease each")
	assert.Equal(t, "team-a-podsweeper-cluster-controller", a, "the release's fullname")
	assert.Equal(t, defaultLeaderElectionID, lease("team-a", testkube.ValuesFile(t, "leaderElection:\n  id: "+defaultLeaderElectionID+"\n")),
		"a release keeps the Lease it had")
}

// TestChartScrapesTheMetricsTheAlertsSelect: with serviceMonitor.enabled the
// chart renders a Service and a ServiceMonitor that the API server takes
// (prometheus-operator's CRD), scraping the pods' metrics port over HTTPS
// with the Prometheus's token, as the job the alerts select by default; it
// binds the Prometheus's ServiceAccount to the metrics-reader role, and
// refuses to render a scrape of metrics that are off or on loopback.
func TestChartScrapesTheMetricsTheAlertsSelect(t *testing.T) {
	testkube.CheckScrape(t, "Deployment", "pus", "pu-controllers", "")
}
