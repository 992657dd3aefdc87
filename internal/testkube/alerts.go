package testkube

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// PrometheusMade are the series that Prometheus makes itself, not a
// program: the only names the rules and dashboards may use that no
// program's /metrics shows.
var PrometheusMade = []string{"up"}

// PrometheusRule returns the one PrometheusRule of objs, failing the test
// if there is none or more than one.
func PrometheusRule(t testing.TB, objs []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == "PrometheusRule" {
			found = append(found, u)
		}
	}
	require.Len(t, found, 1, "one PrometheusRule rendered")
	return found[0]
}

// Dashboards returns the Grafana dashboards that the ConfigMaps of objs
// hold (every data key ending in .json), decoded.
func Dashboards(t testing.TB, objs []*unstructured.Unstructured) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, u := range objs {
		if u.GetKind() != "ConfigMap" {
			continue
		}
		data, _, err := unstructured.NestedStringMap(u.Object, "data")
		require.NoError(t, err)
		for _, key := range slices.Sorted(maps.Keys(data)) {
			if strings.HasSuffix(key, ".json") {
				var d map[string]any
				require.NoError(t, json.Unmarshal([]byte(data[key]), &d), "ConfigMap %s, %s", u.GetName(), key)
				out = append(out, d)
			}
		}
	}
	return out
}

// Rule is one alerting rule of a PrometheusRule.
type Rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Rules returns the alerting rules of the one PrometheusRule of objs, and
// its spec.groups as a Prometheus rules file (what prometheus-operator
// gives Prometheus).
func Rules(t testing.TB, objs []*unstructured.Unstructured) ([]Rule, []byte) {
	t.Helper()
	groups, ok, err := unstructured.NestedSlice(PrometheusRule(t, objs).Object, "spec", "groups")
	require.NoError(t, err)
	require.True(t, ok, "the PrometheusRule has spec.groups")
	file, err := yaml.Marshal(map[string]any{"groups": groups})
	require.NoError(t, err)
	var parsed struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []Rule `json:"rules"`
		} `json:"groups"`
	}
	require.NoError(t, yaml.UnmarshalStrict(file, &parsed))
	var rules []Rule
	for _, g := range parsed.Groups {
		rules = append(rules, g.Rules...)
	}
	require.NotEmpty(t, rules)
	return rules, file
}

// PromtoolTestRules runs `$PROMTOOL test rules` on every *.yaml file of
// testsDir, with the rules of the one PrometheusRule of objs as the file
// rules.yaml beside them (their rule_files), and fails the test with
// promtool's report if any of their tests fails. Every alert of the rules
// must have a file of its own, testsDir/<alert name>.yaml, and no file
// may name another.
func PromtoolTestRules(t testing.TB, objs []*unstructured.Unstructured, testsDir string) {
	t.Helper()
	promtool := Tool(t, "PROMTOOL")
	rules, file := Rules(t, objs)
	tests, err := filepath.Glob(filepath.Join(testsDir, "*.yaml"))
	require.NoError(t, err)
	var want, have []string
	for _, r := range rules {
		want = append(want, r.Alert+".yaml")
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), file, 0o600))
	args := []string{"test", "rules"}
	for _, f := range tests {
		have = append(have, filepath.Base(f))
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600))
		args = append(args, filepath.Base(f))
	}
	assert.ElementsMatch(t, want, have, "one test file per alert in %s", testsDir)
	cmd := exec.Command(promtool, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool test rules:\n%s", out)
}

// grafanaVars are the values the dashboards' variables take when their
// expressions are parsed: Grafana's own and the dashboards' (selector is
// a chart's monitoring.selector, put in the dashboard when it renders).
var grafanaVars = map[string]string{"__rate_interval": "5m", "__interval": "1m", "__range": "1h", "instance": ".*", "datasource": ""}

// grafanaVar matches a variable of a Grafana query: $name or ${name}.
var grafanaVar = regexp.MustCompile(`\$\{(\w+)\}|\$(\w+)`)

