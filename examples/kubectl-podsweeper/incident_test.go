package main

// What an operator reads in an incident, held to the documentation
// (docs/operating/explain.md, doc.go, --help): slow and unacknowledged
// programs bounded by --timeout, pods named by their Events, answers that
// say they cannot tell rather than that podsweeper knows nothing, the
// report's rows, and bad command lines.

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

const (
	incidentUID  = "41aa07c9-55e2-4d3c-a0f1-2b8c6e9d7f10"
	incidentUID2 = "9d2c4b1a-7e6f-4a3b-8c2d-1e0f9a8b7c6d"
)

// incidentNodeEvent is the node agent's Event of a PodGone destroy: it regards
// the Node, in "default", with the gone pod related (adapters/k8s Events).
func incidentNodeEvent(node, ns, name, uid string, at time.Time) corev1.Event {
	return corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: "default", Name: "ev-" + uid + "-" + node, CreationTimestamp: metav1.NewTime(at)},
		InvolvedObject:      corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: node, UID: types.UID(node)},
		Related:             &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: name, UID: types.UID(uid)},
		Reason:              "PUDestroyed",
		Type:                corev1.EventTypeNormal,
		Message:             "PodGone: destroyed PU " + uid + " of pod " + ns + "/" + name + " (no sandbox recorded)",
		EventTime:           metav1.NewMicroTime(at),
		ReportingController: "podsweeper",
		Action:              "Destroy",
	}
}

// TestUIDAloneNamedByTheNodeAgentsEvent: a pod gone, whose PU the
// node agent destroyed (PodGone): its only Event regards the Node and names
// the pod as its related object. explain.md:47 says "--uid alone names the
// pod from its Events, its PU or its dry run's report, then asks the API
// server for the pod of that name".
func TestUIDAloneNamedByTheNodeAgentsEvent(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", mapPages(nil, nil))
	f.addEvent(incidentNodeEvent("node-a", "apps", "cache", incidentUID, time.Now().Add(-3*time.Minute)))
	r := f.run("explain", "pod", "--uid", incidentUID)
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "PUDestroyed, regarding Node/node-a") // the Event is shown...
	// ...and names the pod: the plugin must not say no Event names it.
	assert.NotContains(t, r.stdout, "no podsweeper Event names it")
	assert.Contains(t, r.stdout, "(apps/cache)")
}

// TestUIDAloneNamedByTheNodeAgentsEventPodNowAnother: the same, with
// the pod of that name now another pod (a StatefulSet's): the plugin must
// say so, as explain.md:47-49 has it (it asks the API server for the pod
// of that name).
func TestUIDAloneNamedByTheNodeAgentsEventPodNowAnother(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", mapPages(nil, nil))
	f.addPod(*workloadPod("apps", "cache", incidentUID2, "node-b"))
	f.addEvent(incidentNodeEvent("node-a", "apps", "cache", incidentUID, time.Now().Add(-3*time.Minute)))
	r := f.run("explain", "pod", "--uid", incidentUID)
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "now has UID "+incidentUID2)
}

// TestDryRunReportNotDroppedIsNotGoneForGood: a dry run's report of a
// PU the engine still holds (SandboxChanged, Dropped false: k8s.WouldDestroy
// "Dropped: the engine no longer holds the PU (its pod is gone for good)";
// deletion keeps a live pod's PU tracked), which the status page, read
// just before the report page, did not list (a race between the two reads). explain must not say its
// pod is gone for good: report says HELD yes for the same answer.
func TestDryRunReportNotDroppedIsNotGoneForGood(t *testing.T) {
	f := newFakeAPI(t)
	rep := map[string]any{"total": 1, "reports": []map[string]any{{
		"at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339), "puID": incidentUID, "pod": "apps/web",
		"sandboxID": "3a9f0c1b2d4e5", "reason": "SandboxChanged", "row": 10, "why": "same pod, another sandbox"}}}
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", mapPages(nil, rep), "--dry-run")
	r := f.run("explain", "pod", "apps/web")
	assert.Equal(t, 0, r.code)
	rr := f.run("report")
	assert.Contains(t, rr.stdout, "yes") // report: still held
	assert.NotContains(t, r.stdout, "gone for good", "explain says more than the answer tells: the report says the PU is still held")
}

