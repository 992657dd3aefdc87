package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/podsweeper/podsweeper/internal/testkube"
)

// renderAlerts renders the chart as the release podsweeper-node-agent with its
// PrometheusRule and dashboard on.
func renderAlerts(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	return testkube.RenderAlerts(t, "podsweeper-node-agent")
}

// TestAlertsFireAsTheirTestsSay: each alert fires on the series its
// thresholds and durations name (testdata/alerts/, one file per alert), of
// the release's job and namespace only, stays silent on the others, and
// links its section of the runbooks.
func TestAlertsFireAsTheirTestsSay(t *testing.T) {
	testkube.CheckAlerts(t, renderAlerts(t))
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
