package main

// The podsweeper Events the answers tell: of the pod, of an earlier pod of that name, and Event series.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// explain.md:66-67: "A dry run keeps its latest reports only: when none of
// the pod's is among them, the answer says it cannot tell, not that
// podsweeper knows nothing."
// The pod apps/db is gone; the cluster controller destroyed its PU (its
// Event); the node agent, in a dry run, reported its PU long ago and its
// report has since been pushed out of the kept ones (1500 made, 2 kept, of
// other pods). The answer must say it cannot tell what the dry run did.
func TestCutReportWithAnEvent(t *testing.T) {
	now := time.Now().UTC()
	api := newFakeCluster(t,
		podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a", "--dry-run"),
		podsweeperProgram("cluster-controller", "podsweeper", "cc-1", "node-b"),
		destroyEvent("apps", "db.1", "Pod", "apps", "db", "db-uid", now.Add(-30*time.Second),
			"PodGone: destroyed PU db-uid of pod apps/db (no sandbox recorded)"))
	others := []k8s.WouldDestroy{
		{At: now.Add(-5 * time.Second), PUID: "o1", Pod: "apps/o1", Reason: "PodGone", Row: 1, Why: "pod not found", Dropped: true},
		{At: now.Add(-4 * time.Second), PUID: "o2", Pod: "apps/o2", Reason: "PodGone", Row: 1, Why: "pod not found", Dropped: true},
	}
	api.handle("podsweeper/agent-a", &anyPages{at: now, report: map[string]any{"total": 1500, "reports": others}})
	api.handle("podsweeper/cc-1", &anyPages{at: now})
	c := api.cluster(5 * time.Second)
	x, err := c.explainPod(context.Background(), "apps", "db", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "cannot tell") {
		t.Fatalf("none of the pod's reports among the dry run's kept ones (1500 made, 2 kept), and the answer does not say it cannot tell:\n%s", out)
	}
}

// explain.md:10-11: an Event of an earlier pod of that name is marked so,
// in text and JSON.
func TestEarlierPodsEventMarked(t *testing.T) {
	now := time.Now().UTC()
	api := newFakeCluster(t,
		podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"),
		workloadPod("apps", "web", "new-uid", "node-a"),
		destroyEvent("apps", "web.1", "Pod", "apps", "web", "old-uid", now.Add(-time.Minute), "UIDChanged: destroyed PU old-uid of pod apps/web (no sandbox recorded)"))
	api.handle("podsweeper/agent-a", &anyPages{at: now})
	x, err := api.cluster(5*time.Second).explainPod(context.Background(), "apps", "web", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	var js bytes.Buffer
	_ = RenderPodJSON(&js, x)
	if !strings.Contains(out, "(of an earlier pod of that name, UID old-uid)") || !strings.Contains(js.String(), `"earlierUID": "old-uid"`) {
		t.Fatalf("not marked:\n%s\n%s", out, js.String())
	}
}

// explain.md:71-72: "An Event series is told at its first time, whose note
// it keeps, with its count and its last time."
func TestEventSeriesCountAndLastTime(t *testing.T) {
	now := time.Now().UTC()
	first := now.Add(-5 * time.Minute)
	e := destroyEvent("apps", "db.1", "Pod", "apps", "db", "db-uid", first, "PodGone: destroyed PU db-uid of pod apps/db (no sandbox recorded)")
	e.Count = 0
	e.Series = &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(now.Add(-time.Minute))}
	api := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"), e)
	api.handle("podsweeper/agent-a", &anyPages{at: now})
	x, err := api.cluster(5*time.Second).explainPod(context.Background(), "apps", "db", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "5m0s ago  Normal PUDestroyed") || !strings.Contains(out, "(3 times, the last 1m0s ago; the note is the first's)") {
		t.Fatalf("series:\n%s", out)
	}
}

