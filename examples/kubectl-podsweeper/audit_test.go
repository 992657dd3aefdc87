package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

func jsonBytes(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Sanity of the harness: a live pod, its node agent asked through the fake port-forward.
func TestAuditHoldsHarnessLivePod(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"), workloadPod("apps", "web", "uid-web", "node-a"))
	e.handle("podsweeper/agent-a", &pageFuncs{status: func() []byte {
		now := time.Now()
		return jsonBytes(t, []k8s.PUStatus{{PUID: "uid-web", Pod: "apps/web", State: "idle", Age: "4m", LastChecked: &now, LastRow: 9, Why: "same pod"}})
	}})
	x, err := e.c.explainPod(context.Background(), "apps", "web", "", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	t.Log(b.String())
	if !strings.Contains(b.String(), "row 9") {
		t.Fatal("no PU")
	}
}

// explain.md:68-70: a program's times are told from when it answered, not
// later: cni-gc's address page answered, then its status page was slow.
func TestAuditIPTimesFromWhenItAnswered(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("cni-gc", "kube-system", "cni-gc-a", "node-a"), workloadPod("apps", "web", "uid-web", "node-a"))
	var answered time.Time
	e.handle("kube-system/cni-gc-a", &pageFuncs{
		delay: map[string]time.Duration{"/debug/podsweeper": 3 * time.Second},
		address: func(ip string) []byte {
			answered = time.Now()
			return jsonBytes(t, AddressStatus{IP: ip, Attachments: []AttachmentStatus{{Network: "podnet", ContainerID: "3a9f0c1b2d4e5", IfName: "eth0",
				PodNamespace: "apps", PodName: "web", PodUID: "uid-web", Written: answered.Add(-time.Minute),
				Decision: &FreeDecision{At: answered.Add(-8 * time.Second), Reason: "PodGone", Row: 1, Why: "the runtime lists it ready", Verdict: "keep"}}}})
		},
	})
	x, err := e.c.explainIP(context.Background(), "10.88.0.4", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderIP(&b, x)
	out := b.String()
	t.Logf("address answered at %s, told at %s:\n%s", answered.Format("15:04:05.000"), x.At.Format("15:04:05.000"), out)
	if !strings.Contains(out, "added 1m0s ago") || !strings.Contains(out, "freeing     8s ago") {
		t.Errorf("cni-gc answered that the attachment was added 1m0s and decided 8s before its answer; the plugin tells them from %v later", x.At.Sub(answered).Round(time.Millisecond))
	}
}

// explain.md:6-7 ("what a dry run would do") and 66-67: the status page is
// read, then the dry run's report; the PU was reported and dropped (its pod
// gone for good) between the two reads. The program's own latest word, read
// in the same question, is that its dry run would have destroyed it.
func TestAuditDryRunVerdictAcrossReads(t *testing.T) {
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
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	out := b.String()
	t.Log(out)
	if strings.Contains(out, "would keep it") || !strings.Contains(out, "PodGone") {
		t.Errorf("the program's dry-run report (read in this same question, after its status page) says it would have destroyed PU uid-web (PodGone) and no longer holds it; the plugin says its dry run would keep it and never mentions PodGone")
	}
}

// explain.md:8-9: "a PU is in the answer until it is destroyed, and the
// destroy's Event after"; explain.md:264 "knows nothing" is for a pod of
// which nothing remains. The Events are read before the programs are asked:
// a PU destroyed (its Event posted) between the two reads is in neither.
func TestAuditDestroyBetweenEventsAndPrograms(t *testing.T) {
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
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	out := b.String()
	t.Log(out)
	if strings.Contains(out, "podsweeper knows nothing of this pod") || !strings.Contains(out, "PUDestroyed") {
		t.Errorf("the PU of apps/cache was destroyed and its PUDestroyed Event was in the API server when the program answered; the answer has neither the PU nor the Event, and says podsweeper knows nothing of the pod")
	}
}

// explain.md:68-70: times told from when the program answered: the dry
// run's report page answered 3s after the status page, and its report's
// time is told from the status page's answer.
func TestAuditReportTimesFromWhenItAnswered(t *testing.T) {
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
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	out := b.String()
	t.Log(out)
	if !strings.Contains(out, "(1m30s ago)") {
		t.Errorf("the report page answered that the report was made 1m30s before; the plugin tells it from the status page's answer, 3s earlier")
	}
}

// explain.md:275-276: "The plugin adds the pod each attachment names as the
// API server has it now, and cni-gc's PU of it". An attachment cni-gc never
// touches (its file name is not libcni's), of a pod that is gone, whose PU
// cni-gc's engine holds: the text tells neither the pod now nor the PU,
// though the plugin gathered both (its JSON has them).
func TestAuditIPNeverTouchedAttachmentPod(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("cni-gc", "kube-system", "cni-gc-a", "node-a"))
	e.handle("kube-system/cni-gc-a", &pageFuncs{
		status: func() []byte {
			checked := time.Now().Add(-8 * time.Second)
			return jsonBytes(t, []k8s.PUStatus{{PUID: "uid-web", Pod: "apps/web", SandboxID: "3a9f0c1b2d4e5", State: "waiting for a retry", Age: "5m",
				LastChecked: &checked, LastRow: 1, Why: "pod not found", Attempts: 4, LastError: "cni: entry cannot be used for a DEL"}})
		},
		address: func(ip string) []byte {
			return jsonBytes(t, AddressStatus{IP: ip, Attachments: []AttachmentStatus{{Network: "podnet", ContainerID: "3a9f0c1b2d4e5", IfName: "eth0",
				PodNamespace: "apps", PodName: "web", PodUID: "uid-web", Written: time.Now().Add(-5 * time.Minute), File: "podnet-renamed",
				NeverTouched: "its file name is not libcni's for its network, podnet-3a9f0c1b2d4e5-eth0"}}})
		},
	})
	x, err := e.c.explainIP(context.Background(), "10.88.0.4", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var b, j bytes.Buffer
	_ = RenderIP(&b, x)
	_ = RenderIPJSON(&j, x)
	out := b.String()
	t.Log(out)
	if !strings.Contains(j.String(), `"puID": "uid-web"`) {
		t.Fatalf("the plugin did not gather the PU: %s", j.String())
	}
	if !strings.Contains(out, "gone") || !strings.Contains(out, "waiting for a retry") {
		t.Errorf("the attachment names pod apps/web (UID uid-web): the API server has no such pod, and cni-gc holds its PU waiting for a retry (both in the JSON); the text says neither")
	}
}

// explain.md:7 ("then the pod's podsweeper Events") with 43-45: "For a live
// pod, only its node's programs are asked: the PU of an earlier pod of that
// name on another node ... is not shown". That earlier pod's destroy Event,
// on the other node, is shown as this pod's, with nothing to say whose.
func TestAuditLivePodEventsOfEarlierPodElsewhere(t *testing.T) {
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
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	out := b.String()
	t.Log(out)
	if strings.Contains(out, "PUAbandoned") && !strings.Contains(out, "earlier pod") {
		t.Errorf("the live pod apps/web (UID uid-web-B, node-b) is told a PUAbandoned Event of another pod (UID uid-web-A) on node-a, as its own")
	}
}

// explain.md:22-23, 63-65: --timeout bounds each program's question whole; a
// program not answered by then could not be asked, and the others are asked.
func TestAuditHoldsTimeoutBoundsSlowPage(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"), podsweeperProgram("cluster-controller", "podsweeper", "cc-1", ""))
	e.c.timeout = time.Second
	e.handle("podsweeper/agent-a", &pageFuncs{delay: map[string]time.Duration{"/debug/podsweeper": 5 * time.Second}})
	e.handle("podsweeper/cc-1", &pageFuncs{})
	start := time.Now()
	x, err := e.c.explainPod(context.Background(), "apps", "web", "", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("took %v", d)
	}
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	t.Log(b.String())
	if !strings.Contains(b.String(), "agent-a (node node-a) could not be asked") || !strings.Contains(b.String(), "cc-1 holds no PU") ||
		!strings.Contains(b.String(), "cannot tell all") {
		t.Error("slow program not told as could not be asked")
	}
}

// A status page cut short (its Content-Length not reached): could not be asked, not "holds no PU".
func TestAuditHoldsCutPage(t *testing.T) {
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
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	t.Log(b.String())
	if !strings.Contains(b.String(), "could not be asked") || strings.Contains(b.String(), "knows nothing") {
		t.Error("cut page not told as could not be asked")
	}
}

// explain.md:68-70: times told from when the program answered. The
// program's node clock runs 1 minute ahead of the operator's: the program
// answered that it checked the PU 5s before and retries it in 6s.
func TestAuditTimesAcrossClocks(t *testing.T) {
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
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	out := b.String()
	t.Log(out)
	if !strings.Contains(out, "last check    5s ago") || !strings.Contains(out, "next in 6s") {
		t.Errorf("the program answered: checked 5s before its answer, next attempt 6s after; the plugin tells them on its own clock")
	}
}

func answerReviews(e *fakeCluster, allowed func(a *authorizationv1.ResourceAttributes) bool) {
	e.fake.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = allowed(r.Spec.ResourceAttributes)
		return true, r, nil
	})
}

