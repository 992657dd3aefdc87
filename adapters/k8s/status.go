package k8s

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
)

// StatusPath is where the node agent serves the engine's status, beside
// /metrics and behind the same authentication and authorization.
const StatusPath = "/debug/podsweeper"

// PUStatus is one PU on the status page: deletion.PUStatus in JSON.
type PUStatus struct {
	PUID        string     `json:"puID"`
	Pod         string     `json:"pod"`
	SandboxID   string     `json:"sandboxID,omitempty"`
	State       string     `json:"state"`
	Age         string     `json:"age"`
	LastChecked *time.Time `json:"lastChecked,omitempty"`
	// LastRow and Why say which row of the decision table the last check
	// took, and why the PU is kept; Vetoed, that the Confirmer overrode a
	// destroy the cache's answer decided (or the SandboxConfirmer a sandbox
	// change the SandboxExtractor's list decided).
	LastRow     int        `json:"lastRow,omitempty"`
	Why         string     `json:"why,omitempty"`
	Vetoed      bool       `json:"vetoed,omitempty"`
	Attempts    int        `json:"attempts,omitempty"`
	NextAttempt *time.Time `json:"nextAttempt,omitempty"`
	LastError   string     `json:"lastError,omitempty"`
	// WouldDestroy is the reason a dry run reported for destroying the PU.
	WouldDestroy string `json:"wouldDestroy,omitempty"`
	// ReportedRows are the rows of the destroys a dry run reported of the
	// PU since it was tracked (deletion.PUStatus.ReportedRows): it reports
	// each once.
	ReportedRows deletion.RowSet `json:"reportedRows,omitempty"`
	// LastAction is what its last check decided (deletion.Action's name:
	// Keep, Destroy or Adopt); Attempts counts the failed destroys since
	// the last that succeeded, which a check that keeps it does not reset.
	LastAction string `json:"lastAction,omitempty"`
}

// TimeHeader is the response header in which the status page and the dry
// run's report (and cni-gc's address page) tell when they read what they
// answer, on the program's wall clock (time.Now, RFC 3339 with
// nanoseconds): the times of the answer are told relative to it (kubectl
// podsweeper does), whatever the reader's clock and however long the
// answer takes to come. The status page and the dry run's report tell each
// of their times as TimeHeader less how long ago it was, as the program
// counts it (the engine's times on deletion.Options.Clock,
// deletion.Engine.Now; the report's on the monotonic clock): a step of the
// wall clock (NTP) since moves none of them from the others, so theirs
// compare across the two pages (with the real clock, the programs': an
// Options.Clock of a test's own, that does not follow the monotonic clock,
// counts the status page's alone). cni-gc's address page tells its times, and
// the program's Events theirs, on the wall clock as it read when each
// happened: a step of it since is not taken out of them.
const TimeHeader = "Podsweeper-Time"

// UptimeHeader is the response header in which the status page and the dry run's report tell, beside TimeHeader,
// the program's monotonic clock as it read then (nanoseconds since the package was loaded, in decimal): two pages of
// one program whose TimeHeaders differ otherwise than their UptimeHeaders had the wall clock stepped between them, and
// kubectl podsweeper takes the step out, so that a report is told before or after the status page rightly.
const UptimeHeader = "Podsweeper-Uptime"

// loaded is when the package was loaded, on the monotonic clock: UptimeHeader's origin. It is never written again.
var loaded = time.Now()

// InstanceHeader is the response header in which the status page and the dry run's report tell which process of the
// program answered: an ID drawn at random when the package was loaded. Two pages whose InstanceHeaders differ are of
// two processes (the program restarted between them), whatever their UptimeHeaders say: kubectl podsweeper then reads
// their times on the node's one wall clock, taking no step out.
const InstanceHeader = "Podsweeper-Instance"

// instance is this process's InstanceHeader. It is never written again.
var instance = func() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}()

// setTimeHeaders tells read (a reading of time.Now, with its monotonic one) in TimeHeader and UptimeHeader.
func setTimeHeaders(h http.Header, read time.Time) {
	h.Set(TimeHeader, read.Round(0).UTC().Format(time.RFC3339Nano))
	h.Set(UptimeHeader, strconv.FormatInt(int64(read.Sub(loaded)), 10))
	h.Set(InstanceHeader, instance)
}

