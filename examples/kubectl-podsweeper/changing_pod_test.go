package main

// A pod deleted, destroyed, recreated or moved while its programs are asked: asked again, and told as it is.

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// explain.md:8-11: "a PU is in the answer until it is destroyed, and the
// destroy's Event after (the Events are read again once the programs
// answered, ...). An Event of an earlier pod of that name (another UID,
// ...) is marked so: `(of an earlier pod of that name, UID …)`"; and
// explain.md:182-183: "The pod of that name now is another ...: its PU is
// held as any live pod's; the earlier pod's PU, under the earlier UID,
// goes".
// The pod apps/web (UID old) is read; before its node agent is asked, the
// StatefulSet recreates it (UID new) and the node agent destroys old's PU
// (its Event) and tracks new's. The plugin then tells new's PU as "of an
// earlier pod of that name", and old's destroy Event as the pod's now.
func TestRecreatedBetweenReads(t *testing.T) {
	now := time.Now().UTC()
	checked := now.Add(-1 * time.Second)
	api := newFakeCluster(t,
		podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"),
		workloadPod("apps", "web", "old-uid", "node-a"))
	gets := 0
	api.fake.PrependReactor("get", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.(k8stesting.GetAction).GetName() != "web" {
			return false, nil, nil
		}
		gets++
		if gets > 1 {
			return false, nil, nil
		}
		tr := api.fake.Tracker()
		gvr := corev1.SchemeGroupVersion.WithResource("pods")
		old, err := tr.Get(gvr, "apps", "web")
		if err != nil {
			return true, nil, err
		}
		// Meanwhile: recreated, and old's PU destroyed.
		_ = tr.Delete(gvr, "apps", "web")
		_ = tr.Add(workloadPod("apps", "web", "new-uid", "node-a"))
		_ = tr.Add(destroyEvent("apps", "web.1", "Pod", "apps", "web", "old-uid", now.Add(time.Second),
			"UIDChanged: destroyed PU old-uid of pod apps/web (no sandbox recorded)"))
		return true, old, nil
	})
	api.handle("podsweeper/agent-a", &anyPages{at: now, status: []k8s.PUStatus{{PUID: "new-uid", Pod: "apps/web",
		State: "idle", Age: "2s", LastChecked: &checked, LastRow: 9, Why: "same pod, same sandbox"}}})
	c := api.cluster(5 * time.Second)
	x, err := c.explainPod(context.Background(), "apps", "web", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if strings.Contains(out, "this PU is of an earlier pod of that name (UID new-uid)") {
		t.Errorf("the pod now's PU (new-uid) is told as of an earlier pod of that name:\n%s", out)
	}
	if !strings.Contains(out, "(of an earlier pod of that name, UID old-uid)") {
		t.Errorf("the destroy Event of the earlier pod (old-uid), read after it was recreated, is not marked as an earlier pod's:\n%s", out)
	}
}

// explain.md:8-10: a destroy after the programs answered is in the
// Events read again.
func TestDestroyAfterTheProgramsAnswered(t *testing.T) {
	now := time.Now().UTC()
	pages := &anyPages{at: now}
	api2 := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"))
	api2.handle("podsweeper/agent-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pages.ServeHTTP(w, r)
		if r.URL.Path == k8s.StatusPath {
			e := destroyEvent("default", "node-a.1", "Node", "", "node-a", "node-a", now, "PodGone: destroyed PU db-uid of pod apps/db (no sandbox recorded)")
			e.Related = &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "db", UID: "db-uid"}
			_ = api2.fake.Tracker().Add(e)
		}
	}))
	x, err := api2.cluster(5*time.Second).explainPod(context.Background(), "apps", "db", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "regarding Node/node-a: PodGone: destroyed PU db-uid") {
		t.Fatalf("a destroy after the programs answered is not told:\n%s", out)
	}
}

