package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

var update = flag.Bool("update", false, "write the golden outputs of testdata/ from the renderers")

// renderFile renders the answers of testdata/<name>.json as the command
// its name starts with would: explain ip, explain pod, status or report.
func renderFile(t *testing.T, name string, asJSON bool) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	require.NoError(t, err)
	var out bytes.Buffer
	switch {
	case strings.HasPrefix(name, "explain-ip-"):
		var x IPExplanation
		require.NoError(t, json.Unmarshal(b, &x))
		if asJSON {
			require.NoError(t, RenderIPJSON(&out, &x))
		} else {
			require.NoError(t, RenderIP(&out, &x))
		}
	case strings.HasPrefix(name, "explain-"):
		var x PodExplanation
		require.NoError(t, json.Unmarshal(b, &x))
		if asJSON {
			require.NoError(t, RenderPodJSON(&out, &x))
		} else {
			require.NoError(t, RenderPod(&out, &x))
		}
	case name == "status":
		var s NodeStatus
		require.NoError(t, json.Unmarshal(b, &s))
		require.NoError(t, RenderStatus(&out, &s))
	case name == "report":
		var r Report
		require.NoError(t, json.Unmarshal(b, &r))
		require.NoError(t, RenderReport(&out, &r))
	default:
		t.Fatalf("testdata/%s.json: no command renders it", name)
	}
	return out.Bytes()
}

// TestRenderGolden: what each command prints for the answers of
// testdata/<case>.json is testdata/<case>.txt (go test -update writes
// them), the outputs docs/operating/explain.md shows.
func TestRenderGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			got := renderFile(t, name, false)
			golden := filepath.Join("testdata", name+".txt")
			if *update {
				require.NoError(t, os.WriteFile(golden, got, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "go test -update writes it")
			assert.Equal(t, string(want), string(got))
		})
	}
}

// TestTheExamplesRetryAsTheEngineDoes: the examples explain.md shows tell a PU's next attempt as the engine schedules
// it (deletion.Options.RetryMinDelay, 1s by default, doubling at each failure up to RetryMaxDelay, 1m): after n failed
// destroy calls, the next is due 2^(n-1) seconds after the check that failed.
func TestTheExamplesRetryAsTheEngineDoes(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	seen := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var page struct {
			Answers []struct {
				PUs []k8s.PUStatus `json:"pus"`
			} `json:"answers"`
			PUs []k8s.PUStatus `json:"pus"`
		}
		require.NoError(t, json.Unmarshal(b, &page), f)
		pus := page.PUs
		for _, a := range page.Answers {
			pus = append(pus, a.PUs...)
		}
		for _, s := range pus {
			if s.Attempts == 0 || s.NextAttempt == nil || s.LastChecked == nil {
				continue
			}
			seen++
			want := min(time.Second<<(s.Attempts-1), time.Minute)
			assert.Equal(t, want, s.NextAttempt.Sub(*s.LastChecked), "%s: PU %s, %d failed attempts", f, s.PUID, s.Attempts)
		}
	}
	require.NotZero(t, seen, "an example shows a retry")
}

// TestRenderPodJSONIsTheAnswers: -o json prints what the text is rendered
// from, so that a script reads the same answers a person does (explain pod
// and explain ip).
func TestRenderPodJSONIsTheAnswers(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "explain-*.json"))
	require.NoError(t, err)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		in, err := os.ReadFile(f)
		require.NoError(t, err)
		assert.JSONEq(t, string(in), string(renderFile(t, name, true)), name)
	}
}

// TestReportWithNoProgramSaysSo: report, where no program was found to ask,
// says so as explain and status do, not that no dry run would destroy
// anything.
func TestReportWithNoProgramSaysSo(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, RenderReport(&out, &Report{}))
	require.Equal(t, "No podsweeper program was found to ask.\n", out.String())
}

// TestJSONListsAreEmptyNeverNull: every list of the JSON answers is a list,
// empty when there is nothing in it, as testdata's answers show them: the
// Events of a pod none names, the PUs of a program that holds none or could
// not be asked, the answers when no program was found.
func TestJSONListsAreEmptyNeverNull(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-1", "node-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/debug/podsweeper" {
			_, _ = w.Write([]byte("null"))
			return
		}
		http.NotFound(w, r)
	}))
	for _, args := range [][]string{
		{"explain", "pod", "apps/nope", "-o", "json"},
		{"explain", "pod", "--uid", firstUID, "-o", "json"},
		{"status", "--node", "node-a", "-o", "json"},
		{"report", "-o", "json"},
	} {
		r := f.run(args...)
		require.Equal(t, 0, r.code)
		assert.NotContains(t, r.stdout, "null", "%q", args)
		var x map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &x))
		if args[0] == "explain" {
			assert.JSONEq(t, "[]", string(x["events"]), "%q", args)
		}
	}

	var out bytes.Buffer
	require.NoError(t, RenderPodJSON(&out, &PodExplanation{Answers: []Answer{{Program: Program{Program: "node-agent"}, Error: "down"}}}))
	require.NoError(t, writeJSON(&out, &NodeStatus{}))
	require.NoError(t, writeJSON(&out, Report{}))
	assert.NotContains(t, out.String(), "null")
	assert.Contains(t, out.String(), `"pus": []`)
	assert.Contains(t, out.String(), `"events": []`)
	assert.Contains(t, out.String(), `"answers": []`)
}
