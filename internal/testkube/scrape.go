package testkube

import (
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CheckScrape renders chart/ with serviceMonitor.enabled (release, into
// namespace, its other values the defaults but for values, YAML, with a
// Prometheus's ServiceAccount to bind), sends every object to a real API server with
// prometheus-operator's CRDs (server-side dry-run), and checks the scrape
// as a Prometheus would follow it: the ServiceMonitor selects the Service
// in its namespace and scrapes its port "metrics" on /metrics, over HTTPS
// with the Prometheus's token (the default metrics.secure); the Service
// selects the workload's (kind's) pods and targets the container's metrics
// port; its name, the job label of the series scraped, is the job the
// PrometheusRule's alerts select; and the Prometheus's ServiceAccount may
// get /metrics. It also renders the refusals of a scrape that cannot work:
// metrics off, or bound to loopback.
func CheckScrape(t testing.TB, kind, release, namespace, values string) {
	t.Helper()
	values = ValuesFile(t, values+"\nserviceMonitor:\n  enabled: true\n  labels: {release: monitoring}\n"+
		"  prometheusServiceAccount: {name: prometheus-k8s, namespace: monitoring}\nprometheusRule:\n  enabled: true\n")
	objs := RenderHelm(t, "chart", release, namespace, values)
	rc, _ := StartAPIServer(t)
	InstallPrometheusOperatorCRDs(t, rc)
	c, err := client.New(rc, client.Options{})
	require.NoError(t, err)
	DryRunApply(t, c, namespace, objs)

	var svc corev1.Service
	var sm *unstructured.Unstructured
	for _, u := range objs {
		switch u.GetKind() {
		case "Service":
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &svc))
		case "ServiceMonitor":
			sm = u
		}
	}
	require.NotEmpty(t, svc.Name, "a Service rendered")
	require.NotNil(t, sm, "a ServiceMonitor rendered")
	_, container := PodTemplate(t, objs, kind)
	var podLabels labels.Set
	for _, u := range objs {
		if u.GetKind() == kind {
			m, _, err := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "labels")
			require.NoError(t, err)
			podLabels = m
		}
	}
	assert.True(t, labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels), "the Service %v selects the pods %v", svc.Spec.Selector, podLabels)
	require.Len(t, svc.Spec.Ports, 1)
	metricsPort := -1
	for _, p := range container.Ports {
		if p.Name == svc.Spec.Ports[0].TargetPort.String() {
			metricsPort = int(p.ContainerPort)
		}
	}
	assert.Equal(t, "metrics", svc.Spec.Ports[0].Name)
	assert.Positive(t, metricsPort, "the Service targets a port of the container by name: %v", svc.Spec.Ports[0].TargetPort)
	assert.Equal(t, svc.Namespace, sm.GetNamespace())

	sel, _, err := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	require.NoError(t, err)
	assert.True(t, labels.SelectorFromSet(sel).Matches(labels.Set(svc.Labels)), "the ServiceMonitor's selector %v picks the Service %v", sel, svc.Labels)
	ns, _, _ := unstructured.NestedStringSlice(sm.Object, "spec", "namespaceSelector", "matchNames")
	assert.Equal(t, []string{namespace}, ns)
	eps, _, err := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	require.NoError(t, err)
	require.Len(t, eps, 1)
	ep := eps[0].(map[string]any)
	assert.Equal(t, "metrics", ep["port"])
	assert.Equal(t, "/metrics", ep["path"])
	assert.Equal(t, "https", ep["scheme"], "the metrics are served over HTTPS by default (metrics.secure)")
	assert.Equal(t, "/var/run/secrets/kubernetes.io/serviceaccount/token", ep["bearerTokenFile"], "with the Prometheus's token, which the program authenticates")
	assert.Equal(t, map[string]string{"release": "monitoring"}, subset(sm.GetLabels(), "release"), "serviceMonitor.labels")

	// prometheus-operator labels a ServiceMonitor's series job="<Service name>" (no jobLabel): the job the alerts select.
	groups, _, err := unstructured.NestedSlice(PrometheusRule(t, objs).Object, "spec", "groups")
	require.NoError(t, err)
	rules, _, err := unstructured.NestedSlice(groups[0].(map[string]any), "rules")
	require.NoError(t, err)
	for _, r := range rules {
		expr, _, _ := unstructured.NestedString(r.(map[string]any), "expr")
		for _, job := range regexp.MustCompile(`job="([^"]*)"`).FindAllStringSubmatch(expr, -1) {
			assert.Equal(t, svc.Name, job[1], "the alerts select the job of the scraped series: %s", expr)
		}
	}

	grants := RBAC(t, objs, "monitoring", "prometheus-k8s")
	for _, g := range []string{"/metrics get", "/debug/podsweeper get", "/debug/podsweeper head", "/debug/podsweeper/dry-run head"} {
		assert.Contains(t, grants.ClusterWide, g, "the Prometheus's ServiceAccount reads the metrics and the pages (HEAD is verb head): %v", grants.ClusterWide)
	}

	msg := RenderHelmRefused(t, "chart", release, namespace, ValuesFile(t, "serviceMonitor: {enabled: true}\nmetrics: {bindAddress: \"0\"}\n"))
	assert.Contains(t, msg, "serviceMonitor.enabled needs the metrics", "metrics off")
	checkScrapeOfLoopbackRefused(t, release, namespace)
}

