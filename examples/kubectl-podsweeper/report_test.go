package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
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

// explain.md:79 "`report`'s HELD column follows a PU's latest report", and
// the cut reports' note.
func TestReportHeldFollowsLatest(t *testing.T) {
	agent := &programPages{at: askedAt, dry: &dryRunPage{Total: 5, Reports: []k8s.WouldDestroy{
		{At: askedAt.Add(-time.Minute), PUID: "pu-1", Pod: "apps/a", Reason: "SandboxChanged", Row: 9, Why: "w"},
		{At: askedAt.Add(-30 * time.Second), PUID: "pu-1", Pod: "apps/a", Reason: "PodGone", Row: 1, Why: "pod not found", Dropped: true},
	}}}
	ctrl := &programPages{at: askedAt}
	api := agentAndController(t, agent, ctrl)
	c := api.cluster(5 * time.Second)
	ts, _, err := c.programs(testContext(t), "", true)
	if err != nil {
		t.Fatal(err)
	}
	answers, _, err := c.askAll(testContext(t), ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := RenderReport(&b, &Report{Now: askedAt, Answers: answers}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Count(out, "no: pod gone") != 2 || !strings.Contains(out, "reported 5 in all; it keeps the latest 2.") ||
		!strings.Contains(out, "cluster-controller podsweeper/ctrl-1 runs without --dry-run") {
		t.Fatalf("%s", out)
	}
}

// explain.md:80-85: report's HELD column follows a PU's latest report, and
// WHEN is told from when the report page answered, on the program's clock.
func TestReportHeldAndWhenOnItsClock(t *testing.T) {
	skew := askedAt.Add(-time.Hour) // the program's clock is an hour behind
	c := newFakeCluster(t, runningProgram("podsweeper-node-agent", "ps", "agent-a", "node-a", "--dry-run")).closingAnswers().listingEventsWhole()
	c.handle("ps/agent-a", &programPages{at: skew, dry: &dryRunPage{Total: 2, Reports: []k8s.WouldDestroy{
		{At: skew.Add(-30 * time.Second), PUID: "U1", Pod: "apps/web", Reason: "SandboxDead", Row: 12, Why: "sandbox dead"},
		{At: skew.Add(-10 * time.Second), PUID: "U1", Pod: "apps/web", Reason: "PodGone", Row: 1, Why: "pod not found", Dropped: true},
	}}})
	cl := c.inNamespace("")
	ts, _, err := cl.programs(testContext(t), "", true)
	if err != nil {
		t.Fatal(err)
	}
	answers, _, err := cl.askAll(testContext(t), ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderReport(&b, &Report{Now: askedAt, Answers: answers})
	s := b.String()
	if strings.Count(s, "no: pod gone") != 2 || !strings.Contains(s, "30s ago") || !strings.Contains(s, "10s ago") {
		t.Fatalf("got:\n%s", s)
	}
}

// explain.md:77-80: "when every replica of a program asked is a standby (its leader ended, and none leads yet), its
// leader is named on a line `Not asked:`, and the answer cannot tell" — for report too (explain.md:449-451).
func TestReportAllStandbys(t *testing.T) {
	pages := map[string]rawAnswer{k8s.StatusPath: {code: http.StatusOK, body: `[]`}, k8s.DryRunPath: {code: http.StatusOK, body: `{"total":0,"reports":[]}`}}
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/cc-1": servePages(clockNow, k8s.EngineNotRunning, pages),
		"podsweeper/cc-2": servePages(clockNow, k8s.EngineNotRunning, pages),
	},
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-1", "node-x", corev1.PodRunning, "--dry-run"),
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-2", "node-y", corev1.PodRunning, "--dry-run"),
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-0", "node-z", corev1.PodFailed, "--dry-run"),
	)
	r, err := c.report(testContext(t), clockNow)
	if err != nil {
		t.Fatal(err)
	}
	var txt bytes.Buffer
	if err := RenderReport(&txt, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "Not asked: the leader of cluster-controller cc") || strings.Contains(txt.String(), "no dry run would destroy anything") {
		t.Errorf("every replica a standby:\n%s", txt.String())
	}
}

// explain.md:447-451: report names each program's pod that does not run on a line `Not asked:`, and says of a table
// with no row that a program was not asked, rather than that no dry run would destroy anything.
func TestReportEmptyTableWithPendingProgram(t *testing.T) {
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a": dryRunAgent(t, `{"total":0,"reports":[]}`),
	},
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning, "--dry-run"),
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-b", "node-b", corev1.PodPending, "--dry-run"))
	r, err := c.report(testContext(t), clockNow)
	if err != nil {
		t.Fatal(err)
	}
	var txt bytes.Buffer
	if err := RenderReport(&txt, r); err != nil {
		t.Fatal(err)
	}
	wantSays(t, "the text", txt.String(), "(none from the programs asked: a program could not be asked, or was not, below)")
	wantSays(t, "the text", txt.String(), "Not asked: node-agent podsweeper/agent-b on node node-b is Pending: not asked.")
	wantNotSays(t, "the text", txt.String(), "no dry run would destroy anything")
}

