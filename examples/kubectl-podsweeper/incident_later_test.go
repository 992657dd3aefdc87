package main

// Programs that do not run, run elsewhere, are being deleted or cannot be
// asked, and what the answers then say: each test holds a promise of
// docs/operating/explain.md or doc.go.

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	laterOldUID = "11111111-1111-4111-8111-111111111111"
	laterNewUID = "22222222-2222-4222-8222-222222222222"
)

// markProgram changes the program's pod name ns/name in f.
func (f *fakeAPI) markProgram(ns, name string, change func(p *corev1.Pod)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.pods {
		if f.pods[i].Namespace == ns && f.pods[i].Name == name {
			change(&f.pods[i])
		}
	}
}

// explain.md:59-60: "`report`'s HELD column follows a PU's latest report."
// A PU reported dropped, then reported again (held: not dropped), is said
// "no: pod gone" on every row, its latest too.
func TestReportHeldFollowsLatestReport(t *testing.T) {
	f := newFakeAPI(t)
	now := time.Now().UTC()
	report := map[string]any{"total": 2, "reports": []map[string]any{
		{"at": now.Add(-2 * time.Minute), "puID": laterOldUID, "pod": "apps/web", "reason": "PodGone", "row": 1, "why": "pod not found", "dropped": true},
		{"at": now.Add(-10 * time.Second), "puID": laterOldUID, "pod": "apps/web", "reason": "PodGone", "row": 1, "why": "pod not found"},
	}}
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", mapPages(nil, report), "--dry-run")
	r := f.run("report")
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	var last string
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.Contains(l, laterOldUID) {
			last = l
		}
	}
	if !strings.HasSuffix(strings.TrimSpace(last), "yes") {
		t.Errorf("the PU's latest report says it is held (not dropped); HELD of its latest row = %q", last)
	}
	// explain pod reads the same report as not dropped: the two disagree.
	x := f.run("explain", "pod", "apps/web", "--node", "node-a")
	if strings.Contains(x.stdout, "no longer held") {
		t.Logf("explain pod says no longer held too")
	}
}

// explain.md:53-56: the answer says it cannot tell "when a program of the
// pod's node was not asked (its pod Pending or being deleted, or none runs
// on that node while they run on others), each named on a line `Not
// asked:`". The node agent runs on node-b only; node-a, the pod's node, has
// cni-gc alone: the node agent of node-a was not asked, and not said so.
func TestNodeAgentMissingOnNodeIsNotAsked(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-b", "node-b", mapPages(nil, nil))
	f.addProgram("podsweeper-cni-gc", "kube-system", "cni-a", "node-a", mapPages(nil, nil))
	f.addProgram("podsweeper-cni-gc", "kube-system", "cni-b", "node-b", mapPages(nil, nil))
	r := f.run("explain", "pod", "apps/gone", "--node", "node-a")
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	if !strings.Contains(r.stdout, "Not asked:") {
		t.Errorf("no node agent runs on node-a (one runs on node-b): no `Not asked:` line")
	}
	if strings.Contains(r.stdout, "podsweeper knows nothing of this pod") {
		t.Errorf("says it knows nothing of the pod, though node-a's node agent was never asked")
	}
}

// Same, JSON: `unasked` is empty.
func TestNodeAgentMissingOnNodeJSON(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-b", "node-b", mapPages(nil, nil))
	f.addProgram("podsweeper-cni-gc", "kube-system", "cni-a", "node-a", mapPages(nil, nil))
	r := f.run("explain", "pod", "apps/gone", "--node", "node-a", "-o", "json")
	var x PodExplanation
	if err := json.Unmarshal([]byte(r.stdout), &x); err != nil {
		t.Fatal(err)
	}
	if len(x.Unasked) == 0 {
		t.Errorf("unasked is empty though no node agent of node-a was asked")
	}
}