// labelValues matches the query of a variable: label_values(selector, label).
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*\w+\)$`)

// Expressions returns every PromQL expression of objs: each alerting
// rule's, and each panel target's and query variable's of each dashboard
// (the selector of a label_values query), with the dashboard's variables
// replaced by values they can take: selector by its own value in the
// dashboard, Grafana's by a duration. A variable it does not know fails
// the test.
func Expressions(t testing.TB, objs []*unstructured.Unstructured) []string {
	t.Helper()
	rules, _ := Rules(t, objs)
	var exprs []string
	for _, r := range rules {
		exprs = append(exprs, r.Expr)
	}
	dashboards := Dashboards(t, objs)
	require.NotEmpty(t, dashboards, "a dashboard rendered")
	for _, d := range dashboards {
		var dash struct {
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
			Templating struct {
				List []struct {
					Name  string `json:"name"`
					Type  string `json:"type"`
					Query any    `json:"query"`
				} `json:"list"`
			} `json:"templating"`
		}
		b, err := json.Marshal(d)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &dash))
		vars := maps.Clone(grafanaVars)
		var queries []string
		for _, v := range dash.Templating.List {
			switch q := v.Query.(type) {
			case string:
				if v.Type == "constant" {
					vars[v.Name] = q
				}
			case map[string]any:
				s, _ := q["query"].(string)
				m := labelValues.FindStringSubmatch(s)
				require.NotNil(t, m, "variable %s: a label_values(selector, label) query, not %q", v.Name, s)
				queries = append(queries, m[1])
			}
		}
		for _, p := range dash.Panels {
			require.NotEmpty(t, p.Targets, "panel %q has a query", p.Title)
			for _, tg := range p.Targets {
				queries = append(queries, tg.Expr)
			}
		}
		for _, q := range queries {
			exprs = append(exprs, grafanaVar.ReplaceAllStringFunc(q, func(s string) string {
				m := grafanaVar.FindStringSubmatch(s)
				name := m[1] + m[2]
				v, ok := vars[name]
				assert.True(t, ok, "%q: the variable $%s is none of the dashboard's", q, name)
				return v
			}))
		}
	}
	return exprs
}

// MetricNames returns the metric names that exprs select, each parsed by
// $PROMQL_METRICS (Prometheus's own PromQL parser, built from
// hack/tools/promtool), sorted: an expression that does not parse fails
// the test.
func MetricNames(t testing.TB, exprs []string) []string {
	t.Helper()
	in, err := json.Marshal(exprs)
	require.NoError(t, err)
	cmd := exec.Command(Tool(t, "PROMQL_METRICS"))
	cmd.Stdin = bytes.NewReader(in)
	var names [][]string
	require.NoError(t, json.Unmarshal(run(t, cmd), &names))
	require.Len(t, names, len(exprs))
	var all []string
	for i, n := range names {
		require.NotEmpty(t, n, "%q selects no metric", exprs[i])
		all = append(all, n...)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// ScrapedNames returns the names of the samples of a /metrics page in
// Prometheus's text format (a histogram's _bucket, _sum and _count).
func ScrapedNames(page string) map[string]bool {
	names := map[string]bool{}
	for line := range strings.Lines(page) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names
}

// AssertExported checks that every metric name that the rules and
// dashboards of objs use (Expressions, MetricNames) is on page, the
// /metrics of a running program, or one of PrometheusMade.
func AssertExported(t testing.TB, objs []*unstructured.Unstructured, page string) {
	t.Helper()
	scraped := ScrapedNames(page)
	require.NotEmpty(t, scraped, "the page holds samples")
	used := MetricNames(t, Expressions(t, objs))
	t.Logf("the rules and dashboards use %d metrics: %s", len(used), strings.Join(used, " "))
	var missing []string
	for _, n := range used {
		if !scraped[n] && !slices.Contains(PrometheusMade, n) {
			missing = append(missing, n)
		}
	}
	assert.Empty(t, missing, "metrics the rules or the dashboard use that the program does not export (it exports %d names)", len(scraped))
	assert.Contains(t, used, "up", "the rules watch the targets' up")
}

// headingAnchor matches a Markdown heading of level 2 or 3.
var headingAnchor = regexp.MustCompile(`(?m)^#{2,3} +(.+?) *$`)

