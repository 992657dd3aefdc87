package k8s_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// TestBacklogCollector: a policy engine that fails shows as PUs waiting for
// a retry and an oldest pending destroy that ages; both fall to 0 once the
// destroys go through.
func TestBacklogCollector(t *testing.T) {
	fail := true
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound })
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error {
		if fail {
			return errors.New("policy engine down")
		}
		return nil
	})
	engine, err := deletion.New(getter, policy, deletion.Options{})
	require.NoError(t, err)
	for _, id := range []string{"a", "b", "c"} {
		require.NoError(t, engine.Track(ports.PU{PUID: id, Pod: types.NamespacedName{Namespace: "ns", Name: id}}))
	}
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(k8s.NewBacklogCollector(engine)))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP podsweeper_pus_waiting_for_retry Processing units whose destroy failed, waiting for its retry.
# TYPE podsweeper_pus_waiting_for_retry gauge
podsweeper_pus_waiting_for_retry 0
`), k8s.MetricRetrying))

	engine.Sweep(context.Background())
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP podsweeper_pus_waiting_for_retry Processing units whose destroy failed, waiting for its retry.
# TYPE podsweeper_pus_waiting_for_retry gauge
podsweeper_pus_waiting_for_retry 3
`), k8s.MetricRetrying))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == k8s.MetricOldestPendingSecond {
			assert.Greater(t, mf.GetMetric()[0].GetGauge().GetValue(), 0.0, "the oldest pending destroy has an age")
		}
	}

	fail = false
	engine.Sweep(context.Background())
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP podsweeper_oldest_pending_destroy_seconds Age of the oldest processing unit found gone and not destroyed yet; 0 when none is.
# TYPE podsweeper_oldest_pending_destroy_seconds gauge
podsweeper_oldest_pending_destroy_seconds 0
# HELP podsweeper_oldest_queued_check_seconds How long the oldest check in the engine's queue has waited for a worker; 0 when none waits.
# TYPE podsweeper_oldest_queued_check_seconds gauge
podsweeper_oldest_queued_check_seconds 0
# HELP podsweeper_pus_waiting_for_destroy_rate Processing units whose destroy waits for its turn under the engine's destroy rate.
# TYPE podsweeper_pus_waiting_for_destroy_rate gauge
podsweeper_pus_waiting_for_destroy_rate 0
# HELP podsweeper_pus_waiting_for_retry Processing units whose destroy failed, waiting for its retry.
# TYPE podsweeper_pus_waiting_for_retry gauge
podsweeper_pus_waiting_for_retry 0
`)))
}

// TestBacklogCollectorShowsTheDestroyRate: PUs whose destroy waits for its
// turn under the destroy rate show in their own gauge, not as retries.
func TestBacklogCollectorShowsTheDestroyRate(t *testing.T) {
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound })
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	engine, err := deletion.New(getter, policy, deletion.Options{DestroyRate: 0.001}) // one destroy, then one every 1000 s
	require.NoError(t, err)
	for _, id := range []string{"a", "b", "c"} {
		require.NoError(t, engine.Track(ports.PU{PUID: id, Pod: types.NamespacedName{Namespace: "ns", Name: id}}))
	}
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(k8s.NewBacklogCollector(engine)))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	engine.Sweep(ctx) // a Sweep waits for the turns: its context ends it
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP podsweeper_pus_waiting_for_destroy_rate Processing units whose destroy waits for its turn under the engine's destroy rate.
# TYPE podsweeper_pus_waiting_for_destroy_rate gauge
podsweeper_pus_waiting_for_destroy_rate 2
# HELP podsweeper_pus_waiting_for_retry Processing units whose destroy failed, waiting for its retry.
# TYPE podsweeper_pus_waiting_for_retry gauge
podsweeper_pus_waiting_for_retry 0
`), k8s.MetricWaitingForRate, k8s.MetricRetrying))
	assert.Equal(t, 2, engine.Len(), "one destroyed, two waiting for their turn")
}
