package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// TestCannotTellBesideAHeldPU: when a program could not be asked, or one of the pod's node was not asked, the answer
// says that it cannot tell all podsweeper knows of the pod, also when another program holds a PU of it: what the one
// not asked holds is not in the answer (docs/operating/explain.md, "When a program could not be asked").
func TestCannotTellBesideAHeldPU(t *testing.T) {
	now := time.Now()
	agent := Answer{Program: Program{Program: "node-agent", Namespace: "podsweeper", Pod: "agent-a", Node: "node-a"},
		PUs: []k8s.PUStatus{{PUID: "uid-web", Pod: "apps/web", State: "idle", Age: "1m"}}}
	for _, c := range []struct {
		name    string
		answers []Answer
		unasked []string
	}{
		{"a program could not be asked", []Answer{agent, {Program: Program{Program: "cni-gc", Namespace: "podsweeper", Pod: "cni-a", Node: "node-a"},
			Error: "connection refused"}}, nil},
		{"a program of the node was not asked", []Answer{agent}, []string{"cni-gc podsweeper/cni-a on node node-a is Pending: not asked."}},
	} {
		x := &PodExplanation{Now: now, Namespace: "apps", Name: "web", Pod: &Pod{Name: "web", Namespace: "apps", UID: "uid-web", Node: "node-a", Phase: "Running"},
			Answers: c.answers, Unasked: c.unasked}
		text := podText(t, x)
		if out := text; !strings.Contains(out, "PU uid-web of pod apps/web") || !strings.Contains(out, "podsweeper cannot tell all it knows of this pod") {
			t.Errorf("%s, beside the agent's PU: want the PU and that it cannot tell all it knows; got\n%s", c.name, out)
		}
	}
}

// TestAStatusPageOfNoPUsCannotTell: a status page that answers a list of something else than PUs ([{"hello":"world"}],
// a page of another server on the program's port) is no program's status page: as one that answers null, the answer
// says the program's page could not be read and that podsweeper cannot tell what it knows, never that it knows nothing.
func TestAStatusPageOfNoPUsCannotTell(t *testing.T) {
	for _, body := range []string{`[{"hello":"world"}]`, `[{"puID":"u1","state":"idle"}]`, `[{"puID":"u1","pod":"web","state":"idle"}]`} {
		c := newFakeCluster(t, runningProgram("podsweeper-node-agent", "ps", "agent-a", "node-a")).closingAnswers().listingEventsWhole()
		c.handle("ps/agent-a", rawStatus{body: body})
		x, err := c.inNamespace("").explainPod(testContext(t), "apps", "web", "", "", askedAt)
		if err != nil {
			t.Fatal(err)
		}
		text := podText(t, x)
		if out := text; strings.Contains(out, "knows nothing of this pod") || !strings.Contains(out, "is no PU") {
			t.Errorf("a status page answering %s: want it read as no program's page (\"is no PU\"), never \"knows nothing\"; got\n%s", body, out)
		}
	}
}

// TestAPodThatKeptChangingCannotTell: the pod is recreated on another node while each round asks its programs (or,
// at the last, deleted): after the last round the programs of its node now (or, for a pod gone, of the nodes where
// it ran before) were not asked, and may hold a PU of it. The answer names them on a `Not asked:` line and says it
// cannot tell all podsweeper knows of the pod, never that it knows nothing (docs/operating/explain.md, "When a
// program could not be asked").
func TestAPodThatKeptChangingCannotTell(t *testing.T) {
	for _, deleteLast := range []bool{false, true} {
		nodes := []string{"a", "b", "c", "d", "e"}
		agentA := &programPages{at: askedAt, pus: []k8s.PUStatus{idlePUAt(askedAt, "uid-a", "apps/web")}}
		objs := []runtime.Object{workloadPod("apps", "web", "uid-a", "node-a")}
		for _, n := range nodes[1:] {
			objs = append(objs, runningProgram("podsweeper-node-agent", "podsweeper", "agent-"+n, "node-"+n))
		}
		api := agentAndController(t, agentA, &programPages{at: askedAt}, objs...)
		for _, n := range nodes[1:] {
			api.handle("podsweeper/agent-"+n, &programPages{at: askedAt, pus: []k8s.PUStatus{idlePUAt(askedAt, "uid-"+n, "apps/web")}})
		}
		on, moves := 0, 0
		api.onForward = func(ns, name string) {
			if name != "agent-"+nodes[on] {
				return
			}
			gvr := corev1.SchemeGroupVersion.WithResource("pods")
			_ = api.fake.Tracker().Delete(gvr, "apps", "web")
			moves++
			if deleteLast && moves == maxRounds {
				return
			}
			on++
			if err := api.fake.Tracker().Add(workloadPod("apps", "web", "uid-"+nodes[on], "node-"+nodes[on])); err != nil {
				t.Error(err)
			}
		}
		x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", askedAt)
		if err != nil {
			t.Fatal(err)
		}
		out := podText(t, x)
		if len(x.Unasked) == 0 || !strings.Contains(out, "Not asked: ") || !strings.Contains(out, "cannot tell all it knows of this pod") ||
			strings.Contains(out, "knows nothing") {
			t.Errorf("the pod kept changing (deleted at the last round: %v), and the programs that hold its PU now were not asked: want a `Not asked:` line and that it cannot tell; got\n%s", deleteLast, out)
		}
	}
}

