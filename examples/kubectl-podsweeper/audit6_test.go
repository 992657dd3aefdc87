package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAuditHoldsSmoke(t *testing.T) {
	a := newFakeAPI(t).spdyOnly().impersonating()
	a.addPod(*workloadPod("apps", "web", "uid-web-1", "node-a"))
	a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", &mapProgram{pus: []map[string]any{mapPU("uid-web-1", "apps/web", "idle")}})
	out, errs, code := a.run("explain", "pod", "apps/web").outErrCode()
	if code != 0 || !strings.Contains(out, "PU uid-web-1 of pod apps/web") {
		t.Fatalf("smoke failed: %d\n%s\n%s", code, out, errs)
	}
}

// docs/operating/explain.md:27: "It takes kubectl's flags for the cluster
// (`--kubeconfig`, `--context`, `--as`, ...)". kubectl's flag for the API
// server is `--server`, `-s` for short (kubectl -s URL ...): the plugin
// refuses `-s` as an unknown flag, exit 2.
func TestAuditKubectlServerShorthand(t *testing.T) {
	a := newFakeAPI(t).spdyOnly().impersonating()
	a.addPod(*workloadPod("apps", "web", "uid-web-1", "node-a"))
	a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", &mapProgram{pus: []map[string]any{mapPU("uid-web-1", "apps/web", "idle")}})
	// --server works: the same with kubectl's -s must too.
	if out, errs, code := a.run("--server", a.srv.URL, "status", "--node", "node-a").outErrCode(); code != 0 {
		t.Fatalf("--server: exit %d\n%s\n%s", code, out, errs)
	}
	out, errs, code := a.run("-s", a.srv.URL, "status", "--node", "node-a").outErrCode()
	if code != 0 || !strings.Contains(out, "uid-web-1") {
		t.Errorf("kubectl podsweeper -s %s status --node node-a: exit %d, want 0 and the node's PUs (kubectl's -s is --server)\nstdout:\n%s\nstderr:\n%s", a.srv.URL, code, out, errs)
	}
}

// docs/operating/explain.md:441-444: "`could not be asked: reading its dry
// run's report on port PORT: ...`: a program in a dry run whose report page
// fails; its PUs are not listed either. So for a report page of another
// shape (...): no program's page, it tells nothing of what a dry run would
// do." A page {"total":1,"reports":[...]} whose reports are no reports (an
// object of other fields, or null) is told as a dry run's report: a row of
// no pod, no PU, row 0, "2562047h47m16.854775807s ago", HELD yes.
func TestAuditReportOfAnotherShape(t *testing.T) {
	for _, body := range []string{`{"total":1,"reports":[{"name":"x","kind":"Widget"}]}`, `{"total":1,"reports":[null]}`} {
		a := newFakeAPI(t).spdyOnly().impersonating()
		p := &mapProgram{pus: []map[string]any{mapPU("uid-web-1", "apps/web", "idle")}}
		a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/debug/podsweeper/dry-run" {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(body))
				return
			}
			p.ServeHTTP(w, r)
		}), []string{"--dry-run"}...)
		out, errs, code := a.run("report").outErrCode()
		if code != 0 {
			t.Fatalf("report: exit %d\n%s", code, errs)
		}
		if !strings.Contains(out, "could not be asked") || strings.Contains(out, "ago") {
			t.Errorf("report, its page answering %s: want the program told as could not be asked, and no row of a report; got:\n%s", body, out)
		}
	}
}

// docs/operating/explain.md:75-77: "A dry run keeps its latest reports
// only: when none of the pod's is among them, the answer says it cannot
// tell, not that podsweeper knows nothing (so it does beside another
// program that holds a PU of the pod)." A dry-run node agent holds the live
// pod's (recreated) PU, reported nothing of it, and keeps 2 of its 300
// reports, none of the pod's (the earlier pod's UIDChanged report among
// those cut): the answer says nothing of what may have been cut.
func TestAuditDryRunCutReportsBesideHeldPU(t *testing.T) {
	a := newFakeAPI(t).spdyOnly().impersonating()
	a.addPod(*workloadPod("apps", "web", "uid-web-2", "node-a"))
	pu := mapPU("uid-web-2", "apps/web", "idle")
	pu["lastChecked"] = "2026-01-01T00:00:00Z"
	pu["lastRow"] = 9
	pu["why"] = "same pod, same sandbox"
	other := func(uid, pod string) map[string]any {
		return map[string]any{"at": "2026-01-01T00:00:00Z", "puID": uid, "pod": pod, "reason": "PodGone", "row": 1, "why": "pod not found", "dropped": true}
	}
	a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", &mapProgram{dryRun: true, total: 300,
		pus:     []map[string]any{pu},
		reports: []map[string]any{other("uid-x", "apps/x"), other("uid-y", "apps/y")}}, []string{"--dry-run"}...)
	out, errs, code := a.run("explain", "pod", "apps/web").outErrCode()
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if !strings.Contains(out, "cannot tell") {
		t.Errorf("explain pod apps/web, its dry run keeping 2 of 300 reports, none of the pod's: want the answer to say it cannot tell (an earlier report may have been of this pod); got:\n%s", out)
	}
}