// explain.md:407-408: "`No cni-gc runs on node NODE`: no Running pod of
// cni-gc's chart is on that node". cni-gc's pod on node-a is Running, being
// deleted (its containers still run through their grace period): the
// plugin says no cni-gc runs there.
func TestExplainIPTerminatingCNIGC(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-cni-gc", "kube-system", "cni-a", "node-a", mapPages(nil, nil))
	f.markProgram("kube-system", "cni-a", func(p *corev1.Pod) {
		ts := metav1.Now()
		p.DeletionTimestamp = &ts
	})
	r := f.run("explain", "ip", "10.88.0.4", "--node", "node-a")
	if strings.Contains(r.stdout, "No cni-gc runs on node node-a") {
		t.Errorf("a Running cni-gc pod (being deleted) is on node-a, yet: %q", r.stdout)
	}
}

// status --node: a node agent on the node that is being deleted (Running,
// in its grace period, still holding its PUs) is said not to run.
func TestStatusTerminatingNodeAgent(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", mapPages([]map[string]any{
		{"puID": laterOldUID, "pod": "apps/web", "state": "idle", "age": "1m"}}, nil))
	f.markProgram("podsweeper", "na-a", func(p *corev1.Pod) {
		ts := metav1.Now()
		p.DeletionTimestamp = &ts
	})
	r := f.run("status", "--node", "node-a")
	if strings.Contains(r.stdout, "No podsweeper program runs on node node-a") {
		t.Errorf("a node agent runs on node-a (being deleted), yet: %q", r.stdout)
	}
}

// explain.md:53-56 again, for a pod whose node is not known (asked by name,
// gone): every node's programs are asked, but a node agent being deleted
// (Running through its grace period, holding the PU) is skipped, and the
// answer says podsweeper knows nothing of the pod.
func TestGonePodTerminatingAgentElsewhere(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", mapPages(nil, nil))
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-c", "node-c", mapPages([]map[string]any{
		{"puID": laterOldUID, "pod": "apps/gone", "state": "waiting for a retry", "age": "5m", "attempts": 3}}, nil))
	f.markProgram("podsweeper", "na-c", func(p *corev1.Pod) {
		ts := metav1.Now()
		p.DeletionTimestamp = &ts
	})
	r := f.run("explain", "pod", "apps/gone")
	if strings.Contains(r.stdout, "podsweeper knows nothing of this pod") {
		t.Errorf("says it knows nothing, though node-c's node agent (being deleted, holding the PU) holds it")
	}
	if !strings.Contains(r.stdout, "na-c (node node-c):") {
		t.Errorf("node-c's node agent, being deleted and still running its grace period, is not asked")
	}
}

// explain.md:56-58: "`--timeout` ... bounds each program's question whole".
// A program that answers garbage at once and keeps its connection open is
// waited for 2s more than --timeout.
func TestTimeoutBoundsGarbageAnswer(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hj, ok := w.(http.Hijacker)
		if !ok {
			t.Error("no hijack")
			return
		}
		c, buf, err := hj.Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = buf.WriteString("NONSENSE\r\n\r\n")
		_ = buf.Flush()
		time.Sleep(10 * time.Second)
	}))
	r := f.run("status", "--node", "node-a", "--timeout", "300ms")
	if !strings.Contains(r.stdout, "could not be asked") {
		t.Errorf("expected could not be asked")
	}
	if r.took > 300*time.Millisecond+askSlack {
		t.Errorf("--timeout=300ms bounds the program's question whole; it took %v", r.took)
	}
}

// explain.md:53-54: "When a program could not be asked, or none was found,
// the answer says that it cannot tell what podsweeper knows of the pod". A
// live pod whose node's only program could not be asked: no such sentence.
func TestLivePodProgramUnreachable(t *testing.T) {
	f := newFakeAPI(t)
	f.addPod(*workloadPod("apps", "web", laterNewUID, "node-a"))
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", nil) // nothing listens
	r := f.run("explain", "pod", "apps/web")
	if !strings.Contains(r.stdout, "could not be asked") {
		t.Fatalf("expected could not be asked")
	}
	if !strings.Contains(r.stdout, "cannot tell") {
		t.Errorf("the only program of the pod's node could not be asked, and the answer does not say it cannot tell what podsweeper knows")
	}
}

