package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRunPrintsEachExpressionsMetricNames checks that every selector of an
// expression is found, in functions, aggregations, binary operations and
// subqueries, each name once and sorted, and that an expression that does
// not parse, or selects no metric by name, fails the run.
func TestRunPrintsEachExpressionsMetricNames(t *testing.T) {
	in := `["histogram_quantile(0.9, sum by (le) (rate(b_bucket{job=\"x\"}[5m]))) > on() group_left a", "up == 0 or absent(up{job=\"x\"})", "max_over_time(c[1h:5m])", "1"]`
	var out bytes.Buffer
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), `[["a","b_bucket"],["up"],["c"],[]]`+"\n"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	for _, bad := range []string{`["rate(a[5m]"]`, `["{job=~\"x.*\"}"]`, `["a{__name__=~\"b|c\"}"]`, `{}`} {
		if err := run(strings.NewReader(bad), &out); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
