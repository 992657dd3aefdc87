package main

// --timeout bounds each program's question whole, from the port-forward's upgrade on; a program not answered by
// then could not be asked, and the others are asked all the same.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
)

// The tests of --timeout's bound give each program askTimeout: a program that answers at once is answered
// within it even on a loaded machine (a port-forward's upgrade and its streams through a fake API server),
// while the hangs and delays they test outlast it (outlasting, or for ever); the command may take askSlack
// beyond its programs' bounds for its own reads of the API server.
const (
	askTimeout = 3 * time.Second
	outlasting = 15 * time.Second
	askSlack   = 3 * time.Second
)

// explain.md:26-27, 72-74: --timeout bounds each program's question.
func TestSlowPageTimesOut(t *testing.T) {
	now := time.Now().UTC()
	api := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"))
	release := make(chan struct{})
	defer close(release)
	api.handle("podsweeper/agent-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		_, _ = w.Write([]byte("["))
		w.(http.Flusher).Flush()
		<-release
	}))
	start := time.Now()
	x, err := api.cluster(time.Second).explainPod(context.Background(), "apps", "db", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("took %v with --timeout=1s", d)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "could not be asked") {
		t.Fatalf("a slow page:\n%s", out)
	}
}

// explain.md:72-74: --timeout "bounds each program's question whole, the
// opening of the port-forward's streams included".
func TestStreamNeverAcknowledged(t *testing.T) {
	now := time.Now().UTC()
	api := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"))
	api.hang["podsweeper/agent-a"] = true
	api.handle("podsweeper/agent-a", &anyPages{at: now})
	start := time.Now()
	x, err := api.cluster(time.Second).explainPod(context.Background(), "apps", "db", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("took %v with --timeout=1s", d)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "could not be asked") {
		t.Fatalf("stream never acknowledged:\n%s", out)
	}
}

// explain.md:75-77: "`--timeout` ... bounds each program's question whole".
func TestTimeoutBoundsASlowProgram(t *testing.T) {
	agent := &programPages{at: askedAt, delay: 3 * time.Second}
	ctrl := &programPages{at: askedAt}
	api := agentAndController(t, agent, ctrl, workloadPod("apps", "web", firstUID, "node-a"))
	start := time.Now()
	x, err := api.cluster(500*time.Millisecond).explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if el := time.Since(start); el > 2500*time.Millisecond || !strings.Contains(out, "node-agent podsweeper/agent-a (node node-a) could not be asked") {
		t.Fatalf("after %v:\n%s", el, out)
	}
}

// explain.md:80-84: without a TimeHeader (an older image), times are told
// from when the page began to answer, not from when its last byte came.
func TestSlowBodyWithoutTimeHeader(t *testing.T) {
	api := agentAndController(t, &programPages{noTime: true}, &programPages{noTime: true}, workloadPod("apps", "web", firstUID, "node-a"))
	api.handle("podsweeper/agent-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != k8s.StatusPath {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		lc := time.Now().Add(-5 * time.Second).UTC()
		w.WriteHeader(http.StatusOK)
		_, _ = fmt.Fprintf(w, `[{"puID":%q,"pod":"apps/web","state":"idle","age":"1m0s","lastChecked":%q,"lastRow":9,"why":"same pod, same sandbox"}`, firstUID, lc.Format(time.RFC3339Nano))
		time.Sleep(2 * time.Second)
		_, _ = io.WriteString(w, "]\n")
	}))
	x, err := api.cluster(10*time.Second).explainPod(testContext(t), "apps", "web", "", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if !strings.Contains(out, "last check    5s ago") {
		t.Fatalf("%s", out)
	}
}

