package k8s

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
	"unsafe"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// wallStepped returns t as time.Now reads it once the wall clock was stepped by d (whole seconds) since t's
// monotonic reading was taken: Go keeps the monotonic reading of a time, and a step of the wall clock moves the
// wall reading alone. t must have a monotonic reading (time.Now's).
func wallStepped(t time.Time, d time.Duration) time.Time {
	// time.Time's first word: bit 63 says it has a monotonic reading, bits 30 to 62 then hold its wall seconds.
	w := (*uint64)(unsafe.Pointer(&t))
	if *w&(1<<63) == 0 {
		panic("wallStepped: a time without a monotonic reading")
	}
	*w = uint64(int64(*w) + int64(d/time.Second)<<30)
	return t
}

func TestWallSteppedMovesTheWallReadingAlone(t *testing.T) {
	now := time.Now()
	later := wallStepped(now, time.Hour)
	if got := later.Round(0).Sub(now.Round(0)); got != time.Hour {
		t.Fatalf("wall readings differ by %v, want 1h", got)
	}
	if got := later.Sub(now); got != 0 {
		t.Fatalf("monotonic readings differ by %v, want 0", got)
	}
}

// TimeHeader: the dry run's report tells each report as TimeHeader less how long ago it was made, so that a step of
// the wall clock between the report and the page (NTP) does not make it told an hour older or newer than the status
// page's times.
func TestTheDryRunReportTellsItsTimesFromThePageAcrossAWallStep(t *testing.T) {
	for _, step := range []time.Duration{time.Hour, -time.Hour} {
		d := NewDryRunReport(0)
		d.now = func() time.Time { return wallStepped(time.Now(), -step) } // the wall reading before the step
		d.Observe(deletion.Event{Kind: deletion.EventWouldDestroy, PU: ports.PU{PUID: "u1"}, Reason: ports.ReasonPodGone})
		d.now = time.Now // the step: the wall reading of now
		rec := httptest.NewRecorder()
		d.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, DryRunPath, nil))
		at, err := time.Parse(time.RFC3339Nano, rec.Header().Get(TimeHeader))
		if err != nil {
			t.Fatal(err)
		}
		var page struct{ Reports []WouldDestroy }
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || len(page.Reports) != 1 {
			t.Fatalf("%v: %s", err, rec.Body)
		}
		if ago := at.Sub(page.Reports[0].At); ago < 0 || ago > 10*time.Second {
			t.Errorf("wall stepped %v since: a report made a moment before the page is told %v before it", step, ago)
		}
	}
}

// UptimeHeader: two pages of one program tell, beside their TimeHeader, the monotonic clock as each read it: a step of
// the wall clock between them shows as TimeHeaders that differ otherwise than their UptimeHeaders (by the step).
func TestUptimeHeaderShowsAWallStepBetweenTwoPages(t *testing.T) {
	for _, step := range []time.Duration{0, time.Hour, -time.Hour} {
		d := NewDryRunReport(0)
		read := func(now time.Time) (time.Time, time.Duration) {
			d.now = func() time.Time { return now }
			rec := httptest.NewRecorder()
			d.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, DryRunPath, nil))
			at, err := time.Parse(time.RFC3339Nano, rec.Header().Get(TimeHeader))
			if err != nil {
				t.Fatal(err)
			}
			var up int64
			if _, err := fmt.Sscan(rec.Header().Get(UptimeHeader), &up); err != nil {
				t.Fatalf("%s: %q: %v", UptimeHeader, rec.Header().Get(UptimeHeader), err)
			}
			return at, time.Duration(up)
		}
		first := time.Now()
		at1, up1 := read(first)
		at2, up2 := read(wallStepped(first.Add(0), step)) // the same instant, the wall clock stepped
		if got := at2.Sub(at1) - (up2 - up1); got != step {
			t.Errorf("a step of %v between the pages shows as %v", step, got)
		}
	}
}

// InstanceHeader: the pages of one process tell one instance, the status page's as the dry run's report's, so that
// kubectl podsweeper tells two pages of one process from pages of a process and its restart.
func TestInstanceHeaderIsTheProcesss(t *testing.T) {
	d := NewDryRunReport(0)
	var ids []string
	for range 2 {
		rec := httptest.NewRecorder()
		d.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, DryRunPath, nil))
		ids = append(ids, rec.Header().Get(InstanceHeader))
	}
	h := http.Header{}
	setTimeHeaders(h, time.Now())
	ids = append(ids, h.Get(InstanceHeader))
	if ids[0] == "" || ids[0] != ids[1] || ids[1] != ids[2] {
		t.Errorf("the instances told by one process's pages: %q", ids)
	}
}