// docs/operating/explain.md:77-78: "A standby cluster controller, whose engine does not run, holds no PU, and says so
// (`(a standby: its engine does not run)`, `standby` in JSON)"; explain.md:33: "`-o json` prints what the text is made
// from". report asks a leader and its standby, neither in a dry run: the JSON says the second is a standby (its engine
// does not run), the text says of it that "it destroys", and nowhere that it is a standby.
func TestReportStandbySaysSo(t *testing.T) {
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/cc-leader":  statusPage(t, k8s.EngineRunning),
		"podsweeper/cc-standby": statusPage(t, k8s.EngineNotRunning),
	},
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-leader", "node-a", corev1.PodRunning),
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-standby", "node-b", corev1.PodRunning))
	r, err := c.report(testContext(t), clockNow)
	if err != nil {
		t.Fatal(err)
	}
	var txt, js bytes.Buffer
	if err := RenderReport(&txt, r); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	wantSays(t, "the JSON", js.String(), `"standby": true`)
	wantSays(t, "the text", txt.String(), "cluster-controller podsweeper/cc-standby (a standby: its engine does not run)")
	wantNotSays(t, "the text", txt.String(), "cluster-controller podsweeper/cc-standby runs without --dry-run: it destroys")
}

// docs/operating/explain.md:441-444: "`could not be asked: reading its dry
// run's report on port PORT: ...`: a program in a dry run whose report page
// fails; its PUs are not listed either. So for a report page of another
// shape (...): no program's page, it tells nothing of what a dry run would
// do." A page {"total":1,"reports":[...]} whose reports are no reports (an
// object of other fields, or null) is told as a dry run's report: a row of
// no pod, no PU, row 0, "2562047h47m16.854775807s ago", HELD yes.
func TestReportOfAnotherShape(t *testing.T) {
	for _, body := range []string{`{"total":1,"reports":[{"name":"x","kind":"Widget"}]}`, `{"total":1,"reports":[null]}`} {
		a := newFakeAPI(t).spdyOnly().impersonating()
		p := &mapProgram{pus: []map[string]any{mapPU("uid-web-1", "apps/web", "idle")}}
		a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/debug/podsweeper/dry-run" {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(body))
				return
			}
			p.ServeHTTP(w, r)
		}), []string{"--dry-run"}...)
		out, errs, code := a.run("report").outErrCode()
		if code != 0 {
			t.Fatalf("report: exit %d\n%s", code, errs)
		}
		if !strings.Contains(out, "could not be asked") || strings.Contains(out, "ago") {
			t.Errorf("report, its page answering %s: want the program told as could not be asked, and no row of a report; got:\n%s", body, out)
		}
	}
}