// explain.md:421-425: the kubelet's refusal of the API server (403 though the
// user may port-forward) makes the program "could not be asked"; the others
// are asked all the same.
func TestAuditHoldsKubeletRefusalIsCouldNotBeAsked(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"), podsweeperProgram("cluster-controller", "podsweeper", "cc-1", ""))
	answerReviews(e, func(*authorizationv1.ResourceAttributes) bool { return true })
	e.handle("podsweeper/agent-a", &pageFuncs{})
	e.handle("podsweeper/cc-1", &pageFuncs{})
	e.refuse["podsweeper/agent-a"] = forbiddenStatus("Forbidden (user=kube-apiserver-kubelet-client, verb=create, resource=nodes, subresource=proxy)")
	x, err := e.c.explainPod(context.Background(), "apps", "web", "", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	t.Log(b.String())
	if !strings.Contains(b.String(), "agent-a (node node-a) could not be asked: port-forward to pod podsweeper/agent-a") || !strings.Contains(b.String(), "cc-1 holds no PU") {
		t.Error("kubelet refusal not told as could not be asked")
	}
}

// explain.md:109-110, 426-431: the user's own refusal: one line, forbidden, which permission.
func TestAuditHoldsUserRefusalIsForbidden(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"))
	answerReviews(e, func(a *authorizationv1.ResourceAttributes) bool { return a.Subresource != "portforward" })
	e.handle("podsweeper/agent-a", &pageFuncs{})
	e.refuse["podsweeper/agent-a"] = forbiddenStatus(`pods "agent-a" is forbidden: User "bob" cannot create resource "pods/portforward" in API group "" in the namespace "podsweeper"`)
	_, err := e.c.explainPod(context.Background(), "apps", "web", "", "node-a", time.Now())
	t.Log(err)
	if err == nil || !strings.HasPrefix(err.Error(), "forbidden: you may not create pods/portforward in namespace podsweeper") || strings.Contains(err.Error(), "\n") {
		t.Errorf("got %v", err)
	}
}

// explain.md:55-56 (it says that it cannot tell what podsweeper knows of the
// pod, rather than that it knows nothing) and 152-155 (a deleted pod under a
// dry run: "its report keeps what it would have done"). The dry run's page
// says it reported 1500 and keeps the latest 1000: what it reported of a pod
// gone for good may be among those it no longer keeps.
func TestAuditKnowsNothingAfterReportsCut(t *testing.T) {
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
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	out := b.String()
	t.Log(out)
	if strings.Contains(out, "podsweeper knows nothing of this pod") {
		t.Errorf("the dry run's report page says it made 1500 reports and keeps the latest 1000; the plugin says podsweeper knows nothing of apps/web, and not that its earlier reports are not kept")
	}
}

// explain.md:60-62: a static pod is known by its kubelet's UID too; --uid
// alone names it from its PU and finds its mirror pod.
func TestAuditHoldsStaticPodByKubeletUIDAlone(t *testing.T) {
	mirror := workloadPod("kube-system", "etcd-node-a", "uid-mirror", "node-a")
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "uid-kubelet"}
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"), mirror)
	e.handle("podsweeper/agent-a", &pageFuncs{status: func() []byte {
		now := time.Now()
		return jsonBytes(t, []k8s.PUStatus{{PUID: "uid-kubelet", Pod: "kube-system/etcd-node-a", State: "idle", Age: "1h", LastChecked: &now, LastRow: 9, Why: "same pod, same sandbox"}})
	}})
	x, err := e.c.explainPod(context.Background(), "", "", "uid-kubelet", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	t.Log(b.String())
	if x.Pod == nil || !strings.Contains(b.String(), "Pod kube-system/etcd-node-a (UID uid-mirror) on node node-a: Running.") || strings.Contains(b.String(), "earlier pod") {
		t.Error("static pod by its kubelet UID not found")
	}
}

// explain.md:237-239: NAMESPACE/NAME with --uid of an earlier pod: the node
// the Events name is asked, not the node of the pod of that name now.
func TestAuditHoldsNameAndEarlierUIDAsksEventsNode(t *testing.T) {
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
func TestAuditHoldsEventSeries(t *testing.T) {
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
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	t.Log(b.String())
	if !strings.Contains(b.String(), "5m0s ago  Normal PUDestroyed, regarding Pod/apps/web (3 times, the last 3m0s ago; the note is the first's): SandboxChanged") {
		t.Error("series not told")
	}
}

// explain.md:47-49: a gone pod asked by name alone: every node's programs are asked, whatever node its Events name.
func TestAuditHoldsGoneByNameAsksEveryNode(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"), podsweeperProgram("node-agent", "podsweeper", "agent-b", "node-b"),
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "node-a.d1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-a"},
			Related:        &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: "uid-A"},
			Reason:         k8s.EventReasonDestroyed, Type: corev1.EventTypeNormal, ReportingController: "podsweeper",
			EventTime: metav1.NewMicroTime(time.Now().Add(-time.Minute)), Message: "PodGone: destroyed PU uid-A"})
	e.handle("podsweeper/agent-a", &pageFuncs{})
	e.handle("podsweeper/agent-b", &pageFuncs{status: func() []byte {
		now := time.Now()
		return jsonBytes(t, []k8s.PUStatus{{PUID: "uid-B", Pod: "apps/web", State: "waiting for a retry", Age: "1m", LastChecked: &now, LastRow: 1, Why: "pod not found", Attempts: 1}})
	}})
	x, err := e.c.explainPod(context.Background(), "apps", "web", "", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	t.Log(b.String())
	if !strings.Contains(b.String(), "PU uid-B of pod apps/web") {
		t.Error("PU on node-b not found")
	}
}