// TestNodesAgentNotFoundIsNotKnowsNothing: explain pod for a gone pod
// on node-a (--node), whose node agent is not Running (its pod Pending,
// say): only the cluster controller is found and asked. explain.md:53-54:
// "When a program could not be asked, or none was found, the answer says
// that it cannot tell what podsweeper knows of the pod, rather than that it
// knows nothing."
func TestNodesAgentNotFoundIsNotKnowsNothing(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-1", "node-z", mapPages(nil, nil))
	na := *workloadPod("podsweeper", "na-a", "uid-na-a", "node-a")
	na.Labels = map[string]string{"app.kubernetes.io/name": "podsweeper-node-agent", "app.kubernetes.io/instance": "rel"}
	na.Status.Phase = corev1.PodPending
	f.addPod(na)
	r := f.run("explain", "pod", "apps/web", "--node", "node-a")
	assert.Equal(t, 0, r.code)
	assert.NotContains(t, r.stdout, "podsweeper knows nothing of this pod")
}

// TestExplainIPCacheUnreadIsNotKnowsNothing: cni-gc could not read
// libcni's cache (AddressStatus.Unread: "libcni's cache, whose attachments
// then go untold"). explain.md:267-268 says the plugin tells what cni-gc
// could not read "beside the rest"; it must not then say that no attachment
// of the cache holds the address, nor that cni-gc knows nothing of it.
func TestExplainIPCacheUnreadIsNotKnowsNothing(t *testing.T) {
	f := newFakeAPI(t)
	h := cniGCAnswering(map[string]any{"ip": "10.88.0.4",
		"reservationsRead": time.Now().Add(-12 * time.Second).UTC().Format(time.RFC3339),
		"unread":           []string{"libcni's cache /var/lib/cni/cache: open /var/lib/cni/cache/results: permission denied"}})
	f.addProgram("podsweeper-cni-gc", "kube-system", "cni-gc-a", "node-a", h)
	r := f.run("explain", "ip", "10.88.0.4", "--node", "node-a")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "could not read libcni's cache")
	assert.NotContains(t, r.stdout, "No attachment of libcni's cache")
	assert.NotContains(t, r.stdout, "cni-gc knows nothing of this address")
}

// TestExplainIPTwoCNIGCsOnANode: two cni-gc pods on node-a (two
// releases, or a DaemonSet's surge): the first one's listener is off, the
// second holds the address. explain.md:255 "asks cni-gc on that node what
// holds a pod address": the one that holds it must be asked.
func TestExplainIPTwoCNIGCsOnANode(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-cni-gc", "kube-system", "cni-gc-a1", "node-a", nil, "--status-bind-address=0")
	h := cniGCAnswering(map[string]any{"ip": "10.88.0.13",
		"reservationsRead": time.Now().Add(-12 * time.Second).UTC().Format(time.RFC3339),
		"reservations": []map[string]any{{"network": "podnet", "dataDir": "/var/lib/cni/networks", "file": "/var/lib/cni/networks/podnet/10.88.0.13",
			"containerID": "c0ffee00d2b34", "ifName": "eth0", "reserved": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339),
			"decision": map[string]any{"at": time.Now().Add(-12 * time.Second).UTC().Format(time.RFC3339), "reason": "NoSandbox", "row": 18,
				"why": "a host-local reservation of no sandbox", "verdict": "free"}, "state": "to free"}}})
	f.addProgram("podsweeper-cni-gc", "podsweeper", "cni-gc-b1", "node-a", h)
	r := f.run("explain", "ip", "10.88.0.13", "--node", "node-a")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "reservation")
	assert.Contains(t, r.stdout, "cni-gc-b1")
}