// explain.md:74-75: "An Event series is told at its first time, whose note
// it keeps, with its count and its last time"; explain.md:11-12: an Event
// of an earlier pod of that name is marked so; Events regarding the node.
func TestEventSeriesEarlierAndNode(t *testing.T) {
	agent := &programPages{at: askedAt}
	ctrl := &programPages{at: askedAt}
	series := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "apps", Name: "web.s"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: types.UID(secondUID)},
		Reason:         k8s.EventReasonAbandoned, Type: "Warning", Message: "first note",
		EventTime:           metav1.NewMicroTime(askedAt.Add(-10 * time.Minute)),
		Series:              &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(askedAt.Add(-time.Minute))},
		ReportingController: "podsweeper",
	}
	node := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: "node-a.n"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-b", UID: "node-b"},
		Related:        &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: types.UID(firstUID)},
		Reason:         k8s.EventReasonDestroyed, Type: "Normal", Message: "PodGone: destroyed PU " + firstUID,
		EventTime:           metav1.NewMicroTime(askedAt.Add(-20 * time.Minute)),
		ReportingController: "podsweeper",
	}
	api := agentAndController(t, agent, ctrl, workloadPod("apps", "web", secondUID, "node-a"), series, node)
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if !strings.Contains(out, "10m0s ago  Warning PUAbandoned, regarding Pod/apps/web (3 times, the last 1m0s ago; the note is the first's): first note") ||
		!strings.Contains(out, "20m0s ago  Normal PUDestroyed, regarding Node/node-b (of an earlier pod of that name, UID "+firstUID+")") {
		t.Fatalf("events:\n%s", out)
	}
}

// explain.md:75-76: an Event series is told at its first time, with its
// count and its last time; explain.md:12-13 one of an earlier pod is marked.
func TestSeriesOfEarlierPodOnNode(t *testing.T) {
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "e1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-b", UID: "node-b"},
		Related:        &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: "U0"},
		Reason:         k8s.EventReasonDestroyed, Type: "Normal", Message: "PodGone: destroyed PU U0 of pod apps/web (first)",
		ReportingController: "podsweeper", EventTime: metav1.NewMicroTime(askedAt.Add(-10 * time.Minute)),
		Series: &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(askedAt.Add(-2 * time.Minute))}}
	c := newFakeCluster(t, workloadPod("apps", "web", "U1", "node-a"), ev, runningProgram("podsweeper-node-agent", "ps", "agent-a", "node-a")).closingAnswers().listingEventsWhole()
	c.handle("ps/agent-a", &programPages{at: askedAt})
	x, err := c.inNamespace("").explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	s := podText(t, x)
	if !strings.Contains(s, "10m0s ago  Normal PUDestroyed, regarding Node/node-b (of an earlier pod of that name, UID U0) (3 times, the last 2m0s ago; the note is the first's): PodGone: destroyed PU U0 of pod apps/web (first)") {
		t.Fatalf("got:\n%s", s)
	}
}

// explain.md:124-125 and 449-450: a read the user may not make is one line
// that says which permission is missing.
func TestForbiddenListEvents(t *testing.T) {
	c := newFakeCluster(t, workloadPod("apps", "web", "U1", "node-a")).closingAnswers().listingEventsWhole()
	c.fake.PrependReactor("list", "events", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", errors.New("RBAC: denied"))
	})
	c.fake.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		r := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = r.Spec.ResourceAttributes.Resource != "events"
		return true, r, nil
	})
	_, err := c.inNamespace("").explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err == nil || !strings.HasPrefix(err.Error(), "forbidden: you may not list events in namespace apps: the ClusterRole <fullname>-explain") {
		t.Fatalf("got %v", err)
	}
}