// report: the node agent, whose command line says --dry-run, could not be
// asked (it restarts: 503); the cluster controller's dry run has reported
// nothing yet. The table says "(none: no dry run would destroy anything
// yet)": a claim of every dry run, the one not asked among them, whose
// reports are not known.
func TestReportNeverSaysNoDryRunWouldDestroyWhenOneCouldNotBeAsked(t *testing.T) {
	now := time.Now().UTC()
	r := &Report{Now: now, Answers: []Answer{
		{Program: Program{Program: "cluster-controller", Namespace: "podsweeper", Pod: "cc-abcde", DryRun: true}, At: now, ReportsAt: now},
		{Program: Program{Program: "node-agent", Namespace: "podsweeper", Pod: "agent-x7k2p", Node: "node-a", DryRun: true},
			Error: "reading its status on port 8084: /debug/podsweeper answered 503: the deletion engine has not listed its Inventory yet"},
	}}
	var b bytes.Buffer
	if err := RenderReport(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "no dry run would destroy anything") {
		t.Fatalf("says no dry run would destroy anything while a program in a dry run could not be asked:\n%s", b.String())
	}
}

// report: a node agent whose pod is in phase Unknown (its node lost touch with the API server; the program may still
// run, in a dry run, holding reports) is not asked; the one asked, in a dry run, has no report yet. The table says that no
// dry run would destroy anything, and names no program not asked.
func TestReportNamesProgramNotAsked(t *testing.T) {
	now := time.Now().UTC()
	a := programPod("podsweeper-node-agent", "r", "podsweeper", "agent-a", "node-a", corev1.PodRunning, "--dry-run")
	b := programPod("podsweeper-node-agent", "r", "podsweeper", "agent-b", "node-b", corev1.PodUnknown, "--dry-run")
	e := newFakeCluster(t, a, b).closingAnswers().allowingReviews()
	e.handle("podsweeper/agent-a", &programPages{at: now, dry: &dryRunPage{Reports: []k8s.WouldDestroy{}}})
	c := e.cluster(5 * time.Second)
	r, err := c.report(testContext(t), now) // as main.go's report does
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := RenderReport(&text, r); err != nil {
		t.Fatal(err)
	}
	var js strings.Builder
	_ = writeJSON(&js, r)
	out := text.String()
	if strings.Contains(out, "no dry run would destroy anything") || !strings.Contains(out, "agent-b") {
		t.Errorf("report says no dry run would destroy anything beside node-agent podsweeper/agent-b (Unknown), not asked and not named:\n%s", out)
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(js.String()), &m)
	if !strings.Contains(js.String(), "agent-b") {
		t.Errorf("JSON names no program not asked either:\n%s", js.String())
	}
}

// report: the only program, a node agent in a dry run, is Pending (rescheduled, pulling its image): report says that
// no podsweeper program was found to ask, not that one was found and not asked.
func TestReportAllPendingNamesNotAsked(t *testing.T) {
	now := time.Now().UTC()
	b := programPod("podsweeper-node-agent", "r", "podsweeper", "agent-b", "node-b", corev1.PodPending, "--dry-run")
	e := newFakeCluster(t, b).closingAnswers().allowingReviews()
	c := e.cluster(5 * time.Second)
	r, err := c.report(testContext(t), now)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	_ = RenderReport(&text, r)
	if !strings.Contains(text.String(), "agent-b") {
		t.Errorf("report names no program not asked, node-agent podsweeper/agent-b (Pending) found:\n%s", text.String())
	}
}

