package main

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	kust := testkube.RenderKustomize(t, "deploy")
	def := testkube.RenderHelm(t, "chart", "podsweeper", "podsweeper-cni-gc")
	non := testkube.RenderHelm(t, "chart", "gc", "cni", "testdata/chart-values.yaml")

	rc, _ := testkube.StartAPIServer(t)
	c, err := client.New(rc, client.Options{})
	require.NoError(t, err)
	testkube.DryRunApply(t, c, "podsweeper-cni-gc", kust)
	testkube.DryRunApply(t, c, "podsweeper-cni-gc", def)
	testkube.DryRunApply(t, c, "cni", non)

	kustSpec, kustC := testkube.PodTemplate(t, kust, "DaemonSet")
	defSpec, defC := testkube.PodTemplate(t, def, "DaemonSet")
	assert.Equal(t, kustC.Image, defC.Image, "both run the image of the same tag")
	nonSpec, nonC := testkube.PodTemplate(t, non, "DaemonSet")
	want := testkube.RBAC(t, kust, "podsweeper-cni-gc", kustSpec.ServiceAccountName)
	require.NotEmpty(t, want.ClusterWide)
	assert.Equal(t, want, testkube.RBAC(t, def, "podsweeper-cni-gc", defSpec.ServiceAccountName), "the chart's defaults grant what deploy/ grants")
	assert.Equal(t, want, testkube.RBAC(t, non, "cni", nonSpec.ServiceAccountName), "the chart's values change no grant")

	kustCfg := checkCollectorPod(t, kustSpec)
	defCfg := checkCollectorPod(t, defSpec)
	nonCfg := checkCollectorPod(t, nonSpec)
	flagDefaults, err := parseFlags(nil, func(string) string { return "node-a" }, io.Discard)
	require.NoError(t, err)
	for _, cfg := range []*config{&kustCfg, &defCfg, &nonCfg} {
		cfg.zap = flagDefaults.zap // a parsed --zap-log-level holds a level no two parses share
	}
	assert.Equal(t, kustCfg, defCfg, "the chart's defaults run the collector of deploy/")
	assert.Equal(t, flagDefaults, defCfg, "the chart's defaults are the flags'")
	assert.Equal(t, config{
		node: "node-a", metricsAddr: "0", probeAddr: ":9911", criEndpoint: "unix:///var/run/crio/crio.sock",
		cacheDir: "/var/lib/cni-cache", pluginDirs: "/opt/cni/bin,/usr/libexec/cni", confDir: "/etc/cni/multus.d",
		sweepInterval: 10 * time.Second, resyncInterval: time.Minute, workers: 2, dryRun: true, zap: flagDefaults.zap,
	}, nonCfg, "every value reaches its flag")
	assert.Contains(t, nonC.Args, "--zap-log-level=debug")
	assert.Equal(t, "registry.example/podsweeper-cni-gc:v9.9.9", nonC.Image)
	assert.Equal(t, map[string]string{"kubernetes.io/os": "linux"}, nonSpec.NodeSelector)
	assert.True(t, nonC.Resources.Limits.Memory().Equal(resource.MustParse("256Mi")))
}
