package k8s

import (
	"net/http"
	"sync"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
)

// DryRunPath is where the node agent serves its DryRunReport, beside
// StatusPath and behind the same authentication and authorization.
const DryRunPath = StatusPath + "/dry-run"

// DefaultDryRunReportSize is how many reports a DryRunReport keeps when
// NewDryRunReport is given 0.
const DefaultDryRunReportSize = 1000

// WouldDestroy is one destroy a dry run reported, on the DryRunReport page.
type WouldDestroy struct {
	// At is when it was reported.
	At        time.Time `json:"at"`
	PUID      string    `json:"puID"`
	Pod       string    `json:"pod"`
	SandboxID string    `json:"sandboxID,omitempty"`
	Reason    string    `json:"reason"`
	// Row is the row of the decision table (docs/sdk/decision-table.md)
	// that decided the destroy, and Why its words: a report of a PU the dry
	// run gave up on tells the row its last check took too.
	Row int    `json:"row"`
	Why string `json:"why"`
	// Dropped: the engine no longer holds the PU (its pod is gone for good,
	// or it gave up on it).
	Dropped bool `json:"dropped,omitempty"`
	// GaveUp: the dry run gave up on the PU (deletion.EventAbandoned): its
	// DryRunDestroyPU failed for good (Error says why), as DestroyPU's
	// would have; the engine no longer holds it, and records no Event of it.
	GaveUp bool   `json:"gaveUp,omitempty"`
	Error  string `json:"error,omitempty"`
}

// DryRunReport keeps what a dry run (deletion.Options.DryRun) would have
// destroyed and why, and the PUs it gave up on: the report an operator
// reads before turning destroys on. It is a deletion.Observer (pass it in
// deletion.Observers) that keeps the latest reports, at most its size, and
// an http.Handler that serves
// them as JSON, newest last, with how many were reported in all. The
// engine reports each PU once per reason and drops from memory the PUs of
// pods gone for good, which thus show here only; the status page
// (NewStatusHandler) shows the PUs still tracked, a reported reason
// included.
type DryRunReport struct {
	mu    sync.Mutex
	ring  []WouldDestroy
	next  int
	total int
	now   func() time.Time
}

var (
	_ deletion.Observer = (*DryRunReport)(nil)
	_ http.Handler      = (*DryRunReport)(nil)
)

// NewDryRunReport returns a DryRunReport keeping the latest size reports
// (0: DefaultDryRunReportSize; negative: also the default).
func NewDryRunReport(size int) *DryRunReport {
	if size <= 0 {
		size = DefaultDryRunReportSize
	}
	return &DryRunReport{ring: make([]WouldDestroy, 0, size), now: time.Now}
}

// Observe keeps ev when it is a deletion.EventWouldDestroy, or a dry run's
// deletion.EventAbandoned (GaveUp). It never blocks for long: a copy under
// a lock.
func (d *DryRunReport) Observe(ev deletion.Event) {
	if d == nil || ev.Kind != deletion.EventWouldDestroy && (ev.Kind != deletion.EventAbandoned || !ev.DryRun) {
		return
	}
	w := WouldDestroy{At: d.now(), PUID: ev.PU.PUID, Pod: ev.PU.Pod.String(), SandboxID: ev.PU.SandboxID,
		Reason: string(ev.Reason), Row: ev.Verdict.Row, Why: ev.Verdict.Why(), Dropped: ev.Dropped}
	if ev.Kind == deletion.EventAbandoned { // the engine no longer holds it, and no Event tells it
		w.GaveUp, w.Dropped, w.Why = true, true, "its dry run of the destroy failed for good"
		if ev.Err != nil {
			w.Error = ev.Err.Error()
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.total++
	if len(d.ring) < cap(d.ring) {
		d.ring = append(d.ring, w)
		return
	}
	d.ring[d.next] = w
	d.next = (d.next + 1) % len(d.ring)
}

// Reports returns the reports kept, oldest first, and how many were
// reported in all.
func (d *DryRunReport) Reports() (kept []WouldDestroy, total int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	kept = make([]WouldDestroy, 0, len(d.ring))
	kept = append(kept, d.ring[d.next:]...)
	kept = append(kept, d.ring[:d.next]...)
	return kept, d.total
}

// ServeHTTP answers GET and HEAD with {"total": N, "reports": [...]}, and
// when it read them in TimeHeader, each report's time told as that less how
// long ago it was made (TimeHeader).
func (d *DryRunReport) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !readOnly(w, r) {
		return
	}
	// Each report's time is told as the page's, less how long ago it was made (d.now's monotonic reading when it
	// has one): a step of the wall clock since does not move it from the status page's times.
	kept, total := d.Reports() // before the page's time: no report it tells is made after it
	now := d.now()
	wall := now.Round(0)
	setTimeHeaders(w.Header(), now)
	for i := range kept {
		kept[i].At = wall.Add(-now.Sub(kept[i].At))
	}
	writeJSON(w, r, struct {
		Total   int            `json:"total"`
		Reports []WouldDestroy `json:"reports"`
	}{total, kept})
}
