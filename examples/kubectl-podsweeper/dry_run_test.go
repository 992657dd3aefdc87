package main

// A dry run's reports: what the answer says of a pod from the latest reports a program keeps, cut or whole.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// explain.md:53-54: "`--uid` alone names the pod from its Events, its PU
// or its dry run's report": a gone pod's dropped report names it.
func TestUIDAloneNamedByReport(t *testing.T) {
	now := time.Now().UTC()
	api := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a", "--dry-run"),
		workloadPod("apps", "web", "new-uid", "node-a"))
	api.handle("podsweeper/agent-a", &anyPages{at: now, report: map[string]any{"total": 1, "reports": []k8s.WouldDestroy{
		{At: now.Add(-19 * time.Second), PUID: "old-uid", Pod: "apps/web", Reason: "UIDChanged", Row: 4, Why: "pod recreated with another UID", Dropped: true}}}})
	x, err := api.cluster(5*time.Second).explainPod(context.Background(), "", "", "old-uid", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	for _, want := range []string{"Pod with UID old-uid (apps/web): no pod of that name has that UID", "now has UID new-uid", "no longer held (its pod is gone for good)", "(19s ago)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("want %q:\n%s", want, out)
		}
	}
}

// explain.md:69-71: a dry run's cut reports: it cannot tell.
func TestCutReportsCannotTell(t *testing.T) {
	agent := &programPages{at: askedAt, dry: &dryRunPage{Total: 1200, Reports: []k8s.WouldDestroy{{At: askedAt, PUID: "x", Pod: "apps/other", Reason: "PodGone", Row: 1}}}}
	ctrl := &programPages{at: askedAt}
	api := agentAndController(t, agent, ctrl)
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "node-a", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if strings.Contains(out, "knows nothing") || !strings.Contains(out, "cannot tell") {
		t.Fatalf("%s", out)
	}
}

// explain.md:54 "`--uid` alone names the pod from ... its dry run's report".
func TestUIDAloneNamedByDroppedReport(t *testing.T) {
	agent := &programPages{at: askedAt, dry: &dryRunPage{Total: 1, Reports: []k8s.WouldDestroy{
		{At: askedAt.Add(-30 * time.Second), PUID: firstUID, Pod: "apps/web", Reason: "PodGone", Row: 1, Why: "pod not found", Dropped: true}}}}
	ctrl := &programPages{at: askedAt}
	api := agentAndController(t, agent, ctrl)
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "", "", firstUID, "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if x.Name != "web" || !strings.Contains(out, "Pod with UID "+firstUID+" (apps/web): no pod of that name has that UID") ||
		!strings.Contains(out, "no longer held (its pod is gone for good)") || !strings.Contains(out, "(30s ago)") {
		t.Fatalf("%s", out)
	}
}

// explain.md:70-71: "A dry run keeps its latest reports only: when none of
// the pod's is among them, the answer says it cannot tell, not that
// podsweeper knows nothing." When another program holds a PU of the pod,
// the dry run whose reports were cut is said to hold none of it, and
// nothing says that its earlier reports may have been of it.
func TestCutReportsBesideAHolderSaysNothing(t *testing.T) {
	c := newFakeCluster(t,
		runningProgram("podsweeper-node-agent", "ps", "agent-a", "node-a", "--dry-run"),
		runningProgram("podsweeper-cluster-controller", "ps", "ctrl", "")).closingAnswers().listingEventsWhole()
	c.handle("ps/agent-a", &programPages{at: askedAt, dry: &dryRunPage{Total: 1500,
		Reports: []k8s.WouldDestroy{{At: askedAt, PUID: "OTHER", Pod: "apps/other", Reason: "PodGone", Row: 1, Why: "pod not found"}}}})
	c.handle("ps/ctrl", &programPages{at: askedAt, pus: []k8s.PUStatus{{PUID: "U1", Pod: "apps/web", State: "waiting for a retry", Age: "3m", Attempts: 2}}})
	x, err := c.inNamespace("").explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if !strings.Contains(out, "cannot tell") {
		t.Fatalf("the dry run kept 1 of its 1500 reports, none of this pod, and the answer does not say it cannot tell:\n%s", out)
	}
}