// scrapeAddresses are metrics.bindAddress values a scrape is rendered for
// or refused: loopback however it is written (which the program's listener
// binds, and no Prometheus reaches), and addresses off it.
var scrapeAddresses = []string{
	"127.0.0.1:8443", "127.1.2.3:8443", "localhost:8443", "LocalHost.:8443", "metrics.localhost:8443",
	"[::1]:8443", "[0:0:0:0:0:0:0:1]:8443", "[0000:0000:0000:0000:0000:0000:0000:0001]:8443", "[0::0:1]:8443", "[::0:1]:8443",
	"[::1%lo]:8443", "[::0.0.0.1]:8443", "[::ffff:127.0.0.1]:8443", "[::FFFF:7f00:1]:8443", "[0:0:0:0:0:ffff:127.9.9.9]:8443",
	":8443", "0.0.0.0:8443", "[::]:8443", "10.0.0.1:8443", "128.0.0.1:8443", "[::ffff:10.0.0.1]:8443", "[::ffff:128.0.0.1]:8443",
	"[2001:db8::1]:8443", "[::1:0]:8443", "[1::1]:8443", "[::2]:8443", "[::127.0.0.1]:8443", "[fe80::1%eth0]:8443", "pod.example:8443",
}

// checkScrapeOfLoopbackRefused renders chart/ with serviceMonitor.enabled
// and each of scrapeAddresses: the chart refuses exactly those that Go's
// listener takes as loopback (localhost and names under .localhost, an IP
// that net.IP.IsLoopback says is), and renders a ServiceMonitor for the
// others.
func checkScrapeOfLoopbackRefused(t testing.TB, release, namespace string) {
	t.Helper()
	for _, addr := range scrapeAddresses {
		host, _, err := net.SplitHostPort(addr)
		require.NoError(t, err, addr)
		name := strings.TrimSuffix(strings.ToLower(host), ".")
		ip, _, _ := strings.Cut(host, "%")
		loopback := name == "localhost" || strings.HasSuffix(name, ".localhost") || net.ParseIP(ip).IsLoopback()
		values := ValuesFile(t, fmt.Sprintf("serviceMonitor: {enabled: true}\nmetrics: {secure: true, bindAddress: %q}\n", addr))
		if loopback {
			msg := RenderHelmRefused(t, "chart", release, namespace, values)
			assert.Contains(t, msg, "is loopback", "a scrape of metrics on loopback %s", addr)
			continue
		}
		kinds := map[string]bool{}
		for _, u := range RenderHelm(t, "chart", release, namespace, values) {
			kinds[u.GetKind()] = true
		}
		assert.True(t, kinds["ServiceMonitor"], "a scrape of metrics on %s, off loopback, is rendered", addr)
	}
}

// subset returns the entries of m named keys.
func subset(m map[string]string, keys ...string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}
