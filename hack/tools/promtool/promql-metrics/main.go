// Command promql-metrics prints the metric names that PromQL expressions
// select, for the tests that check every name the examples' alerting rules
// and dashboards use against the names a running program exports. It reads
// a JSON array of expressions on its standard input and writes a JSON array
// of the same length: for each expression, the sorted names of its series
// selectors, each once.
//
//	echo '["rate(a_total[5m]) / b"]' | promql-metrics   # [["a_total","b"]]
//
// It parses with github.com/prometheus/prometheus/promql/parser at the
// version of this module's go.mod, and fails (exit status 1) on the first
// expression that does not parse or that has a selector without a metric
// name, naming it.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

func main() {
	if len(os.Args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: promql-metrics < expressions.json")
		os.Exit(2)
	}
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "promql-metrics:", err)
		os.Exit(1)
	}
}

// run reads the expressions from in and writes their metric names to out.
func run(in io.Reader, out io.Writer) error {
	var exprs []string
	if err := json.NewDecoder(in).Decode(&exprs); err != nil {
		return fmt.Errorf("reading a JSON array of expressions: %w", err)
	}
	p := parser.NewParser(parser.Options{})
	names := make([][]string, 0, len(exprs))
	for _, e := range exprs {
		n, err := metricNames(p, e)
		if err != nil {
			return err
		}
		names = append(names, n)
	}
	return json.NewEncoder(out).Encode(names)
}

// metricNames returns the sorted metric names that expr's series selectors
// select, each once.
func metricNames(p parser.Parser, expr string) ([]string, error) {
	ast, err := p.ParseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", expr, err)
	}
	names := []string{}
	for _, sel := range parser.ExtractSelectors(ast) {
		i := slices.IndexFunc(sel, func(m *labels.Matcher) bool {
			return m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual
		})
		if i < 0 {
			return nil, fmt.Errorf("%q: a selector without a metric name", expr)
		}
		names = append(names, sel[i].Value)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}