// explain.md:65-66 ("explain ip asks each cni-gc of the node in turn until
// one answers for that address") and 269-275: cni-gc answered what holds the
// address; only its engine's status page (the PUs, which the plugin adds)
// failed. The plugin drops the answer and says cni-gc could not be asked.
func TestAuditIPAnswerDroppedForStatusPage(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("cni-gc", "kube-system", "cni-gc-a", "node-a"), workloadPod("apps", "web", "uid-web", "node-a"))
	e.handle("kube-system/cni-gc-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case addressPath:
			_, _ = w.Write(jsonBytes(t, AddressStatus{IP: r.URL.Query().Get("ip"), Attachments: []AttachmentStatus{{Network: "podnet", ContainerID: "3a9f0c1b2d4e5",
				IfName: "eth0", PodNamespace: "apps", PodName: "web", PodUID: "uid-web", Written: time.Now().Add(-time.Minute)}}}))
		case "/debug/podsweeper":
			http.Error(w, "no deletion engine", http.StatusServiceUnavailable)
		default:
			http.NotFound(w, r)
		}
	}))
	x, err := e.c.explainIP(context.Background(), "10.88.0.4", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderIP(&b, x)
	out := b.String()
	t.Log(out)
	if !strings.Contains(out, "attachment") {
		t.Errorf("cni-gc answered that pod apps/web's attachment holds 10.88.0.4; the plugin drops that answer and says cni-gc could not be asked")
	}
}

