package main

// Times the answers tell are told on each program's clock, from when its page answered.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// adapters/k8s/status.go:37-42: "TimeHeader is the response header in
// which the status page ... tell when they read what they answer, on the
// program's clock ...: the times of the answer are told relative to it
// (kubectl podsweeper does), whatever the reader's clock"; explain.md:77-81:
// "A program's times ("2s ago", "next in 6s") are told from when the page
// they come from began to answer"; deletion/options.go:166: "Clock drives
// the periodic checks, the retries, the rate's turns and the times
// reported".
// The engine's times (LastChecked, NextAttempt) are on its Clock; the
// status page's Podsweeper-Time is time.Now(), another clock: a PU checked
// a moment ago is told as checked an hour ago.
func TestStatusTimesOnTheEnginesClock(t *testing.T) {
	getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		return workloadPod(key.Namespace, key.Name, "web-uid", "node-a"), nil
	})
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	engine, err := deletion.New(getter, policy, deletion.Options{Clock: hourBehindClock{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := engine.Track(ports.PU{PUID: "web-uid", Pod: types.NamespacedName{Namespace: "apps", Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = engine.Start(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		engine.TriggerAll()
		sts := engine.Status()
		if len(sts) == 1 && !sts[0].LastChecked.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the PU was not checked: %+v", sts)
		}
		time.Sleep(20 * time.Millisecond)
	}
	api := newFakeCluster(t,
		podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"),
		workloadPod("apps", "web", "web-uid", "node-a"))
	mux := http.NewServeMux()
	mux.Handle(k8s.StatusPath, k8s.NewStatusHandler(engine))
	api.handle("podsweeper/agent-a", mux)
	c := api.cluster(5 * time.Second)
	x, err := c.explainPod(context.Background(), "apps", "web", "", "", time.Now().UTC())
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "last check    0s ago") && !strings.Contains(out, "last check    1s ago") && !strings.Contains(out, "last check    just now") {
		t.Fatalf("a PU checked within the last second is told:\n%s", out)
	}
}

// explain.md:77-81: a program's times are told from when its page began to
// answer (its Podsweeper-Time), or, from an older program without it,
// from when its answer came; not from when the command began.
func TestTimesFromThePage(t *testing.T) {
	now := time.Now().UTC()
	progNow := now.Add(-10 * time.Minute) // the program's clock, 10 minutes behind the reader's
	checked := progNow.Add(-5 * time.Second)
	next := progNow.Add(6 * time.Second)
	api := newFakeCluster(t,
		podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"),
		workloadPod("apps", "db", "db-uid", "node-a"))
	api.handle("podsweeper/agent-a", &anyPages{at: progNow, status: []k8s.PUStatus{{PUID: "db-uid", Pod: "apps/db", State: "waiting for a retry",
		Age: "3m", LastChecked: &checked, LastRow: 1, Why: "pod not found", Attempts: 3, NextAttempt: &next, LastError: "boom"}}})
	c := api.cluster(5 * time.Second)
	x, err := c.explainPod(context.Background(), "apps", "db", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "last check    5s ago") || !strings.Contains(out, "next in 6s") {
		t.Fatalf("times not told from the page's own time:\n%s", out)
	}
	var js bytes.Buffer
	if err := RenderPodJSON(&js, x); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"at": "`+progNow.Format(time.RFC3339Nano)) {
		t.Fatalf("JSON's at is not the page's time:\n%s", js.String())
	}
}

// explain.md:80-84: a program's times are told from when its page began to
// answer, on its own clock (TimeHeader), whatever the two clocks.
func TestTimesFromTheProgramsClock(t *testing.T) {
	skew := askedAt.Add(time.Hour)
	pu := idlePUAt(askedAt, firstUID, "apps/web")
	lc := skew.Add(-5 * time.Second)
	next := skew.Add(7 * time.Second)
	pu.LastChecked, pu.NextAttempt, pu.Attempts, pu.State = &lc, &next, 2, "waiting for a retry"
	agent := &programPages{at: skew, pus: []k8s.PUStatus{pu},
		dry: &dryRunPage{Total: 1, Reports: []k8s.WouldDestroy{{At: skew.Add(-30 * time.Second), PUID: firstUID, Pod: "apps/web", Reason: "PodGone", Row: 1, Why: "pod not found"}}}}
	ctrl := &programPages{at: askedAt}
	api := agentAndController(t, agent, ctrl, workloadPod("apps", "web", firstUID, "node-a"))
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if !strings.Contains(out, "last check    5s ago") || !strings.Contains(out, "next in 7s") || !strings.Contains(out, "30s ago)") {
		t.Fatalf("times not told from the program's clock:\n%s", out)
	}
}

// docs/operating/explain.md:82-86: times are told from when the page began to answer (its Podsweeper-Time), not
// from when the command began: a program that answers 2s late, its last check 5s before it answered, is "5s ago".
func TestLateProgramNotToldOlder(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	c.addPod(*workloadPod("apps", "web", "u-web", "node-a"))
	c.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/podsweeper" {
			http.NotFound(w, r)
			return
		}
		time.Sleep(2 * time.Second)
		now := time.Now()
		w.Header().Set(k8s.TimeHeader, now.UTC().Format(time.RFC3339Nano))
		lc := now.Add(-5 * time.Second)
		_ = json.NewEncoder(w).Encode([]k8s.PUStatus{{PUID: "u-web", Pod: "apps/web", State: "idle", Age: "1m", LastChecked: &lc, LastRow: 9, Why: "same pod, same sandbox"}})
	}))
	code, out, errOut := c.run("explain", "pod", "apps/web").codeOutErr()
	if code != 0 || !strings.Contains(out, "last check    5s ago") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// Round 1: the pod apps/web lives on node-a, and the node agent there holds