// explain.md:8-11: "so is the pod: one deleted or recreated meanwhile is told
// as it is then, with a `Note:`". Asked by name, the pod is gone at the first
// read and recreated (a StatefulSet's pod) while the programs are asked.
func TestPodRecreatedWhileAskedAfterGone(t *testing.T) {
	agent := &programPages{at: askedAt}
	ctrl := &programPages{at: askedAt}
	api := agentAndController(t, agent, ctrl)
	created := false
	api.onForward = func(ns, name string) {
		if !created {
			created = true
			if err := api.fake.Tracker().Add(workloadPod("apps", "web", secondUID, "node-a")); err != nil {
				t.Error(err)
			}
		}
	}
	// The node agent, asked after the pod came, holds its PU.
	agent.pus = []k8s.PUStatus{idlePUAt(askedAt, secondUID, "apps/web")}
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if x.Pod == nil || x.Pod.UID != secondUID {
		t.Errorf("the pod apps/web, created (UID %s) while its programs were asked, is not told as it is then: the answer says %q", secondUID, strings.SplitN(out, "\n", 2)[0])
	}
}

// explain.md:8-11 again, asked by --uid alone: the pod is named by an Event
// of its UID, live at first, and deleted while its programs are asked.
func TestPodDeletedWhileAskedByUIDAlone(t *testing.T) {
	agent := &programPages{at: askedAt}
	ctrl := &programPages{at: askedAt}
	ev := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: "apps", Name: "web.1"},
		InvolvedObject:      corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: types.UID(firstUID)},
		Reason:              k8s.EventReasonDestroyed,
		Type:                "Normal",
		Message:             "SandboxChanged: destroyed PU " + firstUID + " of pod apps/web (sandbox 111)",
		EventTime:           metav1.NewMicroTime(askedAt.Add(-time.Minute)),
		ReportingController: "podsweeper",
	}
	api := agentAndController(t, agent, ctrl, workloadPod("apps", "web", firstUID, "node-a"), ev)
	deleted := false
	api.onForward = func(ns, name string) {
		if !deleted {
			deleted = true
			if err := api.fake.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "apps", "web"); err != nil {
				t.Error(err)
			}
		}
	}
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "", "", firstUID, "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if x.Pod != nil {
		t.Errorf("the pod of UID %s, deleted while its programs were asked, is told as live: %q", firstUID, strings.SplitN(out, "\n", 2)[0])
	}
	if !strings.Contains(out, "Note: ") || !strings.Contains(out, "deleted") {
		t.Errorf("no Note says the pod was deleted meanwhile:\n%s", out)
	}
}

// The same, asked by name: holds.
func TestPodDeletedWhileAskedByName(t *testing.T) {
	agent := &programPages{at: askedAt}
	ctrl := &programPages{at: askedAt}
	api := agentAndController(t, agent, ctrl, workloadPod("apps", "web", firstUID, "node-a"))
	deleted := false
	api.onForward = func(ns, name string) {
		if !deleted {
			deleted = true
			_ = api.fake.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "apps", "web")
		}
	}
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if x.Pod != nil || !strings.Contains(out, "Note: the pod apps/web (UID "+firstUID+") was deleted while its programs were asked") {
		t.Fatalf("not told deleted:\n%s", out)
	}
}

