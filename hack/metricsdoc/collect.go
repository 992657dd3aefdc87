package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// source is one constructor of the metrics the programs export.
type source struct {
	name     string   // the constructor, as the reference names it
	programs []string // the programs that register it on the registry their /metrics serves
	register func(prometheus.Registerer) error
}

// sources are what the programs register on the registry their /metrics
// serves (examples/<program>/main.go): the engine's metrics and its
// backlog's collector, each registered by all three.
var sources = []source{
	{name: "k8s.NewMetrics", programs: programs, register: func(reg prometheus.Registerer) error {
		_, err := k8s.NewMetrics(reg)
		return err
	}},
	{name: "k8s.NewBacklogCollector", programs: programs, register: func(reg prometheus.Registerer) error {
		// A real engine, never started: its backlog is empty, and its ports are never called.
		engine, err := deletion.New(
			ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
				return nil, errors.New("metricsdoc: no pods")
			}),
			ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error {
				return errors.New("metricsdoc: no policy engine")
			}),
			deletion.Options{})
		if err != nil {
			return err
		}
		return reg.Register(k8s.NewBacklogCollector(engine))
	}},
	{name: "k8s.NewReservationMetrics", programs: []string{"cni-gc"}, register: func(reg prometheus.Registerer) error {
		m, err := k8s.NewReservationMetrics(reg)
		if err != nil {
			return err
		}
		// A network's series show once the collector reads it: one, so
		// that their names, types and labels can be read.
		m.ReservationNetwork("podnet")
		return nil
	}},
}

// metric is one metric as its registry reports it.
type metric struct {
	name    string
	help    string
	kind    string              // counter, gauge or histogram
	labels  []string            // its label names, sorted
	values  map[string][]string // the values of each label its series carry at start
	buckets []float64           // a histogram's upper bounds
	source  source              // what registers it
}

// recorder is a Registerer that remembers what is registered through it.
type recorder struct {
	prometheus.Registerer
	collectors []prometheus.Collector
}

func (r *recorder) Register(c prometheus.Collector) error {
	if err := r.Registerer.Register(c); err != nil {
		return err
	}
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// described counts the descriptions of r's collectors: one per metric.
func (r *recorder) described() int {
	ch := make(chan *prometheus.Desc)
	go func() {
		for _, c := range r.collectors {
			c.Describe(ch)
		}
		close(ch)
	}()
	n := 0
	for range ch {
		n++
	}
	return n
}

// collect registers each source on a fresh registry of its own and gathers
// it. It fails when a source describes a metric that has no series to
// gather (its name, type and labels would be unknown), and when two sources
// export one name.
func collect() ([]metric, error) {
	var all []metric
	from := map[string]string{}
	for _, src := range sources {
		reg := prometheus.NewPedanticRegistry()
		rec := &recorder{Registerer: reg}
		if err := src.register(rec); err != nil {
			return nil, fmt.Errorf("%s: %w", src.name, err)
		}
		families, err := reg.Gather()
		if err != nil {
			return nil, fmt.Errorf("%s: gathering: %w", src.name, err)
		}
		if n := rec.described(); n != len(families) {
			var names []string
			for _, f := range families {
				names = append(names, f.GetName())
			}
			return nil, fmt.Errorf("%s describes %d metrics but %d have series at start (%s): "+
				"a metric with no series cannot be documented; give each of its label values a series at start",
				src.name, n, len(families), strings.Join(names, ", "))
		}
		for _, f := range families {
			m, err := metricOf(f)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", src.name, err)
			}
			if other, ok := from[m.name]; ok {
				return nil, fmt.Errorf("%s is exported by both %s and %s", m.name, other, src.name)
			}
			from[m.name], m.source = src.name, src
			all = append(all, m)
		}
	}
	return all, nil
}

// metricOf reads one gathered family.
func metricOf(f *dto.MetricFamily) (metric, error) {
	m := metric{name: f.GetName(), help: f.GetHelp(), values: map[string][]string{}}
	switch f.GetType() {
	case dto.MetricType_COUNTER:
		m.kind = "counter"
	case dto.MetricType_GAUGE:
		m.kind = "gauge"
	case dto.MetricType_HISTOGRAM:
		m.kind = "histogram"
	default:
		return m, fmt.Errorf("%s: type %s is not one the reference writes", m.name, f.GetType())
	}
	for i, s := range f.GetMetric() {
		var names []string
		for _, l := range s.GetLabel() {
			names = append(names, l.GetName())
			if !slices.Contains(m.values[l.GetName()], l.GetValue()) {
				m.values[l.GetName()] = append(m.values[l.GetName()], l.GetValue())
			}
		}
		slices.Sort(names)
		if i == 0 {
			m.labels = names
		} else if !slices.Equal(names, m.labels) {
			return m, fmt.Errorf("%s: series with labels %v and %v", m.name, m.labels, names)
		}
		if i == 0 && s.GetHistogram() != nil {
			for _, b := range s.GetHistogram().GetBucket() {
				m.buckets = append(m.buckets, b.GetUpperBound())
			}
		}
	}
	return m, nil
}
