package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// TestExplainUIDAsksWhereTheEarlierPodRan: explain pod NAMESPACE/NAME
// --uid of an earlier pod of that name asks where that pod's PU may be
// (as --uid alone does), not only the node of the pod of that name now.
func TestExplainUIDAsksWhereTheEarlierPodRan(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding(map[string]any{
		"puID": firstUID, "pod": "apps/web", "state": "waiting for a retry", "age": "6m2s", "lastChecked": time.Now(),
		"lastRow": 4, "why": "pod recreated with another UID", "attempts": 3, "nextAttempt": time.Now().Add(6 * time.Second), "lastError": "destroying: busy"}))
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-b", "node-b", holding(map[string]any{
		"puID": secondUID, "pod": "apps/web", "state": "idle", "age": "20s", "lastChecked": time.Now(), "lastRow": 9, "why": "same pod, same sandbox"}))
	f.addPod(corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: secondUID},
		Spec: corev1.PodSpec{NodeName: "node-b"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})

	r := f.run("explain", "pod", "apps/web", "--uid", firstUID)
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "PU "+firstUID+" of pod apps/web")
	assert.Contains(t, r.stdout, "na-a (node node-a)")

	// The pod of that name, by its own UID: its node's programs only.
	r = f.run("explain", "pod", "apps/web", "--uid", secondUID)
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "PU "+secondUID+" of pod apps/web")
	assert.NotContains(t, r.stdout, "na-a")
	assert.False(t, strings.Contains(r.stdout, "every node's programs were asked"))
}

// podEvent is a podsweeper Event of a destroy of the PU uid of the pod
// apps/name, regarding that pod.
func podEvent(name, uid, reason string, at time.Time) corev1.Event {
	return corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name + "." + uid},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: name, UID: types.UID(uid)},
		Reason:         k8s.EventReasonDestroyed, Type: corev1.EventTypeNormal, ReportingController: "podsweeper",
		EventTime: metav1.NewMicroTime(at), Message: reason + ": destroyed PU " + uid + " of pod apps/" + name}
}

// TestExplainNameAndUIDIsThePodOfThatUID: explain pod NAMESPACE/NAME --uid
// of an earlier pod of that name answers about the pod of that UID, as
// --uid alone does: not the pod of that name now (named in a note), its PU
// or its Events.
func TestExplainNameAndUIDIsThePodOfThatUID(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-1", "node-a", holding(map[string]any{
		"puID": secondUID, "pod": "apps/web", "state": "idle", "age": "20s"}))
	f.addPod(corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: secondUID},
		Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	f.addEvent(podEvent("web", firstUID, "UIDChanged", time.Now().Add(-time.Minute)))
	f.addEvent(podEvent("web", secondUID, "SandboxChanged", time.Now()))

	for _, args := range [][]string{
		{"explain", "pod", "apps/web", "--uid", firstUID, "--node", "node-a"},
		{"explain", "pod", "--uid", firstUID, "--node", "node-a"},
	} {
		r := f.run(args...)
		assert.Equal(t, 0, r.code)
		assert.Contains(t, r.stdout, "Pod with UID "+firstUID+" (apps/web): no pod of that name has that UID in the API server", "%q", args)
		assert.Contains(t, r.stdout, "Note: the pod named apps/web now has UID "+secondUID, "%q", args)
		assert.Contains(t, r.stdout, "UIDChanged: destroyed PU "+firstUID, "%q", args)
		assert.NotContains(t, r.stdout, "PU "+secondUID+" of pod", "%q", args)
		assert.NotContains(t, r.stdout, "SandboxChanged", "%q", args)
		assert.NotContains(t, r.stdout, "Running", "%q", args)
	}
}

// explain.md:48 "For a live pod, only its node's programs are asked" and
// explain.md:54-56 (`--uid` alone names the pod from its PU, then asks the
// API server for the pod of that name). Asked by --uid alone, no Event
// names the pod; its PU on node-a's node agent does, and the pod is live on
// node-a. The answer tells it live on node-a, and its Note says the pod's
// node is not known.
func TestUIDAloneLiveNodeNotKnownNote(t *testing.T) {
	agentA := &programPages{at: askedAt, pus: []k8s.PUStatus{idlePUAt(askedAt, firstUID, "apps/web")}}
	agentB := &programPages{at: askedAt}
	ctrl := &programPages{at: askedAt}
	api := agentAndController(t, agentA, ctrl, workloadPod("apps", "web", firstUID, "node-a"),
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-b", "node-b"))
	api.handle("podsweeper/agent-b", agentB)
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "", "", firstUID, "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if x.Pod == nil {
		t.Skip("the pod is not told live")
	}
	if strings.Contains(out, "Note: the pod's node is not known") {
		t.Errorf("the answer tells the pod live on node %s, and says in a Note that its node is not known:\n%s", x.Pod.Node, out)
	}
	// That every node's programs were asked is documented (explain.md:50-51:
	// without Events or --node, every node's programs are asked): not checked.
}