// its PU (being checked). The pod is deleted while the programs are asked:
// round 1 is asked again, and its answers dropped. By round 2 the agent has
// destroyed the PU (PodGone); its Event, which adapters/k8s's recorder writes
// on a goroutine of its own (and retries, 10 s apart), is not in the API
// server yet. The answer says podsweeper knows nothing of the pod, though
// the plugin itself read the PU a moment before: the PU is not in the answer
// and the destroy's Event is not either.
func TestAPUReadInAnEarlierRoundIsNeverKnowsNothing(t *testing.T) {
	now := time.Now().UTC()
	agent := &firstThenLater{at: now,
		first: `[{"puID":"6f1c2a4e-0000-0000-0000-000000000001","pod":"apps/web","sandboxID":"3a9f0c1b2d4e5","state":"checking","age":"4m12s"}]`,
		later: `[]`}
	c, fc := clusterAndFake(t, map[string]http.Handler{"podsweeper/agent-a": agent}, 5*time.Second,
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"))
	var gets atomic.Int64
	fc.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		g := a.(k8stesting.GetAction)
		if g.GetNamespace() != "apps" || g.GetName() != "web" {
			return false, nil, nil
		}
		if gets.Add(1) == 1 { // the first read: live on node-a
			return true, webPod("node-a"), nil
		}
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "web")
	})
	x, err := c.explainPod(context.Background(), "apps", "web", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if agent.n.Load() < 2 {
		t.Fatalf("the agent was asked %d times, want 2 rounds:\n%s", agent.n.Load(), out)
	}
	if strings.Contains(out, "knows nothing") {
		t.Fatalf("says podsweeper knows nothing of a pod whose PU the plugin read in its first round, destroyed since, whose Event is not written yet:\n%s", out)
	}
}