// explain.md:68-70: "a program that answers late ... is not told as older
// than it is". The node agent's status page is slow to come through (a big
// page over the port-forward): its answer, as of when it was made, says the
// PU was checked 5s before and is retried in 6s.
func TestAuditSlowStatusPageToldOlder(t *testing.T) {
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
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	out := b.String()
	t.Log(out)
	if !strings.Contains(out, "last check    5s ago") || !strings.Contains(out, "next in 6s") {
		t.Errorf("the program's answer says checked 5s before it, next attempt 6s after it; the plugin tells them from when the page's last byte came through")
	}
}

// A status page beyond what the plugin reads (64 MiB): could not be asked, never "holds no PU".
func TestAuditHoldsHugePage(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("cluster-controller", "podsweeper", "cc-1", ""))
	big := bytes.Repeat([]byte(" "), 65<<20)
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
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	t.Log(b.String())
	if !strings.Contains(b.String(), "could not be asked") {
		t.Error("huge page not told")
	}
}

// explain.md:418-420: an older program in a dry run, whose image serves no report page: could not be asked.
func TestAuditHoldsOlderDryRunProgram(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a", "--dry-run"))
	e.handle("podsweeper/agent-a", &pageFuncs{})
	x, err := e.c.explainPod(context.Background(), "apps", "web", "", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	t.Log(b.String())
	if !strings.Contains(b.String(), "could not be asked") || strings.Contains(b.String(), "knows nothing") {
		t.Error("older dry-run program not told")
	}
}

// explain.md:22: "-o json prints what the text is made from": the text
// rendered from the JSON, read back, is the text.
func TestAuditHoldsJSONIsWhatTheTextIsMadeFrom(t *testing.T) {
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

// explain.md:63-64: --timeout must be above 0 (exit 2), checked before anything is asked.
func TestAuditHoldsTimeoutAboveZero(t *testing.T) {
	for _, args := range [][]string{{"--timeout=0", "report"}, {"--timeout=-1s", "explain", "pod", "a/b"}, {"explain", "ip", "10.0.0.1"}, {"-o", "yaml", "report"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), append([]string{"--kubeconfig=/nonexistent"}, args...), &out, &errb); code != 2 {
			t.Errorf("%v: exit %d: %s", args, code, errb.String())
		}
	}
}

// explain.md:68-70, for report's WHEN: the report page answered 3s after the
// status page; its report's time is told from the status page's answer.
func TestAuditReportWhenFromWhenItAnswered(t *testing.T) {
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

// explain.md:45-51: --uid alone of a gone pod: named from its Events, its
// node read from them, that node's programs asked, and the pod of that name
// now (another) noted.
func TestAuditHoldsUIDAloneGonePod(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"), podsweeperProgram("node-agent", "podsweeper", "agent-b", "node-b"),
		workloadPod("apps", "web", "uid-B", "node-b"),
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "node-a.d1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-a"},
			Related:        &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: "uid-A"},
			Reason:         k8s.EventReasonDestroyed, Type: corev1.EventTypeNormal, ReportingController: "podsweeper",
			EventTime: metav1.NewMicroTime(time.Now().Add(-time.Minute)), Message: "PodGone: destroyed PU uid-A of pod apps/web"})
	asked := map[string]bool{}
	for _, n := range []string{"agent-a", "agent-b"} {
		n := n
		e.handle("podsweeper/"+n, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			asked[n] = true
			(&pageFuncs{}).ServeHTTP(w, r)
		}))
	}
	x, err := e.c.explainPod(context.Background(), "", "", "uid-A", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	t.Log(b.String())
	if !asked["agent-a"] || asked["agent-b"] || !strings.Contains(b.String(), "Pod with UID uid-A (apps/web): no pod of that name has that UID") ||
		!strings.Contains(b.String(), "now has UID uid-B") || !strings.Contains(b.String(), "PUDestroyed") {
		t.Errorf("asked %v", asked)
	}
}

