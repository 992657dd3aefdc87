package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

const ()

// agentAndController: a node agent on node-a and a cluster controller, each serving p.
func agentAndController(t *testing.T, agent, ctrl *programPages, objs ...runtime.Object) *fakeCluster {
	objs = append(objs,
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"),
		runningProgram("podsweeper-cluster-controller", "podsweeper", "ctrl-1", "node-c"))
	api := newFakeCluster(t, objs...).streamingAnswers()
	api.handle("podsweeper/agent-a", agent)
	api.handle("podsweeper/ctrl-1", ctrl)
	return api
}

// A live pod by name: the harness answers as documented.
func TestAuditHoldsLivePodByName(t *testing.T) {
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

// explain.md:8-11: "so is the pod: one deleted or recreated meanwhile is told
// as it is then, with a `Note:`". Asked by name, the pod is gone at the first
// read and recreated (a StatefulSet's pod) while the programs are asked.
func TestAuditPodRecreatedWhileAskedAfterGone(t *testing.T) {
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
func TestAuditPodDeletedWhileAskedByUIDAlone(t *testing.T) {
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
func TestAuditHoldsPodDeletedWhileAskedByName(t *testing.T) {
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
func TestAuditPodRecreatedElsewhereWhileAsked(t *testing.T) {
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

// explain.md:75-77: "`--timeout` ... bounds each program's question whole".
func TestAuditHoldsTimeoutBoundsASlowProgram(t *testing.T) {
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

// explain.md:80-84: a program's times are told from when its page began to
// answer, on its own clock (TimeHeader), whatever the two clocks.
func TestAuditHoldsTimesFromTheProgramsClock(t *testing.T) {
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
	if !strings.Contains(out, "last check    5s ago") || !strings.Contains(out, "next in 7s") || !strings.Contains(out, "(30s ago)") {
		t.Fatalf("times not told from the program's clock:\n%s", out)
	}
}

// explain.md:74-75: "An Event series is told at its first time, whose note
// it keeps, with its count and its last time"; explain.md:11-12: an Event
// of an earlier pod of that name is marked so; Events regarding the node.
func TestAuditHoldsEventSeriesEarlierAndNode(t *testing.T) {
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

// explain.md:13-14, 54-56: a static pod asked by its mirror pod's UID alone,
// its PU under the kubelet's UID on a node's program named <name>-<node>.
func TestAuditHoldsStaticPodByMirrorUIDAlone(t *testing.T) {
	const kubelet, mirror = "aaaaaaaa-0000-0000-0000-00000000000k", "bbbbbbbb-0000-0000-0000-00000000000m"
	agent := &programPages{at: askedAt, pus: []k8s.PUStatus{idlePUAt(askedAt, kubelet, "kube-system/etcd-node-a")}}
	ctrl := &programPages{at: askedAt, pus: []k8s.PUStatus{idlePUAt(askedAt, mirror, "kube-system/etcd-node-a")}}
	mp := workloadPod("kube-system", "etcd-node-a", mirror, "node-a")
	mp.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: kubelet}
	api := agentAndController(t, agent, ctrl, mp)
	for _, uid := range []string{mirror, kubelet} {
		x, err := api.cluster(5*time.Second).explainPod(testContext(t), "", "", uid, "", askedAt)
		if err != nil {
			t.Fatal(err)
		}
		out := podText(t, x)
		if x.Pod == nil || !strings.Contains(out, "PU "+kubelet) || !strings.Contains(out, "PU "+mirror) {
			t.Errorf("asked by %s:\n%s", uid, out)
		}
	}
}

// explain.md:69-71: a dry run's cut reports: it cannot tell.
func TestAuditHoldsCutReportsCannotTell(t *testing.T) {
	agent := &programPages{at: askedAt, dry: &dryRunPage{Total: 1200, Reports: []k8s.WouldDestroy{{At: askedAt, PUID: "x", Pod: "apps/other", Reason: "PodGone", Row: 1}}}}
	ctrl := &programPages{at: askedAt}
	api := agentAndController(t, agent, ctrl)
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "node-a", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if strings.Contains(out, "knows nothing") || !strings.Contains(out, "cannot tell") {
		t.Fatalf("%s", out)
	}
}

// explain.md:123-128: a port-forward the user may not create: one line, forbidden.
func TestAuditHoldsForbiddenPortForward(t *testing.T) {
	agent := &programPages{at: askedAt}
	ctrl := &programPages{at: askedAt}
	api := agentAndController(t, agent, ctrl, workloadPod("apps", "web", firstUID, "node-a"))
	api.refuseSPDY["podsweeper/agent-a"] = podsForbidden("agent-a", `pods "agent-a" is forbidden: User "sre" cannot create resource "pods/portforward"`)
	_, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", askedAt)
	want := "forbidden: you may not create pods/portforward in namespace podsweeper: the Role <fullname>-explain of the programs' chart, in namespace podsweeper grants it (docs/operating/explain.md says how to bind it)"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v", err)
	}
}

// explain.md:77-78 "`explain ip` asks each cni-gc of the node in turn until
// one answers for that address" and 80-84: its times from its own pages'
// clocks, `at` for the address page and `pusAt` for the status page.
func TestAuditHoldsExplainIPSecondCNIGCAndItsClock(t *testing.T) {
	skew := askedAt.Add(-2 * time.Hour)
	written := skew.Add(-4 * time.Minute)
	gc := &programPages{at: skew, pus: []k8s.PUStatus{idlePUAt(askedAt, firstUID, "apps/web")},
		addresses: map[string]*AddressStatus{"10.88.0.4": {IP: "10.88.0.4", Attachments: []AttachmentStatus{{Network: "podnet", ContainerID: "3a9f0c1b2d4e5", IfName: "eth0",
			PodNamespace: "apps", PodName: "web", PodUID: firstUID, Written: written}}}}}
	lc := skew.Add(-5 * time.Second)
	gc.pus[0].LastChecked = &lc
	api := newFakeCluster(t,
		runningProgram("podsweeper-cni-gc", "kube-system", "cni-gc-a1", "node-a", "--status-bind-address=0"),
		runningProgram("podsweeper-cni-gc", "kube-system", "cni-gc-a2", "node-a"),
		workloadPod("apps", "web", firstUID, "node-a")).streamingAnswers()
	api.handle("kube-system/cni-gc-a2", gc)
	x, err := api.cluster(5*time.Second).explainIP(testContext(t), "10.88.0.4", "node-a", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := ipText(t, x)
	t.Log(out)
	if !strings.Contains(out, "cni-gc kube-system/cni-gc-a2 (node node-a):") || !strings.Contains(out, "added 4m0s ago") ||
		!strings.Contains(out, "last check  5s ago") || !strings.Contains(out, "pod         live on node node-a: Running.") {
		t.Fatalf("%s", out)
	}
}

// explain.md:299-301: cni-gc's status page cannot be read: the address's
// answer stands, and a line says its PUs are not told.
func TestAuditHoldsExplainIPStatusPage503(t *testing.T) {
	gc := &programPages{at: askedAt, status: 503, body: "the deletion engine has not listed its Inventory yet",
		addresses: map[string]*AddressStatus{"10.88.0.4": {IP: "10.88.0.4", Attachments: []AttachmentStatus{{Network: "podnet", ContainerID: "3a9f0c1b2d4e5", IfName: "eth0",
			PodNamespace: "apps", PodName: "web", PodUID: firstUID, Written: askedAt.Add(-time.Minute)}}}}}
	api := newFakeCluster(t, runningProgram("podsweeper-cni-gc", "kube-system", "cni-gc-a", "node-a"), workloadPod("apps", "web", firstUID, "node-a")).streamingAnswers()
	api.handle("kube-system/cni-gc-a", gc)
	x, err := api.cluster(5*time.Second).explainIP(testContext(t), "10.88.0.4", "node-a", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := ipText(t, x)
	t.Log(out)
	if x.PUsError == "" || !strings.Contains(out, "its PUs are not told") || !strings.Contains(out, "attachment    network podnet") {
		t.Fatalf("%s", out)
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
func TestAuditUIDAloneDestroyedWhileAsked(t *testing.T) {
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

// explain.md:62-65: the answer says it cannot tell "when a program of the
// pod's node was not asked (its pod ... ended (Failed) with none in its
// place ...), each named on a line `Not asked:`". Two releases of the node
// agent run on node-a (two policy engines, say); release "one"'s pod there
// has Failed and nothing of release "one" runs in its place. Release
// "two"'s pod, another program's pod of another release, is taken for its
// replacement: release one's is not named, and the answer says nothing holds
// a PU of the pod.
func TestAuditFailedProgramOfAnotherReleaseNotNamed(t *testing.T) {
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

// explain.md:426-427 and 437-441: nothing listens (connection refused), the
// kubelet refuses the API server (403, while the user may): could not be
// asked, and the other programs are asked all the same.
func TestAuditHoldsCouldNotBeAskedNotForbidden(t *testing.T) {
	agent := &programPages{at: askedAt}
	ctrl := &programPages{at: askedAt, pus: []k8s.PUStatus{idlePUAt(askedAt, firstUID, "apps/web")}}
	api := agentAndController(t, agent, ctrl, workloadPod("apps", "web", firstUID, "node-a"))
	api.noListener = map[string]bool{"podsweeper/agent-a": true}
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if !strings.Contains(out, "node-agent podsweeper/agent-a (node node-a) could not be asked:") || !strings.Contains(out, "connection refused") ||
		!strings.Contains(out, "PU "+firstUID) {
		t.Fatalf("%s", out)
	}
	api.noListener = nil
	api.refuseSPDY["podsweeper/agent-a"] = podsForbidden("agent-a", `pods "agent-a" is forbidden: User "sre" cannot create resource "pods/portforward"`)
	api.fake.PrependReactor("create", "selfsubjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		r := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = true
		return true, r, nil
	})
	x, err = api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatalf("the kubelet's refusal is no refusal of the user's: %v", err)
	}
	out = podText(t, x)
	if !strings.Contains(out, "node-agent podsweeper/agent-a (node node-a) could not be asked: port-forward to pod podsweeper/agent-a") {
		t.Fatalf("%s", out)
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
func TestAuditDeletedWhileAskedConcludesKnowsNothing(t *testing.T) {
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

// explain.md:79 "`report`'s HELD column follows a PU's latest report", and
// the cut reports' note.
func TestAuditHoldsReportHeldFollowsLatest(t *testing.T) {
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

// explain.md:54 "`--uid` alone names the pod from ... its dry run's report".
func TestAuditHoldsUIDAloneNamedByDroppedReport(t *testing.T) {
	agent := &programPages{at: askedAt, dry: &dryRunPage{Total: 1, Reports: []k8s.WouldDestroy{
		{At: askedAt.Add(-30 * time.Second), PUID: firstUID, Pod: "apps/web", Reason: "PodGone", Row: 1, Why: "pod not found", Dropped: true}}}}
	ctrl := &programPages{at: askedAt}
	api := agentAndController(t, agent, ctrl)
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "", "", firstUID, "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if x.Name != "web" || !strings.Contains(out, "Pod with UID "+firstUID+" (apps/web): no pod of that name has that UID") ||
		!strings.Contains(out, "no longer held (its pod is gone for good)") || !strings.Contains(out, "(30s ago)") {
		t.Fatalf("%s", out)
	}
}

// explain.md:80-84: without a TimeHeader (an older image), times are told
// from when the page began to answer, not from when its last byte came.
func TestAuditHoldsSlowBodyWithoutTimeHeader(t *testing.T) {
	api := agentAndController(t, &programPages{}, &programPages{}, workloadPod("apps", "web", firstUID, "node-a"))
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

// explain.md:48 "For a live pod, only its node's programs are asked" and
// explain.md:54-56 (`--uid` alone names the pod from its PU, then asks the
// API server for the pod of that name). Asked by --uid alone, no Event
// names the pod; its PU on node-a's node agent does, and the pod is live on
// node-a. The answer tells it live on node-a, and its Note says the pod's
// node is not known.
func TestAuditUIDAloneLiveNodeNotKnownNote(t *testing.T) {
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

// explain.md:296-299: a cache entry or a reservation file that holds the
// address and that cni-gc never touches is told with why; and its frees.
func TestAuditHoldsExplainIPNeverTouchedAndFreed(t *testing.T) {
	read := askedAt.Add(-12 * time.Second)
	gc := &programPages{at: askedAt, addresses: map[string]*AddressStatus{"10.88.0.9": {IP: "10.88.0.9",
		Attachments: []AttachmentStatus{{Network: "podnet", ContainerID: "c0ffee", IfName: "eth0", Written: askedAt.Add(-time.Hour),
			File: "/var/lib/cni/results/podnet-c0ffee-eth0", NeverTouched: "it is of no pod (no K8S_POD_NAME in its CNI_ARGS)"}},
		Reservations: []ReservationStatus{{Network: "podnet", File: "/var/lib/cni/networks/podnet/10.88.0.9", ContainerID: "beef", IfName: "eth0",
			Reserved: askedAt.Add(-time.Hour), State: "never touched", Decision: FreeDecision{At: read, Row: -1, Why: "its network's directory is a link", Verdict: "keep"}}},
		ReservationsRead: &read,
		Freed: []FreedAddress{{At: askedAt.Add(-42 * time.Second), Network: "podnet", ContainerID: "dead", IfName: "eth0", PodNamespace: "apps", PodName: "web", PodUID: firstUID,
			Decision: FreeDecision{At: askedAt.Add(-42 * time.Second), Reason: "PodGone", Row: 3, Why: "w", Verdict: "free"}}}}}}
	api := newFakeCluster(t, runningProgram("podsweeper-cni-gc", "kube-system", "cni-gc-a", "node-a"), workloadPod("apps", "web", secondUID, "node-a")).streamingAnswers()
	api.handle("kube-system/cni-gc-a", gc)
	x, err := api.cluster(5*time.Second).explainIP(testContext(t), "10.88.0.9", "node-a", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := ipText(t, x)
	t.Log(out)
	for _, want := range []string{"freeing     never: cni-gc does not use this entry: it is of no pod (no K8S_POD_NAME in its CNI_ARGS).",
		"never touched, as the sweep 12s ago decided by no row of the freeing table: its network's directory is a link.",
		"freed         42s ago: the attachment of pod apps/web", "gone: the pod of that name now is another (UID " + secondUID + ")."} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

// explain.md:442-447: when no SelfSubjectAccessReview can be made, the
// refusal's own status decides.
func TestAuditHoldsForbiddenFromTheStatusWithoutReview(t *testing.T) {
	api := agentAndController(t, &programPages{at: askedAt}, &programPages{at: askedAt}, workloadPod("apps", "web", firstUID, "node-a"))
	api.refuseSPDY["podsweeper/agent-a"] = podsForbidden("agent-a", `pods "agent-a" is forbidden: User "sre" cannot create resource "pods/portforward"`)
	api.fake.PrependReactor("create", "selfsubjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, fmt.Errorf("the API server did not answer")
	})
	_, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err == nil || !strings.HasPrefix(err.Error(), "forbidden: you may not create pods/portforward in namespace podsweeper") {
		t.Fatalf("got %v", err)
	}
}

// explain.md:8-10: by name, the PU destroyed between the first read of the
// Events and its program's answer: its Event is in the answer.
func TestAuditHoldsDestroyedWhileAskedByName(t *testing.T) {
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
