package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

func recentPU(uid, pod string) k8s.PUStatus {
	t := time.Now().Add(-5 * time.Second)
	return k8s.PUStatus{PUID: uid, Pod: pod, State: "idle", Age: "4m", LastChecked: &t, LastRow: 9, Why: "same pod, same sandbox"}
}

// A live pod asked by name: its node's agent's PU is told (sanity of the harness).
func TestAuditHoldsLivePodByNameThroughPortForward(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	c.addPod(*workloadPod("apps", "web", "u-web", "node-a"))
	c.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", statusAndReport([]k8s.PUStatus{recentPU("u-web", "apps/web")}, ""))
	code, out, errOut := c.run("explain", "pod", "apps/web").codeOutErr()
	if code != 0 || !strings.Contains(out, "PU u-web of pod apps/web") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// docs/operating/explain.md:14-15: "A static pod is one pod under its two UIDs (the kubelet's, and its mirror
// pod's in the API server): asked by either, with `--uid` alone too, the PUs under both are told."
//
// The static pod kube-system/etcd-node-a: its mirror pod's UID "u-mirror", the kubelet's "u-kubelet". The cluster
// controller holds its PU under the mirror pod's UID. The node agent of node-a is Pending (the node in trouble);
// the one of node-b runs and holds nothing of it. Asked by the kubelet's UID alone (as explain ip or libcni's
// cache shows it), the plugin should tell the cluster controller's PU of that pod.
func TestAuditStaticPodByKubeletUIDAlone(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	mirror := *workloadPod("kube-system", "etcd-node-a", "u-mirror", "node-a")
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "u-kubelet"}
	c.addPod(mirror)
	c.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-1", "node-c", statusAndReport([]k8s.PUStatus{recentPU("u-mirror", "kube-system/etcd-node-a")}, ""))
	c.addPod(*programPod("podsweeper-node-agent", "rel", "podsweeper", "agent-a", "node-a", corev1.PodPending))
	c.addProgram("podsweeper-node-agent", "podsweeper", "agent-b", "node-b", statusAndReport([]k8s.PUStatus{}, ""))

	code, out, errOut := c.run("explain", "pod", "--uid", "u-kubelet", "-o", "json").codeOutErr()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var x PodExplanation
	if err := json.Unmarshal([]byte(out), &x); err != nil {
		t.Fatal(err, out)
	}
	told := false
	for _, a := range x.Answers {
		for _, s := range a.PUs {
			if s.PUID == "u-mirror" {
				told = true
			}
		}
	}
	if !told || x.Name != "etcd-node-a" {
		_, text, _ := c.run("explain", "pod", "--uid", "u-kubelet").codeOutErr()
		t.Fatalf("asked by the kubelet's UID, the cluster controller's PU under the mirror pod's UID is not told (pod named %q/%q):\n%s", x.Namespace, x.Name, text)
	}
}

