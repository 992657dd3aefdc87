package main

import (
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// docs/operating/explain.md:70-71: "When a program could not be asked, or none was found, the answer says that it
// cannot tell what podsweeper knows of the pod, rather than that it knows nothing"; explain.md:31 and :460-461:
// "`--namespace` (`-n`) is **the programs' namespace**", "`forbidden: you may not list pods in every namespace`: name
// the programs' namespace with `-n`". The programs are installed as explain.md's own examples show them: the node agent
// and the cluster controller in podsweeper, cni-gc in kube-system. Told to, the user gives -n podsweeper: cni-gc,
// which holds the gone pod's PU (its destroy fails), is not looked for, not asked and not named, and the answer says
// that podsweeper knows nothing of the pod.
func TestAuditNamespaceFlagKnowsNothing58(t *testing.T) {
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a":   statusPage(t, k8s.EngineRunning),
		"podsweeper/cc-0":      statusPage(t, k8s.EngineRunning),
		"kube-system/cni-gc-a": statusPage(t, k8s.EngineRunning, idlePU(firstUID, "apps/web")),
	},
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning),
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-0", "node-a", corev1.PodRunning),
		programPod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning))
	c.namespace = "podsweeper"
	x, err := c.explainPod(testContext(t), "apps", "web", "", "", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := podTextAndJSON(t, x)
	wantNotSays(t, "the text", txt, "podsweeper knows nothing of this pod")
}

// dryRunAgent is a node agent in a dry run answering no PU and the report page reports (JSON).
func dryRunAgent(t *testing.T, reports string) http.Handler {
	return servePages(clockNow, k8s.EngineRunning, map[string]rawAnswer{
		k8s.StatusPath: {code: 200, body: "[]"},
		k8s.DryRunPath: {code: 200, body: reports},
	})
}

// explain.md:70-71 and the brief's first promise: an answer never says that podsweeper knows nothing of a pod while a
// program that may hold a PU of it answered something unreadable. The gone pod apps/web is asked by name; a node agent
// in a dry run answers a report page one of whose reports names its pod "web", no namespace: no pod's name a program
// writes (the status page's same entry, a PU of pod "web", makes the program "could not be asked":
// TestAuditHoldsUnreadablePUCannotTell58). The plugin takes that report as read, drops it as of another pod, and says
// that podsweeper knows nothing of the pod.
func TestAuditUnreadableReportKnowsNothing58(t *testing.T) {
	at := clockNow.Add(-30 * time.Second).Format(time.RFC3339Nano)
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a": dryRunAgent(t, `{"total":1,"reports":[{"at":"`+at+`","puID":"`+firstUID+`","pod":"web","reason":"PodGone","row":1,"why":"pod not found","dropped":true}]}`),
	},
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning, "--dry-run"))
	x, err := c.explainPod(testContext(t), "apps", "web", "", "", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := podTextAndJSON(t, x)
	wantNotSays(t, "the text", txt, "podsweeper knows nothing of this pod")
}

// The status page's entry of the same shape (a PU of pod "web", no namespace) is unreadable: the program could not be
// asked, and the answer cannot tell.
func TestAuditHoldsUnreadablePUCannotTell58(t *testing.T) {
	pu := idlePU(firstUID, "web")
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a": statusPage(t, k8s.EngineRunning, pu),
	},
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning))
	x, err := c.explainPod(testContext(t), "apps", "web", "", "", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := podTextAndJSON(t, x)
	wantSays(t, "the text", txt, "could not be asked")
	wantSays(t, "the text", txt, "podsweeper cannot tell")
}
