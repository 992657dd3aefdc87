package main

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podsweeper/podsweeper/adapters/k8s/program"
	"github.com/podsweeper/podsweeper/internal/testkube"
)

// TestChartAndKustomizeRenders renders deploy/ (kustomize) and chart/
// (helm, with its defaults and with testdata/chart-values.yaml), sends
// every object of each render to a real API server with server-side
// dry-run, and checks that the three grant the same RBAC, run a pod that
// checkCollectorPod accepts, and pass flags the collector's own parser
// takes: the chart's defaults are the kustomize base's collector and the
// flags' defaults, and each non-default value reaches the flag it names.
func TestChartAndKustomizeRenders(t *testing.T) {
	r := testkube.RenderBoth(t, "DaemonSet", "podsweeper-cni-gc", "gc", "cni")
	kustSpec, defSpec, nonSpec, nonC := r.KustomizeSpec, r.DefaultsSpec, r.ValuesSpec, r.ValuesC

	kustCfg := checkCollectorPod(t, kustSpec)
	defCfg := checkCollectorPod(t, defSpec)
	nonCfg := checkCollectorPod(t, nonSpec)
	flagDefaults, err := parseFlags(nil, func(string) string { return "node-a" }, io.Discard)
	require.NoError(t, err)
	for _, cfg := range []*config{&kustCfg, &defCfg, &nonCfg} {
		cfg.Zap = flagDefaults.Zap // a parsed --zap-log-level holds a level no two parses share
	}
	assert.Equal(t, kustCfg, defCfg, "the chart's defaults run the collector of deploy/")
	assert.Equal(t, flagDefaults, defCfg, "the chart's defaults are the flags'")
	assert.Equal(t, config{
		Flags: program.Flags{KubeAPIQPS: 10, KubeAPIBurst: 20, MetricsBindAddress: "0", HealthProbeBindAddress: ":9911", PprofBindAddress: "0",
			SweepInterval: 10 * time.Second, Workers: 2, DryRun: true, MaxDestroysPerSecond: 20, DestroyBurst: 4, Zap: flagDefaults.Zap},
		node: "node-a", criEndpoint: "unix:///var/run/crio/crio.sock",
		cacheDir: "/var/lib/cni-cache", pluginDirs: "/opt/cni/bin,/usr/libexec/cni", confDir: "/etc/cni/multus.d",
		resyncInterval: time.Minute,
	}, nonCfg, "every value reaches its flag")
	assert.Contains(t, nonC.Args, "--zap-log-level=debug")
	assert.Empty(t, testkube.Env(r.DefaultsC), "the chart's defaults leave the kubernetes Service's address to the kubelet")
	assert.Equal(t, map[string]string{"KUBERNETES_SERVICE_HOST": "api.cluster.example", "KUBERNETES_SERVICE_PORT": "6443"},
		testkube.Env(nonC), "kubeAPI.host and kubeAPI.port reach the in-cluster config")
	assert.Equal(t, "registry.example/podsweeper-cni-gc:v9.9.9", nonC.Image)
	assert.Equal(t, map[string]string{"kubernetes.io/os": "linux"}, nonSpec.NodeSelector)
	assert.True(t, nonC.Resources.Limits.Memory().Equal(resource.MustParse("256Mi")))
}
