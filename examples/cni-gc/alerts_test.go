package main

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/podsweeper/podsweeper/internal/testkube"
)

// runbooks is the default runbookBaseURL of the charts' PrometheusRules:
// docs/operating/runbooks.md on GitHub.
const runbooks = "https://github.com/podsweeper/podsweeper/blob/main/docs/operating/runbooks.md"

// renderAlerts renders the chart as the release podsweeper-cni-gc in
// the namespace podsweeper with its defaults and its PrometheusRule and
// dashboard on (testdata/alerts-values.yaml).
func renderAlerts(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	return testkube.RenderHelm(t, "chart", "podsweeper-cni-gc", "podsweeper", "testdata/alerts-values.yaml")
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