// explain.md:48-49 "For a live pod, only its node's programs are asked" and
// explain.md:62-65 "so it does [say that it cannot tell what podsweeper
// knows of the pod] when a program of the pod's node was not asked ...,
// each named on a line `Not asked:`": the pod, live on node-a at the first
// read, is recreated on node-b while its programs are asked. The answer
// tells the new pod, live on node-b; node-b's node agent, which runs, was
// never asked, and nothing says so.
func TestPodRecreatedElsewhereWhileAsked(t *testing.T) {
	agentA := &programPages{at: askedAt}
	agentB := &programPages{at: askedAt, pus: []k8s.PUStatus{idlePUAt(askedAt, secondUID, "apps/web")}}
	ctrl := &programPages{at: askedAt}
	api := agentAndController(t, agentA, ctrl, workloadPod("apps", "web", firstUID, "node-a"),
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-b", "node-b"))
	api.handle("podsweeper/agent-b", agentB)
	moved := false
	api.onForward = func(ns, name string) {
		if !moved {
			moved = true
			gvr := corev1.SchemeGroupVersion.WithResource("pods")
			_ = api.fake.Tracker().Delete(gvr, "apps", "web")
			if err := api.fake.Tracker().Add(workloadPod("apps", "web", secondUID, "node-b")); err != nil {
				t.Error(err)
			}
		}
	}
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if x.Pod == nil || x.Pod.Node != "node-b" {
		t.Skipf("the new pod is not told: %s", out)
	}
	askedB := false
	for _, a := range x.Answers {
		askedB = askedB || a.Program.Node == "node-b"
	}
	if !askedB && len(x.Unasked) == 0 && !strings.Contains(out, "cannot tell") {
		t.Errorf("the pod is told live on node-b, whose node agent runs and was not asked (it holds PU %s), and nothing says so: neither a `Not asked:` line nor that it cannot tell:\n%s", secondUID, out)
	}
}

// explain.md:8-10 "the Events are read again once the programs answered, so
// a destroy between the two is in one of them" and explain.md:54-56
// "`--uid` alone names the pod from its Events, its PU or its dry run's
// report ..., then asks the API server for the pod of that name". Asked by
// --uid alone, the node agent destroys the PU (PodGone, an Event regarding
// the node that names the pod) between the first read of the Events and its
// answer. The second read has the Event; the answer lists it, and says in
// its first line that no Event names the pod.
func TestUIDAloneDestroyedWhileAsked(t *testing.T) {
	agent := &programPages{at: askedAt}
	ctrl := &programPages{at: askedAt}
	api := agentAndController(t, agent, ctrl)
	posted := false
	api.onForward = func(ns, name string) {
		if posted {
			return
		}
		posted = true
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: "node-a.1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-a"},
			Related:        &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: types.UID(firstUID)},
			Reason:         k8s.EventReasonDestroyed, Type: "Normal",
			Message:             "PodGone: destroyed PU " + firstUID + " of pod apps/web (sandbox 3a9f0c1b2d4e5)",
			EventTime:           metav1.NewMicroTime(askedAt.Add(time.Second)),
			ReportingController: "podsweeper",
		}
		if err := api.fake.Tracker().Add(ev); err != nil {
			t.Error(err)
		}
	}
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "", "", firstUID, "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if len(x.Events) == 0 {
		t.Skip("the Event was not read again")
	}
	if x.Name != "web" || x.Namespace != "apps" {
		t.Errorf("the Event of its destroy names the pod apps/web, and the answer does not: %q", strings.SplitN(out, "\n", 2)[0])
	}
	if strings.Contains(out, "no PU and no podsweeper Event names it") {
		t.Errorf("the answer says no podsweeper Event names the pod, and lists one that does:\n%s", out)
	}
}

// explain.md:52-54 "A pod that is gone and asked by name alone is every pod
// that had that name, one of which may hold a PU on another node than the
// Events name: every node's programs are asked, unless `--node` or `--uid`
// narrows it", and explain.md:61-62 (it says it cannot tell rather than
// that it knows nothing). The pod, live on node-a at the first read, is
// deleted while its programs are asked: the answer tells it gone, asked
// node-a's programs alone, and says podsweeper knows nothing of it, while
// node-b's node agent, never asked, holds the PU of an earlier pod of that
// name.
func TestDeletedWhileAskedConcludesKnowsNothing(t *testing.T) {
	const earlier = "11111111-2222-3333-4444-555555555555"
	agentA := &programPages{at: askedAt}
	agentB := &programPages{at: askedAt, pus: []k8s.PUStatus{idlePUAt(askedAt, earlier, "apps/web")}}
	ctrl := &programPages{at: askedAt}
	api := agentAndController(t, agentA, ctrl, workloadPod("apps", "web", firstUID, "node-a"),
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-b", "node-b"))
	api.handle("podsweeper/agent-b", agentB)
	deleted := false
	api.onForward = func(ns, name string) {
		if !deleted {
			deleted = true
			_ = api.fake.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "apps", "web")
		}
	}
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if x.Pod != nil {
		t.Skip("not told deleted")
	}
	if strings.Contains(out, "podsweeper knows nothing of this pod") {
		t.Errorf("the pod, gone and asked by name, is said to be known of nothing after node-a's programs alone were asked (node-b's node agent holds PU %s of apps/web):\n%s", earlier, out)
	}
}