// explain.md:269-276: several attachments hold the address: the live pod's on
// two networks, and a stale one of an earlier pod of that name. Each is told
// with its pod now and cni-gc's PU of it.
func TestAuditHoldsIPSeveralAttachments(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("cni-gc", "kube-system", "cni-gc-a", "node-a"), workloadPod("apps", "web", "uid-B", "node-a"))
	e.handle("kube-system/cni-gc-a", &pageFuncs{
		status: func() []byte {
			now := time.Now()
			return jsonBytes(t, []k8s.PUStatus{{PUID: "uid-A", Pod: "apps/web", State: "waiting for a retry", Age: "9m", LastChecked: &now, LastRow: 4, Why: "pod recreated with another UID", Attempts: 2},
				{PUID: "uid-B", Pod: "apps/web", State: "idle", Age: "1m", LastChecked: &now, LastRow: 9, Why: "same pod, same sandbox"}})
		},
		address: func(ip string) []byte {
			w := time.Now().Add(-time.Minute)
			return jsonBytes(t, AddressStatus{IP: ip, Attachments: []AttachmentStatus{
				{Network: "podnet", ContainerID: "bbbbbbbbbbbbb", IfName: "eth0", PodNamespace: "apps", PodName: "web", PodUID: "uid-B", Written: w},
				{Network: "othernet", ContainerID: "bbbbbbbbbbbbb", IfName: "net1", PodNamespace: "apps", PodName: "web", PodUID: "uid-B", Written: w},
				{Network: "podnet", ContainerID: "aaaaaaaaaaaaa", IfName: "eth0", PodNamespace: "apps", PodName: "web", PodUID: "uid-A", Written: w.Add(-9 * time.Minute)},
			}})
		},
	})
	x, err := e.c.explainIP(context.Background(), "10.88.0.4", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderIP(&b, x)
	out := b.String()
	t.Log(out)
	if strings.Count(out, "live on node node-a: Running.") != 2 || !strings.Contains(out, "gone: the pod of that name now is another (UID uid-B).") ||
		strings.Count(out, "row 9 of the decision table") != 2 || strings.Count(out, "row 4 of the decision table") != 1 {
		t.Error("attachments not told each with its pod and PU")
	}
}