// explain.md:70-71 and explain.md:72-74: an answer never says that podsweeper knows nothing of a pod while a
// program that may hold a PU of it answered something unreadable. The gone pod apps/web is asked by name; a node agent
// in a dry run answers a report page one of whose reports names its pod "web", no namespace: no pod's name a program
// writes (the status page's same entry, a PU of pod "web", makes the program "could not be asked":
// TestUnreadablePUCannotTell). The plugin takes that report as read, drops it as of another pod, and says
// that podsweeper knows nothing of the pod.
func TestUnreadableReportKnowsNothing(t *testing.T) {
	at := clockNow.Add(-30 * time.Second).Format(time.RFC3339Nano)
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a": dryRunAgent(t, `{"total":1,"reports":[{"at":"`+at+`","puID":"`+firstUID+`","pod":"web","reason":"PodGone","row":1,"why":"pod not found","dropped":true}]}`),
	},
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning, "--dry-run"))
	x, err := c.explainPod(testContext(t), "apps", "web", "", "", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := podTextAndJSON(t, x)
	wantNotSays(t, "the text", txt, "podsweeper knows nothing of this pod")
}

// docs/operating/explain.md:436-438: "`could not be asked: reading its dry run's report on port PORT:
// /debug/podsweeper/dry-run answered CODE: ...`: a program in a dry run whose report page fails; its PUs are
// not listed either." (and explain.md:3-7: the answer tells "what a dry run would do").
//
// A node agent run with --dry-run answers its status page, and its report page answers 200 with `null`: no
// report (the page answers {"total": N, "reports": [...]}), as the plugin refuses a status page that is no
// JSON list. The plugin takes it for a dry run that reported nothing, and says of the PU "dry run would keep
// it", from no report at all.
func TestDryRunReportOfAnotherShapeCouldNotBeAsked(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	c.addPod(*workloadPod("apps", "web", "u-web", "node-a"))
	c.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", statusAndReport([]k8s.PUStatus{recentPU("u-web", "apps/web")}, "null"), []string{"--dry-run"}...)
	code, out, errOut := c.run("explain", "pod", "apps/web", "-o", "json").codeOutErr()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var x PodExplanation
	if err := json.Unmarshal([]byte(out), &x); err != nil {
		t.Fatal(err, out)
	}
	if len(x.Answers) != 1 || x.Answers[0].Error == "" {
		_, text, _ := c.run("explain", "pod", "apps/web").codeOutErr()
		t.Fatalf("a report page that answers null is read as a dry run's report:\n%s", text)
	}
}

// docs/operating/explain.md:75-77: "A dry run keeps its latest reports
// only: when none of the pod's is among them, the answer says it cannot
// tell, not that podsweeper knows nothing (so it does beside another
// program that holds a PU of the pod)." A dry-run node agent holds the live
// pod's (recreated) PU, reported nothing of it, and keeps 2 of its 300
// reports, none of the pod's (the earlier pod's UIDChanged report among
// those cut): the answer says nothing of what may have been cut.
func TestDryRunCutReportsBesideHeldPU(t *testing.T) {
	a := newFakeAPI(t).spdyOnly().impersonating()
	a.addPod(*workloadPod("apps", "web", "uid-web-2", "node-a"))
	pu := mapPU("uid-web-2", "apps/web", "idle")
	pu["lastChecked"] = "2026-01-01T00:00:00Z"
	pu["lastRow"] = 9
	pu["why"] = "same pod, same sandbox"
	other := func(uid, pod string) map[string]any {
		return map[string]any{"at": "2026-01-01T00:00:00Z", "puID": uid, "pod": pod, "reason": "PodGone", "row": 1, "why": "pod not found", "dropped": true}
	}
	a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", &mapProgram{dryRun: true, total: 300,
		pus:     []map[string]any{pu},
		reports: []map[string]any{other("uid-x", "apps/x"), other("uid-y", "apps/y")}}, []string{"--dry-run"}...)
	out, errs, code := a.run("explain", "pod", "apps/web").outErrCode()
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if !strings.Contains(out, "cannot tell") {
		t.Errorf("explain pod apps/web, its dry run keeping 2 of 300 reports, none of the pod's: want the answer to say it cannot tell (an earlier report may have been of this pod); got:\n%s", out)
	}
}