// explain.md:8-10: by name, the PU destroyed between the first read of the
// Events and its program's answer: its Event is in the answer.
func TestDestroyedWhileAskedByName(t *testing.T) {
	api := agentAndController(t, &programPages{at: askedAt}, &programPages{at: askedAt})
	posted := false
	api.onForward = func(ns, name string) {
		if posted {
			return
		}
		posted = true
		_ = api.fake.Tracker().Add(&corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: "node-a.1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-a"},
			Related:        &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: types.UID(firstUID)},
			Reason:         k8s.EventReasonDestroyed, Type: "Normal", Message: "PodGone: destroyed PU " + firstUID,
			EventTime: metav1.NewMicroTime(askedAt.Add(-time.Second)), ReportingController: "podsweeper",
		})
	}
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if len(x.Events) != 1 || strings.Contains(out, "knows nothing") {
		t.Fatalf("%s", out)
	}
}

// explain.md:9-12: a pod deleted meanwhile is told as it is then, with a
// Note, and the programs are asked again (every node's, the pod gone).
func TestDeletedWhileAskedByNameAndUID(t *testing.T) {
	c := newFakeCluster(t, workloadPod("apps", "web", "U1", "node-a"),
		runningProgram("podsweeper-node-agent", "ps", "agent-a", "node-a"),
		runningProgram("podsweeper-node-agent", "ps", "agent-b", "node-b")).closingAnswers().listingEventsWhole()
	once := false
	c.handle("ps/agent-a", &programPages{at: askedAt, onStatus: func() {
		if !once {
			once = true
			_ = c.fake.CoreV1().Pods("apps").Delete(context.Background(), "web", metav1.DeleteOptions{})
		}
	}})
	c.handle("ps/agent-b", &programPages{at: askedAt, pus: []k8s.PUStatus{{PUID: "U1", Pod: "apps/web", State: "idle", Age: "1m"}}})
	x, err := c.inNamespace("").explainPod(testContext(t), "apps", "web", "U1", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	s := podText(t, x)
	if !strings.Contains(s, "was deleted while its programs were asked") || !strings.Contains(s, "PU U1 of pod apps/web") {
		t.Fatalf("got:\n%s", s)
	}
}

// explain.md:9-12: a pod recreated on another node meanwhile: the programs
// of its node now are asked.
func TestMovedWhileAskedByName(t *testing.T) {
	c := newFakeCluster(t, workloadPod("apps", "web", "U1", "node-a"),
		runningProgram("podsweeper-node-agent", "ps", "agent-a", "node-a"),
		runningProgram("podsweeper-node-agent", "ps", "agent-b", "node-b")).closingAnswers().listingEventsWhole()
	once := false
	c.handle("ps/agent-a", &programPages{at: askedAt, onStatus: func() {
		if !once {
			once = true
			_ = c.fake.CoreV1().Pods("apps").Delete(context.Background(), "web", metav1.DeleteOptions{})
			_, _ = c.fake.CoreV1().Pods("apps").Create(context.Background(), workloadPod("apps", "web", "U2", "node-b"), metav1.CreateOptions{})
		}
	}})
	c.handle("ps/agent-b", &programPages{at: askedAt, pus: []k8s.PUStatus{{PUID: "U2", Pod: "apps/web", State: "idle", Age: "1s"}}})
	x, err := c.inNamespace("").explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	s := podText(t, x)
	if !strings.Contains(s, "PU U2 of pod apps/web") || !strings.Contains(s, "Pod apps/web (UID U2) on node node-b") {
		t.Fatalf("got:\n%s", s)
	}
}

// explain.md:8-14: a pod recreated on another node while its node's programs are asked is asked again there, and the
// earlier pod's PU an earlier round read and the last round did not is named on a line `Not asked:`.
func TestRecreatedElsewhereAskedAgain(t *testing.T) {
	var c *cluster
	agent := onFirstRequest(statusPage(t, k8s.EngineRunning, idlePU(firstUID, "apps/web")), func() {
		cs := c.cs.(hybridCS).Clientset
		ctx := context.Background()
		_ = cs.CoreV1().Pods("apps").Delete(ctx, "web", metav1.DeleteOptions{})
		_, _ = cs.CoreV1().Pods("apps").Create(ctx, workloadPod("apps", "web", secondUID, "node-b"), metav1.CreateOptions{})
	})
	c = clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a": agent,
		"podsweeper/agent-b": statusPage(t, k8s.EngineRunning, idlePU(secondUID, "apps/web")),
	},
		workloadPod("apps", "web", firstUID, "node-a"),
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning),
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-b", "node-b", corev1.PodRunning))
	x, err := c.explainPod(testContext(t), "apps", "web", "", "", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := podTextAndJSON(t, x)
	wantSays(t, "the text", txt, "they were asked again")
	wantSays(t, "the text", txt, "PU "+secondUID+" of pod apps/web")
	wantSays(t, "the text", txt, "Not asked: PU "+firstUID+" of pod apps/web")
	wantSays(t, "the text", txt, "podsweeper cannot tell")
}