// Holds: RBAC refusals are one line, exit 1, never a stack trace.
func TestHoldsRBAC(t *testing.T) {
	for _, c := range []struct {
		name, forbid, want string
		args               []string
	}{
		{"portforward", "POST /api/v1/namespaces/podsweeper/pods/na-a/portforward", "forbidden: you may not create pods/portforward in namespace podsweeper", []string{"status", "--node", "node-a"}},
		{"events", "GET /api/v1/namespaces/apps/events", "forbidden: you may not list events in namespace apps", []string{"explain", "pod", "apps/web"}},
		{"get pod", "GET /api/v1/namespaces/apps/pods/web", "forbidden: you may not get pods in namespace apps", []string{"explain", "pod", "apps/web"}},
		{"list pods", "GET /api/v1/pods", "forbidden: you may not list pods in every namespace", []string{"report"}},
		{"uid events", "GET /api/v1/events", "forbidden: you may not list events in every namespace", []string{"explain", "pod", "--uid", laterOldUID}},
		{"node events", "GET /api/v1/namespaces/default/events", "forbidden: you may not list events in namespace default", []string{"explain", "pod", "apps/web"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", mapPages(nil, nil))
			f.forbid = []string{c.forbid}
			if c.name == "portforward" {
				f.forbid = append(f.forbid, "GET /api/v1/namespaces/podsweeper/pods/na-a/portforward")
			}
			r := f.run(c.args...)
			if r.code != 1 || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || strings.Contains(r.stderr, "goroutine") {
				t.Errorf("exit %d, stderr %q; want exit 1, one line with %q", r.code, r.stderr, c.want)
			}
		})
	}
}

// Holds: bad command lines exit 2.
func TestHoldsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"explain", "pod", "a/b/c"}, {"explain", "pod", "/b"}, {"explain", "pod", "a/"}, {"explain", "pod"},
		{"explain", "pod", "a/b", "c/d"}, {"explain", "ip", "999.1.1.1", "--node", "n"}, {"explain", "ip", "10.0.0.1"},
		{"status"}, {"status", "x", "--node", "n"}, {"report", "x"}, {"bogus"}, {}, {"-o", "yaml", "report"},
		{"--timeout", "0", "report"}, {"--timeout", "-1s", "report"}, {"--timeout", "abc", "report"}, {"--bogus", "report"},
		{"explain"}, {"explain", "node"}, {"report", "--node"},
	} {
		f := newFakeAPI(t)
		r := f.run(args...)
		if r.code != 2 {
			t.Errorf("%q: exit %d, want 2", args, r.code)
		}
	}
}

// Hold: a program that hangs is "could not be asked" within --timeout.
func TestHoldsHangTimeout(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	r := f.run("status", "--node", "node-a", "--timeout", "500ms")
	if !strings.Contains(r.stdout, "could not be asked") || r.took > 500*time.Millisecond+askSlack {
		t.Errorf("took %v: %q", r.took, r.stdout)
	}
	f2 := newFakeAPI(t)
	f2.forwardDelay = 5 * time.Second
	f2.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", mapPages(nil, nil))
	r = f2.run("status", "--node", "node-a", "--timeout", "500ms")
	if !strings.Contains(r.stdout, "could not be asked") || r.took > 500*time.Millisecond+askSlack {
		t.Errorf("late upgrade: took %v: %q", r.took, r.stdout)
	}
}