// TestNegativeTimeoutIsABadCommandLine: --timeout=-5s bounds nothing:
// a bad command line (main.go run: "2 for a bad command line"), not every
// program "could not be asked".
func TestNegativeTimeoutIsABadCommandLine(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding(webPU()))
	r := f.run("status", "--node", "node-a", "--timeout=-5s")
	assert.Equal(t, 2, r.code)
	assert.NotContains(t, r.stdout, "could not be asked")
}

// hanging is a status listener that never answers (until the test ends).
func incidentHanging(t *testing.T, path string, pus []map[string]any) http.Handler {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == path {
			select {
			case <-done:
			case <-r.Context().Done():
			}
			return
		}
		mapPages(pus, nil).ServeHTTP(w, r)
	})
}

// TestHangingStatusPageIsBounded: explain.md:22-23 "--timeout (20s)
// bounds each program's question, from the port-forward's upgrade on: a
// program not answered by then could not be asked".
func TestHangingStatusPageIsBounded(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", incidentHanging(t, "/debug/podsweeper", nil))
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-b", "node-b", holding(webPU()))
	r := f.run("explain", "pod", "apps/web", "--timeout=2s")
	assert.Equal(t, 0, r.code)
	assert.Less(t, r.took, 15*time.Second)
	assert.Contains(t, r.stdout, "na-a (node node-a) could not be asked")
	assert.Contains(t, r.stdout, firstUID) // the other is asked all the same
}

// TestHangingDryRunPageIsBounded: the same, the dry run's report hangs.
func TestHangingDryRunPageIsBounded(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", incidentHanging(t, "/debug/podsweeper/dry-run", []map[string]any{webPU()}), "--dry-run")
	r := f.run("status", "--node", "node-a", "--timeout=2s")
	assert.Equal(t, 0, r.code)
	assert.Less(t, r.took, 15*time.Second)
	assert.Contains(t, r.stdout, "na-a could not be asked: reading its dry run's report")
}

