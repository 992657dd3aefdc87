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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

func TestAuditHoldsLivePodPUToldThroughAPortForward(t *testing.T) {
	c := newFakeCluster(t, workloadPod("apps", "web", "U1", "node-a"),
		runningProgram("podsweeper-node-agent", "ps", "agent-a", "node-a")).closingAnswers().listingEventsWhole()
	c.handle("ps/agent-a", &programPages{at: askedAt, pus: []k8s.PUStatus{{PUID: "U1", Pod: "apps/web", State: "idle", Age: "1m"}}})
	x, err := c.inNamespace("").explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	if !strings.Contains(b.String(), "PU U1 of pod apps/web") {
		t.Fatalf("got:\n%s", b.String())
	}
}

func etcdMirror() *corev1.Pod {
	p := workloadPod("kube-system", "etcd-node-a", "MIRROR", "node-a")
	p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "KUBELET"}
	return p
}

// explain.md:14-15: "A static pod is one pod under its two UIDs (the
// kubelet's, and its mirror pod's in the API server): asked by either, with
// `--uid` alone too, the PUs under both are told." Asked by the kubelet's
// UID alone, while the node agent just restarted (503), the cluster
// controller's PU under the mirror pod's UID is not told.
func TestAuditStaticPodByKubeletUIDAloneControllerPU(t *testing.T) {
	c := newFakeCluster(t, etcdMirror(),
		runningProgram("podsweeper-node-agent", "ps", "agent-a", "node-a"),
		runningProgram("podsweeper-cluster-controller", "ps", "ctrl", "")).closingAnswers().listingEventsWhole()
	c.handle("ps/agent-a", &programPages{at: askedAt, status: 503, body: "not yet\n"})
	c.handle("ps/ctrl", &programPages{at: askedAt, pus: []k8s.PUStatus{{PUID: "MIRROR", Pod: "kube-system/etcd-node-a", State: "idle", Age: "1m"}}})
	x, err := c.inNamespace("").explainPod(testContext(t), "", "", "KUBELET", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	if !strings.Contains(b.String(), "PU MIRROR of pod kube-system/etcd-node-a") {
		t.Fatalf("asked by the kubelet's UID alone, the controller's PU under the mirror pod's UID is not told:\n%s", b.String())
	}
}

// explain.md:70-71: "A dry run keeps its latest reports only: when none of
// the pod's is among them, the answer says it cannot tell, not that
// podsweeper knows nothing." When another program holds a PU of the pod,
// the dry run whose reports were cut is said to hold none of it, and
// nothing says that its earlier reports may have been of it.
func TestAuditCutReportsBesideAHolderSaysNothing(t *testing.T) {
	c := newFakeCluster(t,
		runningProgram("podsweeper-node-agent", "ps", "agent-a", "node-a", "--dry-run"),
		runningProgram("podsweeper-cluster-controller", "ps", "ctrl", "")).closingAnswers().listingEventsWhole()
	c.handle("ps/agent-a", &programPages{at: askedAt, dry: &dryRunPage{Total: 1500,
		Reports: []k8s.WouldDestroy{{At: askedAt, PUID: "OTHER", Pod: "apps/other", Reason: "PodGone", Row: 1, Why: "pod not found"}}}})
	c.handle("ps/ctrl", &programPages{at: askedAt, pus: []k8s.PUStatus{{PUID: "U1", Pod: "apps/web", State: "waiting for a retry", Age: "3m", Attempts: 2}}})
	x, err := c.inNamespace("").explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	if !strings.Contains(b.String(), "cannot tell") {
		t.Fatalf("the dry run kept 1 of its 1500 reports, none of this pod, and the answer does not say it cannot tell:\n%s", b.String())
	}
}

// explain.md:9-12: a pod deleted meanwhile is told as it is then, with a
// Note, and the programs are asked again (every node's, the pod gone).
func TestAuditHoldsDeletedWhileAskedByNameAndUID(t *testing.T) {
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
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	s := b.String()
	if !strings.Contains(s, "was deleted while its programs were asked") || !strings.Contains(s, "PU U1 of pod apps/web") {
		t.Fatalf("got:\n%s", s)
	}
}

// explain.md:9-12: a pod recreated on another node meanwhile: the programs
// of its node now are asked.
func TestAuditHoldsMovedWhileAskedByName(t *testing.T) {
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
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	s := b.String()
	if !strings.Contains(s, "PU U2 of pod apps/web") || !strings.Contains(s, "Pod apps/web (UID U2) on node node-b") {
		t.Fatalf("got:\n%s", s)
	}
}

// addressPages serves cni-gc's address page beside programPages.
type addressPages struct {
	programPages
	addr AddressStatus
}

func (p *addressPages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == addressPath {
		w.Header().Set(k8s.TimeHeader, p.at.Format(time.RFC3339Nano))
		_ = json.NewEncoder(w).Encode(p.addr)
		return
	}
	p.programPages.ServeHTTP(w, r)
}

// explain.md:73-75 and 290-291: an attachment of a static pod (the
// kubelet's UID in libcni's cache) is told live, with cni-gc's PU of it.
func TestAuditHoldsIPStaticPodAttachment(t *testing.T) {
	c := newFakeCluster(t, etcdMirror(), runningProgram("podsweeper-cni-gc", "kube-system", "cni-a", "node-a")).closingAnswers().listingEventsWhole()
	c.handle("kube-system/cni-a", &addressPages{programPages: programPages{at: askedAt, pus: []k8s.PUStatus{{PUID: "KUBELET", Pod: "kube-system/etcd-node-a", State: "idle", Age: "1h"}}},
		addr: AddressStatus{IP: "10.88.0.6", Attachments: []AttachmentStatus{{Network: "podnet", ContainerID: "sb1", IfName: "eth0",
			PodNamespace: "kube-system", PodName: "etcd-node-a", PodUID: "KUBELET", Written: askedAt.Add(-time.Hour)}}}})
	x, err := c.inNamespace("").explainIP(testContext(t), "10.88.0.6", "node-a", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderIP(&b, x)
	s := b.String()
	if !strings.Contains(s, "pod         live on node node-a") || !strings.Contains(s, "PU          tracked 1h") {
		t.Fatalf("got:\n%s", s)
	}
}

// explain.md:63-66: a program of the pod's node that ended (Failed) with
// none in its place is named on a line "Not asked:".
func TestAuditHoldsFailedAgentNamedNotAsked(t *testing.T) {
	failed := runningProgram("podsweeper-node-agent", "ps", "agent-a", "node-a")
	failed.Status.Phase = corev1.PodFailed
	c := newFakeCluster(t, workloadPod("apps", "web", "U1", "node-a"), failed,
		runningProgram("podsweeper-node-agent", "ps", "agent-b", "node-b")).closingAnswers().listingEventsWhole()
	c.handle("ps/agent-b", &programPages{at: askedAt})
	x, err := c.inNamespace("").explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	s := b.String()
	if !strings.Contains(s, "Not asked: node-agent ps/agent-a on node node-a is Failed") || !strings.Contains(s, "cannot tell all") {
		t.Fatalf("got:\n%s", s)
	}
}

// explain.md:75-76: an Event series is told at its first time, with its
// count and its last time; explain.md:12-13 one of an earlier pod is marked.
func TestAuditHoldsSeriesOfEarlierPodOnNode(t *testing.T) {
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
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	s := b.String()
	if !strings.Contains(s, "10m0s ago  Normal PUDestroyed, regarding Node/node-b (of an earlier pod of that name, UID U0) (3 times, the last 2m0s ago; the note is the first's): PodGone: destroyed PU U0 of pod apps/web (first)") {
		t.Fatalf("got:\n%s", s)
	}
}

// explain.md:124-125 and 449-450: a read the user may not make is one line
// that says which permission is missing.
func TestAuditHoldsForbiddenListEvents(t *testing.T) {
	c := newFakeCluster(t, workloadPod("apps", "web", "U1", "node-a")).closingAnswers().listingEventsWhole()
	c.fake.PrependReactor("list", "events", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", errors.New("RBAC: denied"))
	})
	c.fake.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
		r := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = r.Spec.ResourceAttributes.Resource != "events"
		return true, r, nil
	})
	_, err := c.inNamespace("").explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err == nil || !strings.HasPrefix(err.Error(), "forbidden: you may not list events in namespace apps: the ClusterRole <fullname>-explain") {
		t.Fatalf("got %v", err)
	}
}

