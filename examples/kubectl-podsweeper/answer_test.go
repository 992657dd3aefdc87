package main

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAnAnswerWithAnErrorHasNothingElse: an Answer that says why its
// program could not be asked has no other field (render.go's promise): a
// program whose status page answered but whose dry run's report is not
// JSON, drops the connection, fails or takes too long is said so, and none
// of its status page's PUs is shown, of the pod asked about or of another.
func TestAnAnswerWithAnErrorHasNothingElse(t *testing.T) {
	const pus = `[{"puID":"aaaaaaaa-0000-0000-0000-000000000001","pod":"apps/web","state":"idle","age":"1m"},
{"puID":"bbbbbbbb-0000-0000-0000-000000000002","pod":"apps/other","state":"idle","age":"2m"}]`
	for name, dryRun := range map[string]http.HandlerFunc{
		"not JSON": func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("<html>not json</html>")) },
		"dropped": func(w http.ResponseWriter, r *http.Request) {
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				c.Close()
			}
		},
		"failing": func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "internal error", http.StatusInternalServerError)
		},
		"too late": func(w http.ResponseWriter, r *http.Request) { time.Sleep(3 * time.Second) },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.addProgram("podsweeper-node-agent", "podsweeper", "na-1", "node-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/debug/podsweeper":
					_, _ = w.Write([]byte(pus))
				case "/debug/podsweeper/dry-run":
					dryRun(w, r)
				default:
					http.NotFound(w, r)
				}
			}), "--dry-run")
			for _, args := range [][]string{
				{"explain", "pod", "apps/web", "--node", "node-a", "-o", "json", "--timeout", "2s"},
				{"status", "--node", "node-a", "-o", "json", "--timeout", "2s"},
				{"report", "-o", "json", "--timeout", "2s"},
			} {
				r := f.run(args...)
				require.Equal(t, 0, r.code)
				var x struct {
					Answers []map[string]json.RawMessage `json:"answers"`
				}
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &x))
				require.Len(t, x.Answers, 1)
				a := x.Answers[0]
				assert.NotEmpty(t, a["error"], "%q: the program could not be asked", args)
				var pus []any
				require.NoError(t, json.Unmarshal(a["pus"], &pus))
				assert.Empty(t, pus, "%q: no PU beside the error", args)
				assert.NotContains(t, a, "reports", "%q: no report beside the error", args)
				assert.NotContains(t, r.stdout, "apps/other", "%q", args)
			}
		})
	}
}

// TestAnAnswersTimesAreToldFromWhenItCame: a program that answers late (it
// took 2 s) has its times told relative to its answer, not to when the
// command began: its PU checked a second before it answered was checked
// "1s ago", and its retry is "in 5s".
func TestAnAnswersTimesAreToldFromWhenItCame(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-1", "node-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/podsweeper" {
			http.NotFound(w, r)
			return
		}
		time.Sleep(2 * time.Second)
		now := time.Now()
		_ = json.NewEncoder(w).Encode([]map[string]any{{"puID": "aaaaaaaa-0000-0000-0000-000000000001", "pod": "apps/web", "state": "retrying",
			"age": "1m", "lastChecked": now.Add(-time.Second), "lastRow": 1, "why": "pod not found", "attempts": 1,
			"nextAttempt": now.Add(5*time.Second + 500*time.Millisecond)}})
	}))
	for _, args := range [][]string{
		{"explain", "pod", "apps/web", "--node", "node-a", "--timeout", "10s"},
		{"status", "--node", "node-a", "--timeout", "10s"},
	} {
		r := f.run(args...)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "1s ago", "%q:\n%s", args, r.stdout)
		assert.Contains(t, r.stdout, "5s", "%q:\n%s", args, r.stdout)
		assert.NotContains(t, r.stdout, "3s ago", "%q: told from when the command began:\n%s", args, r.stdout)
	}
}

// TestExplainIPsTimesAreToldFromWhenCNIGCAnswered: the same for explain
// ip: a cni-gc that answers late (2 s) has its reservation's times told
// relative to its answer.
func TestExplainIPsTimesAreToldFromWhenCNIGCAnswered(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-cni-gc", "podsweeper", "gc-1", "node-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case addressPath:
			time.Sleep(2 * time.Second)
			read := time.Now().Add(-time.Second)
			_ = json.NewEncoder(w).Encode(map[string]any{"ip": "10.88.0.13", "reservationsRead": read})
		case "/debug/podsweeper":
			_, _ = w.Write([]byte(`[]`))
		default:
			http.NotFound(w, r)
		}
	}))
	r := f.run("explain", "ip", "10.88.0.13", "--node", "node-a", "--timeout", "10s")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "the sweep 1s ago read them", r.stdout)
}
