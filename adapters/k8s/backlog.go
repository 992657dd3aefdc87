package k8s

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podsweeper/podsweeper/deletion"
)

// Names of the metrics of the backlog collector.
const (
	MetricRetrying            = "podsweeper_pus_waiting_for_retry"
	MetricOldestPendingSecond = "podsweeper_oldest_pending_destroy_seconds"
	MetricWaitingForRate      = "podsweeper_pus_waiting_for_destroy_rate"
	MetricOldestQueuedSecond  = "podsweeper_oldest_queued_check_seconds"
)

// BacklogCollector reports how far behind an engine's destroys are, read
// from the engine at each scrape (deletion.Engine.Backlog): the PUs
// waiting for the retry of a failed destroy, the age of the oldest PU
// found gone and not destroyed yet, and the PUs whose destroy waits for
// its turn under the destroy rate (deletion.Options.DestroyRate), and how
// long the oldest queued check has waited for a worker. A policy engine that is down shows as
// both growing.
type BacklogCollector struct {
	engine   *deletion.Engine
	retrying *prometheus.Desc
	oldest   *prometheus.Desc
	rate     *prometheus.Desc
	queued   *prometheus.Desc
	now      func() time.Time
}

var _ prometheus.Collector = (*BacklogCollector)(nil)

// NewBacklogCollector returns the collector of engine's backlog; register
// it beside NewMetrics' metrics (reg.MustRegister or reg.Register).
func NewBacklogCollector(engine *deletion.Engine) *BacklogCollector {
	return &BacklogCollector{
		engine: engine,
		retrying: prometheus.NewDesc(MetricRetrying,
			"Processing units whose destroy failed, waiting for its retry.", nil, nil),
		oldest: prometheus.NewDesc(MetricOldestPendingSecond,
			"Age of the oldest processing unit found gone and not destroyed yet; 0 when none is.", nil, nil),
		queued: prometheus.NewDesc(MetricOldestQueuedSecond,
			"How long the oldest check in the engine's queue has waited for a worker; 0 when none waits.", nil, nil),
		rate: prometheus.NewDesc(MetricWaitingForRate,
			"Processing units whose destroy waits for its turn under the engine's destroy rate.", nil, nil),
		now: time.Now,
	}
}

// Describe sends the collector's descriptions.
func (b *BacklogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- b.retrying
	ch <- b.oldest
	ch <- b.rate
	ch <- b.queued
}

// Collect reads the engine's backlog; a nil engine reports nothing.
func (b *BacklogCollector) Collect(ch chan<- prometheus.Metric) {
	if b.engine == nil {
		return
	}
	backlog := b.engine.Backlog()
	age := 0.0
	if !backlog.OldestGoneSince.IsZero() {
		age = b.now().Sub(backlog.OldestGoneSince).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(b.retrying, prometheus.GaugeValue, float64(backlog.Retrying))
	ch <- prometheus.MustNewConstMetric(b.oldest, prometheus.GaugeValue, age)
	ch <- prometheus.MustNewConstMetric(b.rate, prometheus.GaugeValue, float64(backlog.RateLimited))
	queuedFor := 0.0
	if !backlog.OldestQueuedSince.IsZero() {
		queuedFor = b.now().Sub(backlog.OldestQueuedSince).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(b.queued, prometheus.GaugeValue, queuedFor)
}