// explain.md:80-85: report's HELD column follows a PU's latest report, and
// WHEN is told from when the report page answered, on the program's clock.
func TestAuditHoldsReportHeldAndWhenOnItsClock(t *testing.T) {
	skew := askedAt.Add(-time.Hour) // the program's clock is an hour behind
	c := newFakeCluster(t, runningProgram("podsweeper-node-agent", "ps", "agent-a", "node-a", "--dry-run")).closingAnswers().listingEventsWhole()
	c.handle("ps/agent-a", &programPages{at: skew, dry: &dryRunPage{Total: 2, Reports: []k8s.WouldDestroy{
		{At: skew.Add(-30 * time.Second), PUID: "U1", Pod: "apps/web", Reason: "SandboxDead", Row: 12, Why: "sandbox dead"},
		{At: skew.Add(-10 * time.Second), PUID: "U1", Pod: "apps/web", Reason: "PodGone", Row: 1, Why: "pod not found", Dropped: true},
	}}})
	cl := c.inNamespace("")
	ts, _, err := cl.programs(testContext(t), "", true)
	if err != nil {
		t.Fatal(err)
	}
	answers, _, err := cl.askAll(testContext(t), ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderReport(&b, &Report{Now: askedAt, Answers: answers})
	s := b.String()
	if strings.Count(s, "no: pod gone") != 2 || !strings.Contains(s, "30s ago") || !strings.Contains(s, "10s ago") {
		t.Fatalf("got:\n%s", s)
	}
}

// explain.md:67-69: a program whose engine has not listed its Inventory
// yet answers 503 and could not be asked.
func TestAuditHoldsStatus503CouldNotBeAsked(t *testing.T) {
	c := newFakeCluster(t, runningProgram("podsweeper-node-agent", "ps", "agent-a", "node-a")).closingAnswers().listingEventsWhole()
	c.handle("ps/agent-a", &programPages{at: askedAt, status: 503, body: "not yet\n"})
	cl := c.inNamespace("")
	ts, _, err := cl.programs(testContext(t), "node-a", false)
	if err != nil {
		t.Fatal(err)
	}
	answers, _, err := cl.askAll(testContext(t), ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderStatus(&b, &NodeStatus{Now: askedAt, Node: "node-a", Answers: answers})
	if !strings.Contains(b.String(), "node-agent ps/agent-a could not be asked: reading its status on port 8084: /debug/podsweeper answered 503") {
		t.Fatalf("got:\n%s", b.String())
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

// explain.md:62-63: "When a program could not be asked, or none was found,
// the answer says that it cannot tell what podsweeper knows of the pod,
// rather than that it knows nothing". A status page that answers null (no
// list of PUs: adapters/k8s's page always writes a list) is taken as a
// program that holds nothing, and the answer says podsweeper knows
// nothing of the pod.
func TestAuditNonsenseStatusPageKnowsNothing(t *testing.T) {
	c := newFakeCluster(t, runningProgram("podsweeper-node-agent", "ps", "agent-a", "node-a")).closingAnswers().listingEventsWhole()
	c.handle("ps/agent-a", rawStatus{body: "null"})
	x, err := c.inNamespace("").explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderPod(&b, x)
	if strings.Contains(b.String(), "knows nothing of this pod") {
		t.Fatalf("a status page that answered null, no list of PUs, is told as a program that holds none:\n%s", b.String())
	}
}

// explain.md:300-302 and 78: a first cni-gc of the node that could not be
// asked gives way to the second; the second's status page answering 503,
// its address page's answer stands and a line says its PUs are not told.
func TestAuditHoldsIPSecondCNIGCWithStatus503(t *testing.T) {
	c := newFakeCluster(t, workloadPod("apps", "web", "U1", "node-a"),
		runningProgram("podsweeper-cni-gc", "kube-system", "cni-a1", "node-a", "--status-bind-address=0"),
		runningProgram("podsweeper-cni-gc", "kube-system", "cni-a2", "node-a")).closingAnswers().listingEventsWhole()
	c.handle("kube-system/cni-a2", &addressPages{programPages: programPages{at: askedAt, status: 503, body: "not yet\n"},
		addr: AddressStatus{IP: "10.88.0.4", Attachments: []AttachmentStatus{{Network: "podnet", ContainerID: "sb1", IfName: "eth0",
			PodNamespace: "apps", PodName: "web", PodUID: "U1", Written: askedAt.Add(-time.Minute)}}}})
	x, err := c.inNamespace("").explainIP(testContext(t), "10.88.0.4", "node-a", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderIP(&b, x)
	s := b.String()
	if !strings.Contains(s, "cni-gc kube-system/cni-a2 (node node-a):") || !strings.Contains(s, "its PUs are not told") ||
		!strings.Contains(s, "added 1m0s ago") || !strings.Contains(s, "live on node node-a") {
		t.Fatalf("got:\n%s", s)
	}
}
