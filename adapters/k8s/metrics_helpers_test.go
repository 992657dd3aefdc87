package k8s_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

// samples flattens metric families into one value per series, keyed like
// the text format: `name{label="value"}`; histograms give name_count and name_sum.
func samples(families []*dto.MetricFamily) map[string]float64 {
	out := make(map[string]float64)
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			suffix := ""
			if len(labels) > 0 {
				suffix = "{" + strings.Join(labels, ",") + "}"
			}
			name := f.GetName()
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[name+suffix] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[name+suffix] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[name+"_count"+suffix] = float64(m.GetHistogram().GetSampleCount())
				out[name+"_sum"+suffix] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

func gather(t *testing.T, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	families, err := g.Gather()
	require.NoError(t, err)
	return samples(families)
}

// withPrefix keeps the series whose name starts with prefix.
func withPrefix(all map[string]float64, prefix string) map[string]float64 {
	out := make(map[string]float64)
	for k, v := range all {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}
