package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/program"
)

// TestChartAndKustomizeRenders renders deploy/ (kustomize) and chart/
// (helm, with its defaults and with testdata/chart-values.yaml), sends
// every object of each render to a real API server with server-side
// dry-run, and checks that the three grant the same RBAC, run a pod that
// checkCollectorPod accepts, and pass flags the collector's own parser
// takes: the chart's defaults are the kustomize base's collector and the
// flags' defaults, and each non-default value reaches the flag it names
// (cni.confLinkDirs its mount).
// The defaults render no PrometheusRule and no dashboard; the values turn
// both on, with their labels, selector, uid and a threshold of theirs.
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
		Flags: program.Flags{KubeAPIQPS: 10, KubeAPIBurst: 20, MetricsBindAddress: "0", HealthProbeBindAddress: ":9911", PprofBindAddress: "0", StatusBindAddress: "0",
			SweepInterval: 10 * time.Second, Workers: 2, DryRun: true, MaxDestroysPerSecond: 20, DestroyBurst: 4, Zap: flagDefaults.Zap},
		node:     program.NodeFlags{Node: "node-a", CRIEndpoint: "unix:///var/run/crio/crio.sock"},
		cacheDir: "/var/lib/cni-cache", pluginDirs: "/opt/cni/bin,/usr/libexec/cni", confDir: "/etc/cni/multus.d",
		hostLocalDataDir: "/var/lib/cni-ipam", resyncInterval: time.Minute, reservationGrace: 2 * time.Minute,
	}, nonCfg, "every value reaches its flag")
	assert.Contains(t, nonC.Args, "--zap-log-level=debug")
	assert.Empty(t, testkube.Env(r.DefaultsC), "the chart's defaults leave the kubernetes Service's address to the kubelet")
	assert.Equal(t, map[string]string{"KUBERNETES_SERVICE_HOST": "api.cluster.example", "KUBERNETES_SERVICE_PORT": "6443"},
		testkube.Env(nonC), "kubeAPI.host and kubeAPI.port reach the in-cluster config")
	assert.Equal(t, "registry.example/podsweeper-cni-gc:v9.9.9", nonC.Image)
	assert.Equal(t, map[string]string{"kubernetes.io/os": "linux"}, nonSpec.NodeSelector)
	assert.True(t, nonC.Resources.Limits.Memory().Equal(resource.MustParse("256Mi")))
	linked := false
	for _, m := range nonC.VolumeMounts {
		linked = linked || m.MountPath == "/var/lib/rancher/cni/net.d" && m.ReadOnly
	}
	assert.True(t, linked, "cni.confLinkDirs are mounted read-only at their paths, where confDir's links point")
	// host-local's data directories outside cni.cacheDir are mounted read-write at their paths (a DEL releases the
	// node's reservations, not a copy in the pod's own filesystem); one under it comes with it. The defaults, whose
	// data directory is under cni.cacheDir, mount none of their own.
	dataDirs := func(spec corev1.PodSpec, c corev1.Container) (rw []string) {
		hostPaths := map[string]string{}
		for _, v := range spec.Volumes {
			if v.HostPath != nil {
				hostPaths[v.Name] = v.HostPath.Path
			}
		}
		for _, m := range c.VolumeMounts {
			if strings.HasPrefix(m.Name, "host-local-data-") && !m.ReadOnly && hostPaths[m.Name] == m.MountPath {
				rw = append(rw, m.MountPath)
			}
		}
		return rw
	}
	assert.Equal(t, []string{"/var/lib/cni-ipam", "/srv/ipam"}, dataDirs(nonSpec, nonC), "host-local's data directories outside cni.cacheDir")
	assert.Empty(t, dataDirs(defSpec, r.DefaultsC), "the defaults' data directory is under cni.cacheDir")

	for _, rl := range testkube.AssertMonitoring(t, r, `job="cni/gc",cluster="eu-1"`,
		map[string]string{"release": "monitoring"}, map[string]string{"grafana_dashboard": "1"}, "cni-gc") {
		if rl.Alert == "PodsweeperCNIAttachmentsFreedBurst" {
			assert.Contains(t, rl.Expr, "> 500", "prometheusRule.alerts.attachmentsFreedBurst.count reaches its rule")
		}
	}
}

