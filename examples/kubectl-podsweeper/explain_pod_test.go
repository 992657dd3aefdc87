package main

// explain pod: a pod asked by name, its programs asked through their port-forwards, and what the answer says of each.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

func TestLivePodPUToldWithItsLastCheckRow(t *testing.T) {
	now := time.Now().UTC()
	checked := now.Add(-5 * time.Second)
	api := newFakeCluster(t,
		podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"),
		workloadPod("apps", "web", "uid-web", "node-a"))
	api.handle("podsweeper/agent-a", &anyPages{at: now, status: []k8s.PUStatus{{PUID: "uid-web", Pod: "apps/web", State: "idle", Age: "1m0s", LastChecked: &checked, LastRow: 9, Why: "same pod, same sandbox"}}})
	c := api.cluster(5 * time.Second)
	x, err := c.explainPod(context.Background(), "apps", "web", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	t.Log(out)
	if !strings.Contains(out, "5s ago: row 9") {
		t.Fatal("smoke failed")
	}
}

// explain.md:64-66: a program whose engine has not listed its Inventory
// answers 503 and could not be asked; the answer says it cannot tell.
func TestNotListedCouldNotBeAsked(t *testing.T) {
	now := time.Now().UTC()
	api := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"))
	api.handle("podsweeper/agent-a", &anyPages{at: now, status503: true})
	x, err := api.cluster(5*time.Second).explainPod(context.Background(), "apps", "db", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "could not be asked") || !strings.Contains(out, "podsweeper cannot tell all it knows of this pod") {
		t.Fatalf("a 503 page:\n%s", out)
	}
}

// explain.md:59-60: "When a program could not be asked, or none was
// found, the answer says that it cannot tell what podsweeper knows of the
// pod, rather than that it knows nothing".
// A live pod (or one with an Event), and no program found (the programs'
// namespace given wrong with -n, say): the answer never says it cannot
// tell, as it does when one could not be asked.
func TestNoProgramFoundForALivePod(t *testing.T) {
	now := time.Now().UTC()
	api := newFakeCluster(t, workloadPod("apps", "web", "web-uid", "node-a"))
	x, err := api.cluster(5*time.Second).explainPod(context.Background(), "apps", "web", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "cannot tell") {
		t.Fatalf("no program found, and the answer does not say it cannot tell:\n%s", out)
	}
}

// A live pod by name: its node agent's PU is told as documented.
func TestLivePodByName(t *testing.T) {
	agent := &programPages{at: askedAt, pus: []k8s.PUStatus{idlePUAt(askedAt, firstUID, "apps/web")}}
	ctrl := &programPages{at: askedAt}
	api := agentAndController(t, agent, ctrl, workloadPod("apps", "web", firstUID, "node-a"))
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if !strings.Contains(out, "Pod apps/web (UID "+firstUID+") on node node-a: Running.") ||
		!strings.Contains(out, "PU "+firstUID+" of pod apps/web") || !strings.Contains(out, "5s ago: row 9") {
		t.Fatalf("not the live pod's answer:\n%s", out)
	}
}

// explain.md:62-65: the answer says it cannot tell "when a program of the
// pod's node was not asked (its pod ... ended (Failed) with none in its
// place ...), each named on a line `Not asked:`". Two releases of the node
// agent run on node-a (two policy engines, say); release "one"'s pod there
// has Failed and nothing of release "one" runs in its place. Release
// "two"'s pod, another program's pod of another release, is taken for its
// replacement: release one's is not named, and the answer says nothing holds
// a PU of the pod.
func TestFailedProgramOfAnotherReleaseNotNamed(t *testing.T) {
	one := runningProgram("podsweeper-node-agent", "podsweeper", "one-agent-a", "node-a")
	one.Labels["app.kubernetes.io/instance"] = "one"
	one.Status.Phase = corev1.PodFailed
	two := runningProgram("podsweeper-node-agent", "podsweeper", "two-agent-a", "node-a")
	two.Labels["app.kubernetes.io/instance"] = "two"
	api := newFakeCluster(t, one, two, workloadPod("apps", "web", firstUID, "node-a")).streamingAnswers()
	api.handle("podsweeper/two-agent-a", &programPages{at: askedAt})
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if !strings.Contains(out, "one-agent-a") {
		t.Errorf("release one's node agent on the pod's node has Failed, none of release one runs in its place, and no `Not asked:` line names it:\n%s", out)
	}
}

func TestLivePodPUToldThroughAPortForward(t *testing.T) {
	c := newFakeCluster(t, workloadPod("apps", "web", "U1", "node-a"),
		runningProgram("podsweeper-node-agent", "ps", "agent-a", "node-a")).closingAnswers().listingEventsWhole()
	c.handle("ps/agent-a", &programPages{at: askedAt, pus: []k8s.PUStatus{{PUID: "U1", Pod: "apps/web", State: "idle", Age: "1m"}}})
	x, err := c.inNamespace("").explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if !strings.Contains(out, "PU U1 of pod apps/web") {
		t.Fatalf("got:\n%s", out)
	}
}

// explain.md:63-66: a program of the pod's node that ended (Failed) with
// none in its place is named on a line "Not asked:".
func TestFailedAgentNamedNotAsked(t *testing.T) {
	failed := runningProgram("podsweeper-node-agent", "ps", "agent-a", "node-a")
	failed.Status.Phase = corev1.PodFailed
	c := newFakeCluster(t, workloadPod("apps", "web", "U1", "node-a"), failed,
		runningProgram("podsweeper-node-agent", "ps", "agent-b", "node-b")).closingAnswers().listingEventsWhole()
	c.handle("ps/agent-b", &programPages{at: askedAt})
	x, err := c.inNamespace("").explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	s := podText(t, x)
	if !strings.Contains(s, "Not asked: node-agent ps/agent-a on node node-a is Failed") || !strings.Contains(s, "cannot tell all") {
		t.Fatalf("got:\n%s", s)
	}
}

// explain.md:62-63: "When a program could not be asked, or none was found,
// the answer says that it cannot tell what podsweeper knows of the pod,
// rather than that it knows nothing". A status page that answers null (no
// list of PUs: adapters/k8s's page always writes a list) is taken as a
// program that holds nothing, and the answer says podsweeper knows
// nothing of the pod.
func TestNonsenseStatusPageKnowsNothing(t *testing.T) {
	c := newFakeCluster(t, runningProgram("podsweeper-node-agent", "ps", "agent-a", "node-a")).closingAnswers().listingEventsWhole()
	c.handle("ps/agent-a", rawStatus{body: "null"})
	x, err := c.inNamespace("").explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if strings.Contains(out, "knows nothing of this pod") {
		t.Fatalf("a status page that answered null, no list of PUs, is told as a program that holds none:\n%s", out)
	}
}

// explain.md:466-470: a port-forward the API server did not open (the kubelet unreachable) is "could not be asked",
// the others are asked all the same, and the answer cannot tell.
func TestPortForwardFailureCannotTell(t *testing.T) {
	c := clusterServing(t, map[string]http.Handler{"podsweeper/cc-0": statusPage(t, k8s.EngineRunning)},
		workloadPod("apps", "web", firstUID, "node-a"),
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning),
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-0", "node-b", corev1.PodRunning))
	x, err := c.explainPod(testContext(t), "apps", "web", "", "", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := podTextAndJSON(t, x)
	wantSays(t, "the text", txt, "node-agent podsweeper/agent-a (node node-a) could not be asked: port-forward to pod podsweeper/agent-a")
	wantSays(t, "the text", txt, "cluster-controller podsweeper/cc-0 holds no PU of this pod.")
	wantSays(t, "the text", txt, "podsweeper cannot tell all it knows of this pod: 1 of 2 programs could not be asked")
}

// The status page's entry of the same shape (a PU of pod "web", no namespace) is unreadable: the program could not be
// asked, and the answer cannot tell.
func TestUnreadablePUCannotTell(t *testing.T) {
	pu := idlePU(firstUID, "web")
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a": statusPage(t, k8s.EngineRunning, pu),
	},
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning))
	x, err := c.explainPod(testContext(t), "apps", "web", "", "", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := podTextAndJSON(t, x)
	wantSays(t, "the text", txt, "could not be asked")
	wantSays(t, "the text", txt, "podsweeper cannot tell")
}