// docs/operating/explain.md:12-13 and :82: an Event of an earlier pod of that name is marked so; an Event series
// is told at its first time with its count and its last time; a gone pod's node agent Event regards the Node.
func TestEventsEarlierPodAndSeries(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	c.addPod(*workloadPod("apps", "web", "u-new", "node-b"))
	c.addProgram("podsweeper-node-agent", "podsweeper", "agent-b", "node-b", statusAndReport([]k8s.PUStatus{}, ""))
	now := time.Now()
	c.addEvent(corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "e1"}, Reason: k8s.EventReasonDestroyed, Type: "Normal",
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-a"},
		Related:        &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: "u-old"},
		EventTime:      metav1.NewMicroTime(now.Add(-120 * time.Second)), ReportingController: "podsweeper",
		Message: "PodGone: destroyed PU u-old of pod apps/web (no sandbox recorded)"})
	c.addEvent(corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "e2"}, Reason: k8s.EventReasonDestroyed, Type: "Normal",
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: "u-new"},
		EventTime:      metav1.NewMicroTime(now.Add(-60 * time.Second)), ReportingController: "podsweeper",
		Series:  &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(now.Add(-10 * time.Second))},
		Message: "SandboxChanged: destroyed PU u-new of pod apps/web (sandbox s1)"})
	code, out, errOut := c.run("explain", "pod", "apps/web").codeOutErr()
	if code != 0 || !strings.Contains(out, "regarding Node/node-a (of an earlier pod of that name, UID u-old): PodGone") ||
		!strings.Contains(out, "1m0s ago  Normal PUDestroyed, regarding Pod/apps/web (3 times, the last 10s ago; the note is the first's): SandboxChanged") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// docs/operating/explain.md:81-82: "An Event series is told at its first
// time, whose note it keeps, with its count and its last time" (an
// events.k8s.io Event as core/v1 reads it: eventTime, series).
func TestEventSeriesFirstTime(t *testing.T) {
	a := newFakeAPI(t).spdyOnly().impersonating()
	now := time.Now()
	a.events = []corev1.Event{{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "e1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: "uid-web-1"},
		Reason:         "PUDestroyed", Type: "Normal", Message: "SandboxChanged: destroyed PU uid-web-1 of pod apps/web (sandbox s1)",
		EventTime: metav1.NewMicroTime(now.Add(-10 * time.Minute)), ReportingController: "podsweeper",
		Series: &corev1.EventSeries{Count: 4, LastObservedTime: metav1.NewMicroTime(now.Add(-2 * time.Minute))}}}
	a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", &mapProgram{})
	out, errs, code := a.run("explain", "pod", "apps/web").outErrCode()
	if code != 0 || !strings.Contains(out, "10m0s ago  Normal PUDestroyed, regarding Pod/apps/web (4 times, the last 2m0s ago; the note is the first's): SandboxChanged") {
		t.Errorf("exit %d\n%s\n%s", code, out, errs)
	}
}

