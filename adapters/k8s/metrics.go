package k8s

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// Names of the metrics registered by NewMetrics.
const (
	MetricTrackedPUs      = "podsweeper_tracked_pus"
	MetricDestroys        = "podsweeper_destroys_total"
	MetricDestroyFailures = "podsweeper_destroy_failures_total"
	MetricAbandoned       = "podsweeper_abandoned_total"
	MetricPodGetErrors    = "podsweeper_pod_get_errors_total"
	MetricCheckDuration   = "podsweeper_check_duration_seconds"
	MetricDestroyDelay    = "podsweeper_destroy_delay_seconds"
	MetricVetoes          = "podsweeper_destroys_vetoed_total"
	MetricRestored        = "podsweeper_restored_pus_total"
	MetricWouldDestroy    = "podsweeper_would_destroy_total"
	MetricListFailures    = "podsweeper_inventory_list_failures_total"
)

const (
	metricReasonLabel       = "reason"
	checkBucketStartSeconds = 0.0005 // first bucket of the check durations
	delayBucketStartSeconds = 0.001  // first bucket of the destroy delays
)

// Metrics turns the engine's events into Prometheus metrics. It implements
// deletion.Observer: pass it as deletion.Options.Observer. One Metrics may
// observe several engines; their counts add up.
type Metrics struct {
	tracked   prometheus.Gauge
	destroys  *prometheus.CounterVec
	failures  *prometheus.CounterVec
	abandoned prometheus.Counter
	getErrors prometheus.Counter
	checks    prometheus.Histogram
	delays    prometheus.Histogram
	vetoes    *prometheus.CounterVec
	restored  prometheus.Counter
	lists     prometheus.Counter
	would     *prometheus.CounterVec
}

var _ deletion.Observer = (*Metrics)(nil)

// NewMetrics creates the podsweeper metrics and registers them on reg; nil
// means controller-runtime's metrics.Registry, which the manager serves on
// /metrics. A registry holds one set: a second NewMetrics on the same
// registry returns an error wrapping prometheus.AlreadyRegisteredError (match
// it with errors.As) and registers nothing, so share one Metrics between the
// engines of a process, or give each its own registry.
//
// The metrics: podsweeper_tracked_pus (gauge), podsweeper_destroys_total
// and podsweeper_destroy_failures_total (counters by reason),
// podsweeper_abandoned_total (entries dropped after their last failed
// destroy), podsweeper_pod_get_errors_total (GetPod failures other than not
// found), podsweeper_check_duration_seconds (histogram of check durations)
// and podsweeper_destroy_delay_seconds (histogram of the time from the
// first check that found a PU must go to its successful destroy),
// podsweeper_destroys_vetoed_total (destroys the Confirmer did not confirm,
// by the reason the cache's answer gave: a cache lagging behind the API
// server shows here; reason SandboxChanged counts the sandbox changes of a
// listing SandboxExtractor that the SandboxConfirmer did not confirm) and podsweeper_restored_pus_total (PUs tracked again
// from the Inventory at start), podsweeper_inventory_list_failures_total
// (lists of the Inventory that failed; Start retries them with backoff),
// and podsweeper_would_destroy_total (PUs a dry run found must go and did
// not destroy, by reason: the report an operator reads before turning
// destroys on).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		reg = metrics.Registry
	}
	m := &Metrics{
		tracked: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MetricTrackedPUs,
			Help: "Number of processing units tracked by the deletion engine.",
		}),
		destroys: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricDestroys,
			Help: "Processing units destroyed, by reason.",
		}, []string{metricReasonLabel}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricDestroyFailures,
			Help: "Failed attempts to destroy a processing unit, by reason.",
		}, []string{metricReasonLabel}),
		abandoned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricAbandoned,
			Help: "Processing units dropped after their last failed destroy attempt; the policy engine may still hold them.",
		}),
		getErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricPodGetErrors,
			Help: "Pod reads that failed with an error other than not found.",
		}),
		checks: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    MetricCheckDuration,
			Help:    "Duration of one check of a processing unit, destroy included.",
			Buckets: prometheus.ExponentialBuckets(checkBucketStartSeconds, 4, 9), // 0.5ms to 33s
		}),
		delays: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    MetricDestroyDelay,
			Help:    "Time from the first check that found a processing unit must go to its successful destroy.",
			Buckets: prometheus.ExponentialBuckets(delayBucketStartSeconds, 4, 10), // 1ms to 4.4min
		}),
		vetoes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricVetoes,
			Help: "Destroys decided on the pod cache's answer that the Confirmer's read of the API server did not confirm, by the cache's reason.",
		}, []string{metricReasonLabel}),
		restored: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricRestored,
			Help: "Processing units tracked again from the Inventory when the engine started.",
		}),
		lists: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricListFailures,
			Help: "Lists of the Inventory that failed or answered past their deadline; the engine lists it again with backoff until one answers.",
		}),
		would: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricWouldDestroy,
			Help: "Processing units a dry run found must go and did not destroy, by reason; each counted once per reason.",
		}, []string{metricReasonLabel}),
	}
	// Every reason shows up at 0 from the start, so rates work from the first scrape.
	for _, r := range ports.Reasons() {
		m.destroys.WithLabelValues(string(r))
		m.failures.WithLabelValues(string(r))
		m.vetoes.WithLabelValues(string(r))
		m.would.WithLabelValues(string(r))
	}
	collectors := []prometheus.Collector{m.tracked, m.destroys, m.failures, m.abandoned, m.getErrors, m.checks, m.delays, m.vetoes, m.restored, m.lists, m.would}
	for i, c := range collectors {
		if err := reg.Register(c); err != nil {
			for _, done := range collectors[:i] {
				reg.Unregister(done)
			}
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("k8s: podsweeper metrics are registered already on this registry; share one Metrics: %w", err)
			}
			return nil, fmt.Errorf("k8s: registering podsweeper metrics: %w", err)
		}
	}
	return m, nil
}

// Observe records ev. It never blocks. A nil *Metrics records nothing.
func (m *Metrics) Observe(ev deletion.Event) {
	if m == nil {
		return
	}
	switch ev.Kind {
	case deletion.EventTracked:
		m.tracked.Inc()
	case deletion.EventChecked:
		m.checks.Observe(ev.CheckDuration.Seconds())
	case deletion.EventGetFailed:
		m.getErrors.Inc()
	case deletion.EventDestroyed:
		m.tracked.Dec()
		m.destroys.WithLabelValues(string(ev.Reason)).Inc()
		m.delays.Observe(ev.DestroyDelay.Seconds())
	case deletion.EventDestroyFailed:
		m.failures.WithLabelValues(string(ev.Reason)).Inc()
	case deletion.EventAbandoned:
		m.tracked.Dec()
		m.abandoned.Inc()
	case deletion.EventUntracked:
		m.tracked.Dec()
	case deletion.EventVetoed:
		m.vetoes.WithLabelValues(string(ev.Reason)).Inc()
	case deletion.EventRestored:
		m.restored.Add(float64(ev.Count))
	case deletion.EventListFailed:
		m.lists.Inc()
	case deletion.EventWouldDestroy:
		m.would.WithLabelValues(string(ev.Reason)).Inc()
		if ev.Dropped {
			m.tracked.Dec()
		}
	}
}
