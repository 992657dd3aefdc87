package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// docs/operating/explain.md:90-92: "`explain ip` asks each cni-gc of the node in turn ...; each holds its own latest
// frees, so one asked before it that could not be asked, and one of the node that does not run (Pending, Unknown), is
// named on a line `Not asked:` (`unasked` in JSON)". The node's only cni-gc is Unknown (its node's kubelet stopped
// reporting: it may well run, and hold its frees of the node): it is named nowhere, and the answer says that no
// cni-gc runs there ("no one was asked"), with no `unasked` in JSON. (explain.md:445-446 says that message is for "no
// Running pod of cni-gc's chart ... on that node": it contradicts :92, which this test holds the plugin to.)
func TestAuditIPUnknownCNIGCNamed58(t *testing.T) {
	c := clusterServing(t, map[string]http.Handler{},
		programPod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-unknown", "node-a", corev1.PodUnknown),
		programPod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-b", "node-b", corev1.PodRunning))
	x, err := c.explainIP(testContext(t), "10.88.0.4", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, js := ipTextAndJSON(t, x)
	wantSays(t, "the text", txt, "Not asked: cni-gc kube-system/cni-gc-unknown")
	wantSays(t, "the JSON", js, `"unasked"`)
}

// cniGCAnswering is a cni-gc answering addressPath with addr (JSON) and its status page with no PU.
func cniGCAnswering(t *testing.T, addr string) http.Handler {
	t.Helper()
	return servePages(clockNow, "", map[string]rawAnswer{
		addressPath:         {code: 200, body: addr},
		"/debug/podsweeper": {code: 200, body: "[]"},
	})
}

// docs/operating/explain.md:70-71 with :90-92: "When a program could not be asked, or none was found, the answer says
// that it cannot tell ..., rather than that it knows nothing"; "`explain ip` asks each cni-gc of the node in turn until
// one answers for that address; each holds its own latest frees". Two cni-gc run on node-a (a rollout's surge: the
// new pod and the old one, which freed 10.88.0.13 30s ago). The first by name answers that nothing holds the address
// and it freed none of it; the second, which did, is never asked, is named nowhere, and the answer says that cni-gc
// knows nothing of the address.
func TestAuditIPSecondCNIGCNeverAsked58(t *testing.T) {
	read := clockNow.Add(-12 * time.Second).Format(time.RFC3339)
	freedAt := clockNow.Add(-30 * time.Second).Format(time.RFC3339)
	c := clusterServing(t, map[string]http.Handler{
		"kube-system/cni-gc-a-new": cniGCAnswering(t, `{"ip":"10.88.0.13","reservationsRead":"`+read+`"}`),
		"kube-system/cni-gc-b-old": cniGCAnswering(t, `{"ip":"10.88.0.13","reservationsRead":"`+read+`","freed":[{"at":"`+freedAt+
			`","reservation":true,"network":"podnet","file":"/var/lib/cni/networks/podnet/10.88.0.13","containerID":"c0ffee00d2b34c4e9a513f0c8e5b7d2168a1b2c3d4e5f60718293a4b5c6d7e8f","ifName":"eth0",`+
			`"decision":{"at":"`+freedAt+`","reason":"NoSandbox","row":18,"why":"a host-local reservation of no sandbox the runtime lists or the cache holds, older than ReservationGrace","verdict":"free"}}]}`),
	},
		programPod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-a-new", "node-a", corev1.PodRunning),
		programPod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-b-old", "node-a", corev1.PodRunning))
	x, err := c.explainIP(testContext(t), "10.88.0.13", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := ipTextAndJSON(t, x)
	wantNotSays(t, "the text", txt, "cni-gc knows nothing of this address")
	if !strings.Contains(txt, "cni-gc-b-old") {
		t.Errorf("the text names nowhere the cni-gc that freed the address, which was not asked:\n%s", txt)
	}
}

// adapters/k8s/status.go:45-49 (go doc EngineHeader): "EngineNotRunning for an engine not started ... or whose Start
// has returned, which holds no PU whatever the program's other replicas hold. kubectl podsweeper tells such a page's
// program from one that holds nothing"; explain.md:298-305: explain ip tells "the pod the cache recorded, with whether
// it lives now and cni-gc's PU of it". cni-gc's address page names a live pod's attachment; its status page says its
// engine does not run (Start returned) and lists no PU. explain pod would say so ("(a standby: its engine does not
// run)", and name what is not told); explain ip's text and JSON say nothing of it: its pod's attachment reads as one
// whose pod cni-gc holds no PU of, as from an engine that runs.
func TestAuditIPEngineNotRunningToldApart58(t *testing.T) {
	written := clockNow.Add(-4 * time.Minute).Format(time.RFC3339)
	read := clockNow.Add(-12 * time.Second).Format(time.RFC3339)
	c := clusterServing(t, map[string]http.Handler{
		"kube-system/cni-gc-a": servePages(clockNow, k8s.EngineNotRunning, map[string]rawAnswer{
			addressPath:    {code: 200, body: `{"ip":"10.88.0.4","reservationsRead":"` + read + `","attachments":[{"network":"podnet","containerID":"3a9f0c1b2d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8","ifName":"eth0","podNamespace":"apps","podName":"web","podUID":"` + firstUID + `","written":"` + written + `"}]}`},
			k8s.StatusPath: {code: 200, body: "[]"},
		}),
	},
		workloadPod("apps", "web", firstUID, "node-a"),
		programPod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning))
	x, err := c.explainIP(testContext(t), "10.88.0.4", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, js := ipTextAndJSON(t, x)
	if !strings.Contains(txt, "engine does not run") {
		t.Errorf("the text does not tell cni-gc's engine, which does not run, from one that holds nothing:\n%s", txt)
	}
	if !strings.Contains(js, "standby") && !strings.Contains(js, "engine") {
		t.Errorf("the JSON does not tell cni-gc's engine, which does not run, from one that holds nothing:\n%s", js)
	}
}