// An Event of an earlier pod of that name (PodGone, regarding node-b, the
// earlier pod related) is marked so, in text and in JSON, beside the pod of
// that name now on node-a.
func TestEarlierPodsNodeEventMarked(t *testing.T) {
	now := time.Now().UTC()
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "node-b.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-b", UID: "node-b"},
		Related:        &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: types.UID("old-uid")},
		Reason:         "PUDestroyed", Type: "Normal", Message: "PodGone: destroyed PU old-uid of pod apps/web (no sandbox recorded)",
		EventTime: metav1.NewMicroTime(now.Add(-20 * time.Second)), ReportingController: "podsweeper"}
	c, _ := clusterAndFake(t, map[string]http.Handler{
		"podsweeper/agent-a": rawPages{at: now, pages: map[string]rawAnswer{"/debug/podsweeper": {code: 200, body: `[]`}}},
	}, 5*time.Second, runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"), webPod("node-a"), ev)
	x, err := c.explainPod(context.Background(), "apps", "web", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	var js bytes.Buffer
	_ = RenderPodJSON(&js, x)
	if !strings.Contains(out, "(of an earlier pod of that name, UID old-uid)") || !strings.Contains(js.String(), `"earlierUID": "old-uid"`) {
		t.Fatalf("got:\n%s\n%s", out, js.String())
	}
}

// explain.md:8-9: "a PU is in the answer until it is destroyed, and the
// destroy's Event after"; explain.md:264 "knows nothing" is for a pod of
// which nothing remains. The Events are read before the programs are asked:
// a PU destroyed (its Event posted) between the two reads is in neither.
func TestDestroyBetweenEventsAndPrograms(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"))
	destroyedAt := time.Now()
	e.handle("podsweeper/agent-a", &pageFuncs{status: func() []byte {
		// The destroy happened just before the program answers: its Event is in the API server.
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "node-a.destroy1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-a"},
			Related:        &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "cache", UID: "uid-cache"},
			Reason:         k8s.EventReasonDestroyed, Type: corev1.EventTypeNormal, ReportingController: "podsweeper",
			EventTime: metav1.NewMicroTime(destroyedAt),
			Message:   "PodGone: destroyed PU uid-cache of pod apps/cache (no sandbox recorded)"}
		if _, err := e.fake.CoreV1().Events("default").Create(context.Background(), ev, metav1.CreateOptions{}); err != nil {
			t.Error(err)
		}
		return []byte("[]")
	}})
	x, err := e.c.explainPod(context.Background(), "apps", "cache", "", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if strings.Contains(out, "podsweeper knows nothing of this pod") || !strings.Contains(out, "PUDestroyed") {
		t.Errorf("the PU of apps/cache was destroyed and its PUDestroyed Event was in the API server when the program answered; the answer has neither the PU nor the Event, and says podsweeper knows nothing of the pod")
	}
}

// explain.md:7 ("then the pod's podsweeper Events") with 43-45: "For a live
// pod, only its node's programs are asked: the PU of an earlier pod of that
// name on another node ... is not shown". That earlier pod's destroy Event,
// on the other node, is shown as this pod's, with nothing to say whose.
func TestLivePodEventsOfEarlierPodElsewhere(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-b", "node-b"), podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"),
		workloadPod("apps", "web", "uid-web-B", "node-b"),
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "node-a.abandon1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-a"},
			Related:        &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: "uid-web-A"},
			Reason:         k8s.EventReasonAbandoned, Type: corev1.EventTypeWarning, ReportingController: "podsweeper",
			EventTime: metav1.NewMicroTime(time.Now().Add(-time.Minute)),
			Message:   "PodGone: gave up destroying PU uid-web-A of pod apps/web (no sandbox recorded) after 12 calls; the policy engine may still hold it: boom"})
	e.handle("podsweeper/agent-b", &pageFuncs{status: func() []byte {
		now := time.Now()
		return jsonBytes(t, []k8s.PUStatus{{PUID: "uid-web-B", Pod: "apps/web", State: "idle", Age: "1m", LastChecked: &now, LastRow: 9, Why: "same pod, same sandbox"}})
	}})
	e.handle("podsweeper/agent-a", &pageFuncs{})
	x, err := e.c.explainPod(context.Background(), "apps", "web", "", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if strings.Contains(out, "PUAbandoned") && !strings.Contains(out, "earlier pod") {
		t.Errorf("the live pod apps/web (UID uid-web-B, node-b) is told a PUAbandoned Event of another pod (UID uid-web-A) on node-a, as its own")
	}
}