// docs/operating/explain.md:49-51: for a live pod the PU of an earlier pod of that name on another node is not
// shown; explain that pod by its UID (--uid), or ask that node with --node.
func TestMovedPodEarlierPUByUIDOrNode(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	c.addPod(*workloadPod("apps", "web", "u-new", "node-b"))
	old := recentPU("u-old", "apps/web")
	old.State, old.Attempts, old.LastError = "waiting for a retry", 3, "boom"
	c.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", statusAndReport([]k8s.PUStatus{old}, ""))
	c.addProgram("podsweeper-node-agent", "podsweeper", "agent-b", "node-b", statusAndReport([]k8s.PUStatus{recentPU("u-new", "apps/web")}, ""))
	code, out, errOut := c.run("explain", "pod", "apps/web").codeOutErr()
	if code != 0 || strings.Contains(out, "u-old") || !strings.Contains(out, "PU u-new") {
		t.Fatalf("by name: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = c.run("explain", "pod", "apps/web", "--node", "node-a").codeOutErr()
	if code != 0 || !strings.Contains(out, "PU u-old of pod apps/web") || !strings.Contains(out, "3 destroy call(s) failed") {
		t.Fatalf("--node: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = c.run("explain", "pod", "--uid", "u-old").codeOutErr()
	if code != 0 || !strings.Contains(out, "PU u-old of pod apps/web") || strings.Contains(out, "PU u-new") {
		t.Fatalf("--uid: exit %d\n%s\n%s", code, out, errOut)
	}
}

// docs/operating/explain.md:8-10: "a PU is in the answer until it is
// destroyed, and the destroy's Event after (the Events are read again once
// the programs answered, so a destroy between the two is in one of them".
func TestDestroyBetweenReads(t *testing.T) {
	a := newFakeAPI(t).spdyOnly().impersonating()
	ag := &mapProgram{}
	ag.onStatus = func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.events = append(a.events, corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "e1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-a"},
			Related:        &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: "uid-web-1"},
			Reason:         "PUDestroyed", Type: "Normal", Message: "PodGone: destroyed PU uid-web-1 of pod apps/web",
			EventTime: metav1.NewMicroTime(time.Now()), ReportingController: "podsweeper"})
	}
	a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", ag)
	out, errs, code := a.run("explain", "pod", "apps/web").outErrCode()
	if code != 0 || !strings.Contains(out, "destroyed PU uid-web-1") {
		t.Errorf("exit %d\n%s\n%s", code, out, errs)
	}
}

