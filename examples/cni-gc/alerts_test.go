package main

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/podsweeper/podsweeper/internal/testkube"
)

// renderAlerts renders the chart as the release podsweeper-cni-gc with its
// PrometheusRule and dashboard on.
func renderAlerts(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	return testkube.RenderAlerts(t, "podsweeper-cni-gc")
}

// TestAlertsFireAsTheirTestsSay: each alert fires on the series its
// thresholds and durations name (testdata/alerts/, one file per alert), of
// the release's job and namespace only, stays silent on the others, and
// links its section of the runbooks.
func TestAlertsFireAsTheirTestsSay(t *testing.T) {
	testkube.CheckAlerts(t, renderAlerts(t))
}