// TestNonsenseStatusIsCouldNotBeAsked: a status page answering JSON
// of another shape, or an error, is "could not be asked", and explain then
// says it cannot tell (explain.md:53-54).
func TestNonsenseStatusIsCouldNotBeAsked(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"object": func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{"puID":"x"}`)) },
		"html":   func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`<html>hi</html>`)) },
		"500":    func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", h)
			r := f.run("explain", "pod", "apps/web")
			assert.Equal(t, 0, r.code)
			assert.Contains(t, r.stdout, "could not be asked")
			assert.NotContains(t, r.stdout, "knows nothing")
			assert.Contains(t, r.stdout, "cannot tell")
		})
	}
}

// TestForbiddenIsOneLineExit1: explain.md:93-99 "Without a
// permission, the plugin says which, in one line, and exits 1".
func TestForbiddenIsOneLineExit1(t *testing.T) {
	cases := map[string]struct {
		forbid []string
		args   []string
		want   string
	}{
		"portforward": {[]string{"GET /api/v1/namespaces/podsweeper/pods/na-a/portforward", "POST /api/v1/namespaces/podsweeper/pods/na-a/portforward"},
			[]string{"explain", "pod", "apps/web"}, "forbidden: you may not create pods/portforward in namespace podsweeper"},
		"events": {[]string{"GET /api/v1/namespaces/apps/events"}, []string{"explain", "pod", "apps/web"}, "forbidden: you may not list events in namespace apps"},
		"node events": {[]string{"GET /api/v1/namespaces/default/events"}, []string{"explain", "pod", "apps/web"},
			"forbidden: you may not list events in namespace default"},
		"uid events":   {[]string{"GET /api/v1/events"}, []string{"explain", "pod", "--uid", incidentUID}, "forbidden: you may not list events in every namespace"},
		"get pod":      {[]string{"GET /api/v1/namespaces/apps/pods/web"}, []string{"explain", "pod", "apps/web"}, "forbidden: you may not get pods in namespace apps"},
		"list pods":    {[]string{"GET /api/v1/pods"}, []string{"report"}, "forbidden: you may not list pods in every namespace"},
		"list pods ns": {[]string{"GET /api/v1/namespaces/podsweeper/pods"}, []string{"status", "--node", "node-a", "-n", "podsweeper"}, "forbidden: you may not list pods in namespace podsweeper"},
		"ip portforward": {[]string{"GET /api/v1/namespaces/podsweeper/pods/na-a/portforward", "POST /api/v1/namespaces/podsweeper/pods/na-a/portforward"},
			[]string{"explain", "ip", "10.0.0.1", "--node", "node-a"}, "forbidden: you may not create pods/portforward in namespace podsweeper"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.forbid = c.forbid
			chart := "podsweeper-node-agent"
			if len(c.args) > 1 && c.args[1] == "ip" {
				chart = "podsweeper-cni-gc"
			}
			f.addProgram(chart, "podsweeper", "na-a", "node-a", holding(webPU()))
			r := f.run(c.args...)
			assert.Equal(t, 1, r.code)
			assert.Equal(t, "", r.stdout)
			assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line")
			assert.Contains(t, r.stderr, c.want)
			assert.NotContains(t, r.stderr, "goroutine")
		})
	}
}

// TestWebSocketRefusedSPDYAllowed: explain.md:416-418 "create is what
// kubectl port-forward needs, and enough: the plugin tries a WebSocket
// (verb get) first, then SPDY (create), whose answer decides".
func TestWebSocketRefusedSPDYAllowed(t *testing.T) {
	f := newFakeAPI(t)
	f.forbid = []string{"GET /api/v1/namespaces/podsweeper/pods/na-a/portforward"}
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding(webPU()))
	r := f.run("status", "--node", "node-a")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, firstUID)
}

// TestBadCommandLinesExit2: main.go run "2 for a bad command line",
// before anything is asked.
func TestBadCommandLinesExit2(t *testing.T) {
	for _, args := range [][]string{
		{"explain", "pod", "a/b/c"}, {"explain", "pod", "/web"}, {"explain", "pod", "apps/"}, {"explain", "pod"},
		{"explain", "pod", "a/b", "c/d"}, {"explain"}, {"explain", "node", "x"}, {"explain", "ip", "10.0.0.1"},
		{"explain", "ip", "10.0.0.0/24", "--node", "n"}, {"explain", "ip", "--node", "n"}, {"status"}, {"status", "x", "--node", "n"},
		{"report", "x"}, {"frobnicate"}, {}, {"report", "-o", "yaml"}, {"report", "--timeout", "abc"}, {"report", "--bogus"},
		{"explain", "pod", "apps/web", "-o"},
	} {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			f := newFakeAPI(t)
			f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding(webPU()))
			r := f.run(args...)
			assert.Equal(t, 2, r.code)
			assert.Equal(t, "", r.stdout)
			assert.NotContains(t, r.stderr, "goroutine")
		})
	}
}

// TestHelpExit0: --help and -h print the usage, status 0.
func TestHelpExit0(t *testing.T) {
	for _, a := range []string{"--help", "-h"} {
		f := newFakeAPI(t)
		r := f.run(a)
		assert.Equal(t, 0, r.code)
		assert.Contains(t, r.stdout+r.stderr, "kubectl podsweeper explain pod NAMESPACE/NAME")
	}
}

// TestReportAllFailedIsNotNone: report's only dry-run program could
// not be asked: it must not say that no dry run would destroy anything
// (explain.md:53-54, by analogy; explain.md:405-407 its PUs are not listed).
func TestReportAllFailedIsNotNone(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", nil, "--dry-run")
	r := f.run("report")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "could not be asked")
	assert.NotContains(t, r.stdout, "no dry run would destroy anything")
}

// TestNameAndUIDLivePodOfThatUID: both given, the pod of that name is
// of that UID: it is the pod, and its node's programs are asked.
func TestNameAndUIDLivePodOfThatUID(t *testing.T) {
	f := newFakeAPI(t)
	f.addPod(*workloadPod("apps", "web", firstUID, "node-a"))
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding(webPU()))
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-b", "node-b", nil)
	r := f.run("explain", "pod", "apps/web", "--uid", firstUID)
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "Pod apps/web (UID "+firstUID+") on node node-a: Running.")
	assert.NotContains(t, r.stdout, "na-b")
}

// TestEventSeriesAndOrder: an Event series is said at its first time,
// whose note it keeps, with its count and its last time; Events are oldest
// first, by the time of their notes.
func TestEventSeriesAndOrder(t *testing.T) {
	f := newFakeAPI(t)
	now := time.Now()
	e1 := incidentNodeEvent("node-a", "apps", "web", firstUID, now.Add(-30*time.Minute))
	e1.Series = &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(now.Add(-time.Minute))}
	e2 := incidentNodeEvent("node-b", "apps", "web", incidentUID, now.Add(-10*time.Minute))
	f.addEvent(e1)
	f.addEvent(e2)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding())
	r := f.run("explain", "pod", "apps/web")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "30m0s ago  Normal PUDestroyed, regarding Node/node-a (3 times, the last 1m0s ago; the note is the first's)")
	i1, i2 := strings.Index(r.stdout, "Node/node-a"), strings.Index(r.stdout, "Node/node-b")
	assert.True(t, i1 >= 0 && i2 > i1, "oldest first:\n%s", r.stdout)
}

// TestNodeWithNoProgramIsNotKnowsNothing: --node names a node where no
// node agent runs (a typo: node-aa); the PU waits for a retry on node-a.
// Only the cluster controller is asked. explain.md:53-54: when none was
// found the answer says it cannot tell, rather than that it knows nothing.
func TestNodeWithNoProgramIsNotKnowsNothing(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-1", "node-z", mapPages(nil, nil))
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", mapPages([]map[string]any{{
		"puID": incidentUID, "pod": "apps/web", "state": "waiting for a retry", "age": "6m", "attempts": 3}}, nil))
	r := f.run("explain", "pod", "apps/web", "--node", "node-aa")
	assert.Equal(t, 0, r.code)
	assert.NotContains(t, r.stdout, "podsweeper knows nothing of this pod")
}

// TestImpersonationRefused: explain.md:421-423.
func TestImpersonationRefused(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding(webPU()))
	r := f.run("explain", "pod", "apps/web", "--as", "bob")
	assert.Equal(t, 1, r.code)
	assert.Equal(t, 1, strings.Count(r.stderr, "\n"))
	assert.Contains(t, r.stderr, `forbidden: you may not impersonate users "bob" (--as)`)
}

// TestGonePodByNameEventsOfTwoUIDs: a gone pod asked by name, whose
// two earlier pods' Events name node-a and node-b, and a PU of a third
// still on node-c: every node's programs are asked (explain.md:45-47).
func TestGonePodByNameEventsOfTwoUIDs(t *testing.T) {
	f := newFakeAPI(t)
	now := time.Now()
	f.addEvent(incidentNodeEvent("node-a", "apps", "web", incidentUID, now.Add(-20*time.Minute)))
	f.addEvent(incidentNodeEvent("node-b", "apps", "web", incidentUID2, now.Add(-10*time.Minute)))
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding())
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-b", "node-b", holding())
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-c", "node-c", holding(webPU()))
	r := f.run("explain", "pod", "apps/web")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, firstUID)
	assert.Contains(t, r.stdout, "Node/node-a")
	assert.Contains(t, r.stdout, "Node/node-b")
	rj := f.run("explain", "pod", "apps/web", "-o", "json")
	var x PodExplanation
	assert.NoError(t, json.Unmarshal([]byte(rj.stdout), &x))
	assert.Len(t, x.Events, 2)
	assert.Len(t, x.Answers, 3)
}

// TestUIDAloneEventNamesNodeA: --uid alone, the pod gone; the node
// agent's Event names node-a: node-a's programs are asked, not node-b's
// (explain.md:43-44).
func TestUIDAloneEventNamesNodeA(t *testing.T) {
	f := newFakeAPI(t)
	f.addEvent(incidentNodeEvent("node-a", "apps", "web", firstUID, time.Now().Add(-time.Minute)))
	f.addProgram("podsweeper-cni-gc", "kube-system", "cg-a", "node-a", holding(webPU()))
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-b", "node-b", holding())
	r := f.run("explain", "pod", "--uid", firstUID)
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "cg-a")
	assert.NotContains(t, r.stdout, "na-b")
	assert.Contains(t, r.stdout, "waiting for its next check")
}

// TestExplainIPHangingIsBounded: explain.md:22-23, for explain ip.
func TestExplainIPHangingIsBounded(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-cni-gc", "kube-system", "cg-a", "node-a", incidentHanging(t, "/debug/podsweeper/cni/address", nil))
	r := f.run("explain", "ip", "10.88.0.4", "--node", "node-a", "--timeout=2s")
	assert.Equal(t, 0, r.code)
	assert.Less(t, r.took, 15*time.Second)
	assert.Contains(t, r.stdout, "could not be asked")
}

// TestExplainIPAnswerOfAnotherAddress: cni-gc's page answers for
// another address than the one asked (nonsense, or a proxy's cache): the
// plugin must not tell it as what holds the address asked about.
func TestExplainIPAnswerOfAnotherAddress(t *testing.T) {
	f := newFakeAPI(t)
	h := cniGCAnswering(map[string]any{"ip": "10.88.0.99",
		"attachments": []map[string]any{{"network": "podnet", "containerID": "3a9f0c1b2d4e5", "ifName": "eth0",
			"podNamespace": "apps", "podName": "other", "podUID": incidentUID2, "written": time.Now().UTC().Format(time.RFC3339)}}})
	f.addProgram("podsweeper-cni-gc", "kube-system", "cg-a", "node-a", h)
	r := f.run("explain", "ip", "10.88.0.4", "--node", "node-a")
	assert.Equal(t, 0, r.code)
	assert.NotContains(t, r.stdout, "of pod apps/other")
}

// TestNameAloneIsTheContextsNamespace: explain.md:20-21 "--namespace
// (-n) is the programs' namespace ..., not the pod's: the pod is
// NAMESPACE/NAME, or NAME in your context's namespace".
func TestNameAloneIsTheContextsNamespace(t *testing.T) {
	f := newFakeAPI(t)
	f.addPod(*workloadPod("apps", "web", firstUID, "node-a"))
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding(webPU()))
	r := f.run("explain", "pod", "web", "-n", "podsweeper")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "Pod apps/web (UID "+firstUID+") on node node-a: Running.")
	assert.Contains(t, r.stdout, "tracked, waiting for its next check")
}

// TestStatusJSONIsTheText: status -o json holds what the text says.
func TestStatusJSONIsTheText(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding(webPU()))
	f.addProgram("podsweeper-cni-gc", "kube-system", "cg-a", "node-a", nil, "--status-bind-address=0")
	r := f.run("status", "--node", "node-a")
	rj := f.run("status", "--node", "node-a", "-o", "json")
	assert.Equal(t, 0, r.code)
	assert.Equal(t, 0, rj.code)
	var s NodeStatus
	assert.NoError(t, json.Unmarshal([]byte(rj.stdout), &s))
	assert.Len(t, s.Answers, 2)
	assert.Contains(t, r.stdout, "cg-a could not be asked: its status listener is off (--status-bind-address=0)")
	assert.Contains(t, r.stdout, firstUID)
}

// TestReportHeldIsNotStale: a dry run reported a PU's SandboxChanged
// (held), then its PodGone (dropped): report says the same PU is held
// ("yes") and not ("no: pod gone"); explain pod takes the latest report of
// each PU.
func TestReportHeldIsNotStale(t *testing.T) {
	f := newFakeAPI(t)
	now := time.Now().UTC()
	rep := map[string]any{"total": 2, "reports": []map[string]any{
		{"at": now.Add(-5 * time.Minute).Format(time.RFC3339), "puID": incidentUID, "pod": "apps/web", "sandboxID": "3a9f0c1b2d4e5",
			"reason": "SandboxChanged", "row": 10, "why": "same pod, another sandbox"},
		{"at": now.Add(-time.Minute).Format(time.RFC3339), "puID": incidentUID, "pod": "apps/web", "sandboxID": "c4d5e6f708192",
			"reason": "PodGone", "row": 1, "why": "pod not found", "dropped": true}}}
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", mapPages(nil, rep), "--dry-run")
	r := f.run("report")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "no: pod gone")
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.Contains(l, incidentUID) {
			assert.NotRegexp(t, `\syes\s*$`, l, "a PU the engine no longer holds is said held")
		}
	}
}

// TestLivePodWrongNode: --node is "the node the pod ran on, for a pod
// that is gone" (--help; explain.md:43-44). For a live pod on node-a, given
// --node node-b, the plugin asks node-b's agent only and says it holds no
// PU of the pod, the pod's own node's agent, which holds it, unasked and
// unnamed.
func TestLivePodWrongNode(t *testing.T) {
	f := newFakeAPI(t)
	f.addPod(*workloadPod("apps", "web", firstUID, "node-a"))
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding(webPU()))
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-b", "node-b", holding())
	r := f.run("explain", "pod", "apps/web", "--node", "node-b")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "on node node-a: Running.")
	if !strings.Contains(r.stdout, "na-a") {
		assert.Contains(t, r.stdout, "node-b", "a note that the pod's node is not the node asked")
		assert.Regexp(t, `(?i)note:.*node-a`, r.stdout, "the pod's own node's programs were not asked, and nothing says so")
	}
}

// TestDryRunFlagButNoReportPage: a program whose command line says
// --dry-run, and whose status listener serves no dry run's report (404).
// report says it "runs without --dry-run: it destroys", against the
// command line the plugin read itself.
func TestDryRunFlagButNoReportPage(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding(webPU()), "--dry-run")
	r := f.run("report")
	assert.Equal(t, 0, r.code)
	assert.NotContains(t, r.stdout, "runs without --dry-run: it destroys")
}

// TestAsGroupAlone: --as-group without --as: a bad command line (2) or
// a one-line error (1), never a stack trace.
func TestAsGroupAlone(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding(webPU()))
	r := f.run("explain", "pod", "apps/web", "--as-group", "sre")
	assert.Contains(t, []int{1, 2}, r.code)
	assert.Equal(t, 1, strings.Count(r.stderr, "\n"))
	assert.NotContains(t, r.stderr, "goroutine")
}

// TestCoreV1EventCount: an Event written through core/v1 (no
// reportingController, no eventTime: the plugin takes such Events, as its
// filter of reportingController "" shows), repeated 4 times (count 4,
// firstTimestamp and lastTimestamp): the plugin's Event.Count is "how many
// times it happened (a series), at least 1".
func TestCoreV1EventCount(t *testing.T) {
	f := newFakeAPI(t)
	now := time.Now()
	e := corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "apps", Name: "web.1", CreationTimestamp: metav1.NewTime(now.Add(-20 * time.Minute))},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "apps", Name: "web", UID: types.UID(firstUID)},
		Reason:         "PUDestroyed", Type: corev1.EventTypeNormal,
		Message:        "SandboxChanged: destroyed PU " + firstUID + " of pod apps/web (sandbox 3a9f)",
		FirstTimestamp: metav1.NewTime(now.Add(-20 * time.Minute)), LastTimestamp: metav1.NewTime(now.Add(-2 * time.Minute)), Count: 4,
	}
	f.addEvent(e)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding())
	r := f.run("explain", "pod", "apps/web")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "(4 times, the last 2m")
}

// TestStreamNeverAcknowledgedIsBounded: the API server (or the kubelet
// behind it) opens the port-forward, then never acknowledges the streams
// the plugin creates on it (a wedged kubelet, a slow link): explain.md:22-23
// "--timeout bounds each program's question, from the port-forward's
// upgrade on: a program not answered by then could not be asked".
func TestStreamNeverAcknowledgedIsBounded(t *testing.T) {
	f := newFakeAPI(t)
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	inner := f.srv.Config.Handler
	f.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/portforward") {
			inner.ServeHTTP(w, r)
			return
		}
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			http.Error(w, "no websockets here", http.StatusBadRequest)
			return
		}
		if _, err := httpstream.Handshake(r, w, []string{"portforward.k8s.io"}); err != nil {
			return
		}
		conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, replySent <-chan struct{}) error {
			select { // the stream's reply waits for this
			case <-done:
			case <-time.After(2 * time.Minute):
			}
			return nil
		})
		if conn == nil {
			return
		}
		defer conn.Close()
		select {
		case <-conn.CloseChan():
		case <-done:
		}
	})
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding(webPU()))
	r := f.run("status", "--node", "node-a", "--timeout=2s")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "na-a could not be asked")
	assert.Less(t, r.took, 15*time.Second, "--timeout=2s")
}

// TestForbiddenWithJSONIsOneLine: -o json changes nothing of a
// refusal: one line on stderr, nothing on stdout, status 1.
func TestForbiddenWithJSONIsOneLine(t *testing.T) {
	f := newFakeAPI(t)
	f.forbid = []string{"GET /api/v1/namespaces/podsweeper/pods/na-a/portforward", "POST /api/v1/namespaces/podsweeper/pods/na-a/portforward"}
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding(webPU()))
	r := f.run("status", "--node", "node-a", "-o", "json")
	assert.Equal(t, 1, r.code)
	assert.Equal(t, "", r.stdout)
	assert.Equal(t, 1, strings.Count(r.stderr, "\n"))
}

// TestExplainIPJSONIsTheText: explain ip -o json holds the attachment,
// its pod now and cni-gc's PU of it, as the text says them.
func TestExplainIPJSONIsTheText(t *testing.T) {
	f := newFakeAPI(t)
	f.addPod(*workloadPod("apps", "web", firstUID, "node-a"))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/debug/podsweeper":
			_ = json.NewEncoder(w).Encode([]map[string]any{webPU(), {"puID": incidentUID, "pod": "apps/other", "state": "idle", "age": "1m"}})
		case "/debug/podsweeper/cni/address":
			_ = json.NewEncoder(w).Encode(map[string]any{"ip": r.URL.Query().Get("ip"),
				"attachments": []map[string]any{{"network": "podnet", "containerID": "3a9f0c1b2d4e5", "ifName": "eth0",
					"podNamespace": "apps", "podName": "web", "podUID": firstUID, "written": time.Now().UTC().Format(time.RFC3339)}}})
		default:
			http.NotFound(w, r)
		}
	})
	f.addProgram("podsweeper-cni-gc", "kube-system", "cg-a", "node-a", h)
	r := f.run("explain", "ip", "::ffff:10.88.0.4", "--node", "node-a")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "Address 10.88.0.4 on node node-a.")
	assert.Contains(t, r.stdout, "live on node node-a: Running.")
	assert.NotContains(t, r.stdout, incidentUID)
	rj := f.run("explain", "ip", "10.88.0.4", "--node", "node-a", "-o", "json")
	var x IPExplanation
	assert.NoError(t, json.Unmarshal([]byte(rj.stdout), &x))
	assert.Len(t, x.PUs, 1)
	assert.Len(t, x.Pods, 1)
}

// TestRetryTimesAreSaid: a PU waiting for a retry says its attempts,
// its next attempt and its last error (explain.md:179-180).
func TestRetryTimesAreSaid(t *testing.T) {
	f := newFakeAPI(t)
	now := time.Now().UTC()
	f.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-1", "", mapPages([]map[string]any{{
		"puID": incidentUID2, "pod": "apps/db", "state": "waiting for a retry", "age": "3m40s", "lastChecked": now.Add(-8 * time.Second).Format(time.RFC3339Nano),
		"lastRow": 1, "why": "pod not found", "attempts": 3, "nextAttempt": now.Add(-time.Second).Format(time.RFC3339Nano), "lastError": "boom"}}, nil))
	r := f.run("explain", "pod", "apps/db")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "its destroy failed: waiting for a retry.")
	assert.Contains(t, r.stdout, "3 destroy call(s) failed; next due now.")
	assert.Contains(t, r.stdout, "last error    boom")
}