// explain.md:33-34: "`--timeout` (20s) bounds each program's question, from the port-forward's upgrade on: a
// program not answered by then `could not be asked`"; and the first promise: the answer then cannot tell. The
// node agent of the pod's node never finishes its status page.
func TestHangingPageCannotTell(t *testing.T) {
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	hang := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block })
	c := clusterServing(t, map[string]http.Handler{"podsweeper/na-a": hang},
		programPod("podsweeper-node-agent", "na", "podsweeper", "na-a", "node-a", corev1.PodRunning),
		workloadPod("apps", "web", firstUID, "node-a"),
	)
	c.timeout = time.Second
	x, err := c.explainPod(testContext(t), "apps", "web", "", "", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := podTextAndJSON(t, x)
	if !strings.Contains(txt, "could not be asked") || !strings.Contains(txt, "cannot tell") || strings.Contains(txt, "knows nothing") {
		t.Errorf("a hanging page:\n%s", txt)
	}
}

// docs/operating/explain.md:28-29: "`--timeout` (20s) bounds each program's question, from the port-forward's
// upgrade on: a program not answered by then `could not be asked`." One program answers its headers and then
// never ends its body; the other answers.
func TestTimeoutBoundsATricklingProgram(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	c.addPod(*workloadPod("apps", "web", "u-web", "node-a"))
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	c.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-1", "node-c", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "[")
		w.(http.Flusher).Flush()
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	c.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", statusAndReport([]k8s.PUStatus{recentPU("u-web", "apps/web")}, ""))
	start := time.Now()
	code, out, errOut := c.run("--timeout", askTimeout.String(), "explain", "pod", "apps/web").codeOutErr()
	if took := time.Since(start); took > askTimeout+askSlack {
		t.Fatalf("took %v with --timeout %v", took, askTimeout)
	}
	if code != 0 || !strings.Contains(out, "cluster-controller podsweeper/cc-1 could not be asked") || !strings.Contains(out, "PU u-web of pod apps/web") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// docs/operating/explain.md:31 and :445-449: --timeout bounds each
// program's question; a program not answered by then could not be asked,
// and the other programs are asked all the same.
func TestTimeoutBoundsEachProgram(t *testing.T) {
	a := newFakeAPI(t).spdyOnly().impersonating()
	a.addPod(*workloadPod("apps", "web", "uid-web-1", "node-a"))
	slow := &mapProgram{pus: []map[string]any{mapPU("uid-web-1", "apps/web", "idle")}}
	ended := make(chan struct{}) // closed before the servers' ends, which await their handlers
	slow.onStatus = func() {
		select {
		case <-time.After(outlasting):
		case <-ended:
		}
	}
	a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", slow)
	a.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-1", "node-z", &mapProgram{pus: []map[string]any{mapPU("uid-web-1", "apps/web", "idle")}})
	a.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-2", "node-y", &mapProgram{})
	a.forwardDelayOf = map[string]time.Duration{"podsweeper/cc-2": outlasting}
	t.Cleanup(func() { close(ended) })
	start := time.Now()
	out, errs, code := a.run("explain", "pod", "apps/web", "--timeout", askTimeout.String()).outErrCode()
	if d := time.Since(start); d > 2*askTimeout+askSlack || code != 0 || strings.Count(out, "could not be asked: ") != 2 || !strings.Contains(out, "cluster-controller podsweeper/cc-1:") {
		t.Errorf("%v exit %d\n%s\n%s", d, code, out, errs)
	}
}

// explain.md:22-23, 63-65: --timeout bounds each program's question whole; a
// program not answered by then could not be asked, and the others are asked.
func TestTimeoutBoundsSlowPage(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"), podsweeperProgram("cluster-controller", "podsweeper", "cc-1", ""))
	e.c.timeout = askTimeout
	e.handle("podsweeper/agent-a", &pageFuncs{delay: map[string]time.Duration{"/debug/podsweeper": outlasting}})
	e.handle("podsweeper/cc-1", &pageFuncs{})
	start := time.Now()
	x, err := e.c.explainPod(context.Background(), "apps", "web", "", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > askTimeout+askSlack {
		t.Errorf("took %v", d)
	}
	out := podText(t, x)
	t.Log(out)
	if !strings.Contains(out, "agent-a (node node-a) could not be asked") || !strings.Contains(out, "cc-1 holds no PU") ||
		!strings.Contains(out, "cannot tell all") {
		t.Error("slow program not told as could not be asked")
	}
}

// A status page cut short (its Content-Length not reached): could not be asked, not "holds no PU".
func TestCutStatusPage(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"))
	e.handle("podsweeper/agent-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/podsweeper" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`[{"puID":"uid-web","pod":"apps/web","state":"idle"},`))
	}))
	x, err := e.c.explainPod(context.Background(), "apps", "web", "", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if !strings.Contains(out, "could not be asked") || strings.Contains(out, "knows nothing") {
		t.Error("cut page not told as could not be asked")
	}
}

