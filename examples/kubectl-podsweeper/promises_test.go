package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
)

func explainAndRender(t *testing.T, c *cluster, ns, name, uid, node string) (*PodExplanation, string) {
	t.Helper()
	x, err := c.explainPod(context.Background(), ns, name, uid, node, time.Now().UTC())
	if err != nil {
		t.Fatalf("explainPod: %v", err)
	}
	var b bytes.Buffer
	if err := RenderPod(&b, x); err != nil {
		t.Fatal(err)
	}
	return x, b.String()
}

// A live pod's PU on its node's agent is told.
func TestHoldsLivePodPU(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/agent-a", kubeletServe, jsonPages(`[{"puID":"`+firstUID+`","pod":"apps/web","state":"idle","age":"1m"}]`, ""))
	c := s.cluster(5*time.Second,
		nodeAgentOnNodeA(corev1.PodRunning),
		workloadPod("apps", "web", firstUID, "node-a"))
	_, out := explainAndRender(t, c, "apps", "web", "", "")
	if !strings.Contains(out, "PU "+firstUID+" of pod apps/web") {
		t.Fatalf("PU not told:\n%s", out)
	}
	t.Log(out)
}

// docs/operating/explain.md:57-58: --timeout "bounds each program's question
// whole". A kubelet side that closes the port-forward's error stream with
// nothing in it, and never answers on the data stream.
func TestTimeoutBoundsAQuestionWhoseErrorStreamClosesEmpty(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/agent-a", kubeletCloseErrHang, jsonPages(`[]`, ""))
	c := s.cluster(time.Second,
		nodeAgentOnNodeA(corev1.PodRunning),
		workloadPod("apps", "web", firstUID, "node-a"))
	start := time.Now()
	out, ok := explainWebWithin(t, c, 15*time.Second)
	if !ok {
		t.Fatalf("--timeout=1s: explain pod still waiting after 15s for one program")
	}
	if !strings.Contains(out, "could not be asked") {
		t.Fatalf("after %v, the program's question is not said to have failed:\n%s", time.Since(start), out)
	}
}

// docs/operating/explain.md:53-56: a program not asked (its pod Pending) is
// named on a "Not asked:" line and the answer says it cannot tell. Pod gone,
// asked by name: every node's programs are asked (explain.md:45-47).
func TestAPendingAgentIsNotAskedWhenTheNodeIsNotKnown(t *testing.T) {
	x, out := explainBesideAgentIn(t, corev1.PodPending, "")
	t.Log(out)
	if len(x.Unasked) == 0 || strings.Contains(out, "podsweeper knows nothing of this pod") {
		t.Fatalf("a node agent that was not asked (Pending) is not said; the answer claims to know:\n%s", out)
	}
}

// The same, node known (--node): a node agent whose pod on that node is Failed
// (evicted), none running elsewhere.
func TestAFailedAgentAloneOnItsNodeIsNotAsked(t *testing.T) {
	x, out := explainBesideAgentIn(t, corev1.PodFailed, "node-a")
	t.Log(out)
	if len(x.Unasked) == 0 || strings.Contains(out, "podsweeper knows nothing of this pod") {
		t.Fatalf("node-a's node agent was not asked (its pod Failed), and the answer claims to know:\n%s", out)
	}
}

func TestHoldsTimeoutWhenNeverAnswered(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/agent-a", kubeletNeverAnswer, jsonPages(`[]`, ""))
	c := s.cluster(time.Second,
		nodeAgentOnNodeA(corev1.PodRunning),
		workloadPod("apps", "web", firstUID, "node-a"))
	out, ok := explainWebWithin(t, c, 15*time.Second)
	if !ok {
		t.Fatalf("hang")
	}
	if !strings.Contains(out, "could not be asked") {
		t.Fatalf("not said:\n%s", out)
	}
}

func TestHoldsPendingAgentOnKnownNode(t *testing.T) {
	_, out := explainBesideAgentIn(t, corev1.PodPending, "node-a")
	if !strings.Contains(out, "Not asked: node-agent podsweeper/agent-a on node node-a is Pending") || !strings.Contains(out, "cannot tell") {
		t.Fatalf("%s", out)
	}
}

func TestHoldsRecreatedNote(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	const newUID = "0b7e3d52-8c1a-4f0e-b6d2-9e4a1c7f5a30"
	s.program("podsweeper/agent-a", kubeletServe, jsonPages(`[{"puID":"`+firstUID+`","pod":"apps/web","state":"idle","age":"6m"},{"puID":"`+newUID+`","pod":"apps/web","state":"idle","age":"20s"}]`, ""))
	c := s.cluster(5*time.Second,
		nodeAgentOnNodeA(corev1.PodRunning),
		workloadPod("apps", "web", newUID, "node-a"))
	_, out := explainAndRender(t, c, "apps", "web", "", "")
	if !strings.Contains(out, "this PU is of an earlier pod of that name (UID "+firstUID) {
		t.Fatalf("%s", out)
	}
}