// explain.md:6-7 ("what a dry run would do") and 66-67: the status page is
// read, then the dry run's report; the PU was reported and dropped (its pod
// gone for good) between the two reads. The program's own latest word, read
// in the same question, is that its dry run would have destroyed it.
func TestDryRunVerdictAcrossReads(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a", "--dry-run"))
	checked := time.Now().Add(-5 * time.Second)
	e.handle("podsweeper/agent-a", &pageFuncs{
		status: func() []byte {
			return jsonBytes(t, []k8s.PUStatus{{PUID: "uid-web", Pod: "apps/web", SandboxID: "3a9f0c1b2d4e5", State: "idle", Age: "4m",
				LastChecked: &checked, LastRow: 9, Why: "same pod, same sandbox"}})
		},
		report: func() []byte {
			// Meanwhile: the check found the pod gone, reported it, and dropped the PU.
			return jsonBytes(t, map[string]any{"total": 1, "reports": []k8s.WouldDestroy{{At: time.Now(), PUID: "uid-web", Pod: "apps/web",
				SandboxID: "3a9f0c1b2d4e5", Reason: "PodGone", Row: 1, Why: "pod not found", Dropped: true}}})
		},
	})
	x, err := e.c.explainPod(context.Background(), "apps", "web", "", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if strings.Contains(out, "would keep it") || !strings.Contains(out, "PodGone") {
		t.Errorf("the program's dry-run report (read in this same question, after its status page) says it would have destroyed PU uid-web (PodGone) and no longer holds it; the plugin says its dry run would keep it and never mentions PodGone")
	}
}

// explain.md:55-56 (it says that it cannot tell what podsweeper knows of the
// pod, rather than that it knows nothing) and 152-155 (a deleted pod under a
// dry run: "its report keeps what it would have done"). The dry run's page
// says it reported 1500 and keeps the latest 1000: what it reported of a pod
// gone for good may be among those it no longer keeps.
func TestKnowsNothingAfterReportsCut(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a", "--dry-run"))
	e.handle("podsweeper/agent-a", &pageFuncs{report: func() []byte {
		var rs []k8s.WouldDestroy
		for i := range 1000 {
			rs = append(rs, k8s.WouldDestroy{At: time.Now(), PUID: "uid-other-" + strconv.Itoa(i), Pod: "apps/other-" + strconv.Itoa(i),
				Reason: "PodGone", Row: 1, Why: "pod not found", Dropped: true})
		}
		return jsonBytes(t, map[string]any{"total": 1500, "reports": rs})
	}})
	x, err := e.c.explainPod(context.Background(), "apps", "web", "", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if strings.Contains(out, "podsweeper knows nothing of this pod") {
		t.Errorf("the dry run's report page says it made 1500 reports and keeps the latest 1000; the plugin says podsweeper knows nothing of apps/web, and not that its earlier reports are not kept")
	}
}

// A dry run whose check decided to destroy a PU, and whose dry run of the destroy failed and is retried (or waits for
// its turn under the destroy rate), has reported nothing yet: explain pod and status tell that it would destroy the
// PU, not that it would keep it.
func TestDryRunWhoseDestroyIsRetriedOrWaitsItsTurnWouldDestroy(t *testing.T) {
	for _, state := range []string{"waiting for a retry", "waiting for its turn"} {
		t.Run(state, func(t *testing.T) {
			checked, next := clockNow.Add(-2*time.Second), clockNow.Add(4*time.Second)
			pu := k8s.PUStatus{PUID: firstUID, Pod: "apps/web", State: state, Age: "3m0s", LastChecked: &checked,
				LastRow: 1, Why: "pod not found", NextAttempt: &next}
			if state == "waiting for a retry" {
				pu.Attempts, pu.LastError = 2, "dry run of destroying PU "+firstUID+": the policy engine is unreachable"
			}
			api, text := dryRunningAgent(t, pu, []k8s.WouldDestroy{})
			wantSays(t, "explain pod", text, "    dry run       would destroy it: its check decided so")
			wantNotSays(t, "explain pod", text, "would keep it")

			wantSays(t, "status", statusText(t, api.cluster(5*time.Second), "node-a", clockNow), "would destroy: not reported yet")
		})
	}
}

// A dry run that reported a PU (PodTerminated), whose check then decided to destroy it again (its pod deleted: row
// 1) and whose dry run of that destroy failed and is retried, would destroy it, not reported yet: the earlier report
// is named as the last, not as what the dry run does now. report says so too, rather than that no dry run would
// destroy anything.
func TestDryRunRetriedAfterAnEarlierReportWouldDestroyNotReportedYet(t *testing.T) {
	checked, next := clockNow.Add(-2*time.Second), clockNow.Add(4*time.Second)
	pu := k8s.PUStatus{PUID: firstUID, Pod: "apps/web", State: "waiting for a retry", Age: "3m0s", LastChecked: &checked,
		LastRow: 1, Why: "pod not found", Attempts: 1, NextAttempt: &next, WouldDestroy: "PodTerminated"}
	reported := k8s.WouldDestroy{At: clockNow.Add(-time.Minute), PUID: firstUID, Pod: "apps/web", Reason: "PodTerminated", Row: 11, Why: "pod terminated"}
	for _, reports := range [][]k8s.WouldDestroy{{reported}, {}} {
		api, text := dryRunningAgent(t, pu, reports)
		wantSays(t, "explain pod", text, "    dry run       would destroy it: its check decided so, not reported yet")
		wantSays(t, "explain pod", text, "(its last report: PodTerminated")
		wantSays(t, "status", statusText(t, api.cluster(5*time.Second), "node-a", clockNow), "would destroy: not reported yet")
		if len(reports) == 0 {
			report := reportText(t, api.cluster(5*time.Second), clockNow)
			wantSays(t, "report", report, "would destroy 1 PU(s) not reported yet")
			wantNotSays(t, "report", report, "no dry run would destroy anything")
		}
	}
}

// A dry run reports each row of a PU once: a PU whose check decided again a row it reported, and whose dry run of
// that destroy now fails, is not told "not reported yet" (no report would follow), but that it reported it already.
func TestDryRunRetryingARowItReportedSaysReportedAlready(t *testing.T) {
	checked, next := clockNow.Add(-2*time.Second), clockNow.Add(4*time.Second)
	pu := k8s.PUStatus{PUID: firstUID, Pod: "apps/web", SandboxID: "s2", State: "waiting for a retry", Age: "3m0s", LastChecked: &checked,
		LastRow: 10, Why: "sandbox changed", Attempts: 1, NextAttempt: &next, WouldDestroy: "SandboxChanged", ReportedRows: 1 << 10}
	reported := k8s.WouldDestroy{At: clockNow.Add(-time.Minute), PUID: firstUID, Pod: "apps/web", Reason: "SandboxChanged", Row: 10, Why: "sandbox changed"}
	_, text := dryRunningAgent(t, pu, []k8s.WouldDestroy{reported})
	wantSays(t, "explain pod", text, "would destroy it: its check decided so again, row 10, which it reported already")
	wantNotSays(t, "explain pod", text, "not reported yet")
}

// dryRunningAgent serves pu and reports (all it reported) as the pages of a dry-running node agent of node-a, and returns
// the cluster and the text of explain pod apps/web on node-a.
func dryRunningAgent(t *testing.T, pu k8s.PUStatus, reports []k8s.WouldDestroy) (*fakeCluster, string) {
	t.Helper()
	api := newFakeCluster(t, runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", "--dry-run"))
	api.handle("podsweeper/agent-a", &programPages{at: clockNow, pus: []k8s.PUStatus{pu}, dry: &dryRunPage{Total: len(reports), Reports: reports}})
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	return api, podText(t, x)
}

// explain.md: a PU "whose dry run of the destroy failed and is retried (its retry's check under way too)" is told
// "would destroy it ... not reported yet": so is one whose retry's check is queued (the workers busy), in explain
// pod, status and report, and on an engine that ended with it queued (its report's note says so beside "reports
// nothing": as status tells it, not reported yet).
func TestADryRunRetryQueuedIsNotReportedYet(t *testing.T) {
	for _, engine := range []string{k8s.EngineRunning, k8s.EngineEnded} {
		checked := clockNow.Add(-2 * time.Second)
		pu := k8s.PUStatus{PUID: firstUID, Pod: "apps/web", State: "queued", Age: "3m0s", LastChecked: &checked, LastRow: 1,
			Why: "pod not found", Attempts: 1, LastError: "dry run of destroying PU " + firstUID + ": the policy engine is unreachable"}
		api := newFakeCluster(t, runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", "--dry-run"))
		api.handle("podsweeper/agent-a", &programPages{at: clockNow, engine: engine, pus: []k8s.PUStatus{pu}, dry: &dryRunPage{Reports: []k8s.WouldDestroy{}}})
		x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "node-a", clockNow)
		if err != nil {
			t.Fatal(err)
		}
		text := podText(t, x)
		wantSays(t, "explain pod "+engine, text, "would destroy it: its check decided so, not reported yet")
		wantNotSays(t, "explain pod "+engine, text, "would keep it")
		wantSays(t, "status "+engine, statusText(t, api.cluster(5*time.Second), "node-a", clockNow), "would destroy: not reported yet")
		wantSays(t, "report "+engine, reportText(t, api.cluster(5*time.Second), clockNow), "would destroy 1 PU(s) not reported yet")
	}
}

// A PU a dry run gave up on and tracked again since is told so ("gave up on destroying it then ... and holds it
// again since"), not as a report that it would destroy it; and status tells a report made after its page was read
// (what the dry run did last) before the reason the page gives.
func TestAGiveUpTrackedAgainAndAReportAfterThePage(t *testing.T) {
	checked := clockNow.Add(-2 * time.Second)
	pu := k8s.PUStatus{PUID: firstUID, Pod: "apps/web", State: "idle", Age: "1s", LastChecked: &checked, LastRow: 5, Why: "same pod"}
	gaveUp := k8s.WouldDestroy{At: clockNow.Add(-time.Minute), PUID: firstUID, Pod: "apps/web", Reason: "PodGone", Why: "its dry run of the destroy failed for good",
		Dropped: true, GaveUp: true, Error: "permanent: refused"}
	_, text := dryRunningAgent(t, pu, []k8s.WouldDestroy{gaveUp})
	wantSays(t, "explain pod", text, "gave up on destroying it then, PodGone")
	wantSays(t, "explain pod", text, "holds it again since")
	wantNotSays(t, "explain pod", text, "reported it would destroy it")

	pu.WouldDestroy = "PodTerminated"
	later := k8s.WouldDestroy{At: clockNow.Add(time.Second), PUID: firstUID, Pod: "apps/web", Reason: "PodGone", Row: 1, Why: "pod not found"}
	api, _ := dryRunningAgent(t, pu, []k8s.WouldDestroy{later})
	wantSays(t, "status", statusText(t, api.cluster(5*time.Second), "node-a", clockNow), "would destroy: PodGone")
}

// A PU whose retry's check found its pod alive and kept it (row 5), checked again since with its failed attempts
// still counted, is not told "would destroy it ... not reported yet": its last check kept it (its page's
// lastAction). One whose last check decided the destroy is.
func TestAPUItsLastCheckKeptIsNotToldWouldDestroy(t *testing.T) {
	checked := clockNow.Add(-2 * time.Second)
	for _, c := range []struct {
		action, why string
		row         int
		would       bool
	}{{"Keep", "same pod, sandbox not checked", 5, false}, {"Destroy", "pod not found", 1, true}} {
		pu := k8s.PUStatus{PUID: firstUID, Pod: "apps/web", State: "checking", Age: "3m0s", LastChecked: &checked, LastRow: c.row,
			Why: c.why, Attempts: 1, LastAction: c.action}
		api, text := dryRunningAgent(t, pu, []k8s.WouldDestroy{})
		status := statusText(t, api.cluster(5*time.Second), "node-a", clockNow)
		if strings.Contains(text, "not reported yet") != c.would || strings.Contains(status, "would destroy: not reported yet") != c.would {
			t.Errorf("last check %s (row %d), attempts 1: told not reported yet %v, want %v:\n%s\n%s", c.action, c.row, !c.would, c.would, text, status)
		}
	}
}