// The pod apps/web moves at every read: each Get of it answers a pod of a
// new UID on the other node. After three rounds, the programs of its node
// now are named Not asked, and the answer cannot tell.
func TestPodKeptMoving(t *testing.T) {
	now := time.Now().UTC()
	page := func(node string) http.Handler {
		return rawPages{at: now, pages: map[string]rawAnswer{"/debug/podsweeper": {code: 200, body: `[]`}}}
	}
	c, fc := clusterAndFake(t, map[string]http.Handler{
		"podsweeper/agent-a": page("node-a"), "podsweeper/agent-b": page("node-b"),
	}, 5*time.Second,
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"),
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-b", "node-b"))
	var n atomic.Int64
	fc.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		g := a.(k8stesting.GetAction)
		if g.GetNamespace() != "apps" || g.GetName() != "web" {
			return false, nil, nil
		}
		i := n.Add(1)
		node := "node-a"
		if i%2 == 0 {
			node = "node-b"
		}
		return true, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: types.UID("uid-" + string(rune('0'+i)))},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}, nil
	})
	x, err := c.explainPod(context.Background(), "apps", "web", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if strings.Contains(out, "knows nothing") || !strings.Contains(out, "Not asked:") || !strings.Contains(out, "cannot tell") {
		t.Fatalf("got:\n%s", out)
	}
	t.Logf("\n%s", out)
}

// explain.md:47-49: a gone pod asked by name alone: every node's programs are asked, whatever node its Events name.
func TestGoneByNameAsksEveryNode(t *testing.T) {
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

// explain.md: "the Events are read again once the programs answered, so a destroy between the two is in one of them
// once its Event is written", and a PU an earlier round read is named `Not asked:` only when the last round finds it
// neither held nor in an Event written since. The node agent answers with the pod's PU; the pod is then deleted and
// the agent destroys the PU, writing its Event, before the round reads the Events again: the next round finds the PU
// in no answer, and that Event accounts for it.
func TestADestroyEventWrittenWhileTheProgramsAreAskedAccountsForThePU(t *testing.T) {
	// Both hold a PU of the pod; whichever is asked first answers with it, then destroys it.
	agent := &programPages{at: askedAt, pus: []k8s.PUStatus{idlePUAt(askedAt, firstUID, "apps/web")}}
	ctrl := &programPages{at: askedAt, pus: []k8s.PUStatus{idlePUAt(askedAt, firstUID, "apps/web")}}
	api := agentAndController(t, agent, ctrl, workloadPod("apps", "web", firstUID, "node-a"))
	done, forwards := false, 0
	api.onForward = func(ns, name string) {
		if forwards++; forwards != 2 || done { // the second program asked: the first has answered
			return
		}
		done = true // the agent has answered: the pod goes, and the agent destroys its PU and writes its Event
		_ = api.fake.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "apps", "web")
		for _, p := range []*programPages{agent, ctrl} {
			p.mu.Lock()
			p.pus = nil
			p.mu.Unlock()
		}
		if err := api.fake.Tracker().Add(&corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: "apps", Name: "web.gone"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: types.UID(firstUID)},
			Reason:         k8s.EventReasonDestroyed, Type: "Normal", Message: "PodGone: destroyed PU " + firstUID + " of pod apps/web",
			EventTime: metav1.NewMicroTime(askedAt), ReportingController: "podsweeper",
		}); err != nil {
			t.Error(err)
		}
	}
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if !done || strings.Contains(out, "Not asked: PU") || strings.Contains(out, "cannot tell") || !strings.Contains(out, "web.gone") && !strings.Contains(out, "PodGone: destroyed PU") {
		t.Fatalf("the PU's destroy Event, written while the programs were asked, does not account for it:\n%s", out)
	}
}
