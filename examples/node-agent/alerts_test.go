package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/podsweeper/podsweeper/internal/testkube"
)

// runbooks is the default runbookBaseURL of the charts' PrometheusRules:
// docs/operating/runbooks.md on GitHub.
const runbooks = "https://github.com/podsweeper/podsweeper/blob/main/docs/operating/runbooks.md"

// renderAlerts renders the chart as the release podsweeper-node-agent in
// the namespace podsweeper with its defaults and its PrometheusRule and
// dashboard on (testdata/alerts-values.yaml).
func renderAlerts(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	return testkube.RenderHelm(t, "chart", "podsweeper-node-agent", "podsweeper", "testdata/alerts-values.yaml")
}

// TestAlertsFireAsTheirTestsSay runs promtool's unit tests of
// testdata/alerts/ (one file per alert) on the rules the chart renders
// with its defaults: each alert fires on the series its thresholds and
// durations name, of the release's job and namespace only, and stays
// silent on the others; and each links its section of the runbooks.
func TestAlertsFireAsTheirTestsSay(t *testing.T) {
	objs := renderAlerts(t)
	testkube.AssertRunbooks(t, objs, runbooks, "../../docs/operating/runbooks.md")
	testkube.PromtoolTestRules(t, objs, "testdata/alerts")
}

// TestDashboardIsTheSameInTheThreeCharts checks that the three example
// programs' charts ship the same dashboard file, which each renders for
// its own series.
func TestDashboardIsTheSameInTheThreeCharts(t *testing.T) {
	want, err := os.ReadFile("chart/dashboards/podsweeper.json")
	require.NoError(t, err)
	for _, dir := range []string{"../cluster-controller", "../cni-gc"} {
		got, err := os.ReadFile(dir + "/chart/dashboards/podsweeper.json")
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "%s/chart/dashboards/podsweeper.json is examples/node-agent's", dir)
	}
}