// docs/operating/explain.md:57-60: --timeout bounds each program's question
// whole; "explain ip asks each cni-gc of the node in turn until one answers
// for that address". The first cni-gc closes its error stream empty and never
// answers: the second, which would answer, is never asked.
func TestExplainIPAsksTheSecondCNIGCAfterTheFirstHangs(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/cni-a1", kubeletCloseErrHang, jsonPages(`[]`, ""))
	s.program("podsweeper/cni-a2", kubeletServe, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/debug/podsweeper":
			w.Write([]byte(`[]`))
		case addressPath:
			w.Write([]byte(`{"ip":"10.88.0.200"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	c := s.cluster(askTimeout,
		programPod("podsweeper-cni-gc", "r", "podsweeper", "cni-a1", "node-a", corev1.PodRunning),
		programPod("podsweeper-cni-gc", "r", "podsweeper", "cni-a2", "node-a", corev1.PodRunning))
	done := make(chan *IPExplanation, 1)
	go func() {
		x, err := c.explainIP(context.Background(), "10.88.0.200", "node-a", time.Now())
		if err != nil {
			t.Error(err)
		}
		done <- x
	}()
	select {
	case x := <-done:
		if x == nil || x.Address == nil || x.Program.Pod != "cni-a2" {
			t.Fatalf("the answering cni-gc was not the one told: %+v", x)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("--timeout=%v: explain ip still waiting after 15s on the first cni-gc; the second was never asked", askTimeout)
	}
}

func TestHoldsExplainIPSecondAskedAfterTimeout(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/cni-a1", kubeletNeverAnswer, jsonPages(`[]`, ""))
	s.program("podsweeper/cni-a2", kubeletServe, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/debug/podsweeper":
			w.Write([]byte(`[]`))
		case addressPath:
			w.Write([]byte(`{"ip":"10.88.0.200"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	c := s.cluster(askTimeout,
		programPod("podsweeper-cni-gc", "r", "podsweeper", "cni-a1", "node-a", corev1.PodRunning),
		programPod("podsweeper-cni-gc", "r", "podsweeper", "cni-a2", "node-a", corev1.PodRunning))
	x, err := c.explainIP(context.Background(), "10.88.0.200", "node-a", time.Now())
	if err != nil || x.Address == nil || x.Program.Pod != "cni-a2" {
		t.Fatalf("%v %+v", err, x)
	}
}

// A static pod with a pod network: the API server has its mirror pod (UID
// of its own, annotation kubernetes.io/config.mirror = the UID the kubelet,
// the runtime and CNI know it by); cni-gc reads a mirror pod as the static
// pod (adapters/k8s.StaticPodUIDs), so its attachment and its PU carry the
// static UID.
const (
	staticKubeletUID = "5d3c0b1a2f4e6d8c9b7a6f5e4d3c2b1a" // the config hash: the kubelet's UID of the static pod
	staticMirrorUID  = "11111111-2222-4333-8444-555555555555"
)

func staticMirrorPod() *corev1.Pod {
	p := workloadPod("kube-system", "proxy-node-a", staticMirrorUID, "node-a")
	p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: staticKubeletUID}
	return p
}

func cniGCHolding(pus string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/debug/podsweeper":
			w.Write([]byte(pus))
		case addressPath:
			w.Write([]byte(`{"ip":"10.88.0.9","attachments":[{"network":"podnet","containerID":"abcdef0123456789","ifName":"eth0",` +
				`"podNamespace":"kube-system","podName":"proxy-node-a","podUID":"` + staticKubeletUID + `","written":"2026-01-01T00:00:00Z"}]}`))
		default:
			http.NotFound(w, r)
		}
	})
}

const staticPodPU = `[{"puID":"` + staticKubeletUID + `","pod":"kube-system/proxy-node-a","sandboxID":"abcdef0123456789","state":"idle","age":"1h","lastChecked":"2026-01-01T00:00:00Z","lastRow":9,"why":"same pod, same sandbox"}]`

// docs/operating/explain.md:268-269: "The plugin adds the pod each attachment
// names as the API server has it now". A live static pod's attachment is said
// to be of a pod that is gone.
func TestExplainIPKnowsALiveStaticPodByItsKubeletUID(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/cni-a", kubeletServe, cniGCHolding(staticPodPU))
	c := s.cluster(5*time.Second,
		programPod("podsweeper-cni-gc", "r", "podsweeper", "cni-a", "node-a", corev1.PodRunning), staticMirrorPod())
	x, err := c.explainIP(context.Background(), "10.88.0.9", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := ipText(t, x)
	t.Log(out)
	if strings.Contains(out, "gone") || !strings.Contains(out, "live on node node-a") {
		t.Fatalf("the live static pod kube-system/proxy-node-a (its mirror pod Running, annotation %s=%s) is not said to live:\n%s",
			corev1.MirrorPodAnnotationKey, staticKubeletUID, out)
	}
}

// docs/operating/explain.md:160-164 (the note "this PU is of an earlier pod of
// that name" is for a pod recreated under its name): a live static pod's PU
// in cni-gc is said to be an earlier pod's.
func TestAStaticPodsPUIsNoEarlierPods(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/cni-a", kubeletServe, cniGCHolding(staticPodPU))
	c := s.cluster(5*time.Second,
		programPod("podsweeper-cni-gc", "r", "podsweeper", "cni-a", "node-a", corev1.PodRunning), staticMirrorPod())
	_, out := explainAndRender(t, c, "kube-system", "proxy-node-a", "", "")
	t.Log(out)
	if strings.Contains(out, "earlier pod") || strings.Contains(out, "the pod now is another") {
		t.Fatalf("the live static pod's own PU is said to be of an earlier pod of that name:\n%s", out)
	}
}

// docs/operating/explain.md:47-49: --uid alone "names the pod from its ... PU
// ..., then asks the API server for the pod of that name". The UID the PU
// shows is the static pod's; the live pod is said not to exist.
func TestTheKubeletUIDOfALiveStaticPodIsItsPod(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/cni-a", kubeletServe, cniGCHolding(staticPodPU))
	c := s.cluster(5*time.Second,
		programPod("podsweeper-cni-gc", "r", "podsweeper", "cni-a", "node-a", corev1.PodRunning), staticMirrorPod())
	x, out := explainAndRender(t, c, "", "", staticKubeletUID, "")
	t.Log(out)
	if x.Pod == nil || strings.Contains(out, "deleted, or never created") {
		t.Fatalf("the live static pod of UID %s (as its PU and the kubelet know it) is said to be gone:\n%s", staticKubeletUID, out)
	}
}

// docs/operating/explain.md:186-187 ("how many calls failed, and when the
// next is") and :131,136 ("last check 5s ago"): the times of a program's
// answer are said relative to a "now" taken before the programs were asked.
// A program asked after another that took its whole --timeout (3s) is said
// to retry 3s later than it does, and to have checked 3s earlier.
func TestARetrysTimeIsToldFromItsProgramsAnswer(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/cc-1", kubeletNeverAnswer, jsonPages(`[]`, "")) // cluster-controller: asked first, never answers
	s.program("podsweeper/agent-a", kubeletServe, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/podsweeper" {
			http.NotFound(w, r)
			return
		}
		now := time.Now().UTC()
		last, next := now.Add(-8*time.Second).Format(time.RFC3339Nano), now.Add(6*time.Second).Format(time.RFC3339Nano)
		w.Write([]byte(`[{"puID":"` + firstUID + `","pod":"apps/db","state":"waiting for a retry","age":"3m40s","lastChecked":"` + last +
			`","lastRow":1,"why":"pod not found","attempts":3,"nextAttempt":"` + next + `","lastError":"boom"}]`))
	}))
	c := s.cluster(3*time.Second,
		clusterControllerOnNodeZ(),
		nodeAgentOnNodeA(corev1.PodRunning))
	_, out := explainAndRender(t, c, "apps", "db", "", "node-a")
	t.Log(out)
	okNext := strings.Contains(out, "next in 6s") || strings.Contains(out, "next in 5s") || strings.Contains(out, "next in 7s")
	okLast := strings.Contains(out, "last check    8s ago") || strings.Contains(out, "last check    7s ago") || strings.Contains(out, "last check    9s ago")
	if !okNext || !okLast {
		t.Fatalf("the program answered: last check 8s ago, next attempt in 6s; the plugin says otherwise:\n%s", out)
	}
}

