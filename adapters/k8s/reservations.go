package k8s

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Names of the metrics registered by NewReservationMetrics.
const (
	MetricReservationsFreed       = "podsweeper_cni_reservations_freed_total"
	MetricReservationFreeFailures = "podsweeper_cni_reservation_free_failures_total"
	MetricReservationsWouldFree   = "podsweeper_cni_reservations_would_free_total"
	MetricReservationsReported    = "podsweeper_cni_reservations_reported_total"
)

// metricNetworkLabel is the label of the CNI network a reservation is of.
const metricNetworkLabel = "network"

// The reasons of adapters/cni's reservations (cni.ReasonNoSandbox,
// cni.ReasonConfigGone), which this package does not import; hack/metricsdoc
// fails on a series of another.
const (
	reasonNoSandbox  = "NoSandbox"
	reasonConfigGone = "ConfigGone"
)

// ReservationMetrics counts what the CNI collector does with host-local's
// reservations, by network and reason: it has the methods of
// adapters/cni's Observer (pass it as cni.Options.Observer). One
// ReservationMetrics may observe several collectors; their counts add up.
// A nil *ReservationMetrics records nothing.
type ReservationMetrics struct {
	freed, failed, would, reported *prometheus.CounterVec
}

// NewReservationMetrics creates the reservations' metrics and registers
// them on reg; nil means controller-runtime's metrics.Registry, which the
// manager serves on /metrics. A second NewReservationMetrics on the same
// registry returns an error wrapping prometheus.AlreadyRegisteredError and
// registers nothing.
//
// The metrics, counters by network and reason (cni.ReasonNoSandbox,
// cni.ReasonConfigGone): podsweeper_cni_reservations_freed_total (the
// reservations a DEL freed), podsweeper_cni_reservation_free_failures_total
// (DELs that failed, or succeeded, while host-local still holds the
// reservation; each is tried again at the next resync: one that failed
// after host-local released it freed it, and counts as freed), podsweeper_cni_reservations_would_free_total (what a dry run
// would free, each counted once) and
// podsweeper_cni_reservations_reported_total (reservations left alone for
// an operator, each counted once). The series of each network of the
// node's config that runs host-local show at 0 from the collector's first
// read (ReservationNetwork); another network's, from its first count.
func NewReservationMetrics(reg prometheus.Registerer) (*ReservationMetrics, error) {
	if reg == nil {
		reg = metrics.Registry
	}
	labels := []string{metricNetworkLabel, metricReasonLabel}
	m := &ReservationMetrics{
		freed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricReservationsFreed,
			Help: "host-local reservations the CNI collector freed with a DEL, by network and reason.",
		}, labels),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricReservationFreeFailures,
			Help: "DELs of host-local reservations that failed, or succeeded, while host-local still holds the reservation, by network and reason; each is tried again at the next resync.",
		}, labels),
		would: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricReservationsWouldFree,
			Help: "host-local reservations a dry run found it would free, by network and reason; each counted once.",
		}, labels),
		reported: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricReservationsReported,
			Help: "host-local reservations reported and never touched (their network's config is gone), by network and reason; each counted once.",
		}, labels),
	}
	collectors := []prometheus.Collector{m.freed, m.failed, m.would, m.reported}
	for i, c := range collectors {
		if err := reg.Register(c); err != nil {
			for _, done := range collectors[:i] {
				reg.Unregister(done)
			}
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("k8s: the reservations' metrics are registered already on this registry; share one ReservationMetrics: %w", err)
			}
			return nil, fmt.Errorf("k8s: registering the reservations' metrics: %w", err)
		}
	}
	return m, nil
}

// ReservationFreed counts a reservation of network freed for reason.
func (m *ReservationMetrics) ReservationFreed(network, reason string) {
	if m != nil {
		m.freed.WithLabelValues(network, reason).Inc()
	}
}

// ReservationFreeFailed counts a DEL of a reservation of network that
// failed, or succeeded, while host-local still holds the reservation.
func (m *ReservationMetrics) ReservationFreeFailed(network, reason string) {
	if m != nil {
		m.failed.WithLabelValues(network, reason).Inc()
	}
}

// ReservationWouldFree counts a reservation of network a dry run would
// free.
func (m *ReservationMetrics) ReservationWouldFree(network, reason string) {
	if m != nil {
		m.would.WithLabelValues(network, reason).Inc()
	}
}

// ReservationNetwork gives network's series their 0, each with the reason
// it counts (cni.ReasonNoSandbox, cni.ReasonConfigGone), so that rates and
// alerts work from the first scrape.
func (m *ReservationMetrics) ReservationNetwork(network string) {
	if m != nil {
		m.freed.WithLabelValues(network, reasonNoSandbox)
		m.failed.WithLabelValues(network, reasonNoSandbox)
		m.would.WithLabelValues(network, reasonNoSandbox)
		m.reported.WithLabelValues(network, reasonConfigGone)
	}
}

// ReservationReported counts a reservation of network reported and never
// touched.
func (m *ReservationMetrics) ReservationReported(network, reason string) {
	if m != nil {
		m.reported.WithLabelValues(network, reason).Inc()
	}
}
