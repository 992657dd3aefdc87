package k8s_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

func TestMetricsCountEngineEvents(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := k8s.NewMetrics(reg)
	require.NoError(t, err)

	for range 3 {
		m.Observe(deletion.Event{Kind: deletion.EventTracked})
	}
	m.Observe(deletion.Event{Kind: deletion.EventChecked, CheckDuration: 3 * time.Millisecond})
	m.Observe(deletion.Event{Kind: deletion.EventChecked, CheckDuration: time.Second})
	m.Observe(deletion.Event{Kind: deletion.EventGetFailed, Err: errors.New("timeout")})
	m.Observe(deletion.Event{Kind: deletion.EventDestroyed, Reason: ports.ReasonPodGone, DestroyDelay: 2 * time.Millisecond})
	m.Observe(deletion.Event{Kind: deletion.EventDestroyFailed, Reason: ports.ReasonUIDChanged, DestroyCalls: 1})
	m.Observe(deletion.Event{Kind: deletion.EventDestroyFailed, Reason: ports.ReasonUIDChanged, DestroyCalls: 2})
	m.Observe(deletion.Event{Kind: deletion.EventAbandoned, Reason: ports.ReasonUIDChanged, DestroyCalls: 2})
	m.Observe(deletion.Event{Kind: deletion.EventTracked})
	m.Observe(deletion.Event{Kind: deletion.EventUntracked})
	m.Observe(deletion.Event{Kind: deletion.EventVetoed, Reason: ports.ReasonPodGone})
	m.Observe(deletion.Event{Kind: deletion.EventVetoed, Reason: ports.ReasonPodGone})
	m.Observe(deletion.Event{Kind: deletion.EventRestored, Count: 7})
	m.Observe(deletion.Event{Kind: deletion.EventListFailed, Err: errors.New("journal locked"), ListCalls: 1})
	m.Observe(deletion.Event{Kind: deletion.EventTracked})
	m.Observe(deletion.Event{Kind: deletion.EventWouldDestroy, Reason: ports.ReasonSandboxChanged}) // kept
	m.Observe(deletion.Event{Kind: deletion.EventWouldDestroy, Reason: ports.ReasonPodGone, Dropped: true})
	m.Observe(deletion.Event{Kind: deletion.EventKind(99)}) // unknown kinds are ignored

	got := gather(t, reg)
	assert.Equal(t, map[string]float64{
		`podsweeper_tracked_pus`:                                     1,
		`podsweeper_destroys_total{reason="PodGone"}`:                1,
		`podsweeper_destroys_total{reason="NodeChanged"}`:            0,
		`podsweeper_destroys_total{reason="UIDChanged"}`:             0,
		`podsweeper_destroys_total{reason="SandboxChanged"}`:         0,
		`podsweeper_destroys_total{reason="SandboxDead"}`:            0,
		`podsweeper_destroys_total{reason="PodTerminated"}`:          0,
		`podsweeper_destroy_failures_total{reason="PodGone"}`:        0,
		`podsweeper_destroy_failures_total{reason="NodeChanged"}`:    0,
		`podsweeper_destroy_failures_total{reason="UIDChanged"}`:     2,
		`podsweeper_destroy_failures_total{reason="SandboxChanged"}`: 0,
		`podsweeper_destroy_failures_total{reason="SandboxDead"}`:    0,
		`podsweeper_destroy_failures_total{reason="PodTerminated"}`:  0,
		`podsweeper_abandoned_total`:                                 1,
		`podsweeper_destroys_vetoed_total{reason="PodGone"}`:         2,
		`podsweeper_destroys_vetoed_total{reason="NodeChanged"}`:     0,
		`podsweeper_destroys_vetoed_total{reason="UIDChanged"}`:      0,
		`podsweeper_destroys_vetoed_total{reason="SandboxChanged"}`:  0,
		`podsweeper_destroys_vetoed_total{reason="SandboxDead"}`:     0,
		`podsweeper_destroys_vetoed_total{reason="PodTerminated"}`:   0,
		`podsweeper_restored_pus_total`:                              7,
		`podsweeper_inventory_list_failures_total`:                   1,
		`podsweeper_would_destroy_total{reason="PodGone"}`:           1,
		`podsweeper_would_destroy_total{reason="NodeChanged"}`:       0,
		`podsweeper_would_destroy_total{reason="UIDChanged"}`:        0,
		`podsweeper_would_destroy_total{reason="SandboxChanged"}`:    1,
		`podsweeper_would_destroy_total{reason="SandboxDead"}`:       0,
		`podsweeper_would_destroy_total{reason="PodTerminated"}`:     0,
		`podsweeper_pod_get_errors_total`:                            1,
		`podsweeper_check_duration_seconds_count`:                    2,
		`podsweeper_check_duration_seconds_sum`:                      1.003,
		`podsweeper_destroy_delay_seconds_count`:                     1,
		`podsweeper_destroy_delay_seconds_sum`:                       0.002,
	}, got)
}

func TestMetricsSecondRegistrationIsAnErrorNotAPanic(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, err := k8s.NewMetrics(reg)
	require.NoError(t, err)

	m, err := k8s.NewMetrics(reg)
	require.Error(t, err)
	assert.Nil(t, m)
	var are prometheus.AlreadyRegisteredError
	assert.ErrorAs(t, err, &are)

	// Another registry takes a second set.
	_, err = k8s.NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
}

func TestMetricsFailedRegistrationLeavesNothingBehind(t *testing.T) {
	reg := prometheus.NewRegistry()
	// Something else owns the name of the fourth collector.
	require.NoError(t, reg.Register(prometheus.NewGauge(prometheus.GaugeOpts{Name: k8s.MetricAbandoned, Help: "taken"})))

	_, err := k8s.NewMetrics(reg)
	require.Error(t, err)
	assert.Equal(t, map[string]float64{k8s.MetricAbandoned: 0}, gather(t, reg),
		"the collectors registered before the clash are unregistered again")
}

func TestMetricsNilIsANoOp(t *testing.T) {
	var m *k8s.Metrics
	assert.NotPanics(t, func() { m.Observe(deletion.Event{Kind: deletion.EventTracked}) })
}

func TestMetricsAsTheEngineObserver(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := k8s.NewMetrics(reg)
	require.NoError(t, err)
	live := testPod("ns", "live", "u-live", "node-a")
	c, err := deletion.New(k8s.NewPodGetter(fake.NewClientBuilder().WithObjects(live).Build()),
		ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil }),
		deletion.Options{Observer: m, NodeName: "node-a"})
	require.NoError(t, err)
	require.NoError(t, c.Track(ports.PU{PUID: "u-live", Pod: types.NamespacedName{Namespace: "ns", Name: "live"}}))
	require.NoError(t, c.Track(ports.PU{PUID: "u-gone", Pod: types.NamespacedName{Namespace: "ns", Name: "gone"}}))
	c.Sweep(t.Context())

	got := gather(t, reg)
	assert.Equal(t, 1.0, got[`podsweeper_destroys_total{reason="PodGone"}`])
	assert.Equal(t, 1.0, got[k8s.MetricTrackedPUs])
	assert.Equal(t, 1.0, got[k8s.MetricDestroyDelay+"_count"])
	assert.Equal(t, 2.0, got[k8s.MetricCheckDuration+"_count"])
}