// explain.md:455-457: `explain pod --uid UID --node NODE` that finds no PU and no Event of that UID names the other
// nodes' programs on a line `Not asked:`, and the answer cannot tell.
func TestUIDWithNodeNamesOtherNodes(t *testing.T) {
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a": statusPage(t, k8s.EngineRunning),
		"podsweeper/agent-b": statusPage(t, k8s.EngineRunning, idlePU(firstUID, "apps/web")),
	},
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning),
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-b", "node-b", corev1.PodRunning))
	x, err := c.explainPod(testContext(t), "", "", firstUID, "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, js := podTextAndJSON(t, x)
	wantSays(t, "the text", txt, "Not asked: the programs of the nodes but node-a")
	wantSays(t, "the text", txt, "podsweeper cannot tell")
	wantSays(t, "the JSON", js, `"unasked"`)
}

// explain pod --uid U --node node-b, for a pod U that lives on node-a, named
// by no Event: the cluster controller's PU of U names it, so the plugin
// finds it live on node-a after the programs were asked. node-a's node agent,
// a program of the pod's node that holds its PU, was not asked; the answer
// neither says so on a Not asked: line nor notes that the pod runs on
// another node than --node (as it does when an Event names the pod first),
// and it does not say it cannot tell.
func TestUIDWithAnotherNodeNamesTheUnaskedProgramsOfThePodsNode(t *testing.T) {
	now := time.Now().UTC()
	const uid = "6f1c2a4e-0000-0000-0000-000000000001"
	pu := `[{"puID":"` + uid + `","pod":"apps/web","state":"idle","age":"4m"}]`
	c, _ := clusterAndFake(t, map[string]http.Handler{
		"podsweeper/cc-abcde": rawPages{at: now, pages: map[string]rawAnswer{"/debug/podsweeper": {code: 200, body: pu}}},
		"podsweeper/agent-a":  rawPages{at: now, pages: map[string]rawAnswer{"/debug/podsweeper": {code: 200, body: pu}}},
		"podsweeper/agent-b":  rawPages{at: now, pages: map[string]rawAnswer{"/debug/podsweeper": {code: 200, body: `[]`}}},
	}, 5*time.Second,
		runningProgram("podsweeper-cluster-controller", "podsweeper", "cc-abcde", "node-c"),
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"),
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-b", "node-b"),
		webPod("node-a"))
	x, err := c.explainPod(context.Background(), "", "", uid, "node-b", now)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if !strings.Contains(out, "on node node-a") {
		t.Fatalf("the pod was not found live on node-a:\n%s", out)
	}
	if !strings.Contains(out, "not node-b") && !strings.Contains(out, "cannot tell") && !strings.Contains(out, "Not asked: ") {
		t.Fatalf("node-a's programs, of the pod's node, were not asked, and the answer says nothing of it:\n%s", out)
	}
}

// The same question with the pod's name: the pod is known before the
// programs are asked, and a Note says it runs on node-a, not node-b.
func TestNameUIDWithAnotherNodeNotes(t *testing.T) {
	now := time.Now().UTC()
	const uid = "6f1c2a4e-0000-0000-0000-000000000001"
	pu := `[{"puID":"` + uid + `","pod":"apps/web","state":"idle","age":"4m"}]`
	c, _ := clusterAndFake(t, map[string]http.Handler{
		"podsweeper/cc-abcde": rawPages{at: now, pages: map[string]rawAnswer{"/debug/podsweeper": {code: 200, body: pu}}},
		"podsweeper/agent-a":  rawPages{at: now, pages: map[string]rawAnswer{"/debug/podsweeper": {code: 200, body: pu}}},
		"podsweeper/agent-b":  rawPages{at: now, pages: map[string]rawAnswer{"/debug/podsweeper": {code: 200, body: `[]`}}},
	}, 5*time.Second,
		runningProgram("podsweeper-cluster-controller", "podsweeper", "cc-abcde", "node-c"),
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"),
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-b", "node-b"),
		webPod("node-a"))
	x, err := c.explainPod(context.Background(), "apps", "web", uid, "node-b", now)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if !strings.Contains(out, "the pod runs on node node-a, not node-b") {
		t.Fatalf("got:\n%s", out)
	}
}

// explain.md:45-51: --uid alone of a gone pod: named from its Events, its
// node read from them, that node's programs asked, and the pod of that name
// now (another) noted.
func TestUIDAloneGonePod(t *testing.T) {
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