// docs/operating/explain.md:8-10: "a PU is in the answer until it is
// destroyed, and the destroy's Event after (the Events are read again once
// the programs answered, so a destroy between the two is in one of them".
func TestAuditHoldsDestroyBetweenReads(t *testing.T) {
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

// docs/operating/explain.md:31 and :445-449: --timeout bounds each
// program's question; a program not answered by then could not be asked,
// and the other programs are asked all the same.
func TestAuditHoldsTimeoutEachProgram(t *testing.T) {
	a := newFakeAPI(t).spdyOnly().impersonating()
	a.addPod(*workloadPod("apps", "web", "uid-web-1", "node-a"))
	slow := &mapProgram{pus: []map[string]any{mapPU("uid-web-1", "apps/web", "idle")}}
	slow.onStatus = func() { time.Sleep(3 * time.Second) }
	a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", slow)
	a.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-1", "node-z", &mapProgram{pus: []map[string]any{mapPU("uid-web-1", "apps/web", "idle")}})
	a.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-2", "node-y", &mapProgram{})
	a.forwardDelayOf = map[string]time.Duration{"podsweeper/cc-2": 3 * time.Second}
	start := time.Now()
	out, errs, code := a.run("explain", "pod", "apps/web", "--timeout", "1s").outErrCode()
	if d := time.Since(start); d > 2900*time.Millisecond || code != 0 || strings.Count(out, "could not be asked: ") != 2 || !strings.Contains(out, "cluster-controller podsweeper/cc-1:") {
		t.Errorf("%v exit %d\n%s\n%s", d, code, out, errs)
	}
}

// docs/operating/explain.md:130-136, :445-449 and doc.go: without a
// permission, one line that says which, exit 1; a kubelet's 403 makes the
// program "could not be asked", the others asked all the same.
func TestAuditHoldsForbiddenOneLine(t *testing.T) {
	for _, deny := range []func(v, r, ns string) bool{
		func(v, r, ns string) bool { return r == "pods/portforward" },
		func(v, r, ns string) bool { return r == "events" },
		func(v, r, ns string) bool { return r == "pods" && v == "get" },
		func(v, r, ns string) bool { return v == "impersonate" },
	} {
		a := newFakeAPI(t).spdyOnly().impersonating()
		a.addPod(*workloadPod("apps", "web", "uid-web-1", "node-a"))
		a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", &mapProgram{pus: []map[string]any{mapPU("uid-web-1", "apps/web", "idle")}})
		a.deny = deny
		out, errs, code := a.run("explain", "pod", "apps/web", "--as", "alice").outErrCode()
		if code != 1 || out != "" || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "kubectl-podsweeper: forbidden: you may not ") {
			t.Errorf("exit %d\nstdout %q\nstderr %q", code, out, errs)
		}
	}
	a := newFakeAPI(t).spdyOnly().impersonating()
	a.addPod(*workloadPod("apps", "web", "uid-web-1", "node-a"))
	a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", &mapProgram{pus: []map[string]any{mapPU("uid-web-1", "apps/web", "idle")}})
	a.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-1", "node-z", &mapProgram{pus: []map[string]any{mapPU("uid-web-1", "apps/web", "idle")}})
	a.forwardStatusOf = map[string]*metav1.Status{"podsweeper/agent-a": status(403, metav1.StatusReasonForbidden, "Forbidden (user=kube-apiserver-kubelet-client, verb=create, resource=nodes, subresource=proxy)")}
	out, errs, code := a.run("explain", "pod", "apps/web").outErrCode()
	if code != 0 || !strings.Contains(out, "node-agent podsweeper/agent-a (node node-a) could not be asked: port-forward to pod podsweeper/agent-a") || !strings.Contains(out, "cluster-controller podsweeper/cc-1:\n") {
		t.Errorf("kubelet's 403: exit %d\n%s\n%s", code, out, errs)
	}
}