// TestSecureMetricsGrantTheReviewsAndAReaderRole: the promise of the
// chart's values.yaml: "--metrics-secure: HTTPS for clients the API server
// authenticates and authorizes", and of program.Flags.MetricsSecure: "HTTPS,
// only to clients whose token the API server authenticates and authorizes (a
// get on the URL)". The collector can ask the API server only if its
// ServiceAccount may create TokenReviews and SubjectAccessReviews (as the
// node agent's and the cluster controller's charts grant), and a client can be
// authorized only by a role that grants the URLs (their metrics-reader).
func TestSecureMetricsGrantTheReviewsAndAReaderRole(t *testing.T) {
	values := filepath.Join(t.TempDir(), "secure.yaml")
	if err := os.WriteFile(values, []byte("metrics:\n  secure: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	objs := testkube.RenderHelm(t, "chart", "gc", "cni", values)
	spec, c := testkube.PodTemplate(t, objs, "DaemonSet")
	var secure bool
	for _, a := range c.Args {
		secure = secure || a == "--metrics-secure=true"
	}
	if !secure {
		t.Fatalf("metrics.secure=true did not reach --metrics-secure: %v", c.Args)
	}
	g := testkube.RBAC(t, objs, "cni", spec.ServiceAccountName)
	all := strings.Join(g.ClusterWide, "\n")
	for _, want := range []string{"tokenreviews", "subjectaccessreviews"} {
		if !strings.Contains(all, want) {
			t.Errorf("with metrics.secure=true the collector runs --metrics-secure=true, but its ServiceAccount may not create %s: "+
				"the API server refuses its review and no client can read /metrics; cluster-wide grants:\n%s", want, all)
		}
	}
	if !strings.Contains(strings.Join(g.Unbound, "\n"), "/metrics") {
		t.Errorf("with metrics.secure=true no role of the chart grants a get on /metrics for a reader to be bound to; unbound roles: %v", g.Unbound)
	}
}

// TestLargeIntegerValuesReachTheirFlags: the charts' promise
// (values.yaml: "Every value below is one of the collector's flags (named
// beside it)"; "each non-default value reaches the flag it names"): an
// integer value of a million or more, given in a values file, is rendered in
// Go's float notation ("--kube-api-burst=1e+06"), which the int flag refuses,
// so the program exits 2 and the pod crash-loops. Shown on the three charts.
func TestLargeIntegerValuesReachTheirFlags(t *testing.T) {
	values := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(values, []byte("kubeAPI:\n  qps: 1000\n  burst: 1000000\ndestroyRate:\n  perSecond: 1000\n  burst: 1000000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, kind string }{{"chart", "DaemonSet"}, {"../node-agent/chart", "DaemonSet"}, {"../cluster-controller/chart", "Deployment"}} {
		_, ctr := testkube.PodTemplate(t, testkube.RenderHelm(t, c.dir, "r", "ns", values), c.kind)
		args := strings.Join(ctr.Args, " ")
		for _, want := range []string{"--kube-api-burst=1000000", "--destroy-burst=1000000"} {
			if !strings.Contains(args, want) {
				t.Errorf("%s: a value of 1000000 does not reach its flag as %s: %s", c.dir, want, args)
			}
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
	cfg, err := parseFlags(c.Args, func(string) string { return "node-a" }, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 7, cfg.Workers, "the last --workers wins")
}

// TestChartScrapesTheMetricsTheAlertsSelect: with serviceMonitor.enabled the
// chart renders a Service and a ServiceMonitor that the API server takes
// (prometheus-operator's CRD), scraping the pods' metrics port over HTTPS
// with the Prometheus's token, as the job the alerts select by default; it
// binds the Prometheus's ServiceAccount to the metrics-reader role, and
// refuses to render a scrape of metrics that are off or on loopback. The
// collector runs in the node's network: its metrics are scraped with
// metrics.secure on an address off loopback.
func TestChartScrapesTheMetricsTheAlertsSelect(t *testing.T) {
	testkube.CheckScrape(t, "DaemonSet", "gc", "cni", "metrics: {bindAddress: \":9812\", secure: true}")
}

// TestTheRuntimesDirectoriesAreNeverMade: the chart and the kustomize base
// mount the runtime's CNI cache and plugin directories as hostPaths of type
// Directory: a wrong path leaves the pod waiting with the kubelet's event,
// where DirectoryOrCreate gave the collector an empty cache of its own.
func TestTheRuntimesDirectoriesAreNeverMade(t *testing.T) {
	for name, objs := range map[string][]*unstructured.Unstructured{
		"chart":     testkube.RenderHelm(t, "chart", "gc", "cni", testkube.ValuesFile(t, "cni: {cacheDir: /var/lib/cnii, binDirs: [/opt/cni/bin, /usr/lib/cni]}\n")),
		"kustomize": testkube.RenderKustomize(t, "deploy"),
	} {
		spec, _ := testkube.PodTemplate(t, objs, "DaemonSet")
		n := 0
		for _, v := range spec.Volumes {
			if v.Name == "cni-cache" || strings.HasPrefix(v.Name, "cni-bin") {
				n++
				require.NotNil(t, v.HostPath, "%s %s", name, v.Name)
				assert.EqualValues(t, "Directory", *v.HostPath.Type, "%s: %s (%s)", name, v.Name, v.HostPath.Path)
			}
		}
		assert.GreaterOrEqual(t, n, 2, "%s mounts the cache and a plugin directory", name)
	}
}