// docs/operating/explain.md:28-29: "`--timeout` (20s) bounds each program's question, from the port-forward's
// upgrade on: a program not answered by then `could not be asked`." One program answers its headers and then
// never ends its body; the other answers.
func TestAuditHoldsTimeoutBoundsATricklingProgram(t *testing.T) {
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
	code, out, errOut := c.run("--timeout", "1s", "explain", "pod", "apps/web").codeOutErr()
	if took := time.Since(start); took > 6*time.Second {
		t.Fatalf("took %v with --timeout 1s", took)
	}
	if code != 0 || !strings.Contains(out, "cluster-controller podsweeper/cc-1 could not be asked") || !strings.Contains(out, "PU u-web of pod apps/web") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// docs/operating/explain.md:125-131: without a permission, one line "forbidden: you may not create
// pods/portforward in namespace podsweeper: ...", exit 1.
func TestAuditHoldsForbiddenPortForwardOneLine(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	c.addPod(*workloadPod("apps", "web", "u-web", "node-a"))
	c.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", statusAndReport([]k8s.PUStatus{}, ""))
	c.deny = func(verb, resource, ns string) bool { return resource == "pods/portforward" && ns == "podsweeper" }
	code, out, errOut := c.run("explain", "pod", "apps/web").codeOutErr()
	if code != 1 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 ||
		!strings.HasPrefix(errOut, "kubectl-podsweeper: forbidden: you may not create pods/portforward in namespace podsweeper") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
}

// docs/operating/explain.md:26-27: --namespace is the programs' namespace, not the pod's: NAME is in your
// context's namespace.
func TestAuditHoldsNamespaceFlagIsTheProgramsNotThePods(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	c.addPod(*workloadPod("apps", "web", "u-web", "node-a"))
	c.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", statusAndReport([]k8s.PUStatus{recentPU("u-web", "apps/web")}, ""))
	code, out, errOut := c.run("-n", "podsweeper", "explain", "pod", "web").codeOutErr()
	if code != 0 || !strings.Contains(out, "Pod apps/web (UID u-web) on node node-a: Running.") || !strings.Contains(out, "PU u-web") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// docs/operating/explain.md:67-69: a program whose engine has not listed its Inventory answers 503 and could
// not be asked; the answer says it cannot tell.
func TestAuditHolds503CouldNotBeAsked(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	c.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "the deletion engine has not listed its Inventory yet", http.StatusServiceUnavailable)
	}))
	code, out, errOut := c.run("explain", "pod", "apps/gone").codeOutErr()
	if code != 0 || !strings.Contains(out, "could not be asked") || !strings.Contains(out, "cannot tell") || strings.Contains(out, "knows nothing") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// docs/operating/explain.md:82-86: times are told from when the page began to answer (its Podsweeper-Time), not
// from when the command began: a program that answers 2s late, its last check 5s before it answered, is "5s ago".
func TestAuditHoldsLateProgramNotToldOlder(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	c.addPod(*workloadPod("apps", "web", "u-web", "node-a"))
	c.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/podsweeper" {
			http.NotFound(w, r)
			return
		}
		time.Sleep(2 * time.Second)
		now := time.Now()
		w.Header().Set(k8s.TimeHeader, now.UTC().Format(time.RFC3339Nano))
		lc := now.Add(-5 * time.Second)
		_ = json.NewEncoder(w).Encode([]k8s.PUStatus{{PUID: "u-web", Pod: "apps/web", State: "idle", Age: "1m", LastChecked: &lc, LastRow: 9, Why: "same pod, same sandbox"}})
	}))
	code, out, errOut := c.run("explain", "pod", "apps/web").codeOutErr()
	if code != 0 || !strings.Contains(out, "last check    5s ago") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// docs/operating/explain.md:14-15 (as TestAuditStaticPodByKubeletUIDAlone), with the cluster controller the only
// program installed (each chart installs on its own: docs/operating/install.md). Asked by the static pod's
// kubelet UID alone, the plugin should name the pod and tell the cluster controller's PU of it under the mirror
// pod's UID; it says podsweeper knows nothing of the pod.
func TestAuditStaticPodByKubeletUIDAloneClusterControllerOnly(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	mirror := *workloadPod("kube-system", "etcd-node-a", "u-mirror", "node-a")
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "u-kubelet"}
	c.addPod(mirror)
	c.addProgram("podsweeper-cluster-controller", "podsweeper-cluster", "cc-1", "node-c", statusAndReport([]k8s.PUStatus{recentPU("u-mirror", "kube-system/etcd-node-a")}, ""))

	code, out, errOut := c.run("explain", "pod", "--uid", "u-kubelet").codeOutErr()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "PU u-mirror of pod kube-system/etcd-node-a") {
		t.Fatalf("asked by the kubelet's UID, the cluster controller's PU under the mirror pod's UID is not told:\n%s", out)
	}
}