// explain.md:68-70, for report's WHEN: the report page answered 3s after the
// status page; its report's time is told from the status page's answer.
func TestReportWhenFromWhenItAnswered(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a", "--dry-run"))
	e.handle("podsweeper/agent-a", &pageFuncs{
		delay: map[string]time.Duration{"/debug/podsweeper/dry-run": 3 * time.Second},
		report: func() []byte {
			return jsonBytes(t, map[string]any{"total": 1, "reports": []k8s.WouldDestroy{{At: time.Now().Add(-90 * time.Second), PUID: "uid-web", Pod: "apps/web",
				Reason: "PodGone", Row: 1, Why: "pod not found", Dropped: true}}})
		},
	})
	ts, _, err := e.c.programs(context.Background(), "", true)
	if err != nil {
		t.Fatal(err)
	}
	answers, _, err := e.c.askAll(context.Background(), ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderReport(&b, &Report{Now: time.Now(), Answers: answers})
	t.Log(b.String())
	if !strings.Contains(b.String(), "1m30s ago") {
		t.Errorf("the report page answered that the report was made 1m30s before; report's WHEN tells it from the status page's answer, 3s earlier")
	}
}

// explain.md: "A dry run's report of a PU not on the program's status page is said to be no longer held only when the
// report says so (dropped); report's HELD column follows a PU's latest report". A PU a dry run dropped (its pod gone
// for good) and tracked again since (the Inventory's list, or the agent, brought it back) is on the status page read
// after that report: it is held, in explain pod and in report's HELD column; a report made after the page still says
// it is no longer held.
func TestADroppedPUTrackedAgainIsHeld(t *testing.T) {
	for _, c := range []struct {
		name     string
		reported time.Duration // when its latest report was made, from the status page's time
		held     bool
	}{{"reported before the page", -30 * time.Second, true}, {"reported after the page", 2 * time.Second, false}} {
		t.Run(c.name, func(t *testing.T) {
			pu := idlePUAt(askedAt, firstUID, "apps/web")
			agent := &programPages{at: askedAt, pus: []k8s.PUStatus{pu}, dry: &dryRunPage{Total: 1, Reports: []k8s.WouldDestroy{
				{At: askedAt.Add(c.reported), PUID: firstUID, Pod: "apps/web", Reason: "PodGone", Row: 1, Why: "pod not found", Dropped: true}}}}
			api := agentAndController(t, agent, &programPages{at: askedAt}, workloadPod("apps", "web", firstUID, "node-a"))
			x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", askedAt)
			if err != nil {
				t.Fatal(err)
			}
			out := podText(t, x)
			if c.held == strings.Contains(out, "it no longer holds it") || c.held != strings.Contains(out, "holds it again since") {
				t.Errorf("explain pod of a PU on the page, its latest report dropping it %s:\n%s", c.name, out)
			}
			var b strings.Builder
			if err := RenderReport(&b, &Report{Now: askedAt, Answers: x.Answers}); err != nil {
				t.Fatal(err)
			}
			if c.held == strings.Contains(b.String(), "no: pod gone") {
				t.Errorf("report's HELD of a PU on the page, its latest report dropping it %s:\n%s", c.name, b.String())
			}
			// status tells what the dry run does of the PU as tracked now: a report of its earlier tracking is not that.
			if status := statusText(t, api.cluster(5*time.Second), "node-a", askedAt); c.held == strings.Contains(status, "would destroy: PodGone") {
				t.Errorf("status of a PU on the page, its latest report dropping it %s:\n%s", c.name, status)
			}
		})
	}
}

// docs/operating/explain.md: `report` says of a table with no row "that none came from the engines that run" beside a
// node's program whose engine has not started (it has not listed its Inventory), not that no dry run would destroy
// anything.
func TestAnEmptyReportBesideANotStartedEngineSaysSo(t *testing.T) {
	r := &Report{Now: time.Now(), Answers: []Answer{
		{Program: Program{Program: "node-agent", Namespace: "podsweeper", Pod: "agent-a", Node: "node-a", DryRun: true}},
		{Program: Program{Program: "node-agent", Namespace: "podsweeper", Pod: "agent-b", Node: "node-b", DryRun: true}, Standby: true},
	}}
	var b strings.Builder
	require.NoError(t, RenderReport(&b, r))
	assert.NotContains(t, b.String(), "no dry run would destroy anything")
	assert.Contains(t, b.String(), "(none from the engines that run: a node's program has not started its engine, below)")
}