// TestAUIDAskedOnAnotherNodeThanItsPodsCannotTell: explain pod --uid U --node node-b, for a pod U that lives on
// node-a and that no Event and no PU of node-b's programs names. A live pod cannot be looked up by its UID: node-a's
// programs, which hold its PU, were not asked, and the answer must say it cannot tell, never that podsweeper knows
// nothing of the pod.
func TestAUIDAskedOnAnotherNodeThanItsPodsCannotTell(t *testing.T) {
	now := time.Now().UTC()
	const uid = "6f1c2a4e-0000-0000-0000-000000000001"
	pu := `[{"puID":"` + uid + `","pod":"apps/web","state":"idle","age":"4m"}]`
	c, _ := clusterAndFake(t, map[string]http.Handler{
		"podsweeper/agent-a": rawPages{at: now, pages: map[string]rawAnswer{"/debug/podsweeper": {code: 200, body: pu}}},
		"podsweeper/agent-b": rawPages{at: now, pages: map[string]rawAnswer{"/debug/podsweeper": {code: 200, body: `[]`}}},
	}, 5*time.Second,
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"),
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-b", "node-b"),
		webPod("node-a"))
	x, err := c.explainPod(context.Background(), "", "", uid, "node-b", now)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if strings.Contains(out, "knows nothing") || !strings.Contains(out, "cannot tell") || !strings.Contains(out, "Not asked: ") {
		t.Fatalf("node-a's programs, which hold the pod's PU, were not asked: want \"cannot tell\" and a Not asked: line; got\n%s", out)
	}
}

// TestAStaticPodBeyondTheCandidatesReadCannotTell: asked by a static pod's mirror UID, the plugin reads the pods the
// programs hold to find the one whose mirror it is, at most maxStaticCandidates of them, those held under a
// kubelet's UID (a hash, not a UUID) first. Among many pods held under UUIDs, the static pod is found, and its PU
// told; when it is among those not read (as many held under hashes before it), the answer must say it cannot tell,
// never that podsweeper knows nothing of the pod.
func TestAStaticPodBeyondTheCandidatesReadCannotTell(t *testing.T) {
	now := time.Now().UTC()
	const mirrorUID, kubeletUID = "6f1c2a4e-0000-0000-0000-0000000000ff", "ffffffffffffffffffffffffffffffff"
	for _, c := range []struct {
		name   string
		uidOf  func(i int) string
		wantPU bool
	}{
		{"others held under UUIDs", func(i int) string { return fmt.Sprintf("6f1c2a4e-0000-0000-0000-%012x", i) }, true},
		{"others held under kubelet UIDs", func(i int) string { return fmt.Sprintf("%032x", i) }, false},
	} {
		var pus []string
		objs := []runtime.Object{runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a")}
		for i := range maxStaticCandidates + 8 {
			name := fmt.Sprintf("web-%02d", i)
			pus = append(pus, fmt.Sprintf(`{"puID":%q,"pod":"apps/%s","state":"idle","age":"4m"}`, c.uidOf(i), name))
			objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, UID: types.UID(c.uidOf(i))},
				Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
		}
		// The static pod, in a namespace of its own and not named after its node: the last of the pods held.
		pus = append(pus, `{"puID":"`+kubeletUID+`","pod":"zz-static/proxy","state":"idle","age":"4m"}`)
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "zz-static", Name: "proxy", UID: mirrorUID,
			Annotations: map[string]string{corev1.MirrorPodAnnotationKey: kubeletUID}},
			Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
		cl, _ := clusterAndFake(t, map[string]http.Handler{
			"podsweeper/agent-a": rawPages{at: now, pages: map[string]rawAnswer{"/debug/podsweeper": {code: 200, body: "[" + strings.Join(pus, ",") + "]"}}},
		}, 5*time.Second, objs...)
		x, err := cl.explainPod(context.Background(), "", "", mirrorUID, "", now)
		if err != nil {
			t.Fatal(err)
		}
		out := podText(t, x)
		if told := strings.Contains(out, "PU "+kubeletUID+" of pod zz-static/proxy"); told != c.wantPU {
			t.Errorf("%s: the static pod's PU told: %v, want %v; got\n%s", c.name, told, c.wantPU, out)
		}
		if !c.wantPU && (strings.Contains(out, "knows nothing") || !strings.Contains(out, "cannot tell")) {
			t.Errorf("%s: the static pod is among the pods not read: want \"cannot tell\", never \"knows nothing\"; got\n%s", c.name, out)
		}
	}
}