func TestHoldsUIDAloneNodeFromNodeEvent(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/agent-a", kubeletServe, jsonPages(`[]`, ""))
	s.program("podsweeper/agent-b", kubeletServe, jsonPages(`[]`, ""))
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: "ev1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-b", UID: "node-b"},
		Related:        &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: firstUID},
		Reason:         "PUDestroyed", Type: "Normal", Message: "PodGone: destroyed PU",
		ReportingController: "podsweeper", EventTime: metav1.NewMicroTime(time.Now().Add(-time.Minute)),
	}
	c := s.cluster(5*time.Second,
		nodeAgentOnNodeA(corev1.PodRunning),
		programPod("podsweeper-node-agent", "r", "podsweeper", "agent-b", "node-b", corev1.PodRunning), ev)
	x, out := explainAndRender(t, c, "", "", firstUID, "")
	if len(x.Answers) != 1 || x.Answers[0].Program.Pod != "agent-b" || x.Name != "web" || !strings.Contains(out, "regarding Node/node-b") {
		t.Fatalf("%s", out)
	}
}

// docs/operating/explain.md:3-4 ("for each program that holds a PU of the
// pod, the PU ..."), with --uid the UID the API server gives the pod (its
// mirror pod's): cni-gc's PU of that live static pod is said not to exist.
func TestAStaticPodAskedByItsMirrorUIDShowsItsPU(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/cni-a", kubeletServe, cniGCHolding(staticPodPU))
	c := s.cluster(5*time.Second,
		programPod("podsweeper-cni-gc", "r", "podsweeper", "cni-a", "node-a", corev1.PodRunning), staticMirrorPod())
	_, out := explainAndRender(t, c, "kube-system", "proxy-node-a", staticMirrorUID, "")
	t.Log(out)
	if strings.Contains(out, "holds no PU of this pod") {
		t.Fatalf("cni-gc holds a PU of the live static pod (PU %s), and is said to hold none:\n%s", staticKubeletUID, out)
	}
}

// The same hang outlives the command's own context (main's
// signal.NotifyContext: Ctrl-C), which main keeps catching until run returns.
func TestAnInterruptEndsAQuestionWhoseErrorStreamClosesEmpty(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/agent-a", kubeletCloseErrHang, jsonPages(`[]`, ""))
	c := s.cluster(time.Minute,
		nodeAgentOnNodeA(corev1.PodRunning),
		workloadPod("apps", "web", firstUID, "node-a"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.explainPod(ctx, "apps", "web", "", "", time.Now())
		done <- err
	}()
	time.Sleep(time.Second)
	cancel() // Ctrl-C
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("explain pod still waiting 10s after its context was canceled (Ctrl-C)")
	}
}

// NAME with --uid, NAME in another namespace than the pod's (NAME alone
// takes the context's namespace, explain.md:21): the pod of that UID lives,
// its PU names it (apps/web), and the answer says no pod of that UID exists.
func TestAUIDAskedUnderAnotherNameIsNotSaidGone(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/agent-a", kubeletServe, jsonPages(`[{"puID":"`+firstUID+`","pod":"apps/web","state":"idle","age":"1m"}]`, ""))
	c := s.cluster(5*time.Second,
		nodeAgentOnNodeA(corev1.PodRunning),
		workloadPod("apps", "web", firstUID, "node-a"))
	_, out := explainAndRender(t, c, "default", "web", firstUID, "")
	t.Log(out)
	if strings.Contains(out, "no pod of that UID in the API server") {
		t.Fatalf("the pod of UID %s lives (apps/web, as its PU says), and the answer says none exists:\n%s", firstUID, out)
	}
}

// explain.md:269 ("it decides nothing itself") and :274-275 (what cni-gc
// could not read is said beside the rest): libcni's cache could not be read,
// and the plugin itself concludes that no attachment of libcni's cache is of
// the reservation's container.
func TestAReservationsPodIsNotKnownWhenTheCacheIsUnread(t *testing.T) {
	now := time.Now().UTC()
	read := now.Add(-12 * time.Second)
	x := &IPExplanation{Now: now, IP: "10.88.0.13", Node: "node-a",
		Program: &Program{Program: "cni-gc", Namespace: "kube-system", Pod: "cni-a", Node: "node-a"},
		Address: &AddressStatus{IP: "10.88.0.13", ReservationsRead: &read,
			Unread: []string{"libcni's cache: open /var/lib/cni/results: permission denied: its attachments are not told"},
			Reservations: []ReservationStatus{{Network: "podnet", DataDir: "/var/lib/cni/networks", File: "/var/lib/cni/networks/podnet/10.88.0.13",
				ContainerID: "c0ffee00d2b34", IfName: "eth0", Reserved: now.Add(-time.Minute), State: "kept",
				Decision: FreeDecision{At: read, Row: 16, Why: "a host-local reservation of a sandbox the cache holds an attachment of, or whose DEL would remove a file never touched", Verdict: "keep"}}}}}
	out := ipText(t, x)
	t.Log(out)
	if strings.Contains(out, "no attachment of libcni's cache is of that container") {
		t.Fatalf("libcni's cache could not be read, and the answer says none of its attachments is of the container:\n%s", out)
	}
}

