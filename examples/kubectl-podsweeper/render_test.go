package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
