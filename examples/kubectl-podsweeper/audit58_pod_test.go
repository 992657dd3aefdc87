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
	c := a57Cluster(t, map[string]http.Handler{
		"podsweeper/agent-a":   a58Status(t, k8s.EngineRunning),
		"podsweeper/cc-0":      a58Status(t, k8s.EngineRunning),
		"kube-system/cni-gc-a": a58Status(t, k8s.EngineRunning, a58PU(a58UID, "apps/web")),
	},
		a57Pod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning),
		a57Pod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-0", "node-a", corev1.PodRunning),
		a57Pod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning))
	c.namespace = "podsweeper"
	x, err := c.explainPod(a57Ctx(t), "apps", "web", "", "", a57Now)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := a57RenderPod(t, x)
	a58HasNot(t, "the text", txt, "podsweeper knows nothing of this pod")
}

// a58DryRunAgent is a node agent in a dry run answering no PU and the report page reports (JSON).
func a58DryRunAgent(t *testing.T, reports string) http.Handler {
	return a57Program(a57Now, k8s.EngineRunning, map[string]a57Page{
		k8s.StatusPath: {200, "[]"},
		k8s.DryRunPath: {200, reports},
	})
}

// explain.md:70-71 and the brief's first promise: an answer never says that podsweeper knows nothing of a pod while a
// program that may hold a PU of it answered something unreadable. The gone pod apps/web is asked by name; a node agent
// in a dry run answers a report page one of whose reports names its pod "web", no namespace: no pod's name a program
// writes (the status page's same entry, a PU of pod "web", makes the program "could not be asked":
// TestAuditHoldsUnreadablePUCannotTell58). The plugin takes that report as read, drops it as of another pod, and says
// that podsweeper knows nothing of the pod.
func TestAuditUnreadableReportKnowsNothing58(t *testing.T) {
	at := a57Now.Add(-30 * time.Second).Format(time.RFC3339Nano)
	c := a57Cluster(t, map[string]http.Handler{
		"podsweeper/agent-a": a58DryRunAgent(t, `{"total":1,"reports":[{"at":"`+at+`","puID":"`+a58UID+`","pod":"web","reason":"PodGone","row":1,"why":"pod not found","dropped":true}]}`),
	},
		a57Pod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning, "--dry-run"))
	x, err := c.explainPod(a57Ctx(t), "apps", "web", "", "", a57Now)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := a57RenderPod(t, x)
	a58HasNot(t, "the text", txt, "podsweeper knows nothing of this pod")
}

// The status page's entry of the same shape (a PU of pod "web", no namespace) is unreadable: the program could not be
// asked, and the answer cannot tell.
func TestAuditHoldsUnreadablePUCannotTell58(t *testing.T) {
	pu := a58PU(a58UID, "web")
	c := a57Cluster(t, map[string]http.Handler{
		"podsweeper/agent-a": a58Status(t, k8s.EngineRunning, pu),
	},
		a57Pod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning))
	x, err := c.explainPod(a57Ctx(t), "apps", "web", "", "", a57Now)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := a57RenderPod(t, x)
	a58Has(t, "the text", txt, "could not be asked")
	a58Has(t, "the text", txt, "podsweeper cannot tell")
}