// The same conclusion with the cache read: the container's cache entry is
// of another network (a second interface), holding another address; cni-gc
// kept the reservation for it (row 16: the cache holds an attachment of that
// sandbox), and the plugin says no attachment of the cache is of it.
func TestAReservationKeptOnRow16IsNotSaidOfNoCacheEntry(t *testing.T) {
	now := time.Now().UTC()
	read := now.Add(-12 * time.Second)
	x := &IPExplanation{Now: now, IP: "10.99.0.7", Node: "node-a",
		Program: &Program{Program: "cni-gc", Namespace: "kube-system", Pod: "cni-a", Node: "node-a"},
		Address: &AddressStatus{IP: "10.99.0.7", ReservationsRead: &read,
			Reservations: []ReservationStatus{{Network: "storagenet", DataDir: "/var/lib/cni/networks", File: "/var/lib/cni/networks/storagenet/10.99.0.7",
				ContainerID: "3a9f0c1b2d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccddeef", IfName: "net1", Reserved: now.Add(-time.Hour), State: "kept",
				Decision: FreeDecision{At: read, Row: 16, Why: "a host-local reservation of a sandbox the cache holds an attachment of, or whose DEL would remove a file never touched", Verdict: "keep"}}}}}
	out := ipText(t, x)
	t.Log(out)
	if strings.Contains(out, "no attachment of libcni's cache is of that container") {
		t.Fatalf("cni-gc kept the reservation because the cache holds an attachment of its sandbox (row 16), and the plugin says none is:\n%s", out)
	}
}

// explain.md:3-7: for each PU, "what a dry run would do", as the program
// answers it. A dry-run program's PU never checked yet (queued, no last
// check): the program has decided nothing, and the plugin says it would keep it.
func TestADryRunDecidesNothingBeforeItsFirstCheck(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/agent-a", kubeletServe, jsonPages(`[{"puID":"`+firstUID+`","pod":"apps/web","state":"queued","age":"1s"}]`, `{"total":0,"reports":[]}`))
	c := s.cluster(5*time.Second,
		nodeAgentOnNodeA(corev1.PodRunning, "--dry-run"),
		workloadPod("apps", "web", firstUID, "node-a"))
	_, out := explainAndRender(t, c, "apps", "web", "", "")
	t.Log(out)
	if strings.Contains(out, "last check    none yet.") && strings.Contains(out, "would keep it") {
		t.Fatalf("a PU the dry run never checked is said to be one it would keep:\n%s", out)
	}
}

// explain.md:22: "-o json prints what the text is made from": the JSON,
// read back, renders the same text.
func TestHoldsJSONIsTheText(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	const newUID = "0b7e3d52-8c1a-4f0e-b6d2-9e4a1c7f5a30"
	s.program("podsweeper/agent-a", kubeletServe, jsonPages(`[{"puID":"`+firstUID+`","pod":"apps/web","state":"waiting for a retry","age":"6m","attempts":2,"nextAttempt":"2030-01-01T00:00:00+02:00","lastChecked":"2026-01-01T00:00:00-05:00","lastRow":4,"why":"x"}]`,
		`{"total":3,"reports":[{"at":"2026-01-01T00:00:00Z","puID":"`+newUID+`","pod":"apps/web","reason":"PodGone","row":1,"why":"pod not found","dropped":true}]}`))
	s.program("podsweeper/cc-1", kubeletCloseErrHang, jsonPages(`[]`, ""))
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: "ev1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-a"},
		Related:        &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: newUID},
		Reason:         "PUDestroyed", Type: "Normal", Message: "PodGone", Count: 3,
		EventTime: metav1.NewMicroTime(time.Now().Add(-time.Minute)),
	}
	c := s.cluster(5*time.Second,
		nodeAgentOnNodeA(corev1.PodRunning, "--dry-run"),
		programPod("podsweeper-node-agent", "r", "podsweeper", "agent-b", "node-b", corev1.PodPending), ev)
	x, out := explainAndRender(t, c, "apps", "web", "", "node-a")
	var j bytes.Buffer
	if err := RenderPodJSON(&j, x); err != nil {
		t.Fatal(err)
	}
	var y PodExplanation
	if err := json.Unmarshal(j.Bytes(), &y); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := RenderPod(&b, &y); err != nil {
		t.Fatal(err)
	}
	if b.String() != out {
		t.Fatalf("text:\n%s\nfrom its JSON:\n%s", out, b.String())
	}
}

// explain.md:208: "the Events say what was destroyed, and when". An Event
// series (events.go: a pod whose sandbox is replaced again and again makes
// one series, "with the first one's note"): the first destroy's note (sandbox
// s1, 5 minutes ago) is printed with the last one's time (5s ago).
func TestAnEventSeriesNoteIsToldAtItsFirstTime(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/agent-a", kubeletServe, jsonPages(`[]`, ""))
	now := time.Now()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "apps", Name: "ev1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: firstUID},
		Reason:         "PUDestroyed", Type: "Normal", ReportingController: "podsweeper",
		Message:   "SandboxChanged: destroyed PU " + firstUID + " of pod apps/web (sandbox s1aaaaaaaaaaa)",
		EventTime: metav1.NewMicroTime(now.Add(-5 * time.Minute)),
		Series:    &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(now.Add(-5 * time.Second))},
	}
	c := s.cluster(5*time.Second,
		nodeAgentOnNodeA(corev1.PodRunning),
		workloadPod("apps", "web", firstUID, "node-a"), ev)
	_, out := explainAndRender(t, c, "apps", "web", "", "")
	t.Log(out)
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "sandbox s1aaaaaaaaaaa") && strings.HasPrefix(strings.TrimSpace(l), "5s ago") {
			t.Fatalf("sandbox s1's destroy (5m ago) is said to have happened 5s ago:\n%s", l)
		}
	}
}

func TestHoldsIPJSONIsTheText(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/cni-a", kubeletServe, cniGCHolding(staticPodPU))
	c := s.cluster(5*time.Second,
		programPod("podsweeper-cni-gc", "r", "podsweeper", "cni-a", "node-a", corev1.PodRunning, "--dry-run"), workloadPod("kube-system", "proxy-node-a", staticKubeletUID, "node-a"))
	x, err := c.explainIP(context.Background(), "10.88.0.9", "node-a", time.Now().UTC())
	if err != nil {
		t.Fatal(err)
	}
	var a, j, b bytes.Buffer
	RenderIP(&a, x)
	RenderIPJSON(&j, x)
	var y IPExplanation
	if err := json.Unmarshal(j.Bytes(), &y); err != nil {
		t.Fatal(err)
	}
	RenderIP(&b, &y)
	if a.String() != b.String() || !strings.Contains(a.String(), "live on node node-a") {
		t.Fatalf("%s\n---\n%s", a.String(), b.String())
	}
}