// A live pod asked by name: its node's agent's PU is told.
func TestLivePodByNameThroughPortForward(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	c.addPod(*workloadPod("apps", "web", "u-web", "node-a"))
	c.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", statusAndReport([]k8s.PUStatus{recentPU("u-web", "apps/web")}, ""))
	code, out, errOut := c.run("explain", "pod", "apps/web").codeOutErr()
	if code != 0 || !strings.Contains(out, "PU u-web of pod apps/web") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// docs/operating/explain.md:67-69: a program whose engine has not listed its Inventory answers 503 and could
// not be asked; the answer says it cannot tell.
func TestProgramAnswering503CouldNotBeAsked(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	c.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "the deletion engine has not listed its Inventory yet", http.StatusServiceUnavailable)
	}))
	code, out, errOut := c.run("explain", "pod", "apps/gone").codeOutErr()
	if code != 0 || !strings.Contains(out, "could not be asked") || !strings.Contains(out, "cannot tell") || strings.Contains(out, "knows nothing") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestExplainPodCommandTellsALivePodsPU(t *testing.T) {
	a := newFakeAPI(t).spdyOnly().impersonating()
	a.addPod(*workloadPod("apps", "web", "uid-web-1", "node-a"))
	a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", &mapProgram{pus: []map[string]any{mapPU("uid-web-1", "apps/web", "idle")}})
	out, errs, code := a.run("explain", "pod", "apps/web").outErrCode()
	if code != 0 || !strings.Contains(out, "PU uid-web-1 of pod apps/web") {
		t.Fatalf("smoke failed: %d\n%s\n%s", code, out, errs)
	}
}