// explain.md:53-56: "Not asked:" is for a program of the pod's node that
// "was not asked (its pod Pending or being deleted, or none runs on that
// node while they run on others)". A Failed leftover pod of the node
// agent's DaemonSet (a node shutdown's) beside its Running pod, which was
// asked and holds nothing, makes the answer say it cannot tell.
func TestFailedLeftoverAgentPod(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", mapPages(nil, nil))
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a-old", "node-a", mapPages(nil, nil))
	f.markProgram("podsweeper", "na-a-old", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })
	r := f.run("explain", "pod", "apps/gone", "--node", "node-a")
	if !strings.Contains(r.stdout, "podsweeper knows nothing of this pod") {
		t.Errorf("node-a's running node agent was asked and holds nothing; a Failed leftover pod (not Pending, not being deleted) makes it say it cannot tell")
	}
}

// Holds: Events, core/v1 and events.k8s.io shaped, several UIDs of a name.
func TestHoldsEvents(t *testing.T) {
	f := newFakeAPI(t)
	now := time.Now()
	f.addEvent(corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "apps", Name: "e1", CreationTimestamp: metav1.NewTime(now.Add(-10 * time.Minute))},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: types.UID(laterOldUID)},
		Reason:         "PUDestroyed", Type: "Normal", Message: "old one", Count: 3,
		FirstTimestamp: metav1.NewTime(now.Add(-10 * time.Minute)), LastTimestamp: metav1.NewTime(now.Add(-time.Minute)),
	})
	f.addEvent(corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "apps", Name: "e2", CreationTimestamp: metav1.NewTime(now.Add(-5 * time.Minute))},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: types.UID(laterNewUID)},
		Reason:         "PUAbandoned", Type: "Warning", Message: "new one", ReportingController: "podsweeper",
		EventTime: metav1.NewMicroTime(now.Add(-5 * time.Minute)),
		Series:    &corev1.EventSeries{Count: 4, LastObservedTime: metav1.NewMicroTime(now.Add(-30 * time.Second))},
	})
	r := f.run("explain", "pod", "apps/web", "--node", "node-a")
	// core/v1's timestamps are whole seconds: 1m0s or 1m1s.
	if !regexp.MustCompile(`  10m[01]s ago  Normal PUDestroyed, regarding Pod/apps/web \(3 times, the last 1m[01]s ago; the note is the first's\): old one\n  5m[01]s ago  Warning PUAbandoned, regarding Pod/apps/web \(4 times, the last 3[01]s ago; the note is the first's\): new one`).MatchString(r.stdout) {
		t.Errorf("events: %q", r.stdout)
	}
	r = f.run("explain", "pod", "--uid", laterOldUID, "--node", "node-a")
	if strings.Contains(r.stdout, "new one") || !strings.Contains(r.stdout, "old one") {
		t.Errorf("uid events: %q", r.stdout)
	}
}

// Holds: explain ip asks the next cni-gc when the first answers another
// address; one answering nonsense is could not be asked.
func TestHoldsExplainIP(t *testing.T) {
	addr := func(ip string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/debug/podsweeper/cni/address":
				_ = json.NewEncoder(w).Encode(map[string]any{"ip": ip})
			case "/debug/podsweeper":
				_, _ = w.Write([]byte("[]"))
			default:
				http.NotFound(w, r)
			}
		})
	}
	f := newFakeAPI(t)
	f.addProgram("podsweeper-cni-gc", "kube-system", "cni-a1", "node-a", addr("10.9.9.9"))
	f.addProgram("podsweeper-cni-gc", "kube-system", "cni-a2", "node-a", addr("10.88.0.4"))
	r := f.run("explain", "ip", "10.88.0.4", "--node", "node-a")
	if r.code != 0 || !strings.Contains(r.stdout, "cni-gc kube-system/cni-a2") || !strings.Contains(r.stdout, "Not asked: cni-gc kube-system/cni-a1") || !strings.Contains(r.stdout, "cni-gc cannot tell all that holds this address") {
		t.Errorf("%q", r.stdout)
	}
	f2 := newFakeAPI(t)
	f2.addProgram("podsweeper-cni-gc", "kube-system", "cni-a1", "node-a", addr("10.9.9.9"))
	r = f2.run("explain", "ip", "10.88.0.4", "--node", "node-a")
	if !strings.Contains(r.stdout, "could not be asked: it answered for address 10.9.9.9") {
		t.Errorf("%q", r.stdout)
	}
}