// status --node: the node's programs only, a program's failure said after the table; JSON renders the same text.
func TestHoldsStatusJSONIsTheText(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/agent-a", kubeletServe, jsonPages(`[{"puID":"`+firstUID+`","pod":"apps/web","state":"idle","age":"1m","lastChecked":"2026-01-01T00:00:00Z","lastRow":9,"why":"same pod, same sandbox"}]`, ""))
	c := s.cluster(5*time.Second,
		nodeAgentOnNodeA(corev1.PodRunning),
		programPod("podsweeper-node-agent", "r", "podsweeper", "agent-b", "node-b", corev1.PodRunning),
		programPod("podsweeper-cni-gc", "r", "podsweeper", "cni-a", "node-a", corev1.PodRunning, "--status-bind-address=0"))
	ts, _, err := c.programs(context.Background(), "node-a", false)
	if err != nil {
		t.Fatal(err)
	}
	answers, _, err := c.askAll(context.Background(), ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := &NodeStatus{Now: time.Now().UTC(), Node: "node-a", Answers: answers}
	var a, j, b bytes.Buffer
	RenderStatus(&a, st)
	writeJSON(&j, st)
	var y NodeStatus
	if err := json.Unmarshal(j.Bytes(), &y); err != nil {
		t.Fatal(err)
	}
	RenderStatus(&b, &y)
	if a.String() != b.String() || strings.Contains(a.String(), "agent-b") || !strings.Contains(a.String(), "cni-gc podsweeper/cni-a could not be asked: its status listener is off") {
		t.Fatalf("%s\n---\n%s", a.String(), b.String())
	}
}

// report: HELD follows a PU's latest report (explain.md:61); a program without --dry-run is said so.
func TestHoldsReportHeldFollowsLatest(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/agent-a", kubeletServe, jsonPages(`[]`, `{"total":2,"reports":[`+
		`{"at":"2026-01-01T00:00:00Z","puID":"`+firstUID+`","pod":"apps/web","reason":"UIDChanged","row":4,"why":"x"},`+
		`{"at":"2026-01-01T00:01:00Z","puID":"`+firstUID+`","pod":"apps/web","reason":"PodGone","row":1,"why":"y","dropped":true}]}`))
	s.program("podsweeper/cc-1", kubeletServe, jsonPages(`[]`, ""))
	c := s.cluster(5*time.Second,
		nodeAgentOnNodeA(corev1.PodRunning, "--dry-run"),
		clusterControllerOnNodeZ())
	ts, _, err := c.programs(context.Background(), "", true)
	if err != nil {
		t.Fatal(err)
	}
	answers, _, err := c.askAll(context.Background(), ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	RenderReport(&b, &Report{Now: time.Now().UTC(), Answers: answers})
	out := b.String()
	if strings.Count(out, "no: pod gone") != 2 || !strings.Contains(out, "cc-1 runs without --dry-run") {
		t.Fatalf("%s", out)
	}
}

// explain.md:425: by name alone, a gone pod, node unknown: "every node's programs were asked" - and every Running one is.
func TestHoldsGonePodByNameAsksEveryNode(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/agent-a", kubeletServe, jsonPages(`[]`, ""))
	s.program("podsweeper/agent-b", kubeletServe, jsonPages(`[{"puID":"`+firstUID+`","pod":"apps/web","state":"waiting for a retry","age":"1m","attempts":1}]`, ""))
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: "ev1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-a"},
		Related:        &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: "other-uid"},
		Reason:         "PUDestroyed", Type: "Normal", ReportingController: "podsweeper", EventTime: metav1.NewMicroTime(time.Now()),
	}
	c := s.cluster(5*time.Second,
		nodeAgentOnNodeA(corev1.PodRunning),
		programPod("podsweeper-node-agent", "r", "podsweeper", "agent-b", "node-b", corev1.PodRunning), ev)
	x, out := explainAndRender(t, c, "apps", "web", "", "")
	if len(x.Answers) != 2 || !strings.Contains(out, "PU "+firstUID) || !strings.Contains(out, "regarding Node/node-a") {
		t.Fatalf("%s", out)
	}
}

// explain.md:100-101, 410: without a permission, one line that says which.
func TestHoldsForbiddenListPodsIsOneLine(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	c := s.cluster(5 * time.Second)
	h := c.cs.(hybridCS)
	h.Clientset.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
	})
	_, err := c.explainPod(context.Background(), "apps", "web", "", "", time.Now())
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "forbidden: you may not list pods in every namespace") {
		t.Fatalf("%v", err)
	}
}

// explain.md:100-106: the API server refuses the port-forward and you may not: one line, which permission.
func TestHoldsPortForwardForbiddenLine(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.refuse["podsweeper/agent-a"] = podsForbidden("agent-a", `pods "agent-a" is forbidden`)
	c := s.cluster(5*time.Second,
		nodeAgentOnNodeA(corev1.PodRunning),
		workloadPod("apps", "web", firstUID, "node-a"))
	_, err := c.explainPod(context.Background(), "apps", "web", "", "", time.Now())
	const want = "forbidden: you may not create pods/portforward in namespace podsweeper: the Role <fullname>-explain of the programs' chart, in namespace podsweeper grants it (docs/operating/explain.md says how to bind it)"
	if err == nil || err.Error() != want {
		t.Fatalf("%v", err)
	}
}

// explain.md:415-419, 421-425: a 403 the user may not fix (the review allows it): "could not be asked", the others asked all the same.
func TestHoldsKubeletRefusalIsCouldNotBeAsked(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.refuse["podsweeper/agent-a"] = podsForbidden("agent-a", `pods "agent-a" is forbidden`)
	s.program("podsweeper/cc-1", kubeletServe, jsonPages(`[{"puID":"`+firstUID+`","pod":"apps/web","state":"idle","age":"1m"}]`, ""))
	c := s.cluster(5*time.Second,
		nodeAgentOnNodeA(corev1.PodRunning),
		clusterControllerOnNodeZ(),
		workloadPod("apps", "web", firstUID, "node-a"))
	c.cs.(hybridCS).Clientset.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = true
		return true, r, nil
	})
	_, out := explainAndRender(t, c, "apps", "web", "", "")
	if !strings.Contains(out, "node-agent podsweeper/agent-a (node node-a) could not be asked: port-forward to pod podsweeper/agent-a") ||
		!strings.Contains(out, "PU "+firstUID) {
		t.Fatalf("%s", out)
	}
}

