package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// reference is docs/metrics.md, from this package's directory.
var reference = filepath.Join("..", "..", "docs", "metrics.md")

func TestReferenceIsUpToDate(t *testing.T) {
	want, err := generate(guides)
	require.NoError(t, err)
	got, err := os.ReadFile(reference)
	require.NoError(t, err, "docs/metrics.md: run 'make metrics-doc' (go run ./hack/metricsdoc) and commit it")
	if string(got) != string(want) {
		t.Fatalf("docs/metrics.md is stale: run 'make metrics-doc' (go run ./hack/metricsdoc) from the repository's root and commit the result\n%s",
			firstDifference(string(got), string(want)))
	}
}

// firstDifference names the first line where got and want differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n  in the file:  %q\n  from the code: %q", i+1, gl, wl)
		}
	}
	return ""
}

func TestEveryMetricIsDocumented(t *testing.T) {
	doc, err := generate(guides)
	require.NoError(t, err)
	for _, name := range []string{
		k8s.MetricTrackedPUs, k8s.MetricDestroys, k8s.MetricDestroyFailures, k8s.MetricAbandoned,
		k8s.MetricPodGetErrors, k8s.MetricCheckDuration, k8s.MetricDestroyDelay, k8s.MetricVetoes,
		k8s.MetricRestored, k8s.MetricListFailures, k8s.MetricWouldDestroy, k8s.MetricRetrying, k8s.MetricOldestPendingSecond,
		k8s.MetricWaitingForRate, k8s.MetricOldestQueuedSecond,
	} {
		assert.Contains(t, string(doc), "\n## `"+name+"`\n", name)
	}
	assert.Contains(t, string(doc), "- Label `reason`: one of `PodGone`, `NodeChanged`, `UIDChanged`, `PodTerminated`, `SandboxChanged`, `SandboxDead` (`ports.Reasons()`)\n")
	assert.Contains(t, string(doc), "| [`podsweeper_check_duration_seconds`](#podsweeper_check_duration_seconds) | histogram | seconds | none | `k8s.NewMetrics` |\n")
	assert.Contains(t, string(doc), "| [`podsweeper_pus_waiting_for_retry`](#podsweeper_pus_waiting_for_retry) | gauge | count | none | `k8s.NewBacklogCollector` |\n")
}

func TestAMetricWithoutAGuideFails(t *testing.T) {
	g := maps.Clone(guides)
	delete(g, k8s.MetricOldestQueuedSecond)
	_, err := generate(g)
	require.Error(t, err)
	assert.Contains(t, err.Error(), k8s.MetricOldestQueuedSecond+" (k8s.NewBacklogCollector) is exported but has no line in guides")
}

func TestAGuideWithoutAMetricFails(t *testing.T) {
	g := maps.Clone(guides)
	g["podsweeper_removed_total"] = "When it was still exported."
	_, err := generate(g)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "guides (hack/metricsdoc/tables.go) has a line for podsweeper_removed_total, which no program exports any more")
}

func TestALabelWithoutItsValuesFails(t *testing.T) {
	saved := labels
	t.Cleanup(func() { labels = saved })
	labels = map[string]labelSet{}
	_, err := generate(guides)
	require.Error(t, err)
	assert.Contains(t, err.Error(), k8s.MetricDestroys+` has the label "reason", which has no entry in labels`)

	labels = map[string]labelSet{"reason": {from: "a shorter list", values: []string{"PodGone"}}}
	_, err = generate(guides)
	require.Error(t, err)
	assert.Contains(t, err.Error(), k8s.MetricDestroys+` has a series with reason="NodeChanged", which is not one of a shorter list`)
}

// The charts and the README link the reference.
func TestReferenceIsLinked(t *testing.T) {
	for _, p := range programs {
		for _, f := range []string{"Chart.yaml", "values.yaml"} {
			b, err := os.ReadFile(filepath.Join("..", "..", "examples", p, "chart", f))
			require.NoError(t, err)
			assert.True(t, strings.Contains(string(b), "docs/metrics.md"), "examples/%s/chart/%s links docs/metrics.md", p, f)
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(b), "](docs/metrics.md)"), "README.md links docs/metrics.md")
}
