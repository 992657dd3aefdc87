package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestReportSaysAFailingDryRunPage: a program whose dry run's report
// answers neither 200 nor 404 could not be asked, and the report says so,
// as of a program it cannot reach.
func TestReportSaysAFailingDryRunPage(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-1", "node-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/debug/podsweeper" {
			_, _ = w.Write([]byte("[]"))
			return
		}
		http.Error(w, "internal error", http.StatusInternalServerError)
	}), "--dry-run=true")
	r := f.run("report")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "na-1 could not be asked: reading its dry run's report on port ")
	assert.Contains(t, r.stdout, "answered 500: internal error")
}