// explain.md:273-274 and render's own unheld case ("Of what it could read
// ... cannot tell all"): with libcni's cache unread and a recent free of
// the address, the answer says flatly that no attachment holds it now.
func TestExplainIPUnreadCacheAfterFree(t *testing.T) {
	now := time.Now().UTC()
	f := newFakeAPI(t)
	f.addProgram("podsweeper-cni-gc", "kube-system", "cni-a", "node-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/debug/podsweeper/cni/address":
			_ = json.NewEncoder(w).Encode(map[string]any{
				"ip":               "10.88.0.13",
				"reservationsRead": now.Add(-12 * time.Second),
				"unread":           []string{"libcni's cache /var/lib/cni/results: open: permission denied"},
				"freed": []map[string]any{{"at": now.Add(-42 * time.Second), "reservation": true, "network": "podnet",
					"file": "/var/lib/cni/networks/podnet/10.88.0.13", "containerID": "c0ffee00d2b34", "ifName": "eth0",
					"decision": map[string]any{"at": now.Add(-42 * time.Second), "reason": "NoSandbox", "row": 18, "why": "leaked", "verdict": "free"}}},
			})
		case "/debug/podsweeper":
			_, _ = w.Write([]byte("[]"))
		default:
			http.NotFound(w, r)
		}
	}))
	r := f.run("explain", "ip", "10.88.0.13", "--node", "node-a")
	if strings.Contains(r.stdout, "No attachment of libcni's cache and no host-local reservation holds it now") && !strings.Contains(r.stdout, "cannot tell") {
		t.Errorf("libcni's cache could not be read, yet the answer says no attachment of it holds the address now")
	}
}

// Holds: impersonation refused; NAME alone is the kubeconfig's namespace,
// not --namespace's.
func TestHoldsImpersonationAndNamespace(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", mapPages(nil, nil))
	r := f.run("--as", "bob", "report")
	if r.code != 1 || !strings.Contains(r.stderr, `forbidden: you may not impersonate users "bob" (--as)`) {
		t.Errorf("exit %d %q", r.code, r.stderr)
	}
	f.addPod(*workloadPod("apps", "web", laterNewUID, "node-a"))
	r = f.run("-n", "podsweeper", "explain", "pod", "web")
	if r.code != 0 || !strings.Contains(r.stdout, "Pod apps/web (UID "+laterNewUID+") on node node-a") {
		t.Errorf("exit %d %q", r.code, r.stdout)
	}
}

// explain.md:53-54: "When a program could not be asked, or none was found,
// the answer says that it cannot tell what podsweeper knows of the pod,
// rather than that it knows nothing". The cluster controller's only pod is
// being deleted (still running its grace period, holding the PU): it is
// not asked, nothing says so, and the answer says podsweeper knows nothing.
func TestTerminatingClusterControllerUnsaid(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", mapPages(nil, nil))
	f.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-1", "node-b", mapPages([]map[string]any{
		{"puID": laterOldUID, "pod": "apps/gone", "state": "waiting for a retry", "age": "5m", "attempts": 3}}, nil))
	f.markProgram("podsweeper", "cc-1", func(p *corev1.Pod) {
		ts := metav1.Now()
		p.DeletionTimestamp = &ts
	})
	r := f.run("explain", "pod", "apps/gone", "--node", "node-a")
	if strings.Contains(r.stdout, "podsweeper knows nothing of this pod") {
		t.Errorf("says it knows nothing, though the cluster controller (being deleted, still running) was not asked")
	}
}

