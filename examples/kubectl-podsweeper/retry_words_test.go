package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// explain.md: a PU's "failed destroy attempts and the next". The engine tells no time of the next attempt while its
// check is queued or under way: that attempt is told as coming now, in explain pod and in status, not "none planned";
// with no check running (a standby), none is planned.
func TestARetryQueuedOrUnderWayIsToldAsComingNow(t *testing.T) {
	now := time.Now()
	agent := Program{Program: "node-agent", Release: "podsweeper", Namespace: "podsweeper", Pod: "na-a", Node: "node-a"}
	for _, c := range []struct {
		state, action   string
		explain, status string
	}{
		{state: "queued", action: "Destroy", explain: "3 destroy call(s) failed; the next is queued now.", status: "now"},
		{state: "checking", action: "Destroy", explain: "3 destroy call(s) failed; the next runs now.", status: "now"},
		{state: "idle", action: "Destroy", explain: "3 destroy call(s) failed; none planned.", status: "-"},
		// Its last check kept it (its pod seen alive): its failures still count, and no attempt comes.
		{state: "queued", action: "Keep", explain: "3 destroy call(s) failed; none planned.", status: "-"},
		{state: "checking", action: "Keep", explain: "3 destroy call(s) failed; none planned.", status: "-"},
	} {
		a := Answer{Program: agent, At: now, PUs: []k8s.PUStatus{{PUID: firstUID, Pod: "apps/web", State: c.state, Age: "3m",
			Attempts: 3, LastAction: c.action, LastError: "the policy engine restarts"}}}
		x := &PodExplanation{Now: now, Namespace: "apps", Name: "web", Answers: []Answer{a}}
		if out := podText(t, x); !strings.Contains(out, c.explain) {
			t.Errorf("%s: explain pod says\n%s\nwant %q", c.state, out, c.explain)
		}
		var b bytes.Buffer
		if err := RenderStatus(&b, &NodeStatus{Now: now, Node: "node-a", Answers: []Answer{a}}); err != nil {
			t.Fatal(err)
		}
		var row string
		for _, l := range strings.Split(b.String(), "\n") {
			if strings.Contains(l, firstUID) {
				row = l
			}
		}
		if c.status == "now" && !strings.Contains(row, " now ") || c.status != "now" && strings.Contains(row, " now ") {
			t.Errorf("%s: status row %q, want NEXT %q", c.state, row, c.status)
		}
		a.Standby = true
		if out := podText(t, &PodExplanation{Now: now, Namespace: "apps", Name: "web", Answers: []Answer{a}}); !strings.Contains(out, "none planned: no check runs") {
			t.Errorf("%s, a standby: explain pod says\n%s", c.state, out)
		}
		a.Standby, a.Ended = false, true // a check an ended engine left behind is under way
		want := "none planned: no check runs"
		if c.state == "checking" && c.action == "Destroy" {
			want = "the next is under way: a check its ended engine left behind"
		}
		if out := podText(t, &PodExplanation{Now: now, Namespace: "apps", Name: "web", Answers: []Answer{a}}); !strings.Contains(out, want) {
			t.Errorf("%s %s, an ended engine: explain pod says\n%s\nwant %q", c.state, c.action, out, want)
		}
	}
}

// explain.md: a PU whose dry run of the destroy failed is told "`would destroy: not reported yet` in `status`, and a
// note under `report`'s table" that says where to see them: `status --node` for a node's program; for a cluster-wide
// program, which status asks on no node, explain pod of each pod.
func TestReportSaysWhereToSeeThePUsNotReportedYet(t *testing.T) {
	now := time.Now()
	checked, next := now.Add(-2*time.Second), now.Add(2*time.Second)
	pu := k8s.PUStatus{PUID: firstUID, Pod: "apps/web", State: "waiting for a retry", Age: "3m", LastChecked: &checked, LastRow: 5,
		Why: "pod terminated", Attempts: 2, NextAttempt: &next, LastError: "dry run of the destroy: timeout", LastAction: "Destroy"}
	for _, c := range []struct {
		program Program
		see     string
	}{
		{Program{Program: "node-agent", Release: "podsweeper", Namespace: "podsweeper", Pod: "na-a", Node: "node-a", DryRun: true},
			"(kubectl podsweeper status --node node-a)"},
		{Program{Program: "cluster-controller", Release: "podsweeper", Namespace: "podsweeper", Pod: "cc-1", DryRun: true},
			"(kubectl podsweeper explain pod POD, for apps/web)"},
	} {
		var b bytes.Buffer
		a := Answer{Program: c.program, At: now, PUs: []k8s.PUStatus{pu}, ReportsAt: now}
		if err := RenderReport(&b, &Report{Now: now, Answers: []Answer{a}}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "not reported yet") || !strings.Contains(b.String(), c.see) {
			t.Errorf("%s: report says\n%s\nwant %q", c.program.Program, b.String(), c.see)
		}
	}
}