// recreatingMirror is a node agent's pages whose every status read sees the kubelet recreate the static pod's mirror
// pod under a new UID (as it does when the mirror pod is deleted), annotated with the static pod's kubelet UID.
type recreatingMirror struct {
	rawPages
	fc      *fake.Clientset
	mirror  *corev1.Pod
	created int
}

func (m *recreatingMirror) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/debug/podsweeper" && m.fc != nil {
		m.created++
		p := m.mirror.DeepCopy()
		p.UID = types.UID(fmt.Sprintf("%s-%d", m.mirror.UID, m.created))
		pods := m.fc.CoreV1().Pods(p.Namespace)
		_ = pods.Delete(context.Background(), p.Name, metav1.DeleteOptions{})
		_, _ = pods.Create(context.Background(), p, metav1.CreateOptions{})
	}
	m.rawPages.ServeHTTP(w, r)
}

// TestAStaticPodsPUAnEarlierRoundToldIsToldWhileItsMirrorPodIsRecreated: explain pod of a static pod by its mirror
// pod's name and UID, while the kubelet recreates the mirror pod under a new UID at each question. The rounds that
// follow no longer read a pod of the UID asked, and the node agent still holds the static pod's PU under the
// kubelet's UID: that PU is told as held, never as one "the last round found in no answer".
func TestAStaticPodsPUAnEarlierRoundToldIsToldWhileItsMirrorPodIsRecreated(t *testing.T) {
	now := time.Now().UTC()
	const mirrorUID, kubeletUID = "6f1c2a4e-0000-0000-0000-0000000000ff", "ffffffffffffffffffffffffffffffff"
	mirror := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "proxy-node-a", UID: mirrorUID,
		Annotations: map[string]string{corev1.MirrorPodAnnotationKey: kubeletUID}},
		Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	agent := &recreatingMirror{mirror: mirror, rawPages: rawPages{at: now, pages: map[string]rawAnswer{"/debug/podsweeper": {code: 200,
		body: `[{"puID":"` + kubeletUID + `","pod":"kube-system/proxy-node-a","state":"idle","age":"4m"}]`}}}}
	c, fc := clusterAndFake(t, map[string]http.Handler{"podsweeper/agent-a": agent}, 5*time.Second,
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"), mirror)
	agent.fc = fc
	x, err := c.explainPod(context.Background(), "kube-system", "proxy-node-a", mirrorUID, "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if !strings.Contains(out, "PU "+kubeletUID+" of pod kube-system/proxy-node-a") || strings.Contains(out, "found it in no answer") {
		t.Fatalf("the node agent still holds the static pod's PU an earlier round told: want it told as held; got\n%s", out)
	}
}

// standbyPage is a program's pages whose status page says its engine does not run (k8s.EngineHeader), as a
// standby's does before it leads.
type standbyPage struct{ rawPages }

func (p standbyPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(k8s.EngineHeader, k8s.EngineNotRunning)
	p.rawPages.ServeHTTP(w, r)
}

// endedPage is a program's pages whose status page says its engine has ended (k8s.EngineHeader).
type endedPage struct{ rawPages }

func (p endedPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(k8s.EngineHeader, k8s.EngineEnded)
	p.rawPages.ServeHTTP(w, r)
}