// explain.md:68-70: "a program that answers late ... is not told as older
// than it is". The node agent's status page is slow to come through (a big
// page over the port-forward): its answer, as of when it was made, says the
// PU was checked 5s before and is retried in 6s.
func TestSlowStatusPageToldOlder(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"))
	e.handle("podsweeper/agent-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/podsweeper" {
			http.NotFound(w, r)
			return
		}
		now := time.Now()
		w.Header().Set(k8s.TimeHeader, now.UTC().Format(time.RFC3339Nano)) // as k8s.NewStatusHandler tells it
		checked, next := now.Add(-5*time.Second), now.Add(6*time.Second)
		b := jsonBytes(t, []k8s.PUStatus{{PUID: "uid-db", Pod: "apps/db", State: "waiting for a retry", Age: "3m40s",
			LastChecked: &checked, LastRow: 1, Why: "pod not found", Attempts: 3, NextAttempt: &next, LastError: "boom"}})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b[:len(b)/2])
		time.Sleep(3 * time.Second) // the rest of the page comes through later
		_, _ = w.Write(b[len(b)/2:])
	}))
	x, err := e.c.explainPod(context.Background(), "apps", "db", "", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if !strings.Contains(out, "last check    5s ago") || !strings.Contains(out, "next in 6s") {
		t.Errorf("the program's answer says checked 5s before it, next attempt 6s after it; the plugin tells them from when the page's last byte came through")
	}
}

// A status page beyond what the plugin reads (here 1 MiB): could not be asked, never "holds no PU".
func TestHugeStatusPage(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("cluster-controller", "podsweeper", "cc-1", ""))
	e.c.maxPage = 1 << 20
	big := bytes.Repeat([]byte(" "), 2<<20)
	e.handle("podsweeper/cc-1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/podsweeper" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(big)
		_, _ = w.Write([]byte(`[{"puID":"uid-web","pod":"apps/web","state":"idle","age":"1m"}]`))
	}))
	x, err := e.c.explainPod(context.Background(), "apps", "web", "", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if !strings.Contains(out, "could not be asked: reading its status on port 8084: its page /debug/podsweeper is over 1 MiB, more than the plugin reads") {
		t.Error("huge page not told")
	}
}

// explain.md:63-64: --timeout must be above 0 (exit 2), checked before anything is asked.
func TestTimeoutAboveZero(t *testing.T) {
	for _, args := range [][]string{{"--timeout=0", "report"}, {"--timeout=-1s", "explain", "pod", "a/b"}, {"explain", "ip", "10.0.0.1"}, {"-o", "yaml", "report"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), append([]string{"--kubeconfig=/nonexistent"}, args...), &out, &errb); code != 2 {
			t.Errorf("%v: exit %d: %s", args, code, errb.String())
		}
	}
}