// explain.md:406-407, 412-414: the documented "could not be asked" lines.
func TestHoldsCouldNotBeAskedLines(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/agent-a", kubeletServe, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/debug/podsweeper/dry-run" {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		w.Write([]byte(`[{"puID":"` + firstUID + `","pod":"apps/web","state":"idle","age":"1m"}]`))
	}))
	s.program("podsweeper/cni-a", kubeletServe, jsonPages(`[]`, ""))
	c := s.cluster(5*time.Second,
		nodeAgentOnNodeA(corev1.PodRunning, "--dry-run"),
		programPod("podsweeper-cni-gc", "r", "podsweeper", "cni-a", "node-a", corev1.PodRunning),
		workloadPod("apps", "web", firstUID, "node-a"))
	_, out := explainAndRender(t, c, "apps", "web", "", "")
	if !strings.Contains(out, "node-agent podsweeper/agent-a (node node-a) could not be asked: reading its dry run's report on port 8084: /debug/podsweeper/dry-run answered 500: boom") ||
		strings.Contains(out, "PU "+firstUID) {
		t.Fatalf("%s", out)
	}
	x, err := c.explainIP(context.Background(), "10.88.0.1", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	RenderIP(&b, x)
	if !strings.Contains(b.String(), "could not be asked: it serves no /debug/podsweeper/cni/address: its image predates explain ip") {
		t.Fatalf("%s", b.String())
	}
}

// explain.md:143-158 (a pod deleted under a dry run) and :47-49 (UID named by nothing).
func TestHoldsDryRunDroppedAndUIDUnknown(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/agent-a", kubeletServe, jsonPages(`[]`, `{"total":1,"reports":[{"at":"2026-01-01T00:00:00Z","puID":"`+firstUID+`","pod":"apps/web","reason":"PodGone","row":1,"why":"pod not found","dropped":true}]}`))
	c := s.cluster(5*time.Second,
		nodeAgentOnNodeA(corev1.PodRunning, "--dry-run"))
	_, out := explainAndRender(t, c, "apps", "web", "", "")
	if !strings.Contains(out, "no longer held (its pod is gone for good)") || !strings.Contains(out, "in a dry run (it destroys nothing)") {
		t.Fatalf("%s", out)
	}
	_, out = explainAndRender(t, c, "", "", "99999999-0000-4000-8000-000000000000", "")
	if !strings.Contains(out, "whether it lives is not known") || !strings.Contains(out, "knows nothing of this pod") {
		t.Fatalf("%s", out)
	}
}

// The skew of TestRetryTimeSkewedByEarlierSlowProgram in status --node:
// cni-gc is asked before the node agent; a cni-gc that takes its whole
// --timeout shifts the node agent's LAST CHECK and NEXT by it.
func TestStatusTimesAreToldFromEachProgramsAnswer(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/cni-a", kubeletNeverAnswer, jsonPages(`[]`, ""))
	s.program("podsweeper/agent-a", kubeletServe, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/podsweeper" {
			http.NotFound(w, r)
			return
		}
		now := time.Now().UTC()
		w.Write([]byte(`[{"puID":"` + firstUID + `","pod":"apps/db","state":"waiting for a retry","age":"3m40s","lastChecked":"` +
			now.Add(-8*time.Second).Format(time.RFC3339Nano) + `","lastRow":1,"why":"pod not found","attempts":3,"nextAttempt":"` +
			now.Add(6*time.Second).Format(time.RFC3339Nano) + `"}]`))
	}))
	c := s.cluster(3*time.Second,
		programPod("podsweeper-cni-gc", "r", "podsweeper", "cni-a", "node-a", corev1.PodRunning),
		nodeAgentOnNodeA(corev1.PodRunning))
	now := time.Now().UTC() // as command() takes it, before the programs are asked
	ts, _, err := c.programs(context.Background(), "node-a", false)
	if err != nil {
		t.Fatal(err)
	}
	answers, _, err := c.askAll(context.Background(), ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	RenderStatus(&b, &NodeStatus{Now: now, Node: "node-a", Answers: answers})
	out := b.String()
	t.Log(out)
	if !strings.Contains(out, "in 6s") && !strings.Contains(out, "in 5s") && !strings.Contains(out, "in 7s") {
		t.Fatalf("the node agent answered: next attempt in 6s, last check 8s ago; status says otherwise:\n%s", out)
	}
}

// explain.md:53-56 with the pod live but not yet scheduled (its node unknown):
// the cluster controller's only replica is Pending, and nothing says so.
func TestAPendingControllerIsNotAskedForAnUnscheduledPod(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/agent-a", kubeletServe, jsonPages(`[]`, ""))
	p := workloadPod("apps", "web", firstUID, "")
	p.Status.Phase = corev1.PodPending
	c := s.cluster(5*time.Second,
		nodeAgentOnNodeA(corev1.PodRunning),
		programPod("podsweeper-cluster-controller", "r", "podsweeper", "cc-1", "", corev1.PodPending), p)
	x, out := explainAndRender(t, c, "apps", "web", "", "")
	t.Log(out)
	if len(x.Unasked) == 0 || !strings.Contains(out, "cannot tell") {
		t.Fatalf("the cluster controller (Pending) was not asked, and nothing says so:\n%s", out)
	}
}

// explain.md:57: "a program's pod being deleted still runs its grace period, and is asked".
func TestHoldsDeletingProgramIsAsked(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/agent-a", kubeletServe, jsonPages(`[{"puID":"`+firstUID+`","pod":"apps/web","state":"idle","age":"1m"}]`, ""))
	ap := nodeAgentOnNodeA(corev1.PodRunning)
	now := metav1.Now()
	ap.DeletionTimestamp = &now
	ap.Finalizers = []string{"x"}
	c := s.cluster(5*time.Second, ap, workloadPod("apps", "web", firstUID, "node-a"))
	x, out := explainAndRender(t, c, "apps", "web", "", "")
	if len(x.Answers) != 1 || !strings.Contains(out, "PU "+firstUID) || len(x.Unasked) != 0 {
		t.Fatalf("%s", out)
	}
}