// TestALeaderThatEndedBesideItsStandbyCannotTell: the cluster controller's leader has failed (its pod Failed), and
// its standby runs, not leading yet: its page holds no PU and says its engine does not run. What the leader held is
// told by no answer: explain pod of a gone pod must say it cannot tell, naming the leader as not asked, never that
// podsweeper knows nothing of the pod. Once the replica leads (its engine runs), its empty page is the answer.
func TestALeaderThatEndedBesideItsStandbyCannotTell(t *testing.T) {
	now := time.Now().UTC()
	empty := rawPages{at: now, pages: map[string]rawAnswer{"/debug/podsweeper": {code: 200, body: `[]`}}}
	leader := runningProgram("podsweeper-cluster-controller", "podsweeper", "cc-leader", "node-c")
	leader.Status.Phase = corev1.PodFailed
	for _, c := range []struct {
		name     string
		page     http.Handler
		cannot   bool
		notAsked string
	}{
		{"its standby does not lead", standbyPage{empty}, true, "Not asked: the leader of cluster-controller rel"},
		// explain.md: "when every replica of a program asked is a standby or has ended (its leader ended, and none
		// leads yet), its leader is named": the replica, in its grace period, ended too.
		{"the other replica has ended too", endedPage{empty}, true, "Not asked: the leader of cluster-controller rel"},
		{"the replica leads", empty, false, ""},
	} {
		cl, _ := clusterAndFake(t, map[string]http.Handler{"podsweeper/cc-standby": c.page}, 5*time.Second,
			leader, runningProgram("podsweeper-cluster-controller", "podsweeper", "cc-standby", "node-d"))
		x, err := cl.explainPod(context.Background(), "apps", "gone", "", "", now)
		if err != nil {
			t.Fatal(err)
		}
		out := podText(t, x)
		if cannot := strings.Contains(out, "cannot tell"); cannot != c.cannot || cannot == strings.Contains(out, "knows nothing") ||
			!strings.Contains(out, c.notAsked) {
			t.Errorf("%s: want \"cannot tell\" %v (and %q); got\n%s", c.name, c.cannot, c.notAsked, out)
		}
	}
}

// explain.md: a cni-gc of the node not asked is named on a line `Not asked:`, "and the answer then cannot tell all
// that holds the address, as it cannot before a round of cni-gc's sweep has read host-local's reservations": also
// when the cni-gc asked tells an attachment that holds it.
func TestExplainIPHeldCannotTellAllBesideAnUnaskedCNIGCOrBeforeASweep(t *testing.T) {
	read := clockNow.Add(-12 * time.Second)
	for _, c := range []struct {
		name  string
		other bool       // a second cni-gc of the node, which cannot be asked
		read  *time.Time // when a sweep read host-local's reservations
		want  string
	}{
		{"a cni-gc not asked", true, &read, "a cni-gc of the node could not be asked"},
		{"no sweep yet", false, nil, "no round of its sweep has read host-local's reservations yet"},
		{"all asked, swept", false, &read, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs := []runtime.Object{runningProgram("podsweeper-cni-gc", "kube-system", "cni-b", "node-a"), workloadPod("apps", "web", firstUID, "node-a")}
			if c.other {
				objs = append(objs, runningProgram("podsweeper-cni-gc", "kube-system", "cni-a", "node-a")) // no handler: it cannot be asked
			}
			api := newFakeCluster(t, objs...)
			api.handle("kube-system/cni-b", &programPages{at: clockNow, addresses: map[string]*AddressStatus{"10.88.0.4": heldAddress(c.read)},
				pus: []k8s.PUStatus{idlePU(firstUID, "apps/web")}})
			x, err := api.cluster(5*time.Second).explainIP(testContext(t), "10.88.0.4", "node-a", clockNow)
			if err != nil {
				t.Fatal(err)
			}
			text := ipText(t, x)
			if !x.Held() {
				t.Fatalf("scenario: the address is held:\n%s", text)
			}
			if c.want == "" {
				wantNotSays(t, "explain ip", text, "cannot tell all")
				return
			}
			wantSays(t, "explain ip", text, "cni-gc cannot tell all that holds this address: "+c.want)
		})
	}
}

// explain.md: "A dry run keeps its latest reports only: when none of the pod's is among them, the answer says it
// cannot tell, not that podsweeper knows nothing". A dry run's program that restarted (its pod's restart count) lost
// the reports it made before with its process: of a gone pod that nothing holds and no Event names, the answer cannot
// tell; never that podsweeper knows nothing. The program's restarts are read from its pod.
func TestADryRunThatRestartedCannotTell(t *testing.T) {
	agent := runningProgram("podsweeper-node-agent", "ps", "agent-a", "node-a")
	agent.Spec.Containers = []corev1.Container{{Name: "node-agent", Args: []string{"--dry-run"}}}
	agent.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "node-agent", RestartCount: 1}}
	c := newFakeCluster(t, agent).closingAnswers().listingEventsWhole()
	c.handle("ps/agent-a", &programPages{pus: []k8s.PUStatus{}, dry: &dryRunPage{Reports: []k8s.WouldDestroy{}}})
	x, err := c.inNamespace("").explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	text := podText(t, x)
	if strings.Contains(text, "knows nothing of this pod") || !strings.Contains(text, "a dry run's program restarted") {
		t.Errorf("a dry run that restarted, its earlier reports gone: want \"cannot tell\"; got\n%s", text)
	}
}
