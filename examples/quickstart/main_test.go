package main

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestStory runs the story as `go run` does, with the engine's logs on,
// and checks what the engine did, one fact at a time.
func TestStory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, logs bytes.Buffer
	start := time.Now()

	res, err := runStory(ctx, &out, engineLogger(true, &logs))

	took := time.Since(start)
	require.NoError(t, err, "output:\n%s", out.String())
	t.Logf("output:\n%s", out.String())
	assert.Empty(t, res.Check())
	assert.Less(t, took, 5*time.Second, "the story, the engine's shutdown included, must run in under 5s")
	assert.LessOrEqual(t, res.Elapsed, took)

	assert.Equal(t, []Destroy{
		{"uid-web-0", ports.ReasonPodGone},
		{"uid-batch-0", ports.ReasonNodeChanged},
		{"uid-db-0", ports.ReasonUIDChanged},
		{"uid-job-0", ports.ReasonPodTerminated},
		{"uid-cart-0", ports.ReasonSandboxChanged},
		{"uid-api-0", ports.ReasonPodGone},
		{"uid-report-0", ports.ReasonPodGone},
		{"uid-new-0", ports.ReasonPodGone},
	}, res.Destroys, "the PUs destroyed, in order")

	// Rows of the checks the story asks for; a periodic check may add a
	// keep between them (see RowsMatch).
	for puid, want := range map[string][]int{
		"uid-web-0":    {1},
		"uid-batch-0":  {3},
		"uid-db-0":     {4},
		"uid-job-0":    {11},
		"uid-cart-0":   {6, 8, 7, 9, 10, 9},
		"uid-api-0":    {2, 1},
		"uid-report-0": {1, 1},
		"uid-legacy-0": {1},
		"uid-new-0":    {9, 9, 1},
	} {
		assert.True(t, RowsMatch(res.Rows[puid], want), "rows of %s: got %v, want %v", puid, res.Rows[puid], want)
	}
	assert.Len(t, res.Rows, 9, "no other PU was checked")

	// One failed destroy retried once, after its backoff; one abandoned.
	assert.Equal(t, []Destroy{{"uid-report-0", ports.ReasonPodGone}, {"uid-legacy-0", ports.ReasonPodGone}}, res.Failed)
	assert.GreaterOrEqual(t, res.RetryWait, retryMinDelay, "retried before its backoff, despite the TriggerPod")
	assert.Less(t, res.RetryWait, retryMinDelay+sweepInterval+time.Second, "retried far too late")
	assert.Contains(t, out.String(), "PodGone (attempt 2)")
	assert.Equal(t, []Destroy{{"uid-legacy-0", ports.ReasonPodGone}}, res.Abandoned)

	// The Confirmer vetoed the cache's NotFound of new-0 (a periodic check
	// may have met the lagging cache too, and been vetoed the same way).
	require.NotEmpty(t, res.Vetoes)
	for _, v := range res.Vetoes {
		assert.Equal(t, Veto{"uid-new-0", ports.ReasonPodGone, 9}, v)
	}

	assert.Equal(t, []ports.PU{{PUID: "uid-cart-0", Pod: types.NamespacedName{Namespace: namespace, Name: "cart-0"}, SandboxID: "sb-cart-2"}},
		res.Untracked)
	assert.Equal(t, []string{"uid-cart-0"}, res.Requeued)

	// Every check is printed with its row and words; every row but 5 (no
	// SandboxExtractor) shows up.
	for row := 1; row <= 11; row++ {
		v := deletion.Verdict{Row: row}
		if row == 5 {
			assert.NotContains(t, out.String(), v.Why())
			continue
		}
		assert.Contains(t, out.String(), fmt.Sprintf("row %-2d", row)+" ", "row %d", row)
		assert.Contains(t, out.String(), v.Why(), "row %d", row)
	}
	assert.Contains(t, out.String(), "readiness:     ok; PUs still tracked: 0")

	// The engine logged through the Logger given, not through klog.
	assert.Contains(t, logs.String(), "PU destroyed")
	assert.Contains(t, logs.String(), "destroy not confirmed; keeping PU")
}

func TestRowsMatch(t *testing.T) {
	assert.True(t, RowsMatch([]int{1}, []int{1}))
	assert.True(t, RowsMatch([]int{9, 1}, []int{1}), "a periodic keep first")
	assert.True(t, RowsMatch([]int{6, 6, 8, 7, 9, 9}, []int{6, 8, 7, 9}), "keeps repeated")
	assert.False(t, RowsMatch(nil, []int{1}), "a missing row")
	assert.False(t, RowsMatch([]int{1, 1}, []int{1}), "an extra destroy")
	assert.False(t, RowsMatch([]int{7, 9}, []int{9}), "an extra adopt")
	assert.False(t, RowsMatch([]int{8, 6}, []int{6, 8}), "rows out of order")
}

// TestCheckCatchesAWrongStory makes sure Check, which makes `go run` exit
// 1, sees each way the story can go wrong.
func TestCheckCatchesAWrongStory(t *testing.T) {
	good := Result{
		Destroys:  wantDestroys,
		Rows:      wantRows,
		Failed:    wantFailed,
		RetryWait: retryMinDelay,
		Abandoned: wantAbandoned,
		Vetoes:    []Veto{wantVeto},
		Untracked: wantUntracked,
		Requeued:  wantRequeued,
	}
	require.Empty(t, good.Check())

	for name, mutate := range map[string]func(*Result){
		"a missing destroy": func(r *Result) { r.Destroys = r.Destroys[1:] },
		"a wrong reason": func(r *Result) {
			r.Destroys = append([]Destroy{{"uid-web-0", ports.ReasonUIDChanged}}, r.Destroys[1:]...)
		},
		"a missing row":        func(r *Result) { r.Rows = map[string][]int{"uid-web-0": nil} },
		"no retry":             func(r *Result) { r.Failed = r.Failed[1:] },
		"an early retry":       func(r *Result) { r.RetryWait = retryMinDelay / 2 },
		"no abandon":           func(r *Result) { r.Abandoned = nil },
		"no veto":              func(r *Result) { r.Vetoes = nil },
		"a veto of another PU": func(r *Result) { r.Vetoes = []Veto{{"uid-web-0", ports.ReasonPodGone, 9}} },
		"no untrack":           func(r *Result) { r.Untracked = nil },
		"no requeue":           func(r *Result) { r.Requeued = nil },
	} {
		r := good
		mutate(&r)
		assert.NotEmpty(t, r.Check(), name)
	}
}