// explain.md:237-239: NAMESPACE/NAME with --uid of an earlier pod: the node
// the Events name is asked, not the node of the pod of that name now.
func TestNameAndEarlierUIDAsksEventsNode(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"), podsweeperProgram("node-agent", "podsweeper", "agent-b", "node-b"),
		workloadPod("apps", "web", "uid-B", "node-b"),
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "node-a.abandon1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-a"},
			Related:        &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: "uid-A"},
			Reason:         k8s.EventReasonAbandoned, Type: corev1.EventTypeWarning, ReportingController: "podsweeper",
			EventTime: metav1.NewMicroTime(time.Now().Add(-time.Minute)), Message: "PodGone: gave up destroying PU uid-A"})
	asked := map[string]bool{}
	for _, n := range []string{"agent-a", "agent-b"} {
		n := n
		e.handle("podsweeper/"+n, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			asked[n] = true
			(&pageFuncs{}).ServeHTTP(w, r)
		}))
	}
	x, err := e.c.explainPod(context.Background(), "apps", "web", "uid-A", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	t.Log(b.String())
	if !asked["agent-a"] || asked["agent-b"] || !strings.Contains(b.String(), "now has UID uid-B") {
		t.Errorf("asked %v", asked)
	}
}

// explain.md:62-63: an Event series is told at its first time, with its note, its count and its last time.
func TestEventSeriesOfALivePod(t *testing.T) {
	first := time.Now().Add(-5 * time.Minute)
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"), workloadPod("apps", "web", "uid-web", "node-a"),
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web.s1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: "uid-web"},
			Reason:         k8s.EventReasonDestroyed, Type: corev1.EventTypeNormal, ReportingController: "podsweeper",
			EventTime: metav1.NewMicroTime(first), Series: &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(first.Add(2 * time.Minute))},
			Message: "SandboxChanged: destroyed PU uid-web of pod apps/web (sandbox aaa)"})
	e.handle("podsweeper/agent-a", &pageFuncs{})
	now := time.Now()
	x, err := e.c.explainPod(context.Background(), "apps", "web", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if !strings.Contains(out, "5m0s ago  Normal PUDestroyed, regarding Pod/apps/web (3 times, the last 3m0s ago; the note is the first's): SandboxChanged") {
		t.Error("series not told")
	}
}

// explain.md: "Events are told from your clock (as kubectl get events tells them): a step of the program's clock
// since, or a skew between it and yours, moves them by as much, beside the pages' times". With every clock agreeing,
// a PU checked and its Event written at the same moment are told as old as each other, though the program took 3 s
// to answer: the Events are read after the programs, and told from then.
func TestAnEventIsToldAsOldAsAPageTimeOfTheSameMoment(t *testing.T) {
	now := time.Now().UTC()
	at := now.Add(-10 * time.Second)
	api := newFakeCluster(t,
		podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"),
		destroyEvent("apps", "db.1", "Pod", "apps", "db", "db-uid", at, "PodGone: destroyed PU old of pod apps/db (no sandbox recorded)"))
	slow := func(path string) { // the way to the program is slow: its page is written 3 s on
		if path == k8s.StatusPath {
			time.Sleep(3 * time.Second)
		}
	}
	api.handle("podsweeper/agent-a", &programPages{hook: slow, pus: []k8s.PUStatus{{PUID: "db-uid", Pod: "apps/db",
		State: "idle", Age: "1m0s", LastChecked: &at, LastRow: 5, Why: "same pod"}}})
	x, err := api.cluster(10*time.Second).explainPod(context.Background(), "apps", "db", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	check := regexp.MustCompile(`last check +(\S+) ago`).FindStringSubmatch(out)
	event := regexp.MustCompile(`\n +(\S+) ago +Normal PUDestroyed`).FindStringSubmatch(out)
	if check == nil || event == nil || check[1] != event[1] {
		t.Fatalf("the PU checked and the Event written at the same moment are told as of different ages:\n%s", out)
	}
	// explain.md: "-o json prints what the text is made from": when the Events were read too.
	var js bytes.Buffer
	require.NoError(t, RenderPodJSON(&js, x))
	var back PodExplanation
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	require.NotNil(t, back.EventsAt, "eventsAt in %s", js.String())
	assert.GreaterOrEqual(t, back.EventsAt.Sub(now), 3*time.Second, "read after the program that took 3 s")
}