// report: "every program's dry run's report" (explain.md:16). A node
// agent in a dry run that is being deleted (still running, its report
// held) is left out without a word.
func TestReportTerminatingDryRunProgram(t *testing.T) {
	f := newFakeAPI(t)
	now := time.Now().UTC()
	report := map[string]any{"total": 1, "reports": []map[string]any{
		{"at": now.Add(-10 * time.Second), "puID": laterOldUID, "pod": "apps/web", "reason": "PodGone", "row": 1, "why": "pod not found"}}}
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", mapPages(nil, report), "--dry-run")
	f.markProgram("podsweeper", "na-a", func(p *corev1.Pod) {
		ts := metav1.Now()
		p.DeletionTimestamp = &ts
	})
	r := f.run("report")
	if !strings.Contains(r.stdout, "na-a") {
		t.Errorf("the dry-run node agent na-a (running, being deleted) is not in the report, nor said unasked: %q", r.stdout)
	}
}

// explain.md:47-49: "--uid alone names the pod from its Events, its PU or
// its dry run's report". With the only program unreachable, the header
// says "no PU ... names it", though no program could be asked for one.
func TestUIDAloneUnreachableSaysNoPU(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", nil)
	r := f.run("explain", "pod", "--uid", laterOldUID)
	if strings.Contains(r.stdout, "no PU and no podsweeper Event names it") {
		t.Errorf("says no PU names the pod, though the only program could not be asked")
	}
}

// Holds: --as-group without --as, --as-uid: one line, exit 1.
func TestHoldsImpersonateGroup(t *testing.T) {
	for _, args := range [][]string{{"--as-group", "sre", "report"}, {"--as", "bob", "--as-group", "sre", "report"}, {"--as", "bob", "--as-uid", "u1", "explain", "pod", "apps/web"}} {
		f := newFakeAPI(t)
		f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", mapPages(nil, nil))
		r := f.run(args...)
		if r.code != 1 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "kubectl-podsweeper:") {
			t.Errorf("%q: exit %d %q", args, r.code, r.stderr)
		}
	}
}

// explain.md:53-56: a program of the pod's node "not asked (its pod
// Pending ...)" is named on a `Not asked:` line. A DaemonSet's pod for
// node-a that the scheduler could not place yet is Pending with no
// spec.nodeName: only its node affinity names node-a. It goes unsaid.
func TestUnscheduledDaemonSetPodNotAsked(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-cni-gc", "kube-system", "cni-a", "node-a", mapPages(nil, nil))
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-b", "node-b", mapPages(nil, nil))
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "", mapPages(nil, nil))
	f.markProgram("podsweeper", "na-a", func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-a"}}}}}}}}
	})
	r := f.run("explain", "pod", "apps/gone", "--node", "node-a")
	if !strings.Contains(r.stdout, "Not asked:") || strings.Contains(r.stdout, "podsweeper knows nothing of this pod") {
		t.Errorf("node-a's node agent is Pending (unscheduled), not asked, and not said so")
	}
}

// Holds: a kubelet's refusal relayed by the API server is "could not be
// asked", exit 0, the other programs asked; with the review itself refused
// too.
func TestHoldsKubeletRefusal(t *testing.T) {
	for _, noReview := range []bool{false, true} {
		f := newFakeAPI(t)
		f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", mapPages(nil, nil))
		f.addProgram("podsweeper-node-agent", "podsweeper", "na-b", "node-b", mapPages(nil, nil))
		body := "Forbidden (user=kube-apiserver-kubelet-client, verb=create, resource=nodes, subresource=proxy)"
		f.forwardAnswer = map[string]relayedAnswer{
			http.MethodGet:  {403, "text/plain", body},
			http.MethodPost: {403, "text/plain", body},
		}
		if noReview {
			f.forbid = []string{"POST /apis/authorization.k8s.io"}
		}
		r := f.run("report")
		if r.code != 0 || strings.Count(r.stdout, "could not be asked") != 2 {
			t.Errorf("noReview=%v: exit %d %q %q", noReview, r.code, r.stdout, r.stderr)
		}
	}
}