// AssertRunbooks checks that every alerting rule of objs has a summary,
// a description, and a runbook_url base#anchor whose anchor is the
// section of the runbook file (as GitHub names the anchors of its
// headings) that bears the alert's name.
func AssertRunbooks(t testing.TB, objs []*unstructured.Unstructured, base, runbook string) {
	t.Helper()
	b, err := os.ReadFile(runbook)
	require.NoError(t, err)
	anchors := map[string]string{}
	for _, m := range headingAnchor.FindAllStringSubmatch(string(b), -1) {
		anchors[githubAnchor(m[1])] = m[1]
	}
	rules, _ := Rules(t, objs)
	for _, r := range rules {
		assert.NotEmpty(t, r.Annotations["summary"], r.Alert)
		assert.NotEmpty(t, r.Annotations["description"], r.Alert)
		url, anchor, ok := strings.Cut(r.Annotations["runbook_url"], "#")
		if !assert.True(t, ok, "%s: a runbook_url with an anchor", r.Alert) {
			continue
		}
		assert.Equal(t, base, url, r.Alert)
		assert.Equal(t, r.Alert, anchors[anchor], "%s: its runbook_url's anchor #%s is the section named after it in %s", r.Alert, anchor, runbook)
	}
}

// githubAnchor is the anchor GitHub gives a heading: lower case, spaces
// as dashes, other punctuation dropped.
func githubAnchor(heading string) string {
	var sb strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			sb.WriteRune('-')
		case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9'):
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// AssertMonitoring checks what a chart renders for its monitoring (r,
// RenderBoth's): with its defaults, neither a PrometheusRule nor a
// dashboard; with testdata/chart-values.yaml, which turns both on, a
// PrometheusRule with ruleLabels among its labels whose every rule selects
// the series of selector (monitoring.selector), and one dashboard, in a
// ConfigMap with dashboardLabels, of uid uid, showing selector's series.
// It returns the rules of r.Values.
func AssertMonitoring(t testing.TB, r Rendered, selector string, ruleLabels, dashboardLabels map[string]string, uid string) []Rule {
	t.Helper()
	for _, u := range r.Defaults {
		assert.NotEqual(t, "PrometheusRule", u.GetKind(), "the chart's defaults render no PrometheusRule")
		assert.NotEqual(t, "ConfigMap", u.GetKind(), "the chart's defaults render no dashboard")
	}
	rule := PrometheusRule(t, r.Values)
	for k, v := range ruleLabels {
		assert.Equal(t, v, rule.GetLabels()[k], "the PrometheusRule's label %s", k)
	}
	rules, _ := Rules(t, r.Values)
	for _, rl := range rules {
		assert.Contains(t, rl.Expr, "{"+selector+"}", "%s selects monitoring.selector's series", rl.Alert)
	}
	var cm *unstructured.Unstructured
	for _, u := range r.Values {
		if u.GetKind() == "ConfigMap" {
			require.Nil(t, cm, "one dashboard ConfigMap")
			cm = u
		}
	}
	require.NotNil(t, cm, "a dashboard ConfigMap")
	for k, v := range dashboardLabels {
		assert.Equal(t, v, cm.GetLabels()[k], "the dashboard ConfigMap's label %s", k)
	}
	dashboards := Dashboards(t, r.Values)
	require.Len(t, dashboards, 1)
	assert.Equal(t, uid, dashboards[0]["uid"])
	var constant []string
	for _, v := range dashboards[0]["templating"].(map[string]any)["list"].([]any) {
		if v := v.(map[string]any); v["type"] == "constant" {
			constant = append(constant, v["name"].(string)+"="+v["query"].(string))
		}
	}
	assert.Equal(t, []string{"selector=" + selector}, constant, "the dashboard shows monitoring.selector's series")
	return rules
}

// RunbooksURL is the charts' default runbookBaseURL: docs/operating/runbooks.md
// on GitHub.
const RunbooksURL = "https://github.com/podsweeper/podsweeper/blob/main/docs/operating/runbooks.md"

// RenderAlerts renders the chart of the example program the test runs in
// (chart/) as release in the namespace podsweeper, with its defaults and its
// PrometheusRule and dashboard on (testdata/alerts-values.yaml).
func RenderAlerts(t testing.TB, release string) []*unstructured.Unstructured {
	t.Helper()
	return RenderHelm(t, "chart", release, "podsweeper", "testdata/alerts-values.yaml")
}

// CheckAlerts runs promtool's unit tests of testdata/alerts/ (one file per
// alert) on the rules of objs, and checks that each alert links its section
// of docs/operating/runbooks.md.
func CheckAlerts(t testing.TB, objs []*unstructured.Unstructured) {
	t.Helper()
	AssertRunbooks(t, objs, RunbooksURL, "../../docs/operating/runbooks.md")
	PromtoolTestRules(t, objs, "testdata/alerts")
}
