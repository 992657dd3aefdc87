package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// explain.md:90-92: "`explain ip` asks each cni-gc of the node in turn until one answers for that address; each
// holds its own latest frees, so one asked before it that could not be asked, and one of the node that does not run
// (Pending, Unknown), is named on a line `Not asked:` (`unasked` in JSON)". And the brief: every line of text says
// what the JSON says. A node whose Running cni-gc could not be asked (its listener off) and whose other cni-gc
// (a second release, or a rollout's surge) is Pending: the JSON names the Pending one in `unasked`; the text does not.
func TestAuditIPPendingCNIGCNamedInTextAsInJSON(t *testing.T) {
	c := clusterServing(t, nil,
		programPod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning, "--status-bind-address=0"),
		programPod("podsweeper-cni-gc", "cni-gc2", "kube-system", "cni-gc2-b", "node-a", corev1.PodPending),
	)
	x, err := c.explainIP(testContext(t), "10.88.0.4", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, js := ipTextAndJSON(t, x)
	var j struct {
		Unasked []string `json:"unasked"`
	}
	if err := json.Unmarshal([]byte(js), &j); err != nil {
		t.Fatal(err)
	}
	inJSON := false
	for _, u := range j.Unasked {
		inJSON = inJSON || strings.Contains(u, "cni-gc2-b")
	}
	inText := strings.Contains(txt, "Not asked:") && strings.Contains(txt, "cni-gc2-b")
	if inJSON != inText || !inText {
		t.Errorf("the Pending cni-gc kube-system/cni-gc2-b of node-a: in JSON's unasked %v, on a text line `Not asked:` %v\ntext:\n%s\njson:\n%s", inJSON, inText, txt, js)
	}
}

// explain.md:314-316: "When cni-gc's status page cannot be read, its address page's answer stands and the plugin
// says on a line that its PUs are not told, and why (`pusError` in JSON)." cni-gc answers its address page (nothing
// holds the address, its sweep read host-local's reservations) and its status page answers 500: the JSON says
// pusError; the text says no line of it, and ends "cni-gc knows nothing of this address."
func TestAuditIPPUsErrorToldInText(t *testing.T) {
	at := clockNow
	prog := servePages(at, "", map[string]rawAnswer{
		addressPath:         {code: http.StatusOK, body: `{"ip":"10.88.0.200","reservationsRead":"2026-12-06T11:59:48Z"}`},
		"/debug/podsweeper": {code: http.StatusInternalServerError, body: "engine exploded"},
	})
	c := clusterServing(t, map[string]http.Handler{"kube-system/cni-gc-a": prog},
		programPod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning),
	)
	x, err := c.explainIP(testContext(t), "10.88.0.200", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, js := ipTextAndJSON(t, x)
	if x.PUsError == "" {
		t.Fatalf("no pusError: the status page answered 500\n%s", js)
	}
	if !strings.Contains(txt, "PUs are not told") {
		t.Errorf("JSON says pusError %q; the text says nothing of it:\n%s", x.PUsError, txt)
	}
}

// explain.md:90-92, the same promise: two Running cni-gc of the node, neither of which can be asked (both listeners
// off): the first's error says why it could not be asked, and the second is named on a line `Not asked:`, in the
// text as in JSON, never dropped.
func TestExplainIPNamesASecondCNIGCThatCouldNotBeAsked(t *testing.T) {
	c := clusterServing(t, nil,
		programPod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning, "--status-bind-address=0"),
		programPod("podsweeper-cni-gc", "cni-gc2", "kube-system", "cni-gc2-b", "node-a", corev1.PodRunning, "--status-bind-address=0"),
	)
	x, err := c.explainIP(testContext(t), "10.88.0.4", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := ipTextAndJSON(t, x)
	if !slices.ContainsFunc(x.Unasked, func(u string) bool { return strings.Contains(u, "cni-gc2-b") }) ||
		!strings.Contains(txt, "Not asked: cni-gc kube-system/cni-gc2-b") {
		t.Errorf("the second cni-gc, which could not be asked either, is not named: unasked %q\ntext:\n%s", x.Unasked, txt)
	}
}