// A node agent that restarts (503) could not be asked: the answer says it
// cannot tell, never that podsweeper knows nothing.
func TestRestartingProgramIsCannotTell(t *testing.T) {
	now := time.Now().UTC()
	c, _ := clusterAndFake(t, map[string]http.Handler{
		"podsweeper/agent-a": rawPages{at: now, pages: map[string]rawAnswer{
			"/debug/podsweeper": {code: 503, body: "the deletion engine has not listed its Inventory yet"},
		}},
	}, 5*time.Second, runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"))
	x, err := c.explainPod(context.Background(), "apps", "gone", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if strings.Contains(out, "knows nothing") || !strings.Contains(out, "cannot tell") || !strings.Contains(out, "could not be asked") {
		t.Fatalf("got:\n%s", out)
	}
}

// A live pod, its PU held by the node agent of its node: the PU is told through the port-forward.
func TestLivePodPUHeldByItsNodeAgentTold(t *testing.T) {
	now := time.Now().UTC()
	agent := programPod("podsweeper-node-agent", "r", "podsweeper", "agent-a", "node-a", corev1.PodRunning)
	e := newFakeCluster(t, agent, workloadPod("apps", "web", "uid-web", "node-a")).closingAnswers().allowingReviews()
	e.handle("podsweeper/agent-a", &programPages{at: now, pus: []k8s.PUStatus{{PUID: "uid-web", Pod: "apps/web", State: "idle", Age: "1m"}}})
	x, err := e.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if !strings.Contains(out, "PU uid-web of pod apps/web") {
		t.Fatalf("the PU is not told:\n%s", out)
	}
}

// A live pod, its node agent asked through the port-forward: its PU is told with its last check's row.
func TestLivePodAskedThroughItsNodeAgent(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"), workloadPod("apps", "web", "uid-web", "node-a"))
	e.handle("podsweeper/agent-a", &pageFuncs{status: func() []byte {
		now := time.Now()
		return jsonBytes(t, []k8s.PUStatus{{PUID: "uid-web", Pod: "apps/web", State: "idle", Age: "4m", LastChecked: &now, LastRow: 9, Why: "same pod"}})
	}})
	x, err := e.c.explainPod(context.Background(), "apps", "web", "", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if !strings.Contains(out, "row 9") {
		t.Fatal("no PU")
	}
}

// explain.md:22: "-o json prints what the text is made from": the text
// rendered from the JSON, read back, is the text.
func TestJSONIsWhatTheTextIsMadeFrom(t *testing.T) {
	mirror := workloadPod("kube-system", "etcd-node-a", "uid-mirror", "node-a")
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "uid-kubelet"}
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a", "--dry-run"), podsweeperProgram("cni-gc", "kube-system", "cni-gc-a", "node-a"), mirror,
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "etcd.s1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "kube-system", Name: "etcd-node-a", UID: "uid-old"},
			Reason:         k8s.EventReasonDestroyed, Type: corev1.EventTypeNormal, ReportingController: "podsweeper",
			EventTime: metav1.NewMicroTime(time.Now().Add(-time.Hour)), Series: &corev1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(time.Now().Add(-time.Minute))},
			Message: "UIDChanged: destroyed PU uid-old"})
	e.handle("podsweeper/agent-a", &pageFuncs{
		status: func() []byte {
			now := time.Now()
			return jsonBytes(t, []k8s.PUStatus{{PUID: "uid-kubelet", Pod: "kube-system/etcd-node-a", State: "idle", Age: "1h", LastChecked: &now, LastRow: 9, Why: "same"},
				{PUID: "uid-old", Pod: "kube-system/etcd-node-a", State: "waiting for a retry", Age: "2h", LastChecked: &now, LastRow: 4, Why: "recreated", Attempts: 2, NextAttempt: &now}})
		},
		report: func() []byte {
			return jsonBytes(t, map[string]any{"total": 1, "reports": []k8s.WouldDestroy{{At: time.Now(), PUID: "uid-older", Pod: "kube-system/etcd-node-a", Reason: "UIDChanged", Row: 4, Why: "x", Dropped: true}}})
		},
	})
	e.handle("kube-system/cni-gc-a", &pageFuncs{})
	x, err := e.c.explainPod(context.Background(), "kube-system", "etcd-node-a", "", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var text, js, back bytes.Buffer
	_ = RenderPod(&text, x)
	_ = RenderPodJSON(&js, x)
	var y PodExplanation
	if err := json.Unmarshal(js.Bytes(), &y); err != nil {
		t.Fatal(err)
	}
	_ = RenderPod(&back, &y)
	t.Log(text.String())
	if text.String() != back.String() {
		t.Errorf("text from the JSON differs:\n%s\nvs\n%s", text.String(), back.String())
	}
}

// rawStatus answers its status page with body, as it is.
type rawStatus struct{ body string }

func (p rawStatus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != k8s.StatusPath {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write([]byte(p.body))
}