// docs/operating/explain.md:81-82: "An Event series is told at its first
// time, whose note it keeps, with its count and its last time" (an
// events.k8s.io Event as core/v1 reads it: eventTime, series).
func TestAuditHoldsEventSeriesFirstTimeA6(t *testing.T) {
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

// docs/operating/explain.md:14-17: a static pod asked by either UID, with
// --uid alone too, the PUs under both are told; by a UID alone, the pod is
// found among the pods the programs hold PUs of, those named after a node
// asked first.
func TestAuditHoldsStaticPodByEitherUIDA6(t *testing.T) {
	for _, uid := range []string{"mirror-1", "kubelet-1"} {
		a := newFakeAPI(t).spdyOnly().impersonating()
		p := workloadPod("kube-system", "etcd-node-a", "mirror-1", "node-a")
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "kubelet-1"}
		a.addPod(*p)
		var many []map[string]any
		for i := 0; i < 40; i++ {
			many = append(many, mapPU("uid-"+string(rune('a'+i%26))+string(rune('a'+i/26)), "apps/p"+string(rune('a'+i%26))+string(rune('a'+i/26)), "idle"))
		}
		a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", &mapProgram{pus: append(many, mapPU("kubelet-1", "kube-system/etcd-node-a", "idle"))})
		ccPU := mapPU("mirror-1", "kube-system/etcd-node-a", "idle")
		if uid == "kubelet-1" {
			ccPU = mapPU("mirror-1", "kube-system/etcd-node-a", "idle")
		}
		a.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-1", "node-z", &mapProgram{pus: []map[string]any{ccPU}})
		out, errs, code := a.run("explain", "pod", "--uid", uid).outErrCode()
		if code != 0 || !strings.Contains(out, "PU kubelet-1 of pod kube-system/etcd-node-a") || !strings.Contains(out, "PU mirror-1 of pod kube-system/etcd-node-a") || !strings.HasPrefix(out, "Pod kube-system/etcd-node-a (UID mirror-1) on node node-a: Running.") {
			t.Errorf("--uid %s: exit %d\n%s\n%s", uid, code, out, errs)
		}
	}
}

// docs/operating/explain.md:453-455: "`create` is what `kubectl
// port-forward` needs, and enough: the plugin tries a WebSocket (verb
// `get`) first, then SPDY (`create`), whose answer decides."
func TestAuditHoldsCreateIsEnoughA6(t *testing.T) {
	a := newFakeAPI(t).spdyOnly().impersonating()
	a.addPod(*workloadPod("apps", "web", "uid-web-1", "node-a"))
	a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", &mapProgram{pus: []map[string]any{mapPU("uid-web-1", "apps/web", "idle")}})
	a.deny = func(v, r, ns string) bool { return r == "pods/portforward" && v == "get" }
	out, errs, code := a.run("explain", "pod", "apps/web").outErrCode()
	if code != 0 || !strings.Contains(out, "PU uid-web-1 of pod apps/web") {
		t.Errorf("exit %d\n%s\n%s", code, out, errs)
	}
}

// docs/operating/explain.md:433-434: "`could not be asked: ... connection
// refused`: the program's image predates `--status-bind-address`, or its
// pod restarts." The others are asked all the same.
func TestAuditHoldsConnectionRefusedA6(t *testing.T) {
	a := newFakeAPI(t).spdyOnly().impersonating()
	a.addPod(*workloadPod("apps", "web", "uid-web-1", "node-a"))
	a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", nil)
	a.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-1", "node-z", &mapProgram{pus: []map[string]any{mapPU("uid-web-1", "apps/web", "idle")}})
	start := time.Now()
	out, errs, code := a.run("explain", "pod", "apps/web").outErrCode()
	if code != 0 || !strings.Contains(out, "node-agent podsweeper/agent-a (node node-a) could not be asked: ") || !strings.Contains(out, "connection refused") || !strings.Contains(out, "cluster-controller podsweeper/cc-1:\n") {
		t.Errorf("%v exit %d\n%s\n%s", time.Since(start), code, out, errs)
	}
	t.Logf("%v\n%s", time.Since(start), out)
}