// explain.md:63-65: --timeout bounds each program's question whole, the
// opening of the port-forward's streams included: a kubelet that never
// acknowledges the streams.
func TestAuditHoldsTimeoutBoundsStreamOpening(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"), podsweeperProgram("cluster-controller", "podsweeper", "cc-1", ""))
	e.c.timeout = time.Second
	e.handle("podsweeper/agent-a", &pageFuncs{})
	e.handle("podsweeper/cc-1", &pageFuncs{})
	e.hang["podsweeper/agent-a"] = true
	start := time.Now()
	x, err := e.c.explainPod(context.Background(), "apps", "web", "", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	t.Log(d, b.String())
	if d > 5*time.Second || !strings.Contains(b.String(), "agent-a (node node-a) could not be asked") || !strings.Contains(b.String(), "cc-1 holds no PU") {
		t.Error("stream opening not bounded")
	}
}

// explain.md:434-436: with --as, a user who may not be that user is told so, in one line.
func TestAuditHoldsImpersonationRefused(t *testing.T) {
	e := newFakeCluster(t)
	e.c.config.Impersonate.UserName = "bob"
	e.fake.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		st := forbiddenStatus(`users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`)
		st.Details = &metav1.StatusDetails{Kind: "users", Name: "bob"}
		return true, nil, &apierrorsStatus{*st}
	})
	_, err := e.c.explainPod(context.Background(), "apps", "web", "", "", time.Now())
	t.Log(err)
	if err == nil || !strings.HasPrefix(err.Error(), `forbidden: you may not impersonate users "bob" (--as)`) {
		t.Errorf("got %v", err)
	}
}

// adapters/cni addresses.go:37-39 (ReservationsRead: "nil: none has yet (or
// none could read them)"), as explain.md:269-275 says the plugin tells what
// cni-gc holds and decides nothing itself: cni-gc's page leaves
// reservationsRead out; the plugin asserts that no sweep has run yet.
func TestAuditIPNoReservationsReadToldAsNoSweepYet(t *testing.T) {
	x := &IPExplanation{Now: time.Now(), IP: "10.88.0.200", Node: "node-a",
		Program: &Program{Program: "cni-gc", Namespace: "kube-system", Pod: "cni-gc-a", Node: "node-a"},
		Address: &AddressStatus{IP: "10.88.0.200"}, At: time.Now()}
	var b bytes.Buffer
	_ = RenderIP(&b, x)
	out := b.String()
	t.Log(out)
	if strings.Contains(out, "no sweep of host-local's reservations has run yet") {
		t.Errorf("cni-gc's page says only that no round read host-local's reservations (none has, or none could); the plugin says no sweep has run yet")
	}
}
