package main

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// explain.md:447-449 (troubleshooting list of explain.md): "`status --node` names on a line `Not asked:` (`unasked`
// in JSON) each program's pod of the node that does not run (Pending, Unknown, ...)".
func TestAuditHoldsStatusNamesPendingProgram(t *testing.T) {
	prog := servePages(clockNow, k8s.EngineRunning, map[string]rawAnswer{k8s.StatusPath: {code: http.StatusOK, body: `[]`}})
	c := clusterServing(t, map[string]http.Handler{"podsweeper/na-a": prog},
		programPod("podsweeper-node-agent", "na", "podsweeper", "na-a", "node-a", corev1.PodRunning),
		programPod("podsweeper-cni-gc", "cg", "kube-system", "cg-a", "node-a", corev1.PodPending),
	)
	s, err := c.status(testContext(t), "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	var txt, js bytes.Buffer
	if err := RenderStatus(&txt, s); err != nil {
		t.Fatal(err)
	}
	_ = writeJSON(&js, s)
	if !strings.Contains(txt.String(), "Not asked: cni-gc kube-system/cg-a on node node-a is Pending") || !strings.Contains(js.String(), "cg-a") {
		t.Errorf("text:\n%s\njson:\n%s", txt.String(), js.String())
	}
}

// explain.md:77-80: "when every replica of a program asked is a standby (its leader ended, and none leads yet), its
// leader is named on a line `Not asked:`, and the answer cannot tell" — for report too (explain.md:449-451).
func TestAuditHoldsReportAllStandbys(t *testing.T) {
	pages := map[string]rawAnswer{k8s.StatusPath: {code: http.StatusOK, body: `[]`}, k8s.DryRunPath: {code: http.StatusOK, body: `{"total":0,"reports":[]}`}}
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/cc-1": servePages(clockNow, k8s.EngineNotRunning, pages),
		"podsweeper/cc-2": servePages(clockNow, k8s.EngineNotRunning, pages),
	},
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-1", "node-x", corev1.PodRunning, "--dry-run"),
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-2", "node-y", corev1.PodRunning, "--dry-run"),
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-0", "node-z", corev1.PodFailed, "--dry-run"),
	)
	r, err := c.report(testContext(t), clockNow)
	if err != nil {
		t.Fatal(err)
	}
	var txt bytes.Buffer
	if err := RenderReport(&txt, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "Not asked: the leader of cluster-controller cc") || strings.Contains(txt.String(), "no dry run would destroy anything") {
		t.Errorf("every replica a standby:\n%s", txt.String())
	}
}

// explain.md:90-93: a Pending cni-gc of the node beside one that answered is named on a line `Not asked:`, and an
// address nothing holds is then not "known nothing of".
func TestAuditHoldsIPPendingBesideAnAnswer(t *testing.T) {
	prog := servePages(clockNow, k8s.EngineRunning, map[string]rawAnswer{
		addressPath:    {code: http.StatusOK, body: `{"ip":"10.88.0.200","reservationsRead":"2026-12-06T11:59:48Z"}`},
		k8s.StatusPath: {code: http.StatusOK, body: `[]`},
	})
	c := clusterServing(t, map[string]http.Handler{"kube-system/cg-a": prog},
		programPod("podsweeper-cni-gc", "cg", "kube-system", "cg-a", "node-a", corev1.PodRunning),
		programPod("podsweeper-cni-gc", "cg2", "kube-system", "cg2-a", "node-a", corev1.PodPending),
	)
	x, err := c.explainIP(testContext(t), "10.88.0.200", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := ipTextAndJSON(t, x)
	if !strings.Contains(txt, "Not asked: cni-gc kube-system/cg2-a") || strings.Contains(txt, "knows nothing") {
		t.Errorf("text:\n%s", txt)
	}
}

// explain.md:35-37: "`--help` after a command (`kubectl podsweeper explain pod --help`) prints that command's lines
// and the flags it reads; `--help` alone prints every command and kubectl's flags (on stdout, status 0)."
func TestAuditHoldsHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(testContext(t), []string{"-n", "podsweeper", "explain", "ip", "--help"}, &out, &errb); code != 0 {
		t.Fatalf("status %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "kubectl podsweeper explain ip ADDRESS --node NODE") || !strings.Contains(out.String(), "--node") ||
		strings.Contains(out.String(), "explain pod --uid") {
		t.Errorf("explain ip --help:\n%s", out.String())
	}
	out.Reset()
	if code := run(testContext(t), []string{"--help"}, &out, &errb); code != 0 {
		t.Fatalf("status %d", code)
	}
	for _, l := range []string{"explain pod NAMESPACE/NAME", "explain pod --uid UID", "explain ip ADDRESS", "status --node NODE", "report [-o json]", "--kubeconfig", "--context"} {
		if !strings.Contains(out.String(), l) {
			t.Errorf("--help lacks %q", l)
		}
	}
}
