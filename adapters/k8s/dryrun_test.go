package k8s_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// TestDryRunReportShowsWhatWouldHaveBeenDestroyed: an engine in a dry run
// destroys nothing, and the report serves each PU it found must go, with
// its reason, even those the engine dropped from memory.
func TestDryRunReportShowsWhatWouldHaveBeenDestroyed(t *testing.T) {
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound })
	destroyed := 0
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { destroyed++; return nil })
	report := k8s.NewDryRunReport(0)
	engine, err := deletion.New(getter, policy, deletion.Options{DryRun: true, Observer: report})
	require.NoError(t, err)
	for _, id := range []string{"a", "b"} {
		require.NoError(t, engine.Track(ports.PU{PUID: id, Pod: types.NamespacedName{Namespace: "ns", Name: id}, SandboxID: "sb-" + id}))
	}
	engine.Sweep(context.Background())
	engine.Sweep(context.Background())
	assert.Zero(t, destroyed)
	assert.Zero(t, engine.Len(), "pods gone for good: dropped once reported")

	rec := httptest.NewRecorder()
	report.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, k8s.DryRunPath, nil))
	require.Equal(t, http.StatusOK, rec.Code)
	var page struct {
		Total   int                `json:"total"`
		Reports []k8s.WouldDestroy `json:"reports"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &page))
	assert.Equal(t, 2, page.Total)
	require.Len(t, page.Reports, 2)
	got := map[string]k8s.WouldDestroy{}
	for _, r := range page.Reports {
		got[r.PUID] = r
	}
	assert.Equal(t, "ns/a", got["a"].Pod)
	assert.Equal(t, "sb-a", got["a"].SandboxID)
	assert.Equal(t, string(ports.ReasonPodGone), got["a"].Reason)
	assert.Equal(t, 1, got["a"].Row)
	assert.True(t, got["b"].Dropped)
}

// WouldDestroy.Row "is the row of the decision table that decided the destroy ... a report of a PU the dry run gave
// up on tells the row its last check took too": a DryRunner that refuses every dry run of the destroy of a gone pod's
// PU (row 1), MaxDestroyAttempts 2, is given up on at its second check, and its report tells row 1, not 0.
func TestAGaveUpReportTellsTheRowThatDecidedTheDestroy(t *testing.T) {
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound })
	refuses := refusingDryRunner{}
	report := k8s.NewDryRunReport(0)
	engine, err := deletion.New(getter, refuses, deletion.Options{DryRun: true, Observer: report, MaxDestroyAttempts: 2})
	require.NoError(t, err)
	require.NoError(t, engine.Track(ports.PU{PUID: "a", Pod: types.NamespacedName{Namespace: "ns", Name: "a"}, SandboxID: "sb-a"}))
	engine.Sweep(context.Background())
	engine.Sweep(context.Background())
	require.Zero(t, engine.Len(), "given up on")
	reports, _ := report.Reports()
	require.Len(t, reports, 1)
	assert.True(t, reports[0].GaveUp)
	assert.Equal(t, 1, reports[0].Row, "row 1: pod not found")
	assert.Equal(t, string(ports.ReasonPodGone), reports[0].Reason)
}

// refusingDryRunner is a PolicyHandler whose dry run of every destroy fails.
type refusingDryRunner struct{}

func (refusingDryRunner) DestroyPU(context.Context, ports.DestroyEvent) error {
	return fmt.Errorf("destroy called")
}
func (refusingDryRunner) DryRunDestroyPU(context.Context, ports.DestroyEvent) error {
	return fmt.Errorf("policy engine says no")
}

// TestDryRunReportKeepsTheLatest: past its size the report keeps the
// newest, in order, and counts them all.
func TestDryRunReportKeepsTheLatest(t *testing.T) {
	report := k8s.NewDryRunReport(3)
	for i := range 5 {
		report.Observe(deletion.Event{Kind: deletion.EventWouldDestroy, PU: ports.PU{PUID: fmt.Sprint(i)}, Reason: ports.ReasonPodGone})
		report.Observe(deletion.Event{Kind: deletion.EventDestroyed, PU: ports.PU{PUID: "ignored"}})
	}
	kept, total := report.Reports()
	assert.Equal(t, 5, total)
	var ids []string
	for _, k := range kept {
		ids = append(ids, k.PUID)
	}
	assert.Equal(t, []string{"2", "3", "4"}, ids)
	rec := httptest.NewRecorder()
	report.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, k8s.DryRunPath, nil))
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
}