// explain.md:63-65: --timeout bounds each program's question whole, the
// opening of the port-forward's streams included: a kubelet that never
// acknowledges the streams.
func TestTimeoutBoundsStreamOpening(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"), podsweeperProgram("cluster-controller", "podsweeper", "cc-1", ""))
	e.c.timeout = askTimeout
	e.handle("podsweeper/agent-a", &pageFuncs{})
	e.handle("podsweeper/cc-1", &pageFuncs{})
	e.hang["podsweeper/agent-a"] = true
	start := time.Now()
	x, err := e.c.explainPod(context.Background(), "apps", "web", "", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	out := podText(t, x)
	t.Log(d, out)
	if d > askTimeout+askSlack || !strings.Contains(out, "agent-a (node node-a) could not be asked") || !strings.Contains(out, "cc-1 holds no PU") {
		t.Error("stream opening not bounded")
	}
}

// explain.md: a program whose status page is over what the plugin reads "could not be asked: reading its status on
// port PORT: its page /debug/podsweeper is over ..., more than the plugin reads", and the others are asked: the page is
// not read cut short and told as broken JSON. One of the same PUs under the limit is read.
func TestAPageOverWhatThePluginReadsIsToldSo(t *testing.T) {
	var pus []k8s.PUStatus
	for i := range 40 {
		pus = append(pus, recentPU(fmt.Sprintf("uid-%02d", i), fmt.Sprintf("apps/pod-%02d", i)))
	}
	page, err := json.Marshal(pus)
	require.NoError(t, err)
	for _, limit := range []int{len(page) - 1, len(page)} {
		e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"), podsweeperProgram("cluster-controller", "podsweeper", "cc-1", ""))
		e.c.timeout, e.c.maxPage = askTimeout, limit
		e.handle("podsweeper/agent-a", &pageFuncs{})
		e.handle("podsweeper/cc-1", &pageFuncs{status: func() []byte { return page }})
		x, err := e.c.explainPod(context.Background(), "apps", "pod-07", "", "", time.Now())
		require.NoError(t, err)
		out := podText(t, x)
		if limit < len(page) {
			require.Contains(t, out, fmt.Sprintf("cc-1 could not be asked: reading its status on port 8084: its page /debug/podsweeper is over %d bytes, more than the plugin reads", limit))
			require.Contains(t, out, "agent-a (node node-a) holds no PU")
		} else {
			require.Contains(t, out, "PU uid-07 of pod apps/pod-07", "read whole at its limit")
		}
	}
}

// explain.md: "a step of the program's wall clock (NTP) moves none of them from the others, and a report is told
// before or after the status page rightly across it". A dry run's PU waits for a retry of the destroy its last check
// decided (row 10); its only report (row 12) was made 30s before the status page. The program's wall clock steps a
// minute forward between its two pages, which their k8s.UptimeHeader tell: the report is still told as made before
// the check, and the PU's destroy "not reported yet". Without the step, the same.
func TestAReportIsToldBeforeTheStatusPageAcrossAWallClockStep(t *testing.T) {
	for _, step := range []time.Duration{0, time.Minute, -time.Minute} {
		t.Run(step.String(), func(t *testing.T) {
			const uid = "12121212-1212-1212-1212-121212121212"
			loaded := time.Now()
			real := time.Now()
			served := 0
			page := func(w http.ResponseWriter, r *http.Request) {
				now := time.Now()
				wall := now
				if r.URL.Path == k8s.DryRunPath {
					wall = wall.Add(step) // read after the status page: the wall clock has stepped
				}
				served++
				w.Header().Set(k8s.TimeHeader, wall.UTC().Format(time.RFC3339Nano))
				w.Header().Set(k8s.UptimeHeader, fmt.Sprint(int64(now.Sub(loaded))))
				w.Header().Set("Content-Type", "application/json")
				switch r.URL.Path {
				case k8s.StatusPath:
					checked, next := real.Add(-2*time.Second), real.Add(2*time.Second)
					_ = json.NewEncoder(w).Encode([]k8s.PUStatus{{PUID: uid, Pod: "apps/web", State: "waiting for a retry", Age: "10m",
						LastChecked: &checked, LastRow: 10, Why: "another sandbox", Attempts: 2, ReportedRows: deletion.RowSet(1 << 12),
						WouldDestroy: "SandboxDead", NextAttempt: &next, LastError: "dry run: destroy failed", LastAction: "Destroy"}})
				case k8s.DryRunPath:
					at := real.Add(-30 * time.Second).Add(step) // the page's time less 30s, as the program counts it
					_, _ = fmt.Fprintf(w, `{"total":1,"reports":[{"at":%q,"puID":%q,"pod":"apps/web","reason":"SandboxDead","row":12,"why":"the sandbox is dead"}]}`,
						at.UTC().Format(time.RFC3339Nano), uid)
				default:
					http.NotFound(w, r)
				}
			}
			out := statusText(t, dryRunAgentServing(t, page), "node-a", time.Now())
			require.Contains(t, out, "would destroy: not reported yet", "%s", out)
			require.Equal(t, 2, served)
		})
	}
}

// explain.md: "`report`'s HELD column follows a PU's latest report". A dry run's node agent restarts (its liveness
// probe) between its two pages: its status page, of the old process, holds the PU; its report, of the new process,
// drops it, its pod gone, 100ms before the report page answered. The new process's monotonic clock begun again is no
// step of the node's wall clock, whether it reads below the old one's (the old process up an hour) or within the
// plugin's own time between the pages (the old process up 800ms, the new one 801ms when its page answers 1.3s after
// the old one's: their k8s.InstanceHeaders tell two processes): the report stays after the status page, and the PU is
// no longer held.
func TestAProgramRestartedBetweenItsPagesIsNoClockStep(t *testing.T) {
	for _, c := range []struct {
		name              string
		oldUp, newUp, gap time.Duration
		instances         bool
	}{
		{"its uptime read below the old one's", time.Hour, 200 * time.Millisecond, 200 * time.Millisecond, false},
		{"its uptime read within the plugin's time", 800 * time.Millisecond, 801 * time.Millisecond, 1300 * time.Millisecond, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			const uid = "13131313-1313-1313-1313-131313131313"
			began := time.Now()
			page := func(w http.ResponseWriter, r *http.Request) {
				at, up, instance := began, c.oldUp, "0ld"
				if r.URL.Path == k8s.DryRunPath {
					at, up, instance = began.Add(c.gap), c.newUp, "new" // the new process, gap after the old one's page
				}
				w.Header().Set(k8s.TimeHeader, at.UTC().Format(time.RFC3339Nano))
				w.Header().Set(k8s.UptimeHeader, fmt.Sprint(int64(up)))
				if c.instances {
					w.Header().Set(k8s.InstanceHeader, instance)
				}
				w.Header().Set("Content-Type", "application/json")
				switch r.URL.Path {
				case k8s.StatusPath:
					_ = json.NewEncoder(w).Encode([]k8s.PUStatus{{PUID: uid, Pod: "apps/web", State: "idle", Age: "1h"}})
				case k8s.DryRunPath:
					_, _ = fmt.Fprintf(w, `{"total":1,"reports":[{"at":%q,"puID":%q,"pod":"apps/web","reason":"PodGone","row":1,"why":"the pod is gone","dropped":true}]}`,
						at.Add(-100*time.Millisecond).UTC().Format(time.RFC3339Nano), uid)
				default:
					http.NotFound(w, r)
				}
			}
			out := reportText(t, dryRunAgentServing(t, page), began.Add(2*time.Second))
			require.Contains(t, out, "no: pod gone", "a report made after the status page, by the program restarted, told before it:\n%s", out)
		})
	}
}

// dryRunAgentServing is a cluster of one node agent in a dry run, podsweeper/agent-a on node-a, whose listener serves
// page.
func dryRunAgentServing(t *testing.T, page http.HandlerFunc) *cluster {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a", "--dry-run"))
	e.c.timeout = askTimeout
	e.handle("podsweeper/agent-a", page)
	return e.c
}