// docs/operating/explain.md:436-438: "`could not be asked: reading its dry run's report on port PORT:
// /debug/podsweeper/dry-run answered CODE: ...`: a program in a dry run whose report page fails; its PUs are
// not listed either." (and explain.md:3-7: the answer tells "what a dry run would do").
//
// A node agent run with --dry-run answers its status page, and its report page answers 200 with `null`: no
// report (the page answers {"total": N, "reports": [...]}), as the plugin refuses a status page that is no
// JSON list. The plugin takes it for a dry run that reported nothing, and says of the PU "dry run would keep
// it", from no report at all.
func TestAuditDryRunReportOfAnotherShapeCouldNotBeAsked(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	c.addPod(*workloadPod("apps", "web", "u-web", "node-a"))
	c.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", statusAndReport([]k8s.PUStatus{recentPU("u-web", "apps/web")}, "null"), []string{"--dry-run"}...)
	code, out, errOut := c.run("explain", "pod", "apps/web", "-o", "json").codeOutErr()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var x PodExplanation
	if err := json.Unmarshal([]byte(out), &x); err != nil {
		t.Fatal(err, out)
	}
	if len(x.Answers) != 1 || x.Answers[0].Error == "" {
		_, text, _ := c.run("explain", "pod", "apps/web").codeOutErr()
		t.Fatalf("a report page that answers null is read as a dry run's report:\n%s", text)
	}
}

// docs/operating/explain.md:12-13 and :82: an Event of an earlier pod of that name is marked so; an Event series
// is told at its first time with its count and its last time; a gone pod's node agent Event regards the Node.
func TestAuditHoldsEventsEarlierPodAndSeries(t *testing.T) {
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

// docs/operating/explain.md:49-51: for a live pod the PU of an earlier pod of that name on another node is not
// shown; explain that pod by its UID (--uid), or ask that node with --node.
func TestAuditHoldsMovedPodEarlierPUByUIDOrNode(t *testing.T) {
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

// docs/operating/explain.md:452-454: "`forbidden: you may not impersonate users "NAME" (--as): ...`: with
// `--as`, you may not be that user", one line, exit 1.
func TestAuditHoldsImpersonationForbiddenOneLine(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	c.deny = func(verb, resource, ns string) bool { return verb == "impersonate" && resource == "users" }
	code, out, errOut := c.run("--as", "bob", "explain", "pod", "apps/web").codeOutErr()
	if code != 1 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 ||
		!strings.HasPrefix(errOut, `kubectl-podsweeper: forbidden: you may not impersonate users "bob" (--as)`) {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	code, out, errOut = c.run("--as", "bob", "status", "--node", "node-a").codeOutErr()
	if code != 1 || !strings.HasPrefix(errOut, `kubectl-podsweeper: forbidden: you may not impersonate users "bob" (--as)`) {
		t.Fatalf("status: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
}

// docs/operating/explain.md:79: "`explain ip` asks each cni-gc of the node in turn until one answers for that
// address"; the one that could not be asked is named, and the answer cannot tell all that holds the address, exit 0.
func TestAuditHoldsExplainIPAsksEachCNIGCInTurn(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	c.addProgram("podsweeper-cni-gc", "kube-system", "cni-gc-1", "node-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
	}))
	c.addProgram("podsweeper-cni-gc", "kube-system", "cni-gc-2", "node-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case addressPath:
			_, _ = io.WriteString(w, `{"ip":"`+r.URL.Query().Get("ip")+`"}`)
		case k8s.StatusPath:
			_, _ = io.WriteString(w, `[]`)
		default:
			http.NotFound(w, r)
		}
	}))
	code, out, errOut := c.run("explain", "ip", "10.88.0.200", "--node", "node-a").codeOutErr()
	if code != 0 || !strings.Contains(out, "cni-gc kube-system/cni-gc-2 (node node-a):") || !strings.Contains(out, "Not asked: cni-gc kube-system/cni-gc-1") || !strings.Contains(out, "cni-gc cannot tell all that holds this address") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}