// EngineHeader is the response header in which the status page tells
// whether the engine runs (deletion.Engine.Running): EngineRunning while
// its Start runs; EngineNotRunning for an engine not started (a standby's,
// before it leads); or EngineEnded for one whose Start stops or has
// returned (deletion.Engine.Stopping: its context done, its program
// stopping, in its grace period). For the last two,
// no check runs on the PUs it lists, if any (a standby's are its leader's to
// check), whatever the program's other replicas hold; but those of a Sweep
// the program calls (deletion.Engine.Sweep, which checks without Start;
// podsweeper's programs call none), and, once Start has returned, a check
// it left behind (stuck in a port past deletion.Options.ShutdownTimeout),
// its PU "checking". kubectl podsweeper
// tells such a page's program from one that holds nothing, and a standby
// from a program that ended.
const EngineHeader = "Podsweeper-Engine"

// The values of EngineHeader.
const (
	EngineRunning    = "running"
	EngineNotRunning = "not running"
	EngineEnded      = "ended"
)

// NewStatusHandler returns an http.Handler that serves the engine's Status
// as a JSON array, sorted by PUID: for each PU, its pod, sandbox, state and
// age, the row of its last check and why, its failed destroy attempts, when
// the next is due and the last error. It answers GET and HEAD only. It
// reads the engine's state at each request, a copy of every entry; while
// Start runs, or once it has returned, and the engine's Inventory is not
// listed (deletion.Engine.InventoryListed), it answers 503, for the PUs a
// restart left are not all known (an engine that does not run, a standby's, checks
// none, and its page says so: EngineHeader). Serve
// it behind authentication (the node agent puts it behind the metrics
// server's filter), not to every scraper every second.
func NewStatusHandler(engine *deletion.Engine) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !readOnly(w, r) {
			return
		}
		if engine == nil {
			http.Error(w, "no deletion engine", http.StatusServiceUnavailable)
			return
		}
		running := EngineRunning
		switch {
		case engine.Stopping(): // its Start's context done: no check of its own starts, no attempt comes
			running = EngineEnded
		case !engine.Running(): // not started, or Start has returned
			running = EngineNotRunning
			if errors.Is(engine.LivenessCheck(r), deletion.ErrNotRunning) { // it fails so once Start has returned
				running = EngineEnded
			}
		}
		// While Start runs, or once it returned, and its Inventory is not listed, the PUs a restart left are not all
		// known. An engine not started (a standby's, before it leads) checks no PU: its page says so.
		if !engine.InventoryListed() && running != EngineNotRunning { // a Start that stops is not restored yet either
			http.Error(w, "the deletion engine has not listed its Inventory: the PUs a restart left are not all known", http.StatusServiceUnavailable)
			return
		}
		// The engine tells its times on its own clock, from when it was made (deletion.Engine.Now): a step of the wall
		// clock since does not move them. The page tells each as TimeHeader, the wall clock now, less how long ago
		// the engine counts it was (at), as the dry run's report does.
		// Read after Status, so that nothing it tells happened after the page's time.
		sts := engine.Status()
		now, read := engine.Now(), time.Now()
		wall := read.Round(0) // the wall reading alone: a step of it since counts
		at := func(t time.Time) *time.Time { t = wall.Add(-now.Sub(t)); return &t }
		setTimeHeaders(w.Header(), read)
		w.Header().Set(EngineHeader, running)
		out := make([]PUStatus, len(sts))
		for i, s := range sts {
			p := PUStatus{
				PUID: s.PUID, Pod: s.Pod.String(), SandboxID: s.SandboxID, State: s.State,
				Age: now.Sub(s.TrackedAt).Round(time.Second).String(), Vetoed: s.Vetoed, Attempts: s.Attempts,
				WouldDestroy: string(s.WouldDestroy), ReportedRows: s.ReportedRows,
			}
			if !s.LastChecked.IsZero() {
				p.LastChecked, p.LastRow, p.Why, p.LastAction = at(s.LastChecked), s.LastVerdict.Row, s.LastVerdict.Why(), s.LastVerdict.Action.String()
			}
			if !s.NextAttempt.IsZero() {
				p.NextAttempt = at(s.NextAttempt)
			}
			if s.LastErr != nil {
				p.LastError = s.LastErr.Error()
			}
			out[i] = p
		}
		writeJSON(w, r, out)
	})
}

// readOnly answers a request that is not a GET or a HEAD with 405, and
// reports whether r may go on.
func readOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

// writeJSON answers r with v as indented JSON, not to be cached; a HEAD
// gets the headers only.
func writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if r.Method == http.MethodHead {
		return
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // a client gone mid-answer is no error of ours
}