// explain.md:271-278: kept by no row, and never touched, each said with why.
func TestHoldsIPNoRowAndNeverTouched(t *testing.T) {
	now := time.Now().UTC()
	x := &IPExplanation{Now: now, IP: "10.88.0.6", Node: "node-a",
		Program: &Program{Program: "cni-gc", Namespace: "kube-system", Pod: "cni-a", Node: "node-a"},
		Address: &AddressStatus{IP: "10.88.0.6",
			Attachments: []AttachmentStatus{
				{Network: "podnet", ContainerID: "7be1c2d3e4f5a6b7", IfName: "eth0", PodNamespace: "apps", PodName: "a", PodUID: "u1", Written: now,
					Decision: &FreeDecision{At: now, Reason: "PodGone", Row: -1, Why: "the runtime could not be asked: boom", Verdict: "keep"}},
				{Network: "podnet", ContainerID: "c2", IfName: "eth0", File: "/var/lib/cni/results/x", NeverTouched: "an entry of no pod", Written: now}},
			Reservations: []ReservationStatus{{Network: "podnet", File: "/var/lib/cni/networks/podnet/10.88.0.6", ContainerID: "c3", IfName: "eth0", Reserved: now,
				State: "never touched", Decision: FreeDecision{At: now, Row: -1, Why: "a link in the network's directory", Verdict: "keep"}}}}}
	var b bytes.Buffer
	RenderIP(&b, x)
	out := b.String()
	for _, w := range []string{"kept, decided by no row of the freeing table: the runtime could not be asked: boom",
		"freeing     never: cni-gc does not use this entry: an entry of no pod", "never touched, as the sweep 0s ago decided by no row of the freeing table: a link in the network's directory"} {
		if !strings.Contains(out, w) {
			t.Fatalf("want %q in:\n%s", w, out)
		}
	}
}

// docs/operating/explain.md ("last check 5s ago"): a page's times are told
// relative to when that page answered. A status page that begins its answer
// at once and takes 3s over the rest of its body (a large page, a slow
// link) still says "last check 8s ago" and "next in 6s", not 11s and 3s.
func TestAPagesTimesAreToldFromWhenItBeganToAnswer(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/agent-a", kubeletServe, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/podsweeper" {
			http.NotFound(w, r)
			return
		}
		now := time.Now().UTC()
		last, next := now.Add(-8*time.Second).Format(time.RFC3339Nano), now.Add(6*time.Second).Format(time.RFC3339Nano)
		w.Write([]byte(`[{"puID":"` + firstUID + `","pod":"apps/db","state":"waiting for a retry","age":"3m40s","lastChecked":"` + last +
			`","lastRow":1,"why":"pod not found","attempts":3,"nextAttempt":"` + next + `","lastError":"boom"}`))
		w.(http.Flusher).Flush()
		time.Sleep(3 * time.Second) // the rest of a long page
		w.Write([]byte(`]`))
	}))
	c := s.cluster(10*time.Second, nodeAgentOnNodeA(corev1.PodRunning))
	_, out := explainAndRender(t, c, "apps", "db", "", "node-a")
	okNext := strings.Contains(out, "next in 6s") || strings.Contains(out, "next in 5s") || strings.Contains(out, "next in 7s")
	okLast := strings.Contains(out, "last check    8s ago") || strings.Contains(out, "last check    7s ago") || strings.Contains(out, "last check    9s ago")
	if !okNext || !okLast {
		t.Fatalf("the page began to answer: last check 8s ago, next attempt in 6s; the plugin says otherwise:\n%s", out)
	}
}

