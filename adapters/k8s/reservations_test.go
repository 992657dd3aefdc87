package k8s_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// Each of the CNI collector's reservation events counts on its own
// metric, by network and reason; a nil ReservationMetrics counts nothing.
func TestReservationMetricsCountByNetworkAndReason(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := k8s.NewReservationMetrics(reg)
	require.NoError(t, err)
	m.ReservationFreed("podnet", "NoSandbox")
	m.ReservationFreed("podnet", "NoSandbox")
	m.ReservationFreed("net1", "NoSandbox")
	m.ReservationFreeFailed("podnet", "NoSandbox")
	m.ReservationWouldFree("net1", "NoSandbox")
	m.ReservationReported("oldnet", "ConfigGone")
	for _, tc := range []struct {
		metric, network, reason string
		want                    float64
	}{
		{k8s.MetricReservationsFreed, "podnet", "NoSandbox", 2},
		{k8s.MetricReservationsFreed, "net1", "NoSandbox", 1},
		{k8s.MetricReservationFreeFailures, "podnet", "NoSandbox", 1},
		{k8s.MetricReservationsWouldFree, "net1", "NoSandbox", 1},
		{k8s.MetricReservationsReported, "oldnet", "ConfigGone", 1},
	} {
		families, err := reg.Gather()
		require.NoError(t, err)
		got := -1.0
		for _, f := range families {
			if f.GetName() != tc.metric {
				continue
			}
			for _, s := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range s.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["network"] == tc.network && labels["reason"] == tc.reason {
					got = s.GetCounter().GetValue()
				}
			}
		}
		require.Equal(t, tc.want, got, "%s{network=%q,reason=%q}", tc.metric, tc.network, tc.reason)
	}
	require.Equal(t, 2, testutil.CollectAndCount(reg, k8s.MetricReservationsFreed))
	m.ReservationNetwork("idle")
	require.Equal(t, 3, testutil.CollectAndCount(reg, k8s.MetricReservationsFreed), "a network read shows at 0")
	require.Equal(t, 2, testutil.CollectAndCount(reg, k8s.MetricReservationsReported))

	_, err = k8s.NewReservationMetrics(reg)
	var are prometheus.AlreadyRegisteredError
	require.ErrorAs(t, err, &are, "a second set on the same registry")

	var none *k8s.ReservationMetrics
	none.ReservationFreed("podnet", "NoSandbox") // no panic
	none.ReservationFreeFailed("podnet", "NoSandbox")
	none.ReservationWouldFree("podnet", "NoSandbox")
	none.ReservationReported("podnet", "ConfigGone")
	none.ReservationNetwork("podnet")
}