// A program's times are told from its page's Podsweeper-Time, on its clock:
// a program whose clock is an hour behind the command's, whose PU was checked
// 5s before it answered, is told "5s ago".
func TestPUTimesOnTheProgramsClock(t *testing.T) {
	now := time.Now().UTC()
	progNow := now.Add(-time.Hour)
	checked := progNow.Add(-5 * time.Second).Format(time.RFC3339Nano)
	c, _ := clusterAndFake(t, map[string]http.Handler{
		"podsweeper/agent-a": rawPages{at: progNow, pages: map[string]rawAnswer{
			"/debug/podsweeper": {code: 200, body: `[{"puID":"6f1c2a4e-0000-0000-0000-000000000001","pod":"apps/web","state":"idle","age":"4m","lastChecked":"` + checked + `","lastRow":9,"why":"same pod, same sandbox"}]`},
		}},
	}, 5*time.Second, runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"), webPod("node-a"))
	x, err := c.explainPod(context.Background(), "apps", "web", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if !strings.Contains(out, "last check    5s ago") {
		t.Fatalf("got:\n%s", out)
	}
}

// explain.md:68-70: times told from when the program answered: the dry
// run's report page answered 3s after the status page, and its report's
// time is told from the status page's answer.
func TestReportTimesFromWhenItAnswered(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a", "--dry-run"))
	e.handle("podsweeper/agent-a", &pageFuncs{
		delay: map[string]time.Duration{"/debug/podsweeper/dry-run": 3 * time.Second},
		report: func() []byte {
			return jsonBytes(t, map[string]any{"total": 1, "reports": []k8s.WouldDestroy{{At: time.Now().Add(-90 * time.Second), PUID: "uid-web", Pod: "apps/web",
				SandboxID: "3a9f0c1b2d4e5", Reason: "PodGone", Row: 1, Why: "pod not found", Dropped: true}}})
		},
	})
	x, err := e.c.explainPod(context.Background(), "apps", "web", "", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if !strings.Contains(out, "(1m30s ago)") {
		t.Errorf("the report page answered that the report was made 1m30s before; the plugin tells it from the status page's answer, 3s earlier")
	}
}

// explain.md:68-70: times told from when the program answered. The
// program's node clock runs 1 minute ahead of the operator's: the program
// answered that it checked the PU 5s before and retries it in 6s.
func TestTimesAcrossClocks(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("cluster-controller", "podsweeper", "cc-1", ""))
	skew := time.Minute
	e.handle("podsweeper/cc-1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/podsweeper" {
			http.NotFound(w, r)
			return
		}
		now := time.Now().Add(skew) // the program's clock, which its status page tells as k8s.NewStatusHandler does
		w.Header().Set(k8s.TimeHeader, now.UTC().Format(time.RFC3339Nano))
		checked, next := now.Add(-5*time.Second), now.Add(6*time.Second)
		_, _ = w.Write(jsonBytes(t, []k8s.PUStatus{{PUID: "uid-db", Pod: "apps/db", State: "waiting for a retry", Age: "3m40s",
			LastChecked: &checked, LastRow: 1, Why: "pod not found", Attempts: 3, NextAttempt: &next, LastError: "boom"}}))
	}))
	x, err := e.c.explainPod(context.Background(), "apps", "db", "", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if !strings.Contains(out, "last check    5s ago") || !strings.Contains(out, "next in 6s") {
		t.Errorf("the program answered: checked 5s before its answer, next attempt 6s after; the plugin tells them on its own clock")
	}
}

// explain.md:418-420: an older program in a dry run, whose image serves no report page: could not be asked.
func TestOlderDryRunProgram(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a", "--dry-run"))
	e.handle("podsweeper/agent-a", &pageFuncs{})
	x, err := e.c.explainPod(context.Background(), "apps", "web", "", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if !strings.Contains(out, "could not be asked") || strings.Contains(out, "knows nothing") {
		t.Error("older dry-run program not told")
	}
}

// hourBehindClock is the real clock as an engine sees it once the node's
// wall clock was stepped an hour forward after the engine began (an NTP
// step after boot): the engine's times are its epoch plus the monotonic
// time since (deletion's timeOf), an hour behind the wall clock; its
// timers are the real ones.
type hourBehindClock = steppedClock

// steppedClock is the real clock as an engine sees it once the node's wall
// clock was stepped by -by after the engine began: the engine's times run
// by ahead of time.Now, which the dry run's reports and the Events follow.
// The zero value is hourBehindClock.
type steppedClock struct {
	clock.RealClock
	by time.Duration
}

func (c steppedClock) Now() time.Time {
	if c.by == 0 {
		return time.Now().Add(-time.Hour)
	}
	return time.Now().Add(c.by)
}

func (c steppedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// dryRunFailsUntil is a policy whose dry run of a destroy fails until ok is set.
type dryRunFailsUntil struct{ ok atomic.Bool }

func (p *dryRunFailsUntil) DestroyPU(context.Context, ports.DestroyEvent) error { return nil }

func (p *dryRunFailsUntil) DryRunDestroyPU(context.Context, ports.DestroyEvent) error {
	if p.ok.Load() {
		return nil
	}
	return errors.New("the dry run of the destroy fails")
}

// getPage reads a page the way the plugin does: its body, and when it answered (answeredAt).
func getPage(t *testing.T, url string) ([]byte, time.Time) {
	t.Helper()
	got := time.Now()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %v: %s", url, resp.StatusCode, err, body)
	}
	return body, answeredAt(resp.Header, got)
}

// explain.md: "a report of it made after its status page was read is what
// the dry run did last, and is told instead"; k8s.TimeHeader: the pages
// and the Events are on one clock. A real engine whose clock runs an hour
// ahead of the wall clock (the wall clock was stepped back since it was
// made): its PU's dry run of a destroy fails when the status page is read,
// then succeeds and is reported before the report page is read. The
// answer tells that report, not "not reported yet", whichever way the
// clock was stepped.
func TestAReportMadeAfterThePageIsToldWhateverTheWallClockDid(t *testing.T) {
	for _, by := range []time.Duration{time.Hour, -time.Hour, time.Nanosecond} {
		t.Run(by.String(), func(t *testing.T) {
			report := k8s.NewDryRunReport(0)
			policy := &dryRunFailsUntil{}
			e := deletiontest.NewEngine(t, deletiontest.NewCluster(), policy, deletion.Options{
				DryRun: true, Observer: report, Clock: steppedClock{by: by},
				RetryMinDelay: 100 * time.Millisecond, RetryMaxDelay: 100 * time.Millisecond,
			})
			defer deletiontest.Start(t, e)()
			if err := e.Track(ports.PU{PUID: firstUID, Pod: types.NamespacedName{Namespace: "apps", Name: "web"}}); err != nil {
				t.Fatal(err)
			}
			status := httptest.NewServer(k8s.NewStatusHandler(e))
			defer status.Close()
			dry := httptest.NewServer(report)
			defer dry.Close()
			waitFor(t, func() bool {
				st := e.Status()
				return len(st) == 1 && st[0].Attempts > 0 && st[0].State == "waiting for a retry"
			},
				func() string { return fmt.Sprintf("the dry run of its destroy did not fail: %+v", e.Status()) })
			body, at := getPage(t, status.URL)
			pus, err := decodePUs(body)
			if err != nil {
				t.Fatal(err)
			}
			policy.ok.Store(true)
			waitFor(t, func() bool { kept, _ := report.Reports(); return len(kept) == 1 },
				func() string { return "the dry run did not report the destroy" })
			body, reportsAt := getPage(t, dry.URL)
			total, reports, err := decodeReport(body)
			if err != nil {
				t.Fatal(err)
			}
			a := Answer{Program: Program{Program: "node-agent", Namespace: "podsweeper", Pod: "agent-a", Node: "node-a", DryRun: true},
				PUs: pus, At: at, Reports: reports, ReportsTotal: total, ReportsKept: len(reports), ReportsAt: reportsAt}
			x := &PodExplanation{Now: time.Now().UTC(), Namespace: "apps", Name: "web", Answers: []Answer{a}}
			if out := podText(t, x); strings.Contains(out, "not reported yet") || !strings.Contains(out, "would destroy it, PodGone") {
				t.Errorf("a report made after the status page was read is not told:\n%s", out)
			}
			var out bytes.Buffer
			if err := RenderReport(&out, &Report{Now: x.Now, Answers: []Answer{a}}); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out.String(), "not reported yet") {
				t.Errorf("report notes as not reported yet a PU whose report is in its table:\n%s", out.String())
			}
		})
	}
}

// firstThenLater answers its first request with first, every later one with later.
type firstThenLater struct {
	n            atomic.Int64
	at           time.Time
	first, later string
}

func (h *firstThenLater) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/debug/podsweeper" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Podsweeper-Time", h.at.Format(time.RFC3339Nano))
	if h.n.Add(1) == 1 {
		_, _ = w.Write([]byte(h.first))
		return
	}
	_, _ = w.Write([]byte(h.later))
}