// The same for the dry run's report, a page of its own read after the
// status page: a report made 8s before the report page answered, 3s after
// the status page did, is "8s ago", not 5s.
func TestADryRunReportsTimeIsToldFromItsOwnPage(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/agent-a", kubeletServe, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/debug/podsweeper":
			w.Write([]byte(`[]`))
		case "/debug/podsweeper/dry-run":
			time.Sleep(3 * time.Second)
			at := time.Now().UTC().Add(-8 * time.Second).Format(time.RFC3339Nano)
			w.Write([]byte(`{"total":1,"reports":[{"at":"` + at + `","puID":"` + firstUID +
				`","pod":"apps/db","reason":"PodGone","row":1,"why":"pod not found","dropped":true}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	c := s.cluster(10*time.Second, nodeAgentOnNodeA(corev1.PodRunning, "--dry-run"))
	_, out := explainAndRender(t, c, "apps", "db", "", "node-a")
	if !strings.Contains(out, "(8s ago)") && !strings.Contains(out, "(7s ago)") && !strings.Contains(out, "(9s ago)") {
		t.Fatalf("the report page said: would have destroyed it 8s ago; the plugin says otherwise:\n%s", out)
	}
}

// The same for explain ip, which reads two pages of cni-gc: the address
// page's times are told from when it answered, and the PUs', from when the
// status page did, 3s later: a PU checked 8s before its page answered is
// "last check 8s ago", not 5s.
func TestExplainIPTellsEachPagesTimesFromItsOwnAnswer(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/cni-a", kubeletServe, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/debug/podsweeper":
			time.Sleep(3 * time.Second)
			last := time.Now().UTC().Add(-8 * time.Second).Format(time.RFC3339Nano)
			w.Write([]byte(`[{"puID":"` + firstUID + `","pod":"apps/db","state":"tracked","age":"3m40s","lastChecked":"` + last +
				`","lastRow":5,"why":"pod alive"}]`))
		case addressPath:
			written := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339Nano)
			w.Write([]byte(`{"ip":"10.88.0.200","attachments":[{"network":"n","containerID":"c0ffee","ifName":"eth0",` +
				`"podNamespace":"apps","podName":"db","podUID":"` + firstUID + `","written":"` + written + `"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	c := s.cluster(10*time.Second, programPod("podsweeper-cni-gc", "r", "podsweeper", "cni-a", "node-a", corev1.PodRunning))
	x, err := c.explainIP(context.Background(), "10.88.0.200", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	text := ipText(t, x)
	if !strings.Contains(text, "last check  8s ago") && !strings.Contains(text, "last check  7s ago") &&
		!strings.Contains(text, "last check  9s ago") {
		t.Fatalf("the status page said: last check 8s ago; the plugin says otherwise:\n%s", text)
	}
}

// docs/operating/explain.md ("for each program that holds a PU of the pod"),
// asked by UID alone with a static pod's kubelet UID: cni-gc holds its PU
// under that UID, the node agent under the mirror pod's UID (the one the
// API server gives); both are the pod's and both are told.
func TestAStaticPodAskedByOneUIDAloneShowsThePUsOfBoth(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/cni-a", kubeletServe, cniGCHolding(staticPodPU))
	mirrorPU := `[{"puID":"` + staticMirrorUID + `","pod":"kube-system/proxy-node-a","sandboxID":"abcdef0123456789","state":"idle","age":"1h","lastChecked":"2026-01-01T00:00:00Z","lastRow":9,"why":"same pod, same sandbox"}]`
	s.program("podsweeper/agent-a", kubeletServe, jsonPages(mirrorPU, ""))
	c := s.cluster(5*time.Second,
		programPod("podsweeper-cni-gc", "r", "podsweeper", "cni-a", "node-a", corev1.PodRunning),
		nodeAgentOnNodeA(corev1.PodRunning), staticMirrorPod())
	x, out := explainAndRender(t, c, "", "", staticKubeletUID, "")
	held := 0
	for _, a := range x.Answers {
		held += len(a.PUs)
	}
	if x.Pod == nil || held != 2 || !strings.Contains(out, "PU "+staticMirrorUID) || !strings.Contains(out, "PU "+staticKubeletUID) {
		t.Fatalf("the static pod's two PUs (%s, %s) are not both told:\n%s", staticKubeletUID, staticMirrorUID, out)
	}
}

// docs/operating/explain.md: "A person finds the PU of a deleted pod in the
// answer until it is destroyed, and the destroy's Event after." The PU is
// destroyed, and its Event posted, after the plugin first read the Events
// and before its program answered: the answer still tells the destroy.
func TestADestroyBetweenTheEventsReadAndTheProgramsAnswerIsTold(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	var c *cluster
	s.program("podsweeper/agent-a", kubeletServe, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/debug/podsweeper":
			// Destroyed just now: gone from the page, its Event posted.
			_, err := c.cs.CoreV1().Events("default").Create(r.Context(), &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: "ev1"},
				InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-a"},
				Related:        &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "db", UID: firstUID},
				Reason:         "PUDestroyed", Type: "Normal", Message: "PodGone: destroyed PU",
				ReportingController: "podsweeper", EventTime: metav1.NewMicroTime(time.Now()),
			}, metav1.CreateOptions{})
			if err != nil {
				t.Error(err)
			}
			w.Write([]byte(`[]`))
		default:
			http.NotFound(w, r)
		}
	}))
	c = s.cluster(5*time.Second, nodeAgentOnNodeA(corev1.PodRunning))
	_, out := explainAndRender(t, c, "apps", "db", "", "node-a")
	if !strings.Contains(out, "PUDestroyed") {
		t.Fatalf("the PU was destroyed while the plugin asked: neither its PU nor its Event is told:\n%s", out)
	}
}

// An Event of an earlier pod of the same name, on another node, is said to
// be of that earlier pod, not of the pod now.
func TestAnEarlierPodsEventIsMarkedSo(t *testing.T) {
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/agent-a", kubeletServe, jsonPages(`[]`, ""))
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: "ev1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-b", UID: "node-b"},
		Related:        &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: "earlier-uid"},
		Reason:         "PUDestroyed", Type: "Normal", Message: "PodGone: destroyed PU",
		ReportingController: "podsweeper", EventTime: metav1.NewMicroTime(time.Now().Add(-time.Minute)),
	}
	c := s.cluster(5*time.Second, nodeAgentOnNodeA(corev1.PodRunning),
		workloadPod("apps", "web", firstUID, "node-a"), ev)
	x, out := explainAndRender(t, c, "apps", "web", "", "")
	marked := len(x.Events) > 0 // the fake clientset lists it once per reason: it ignores field selectors
	for _, e := range x.Events {
		marked = marked && e.EarlierUID == "earlier-uid"
	}
	if !marked || !strings.Contains(out, "of an earlier pod of that name, UID earlier-uid") {
		t.Fatalf("the Event of the earlier pod (UID earlier-uid) is told as the pod's now:\n%s", out)
	}
}

// nodeAgentOnNodeA is the node agent podsweeper/agent-a on node-a, in phase, with args.
func nodeAgentOnNodeA(phase corev1.PodPhase, args ...string) *corev1.Pod {
	return programPod("podsweeper-node-agent", "r", "podsweeper", "agent-a", "node-a", phase, args...)
}

// clusterControllerOnNodeZ is the cluster controller podsweeper/cc-1, Running on node-z.
func clusterControllerOnNodeZ() *corev1.Pod {
	return programPod("podsweeper-cluster-controller", "r", "podsweeper", "cc-1", "node-z", corev1.PodRunning)
}

// explainWebWithin is the text of explain pod apps/web on c, and false when
// the plugin is still asking after limit.
func explainWebWithin(t *testing.T, c *cluster, limit time.Duration) (string, bool) {
	done := make(chan string, 1)
	go func() {
		_, out := explainAndRender(t, c, "apps", "web", "", "")
		done <- out
	}()
	select {
	case out := <-done:
		return out, true
	case <-time.After(limit):
		return "", false
	}
}

// explainBesideAgentIn is explain pod apps/web (--node node, when not "")
// where the cluster controller answers no PU and node-a's agent is in
// phase.
func explainBesideAgentIn(t *testing.T, phase corev1.PodPhase, node string) (*PodExplanation, string) {
	t.Helper()
	s := newFakeCluster(t).likeAKubelet()
	s.program("podsweeper/cc-1", kubeletServe, jsonPages(`[]`, ""))
	c := s.cluster(5*time.Second, clusterControllerOnNodeZ(), nodeAgentOnNodeA(phase))
	return explainAndRender(t, c, "apps", "web", "", node)
}
