package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// A live pod, its PU held by the node agent of its node: the port-forward harness works, and the PU is told.
func TestAuditYHoldsLivePodPUTold(t *testing.T) {
	now := time.Now().UTC()
	agent := programPod("podsweeper-node-agent", "r", "podsweeper", "agent-a", "node-a", corev1.PodRunning)
	e := newFakeCluster(t, agent, workloadPod("apps", "web", "uid-web", "node-a")).closingAnswers().allowingReviews()
	e.handle("podsweeper/agent-a", &programPages{at: now, pus: []k8s.PUStatus{{PUID: "uid-web", Pod: "apps/web", State: "idle", Age: "1m"}}})
	x, err := e.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if !strings.Contains(out, "PU uid-web of pod apps/web") {
		t.Fatalf("the PU is not told:\n%s", out)
	}
}

// report: a node agent whose pod is in phase Unknown (its node lost touch with the API server; the program may still
// run, in a dry run, holding reports) is not asked; the one asked, in a dry run, has no report yet. The table says that no
// dry run would destroy anything, and names no program not asked.
func TestAuditYReportNamesProgramNotAsked(t *testing.T) {
	now := time.Now().UTC()
	a := programPod("podsweeper-node-agent", "r", "podsweeper", "agent-a", "node-a", corev1.PodRunning, "--dry-run")
	b := programPod("podsweeper-node-agent", "r", "podsweeper", "agent-b", "node-b", corev1.PodUnknown, "--dry-run")
	e := newFakeCluster(t, a, b).closingAnswers().allowingReviews()
	e.handle("podsweeper/agent-a", &programPages{at: now, dry: &dryRunPage{Reports: []k8s.WouldDestroy{}}})
	c := e.cluster(5 * time.Second)
	r, err := c.report(testContext(t), now) // as main.go's report does
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := RenderReport(&text, r); err != nil {
		t.Fatal(err)
	}
	var js strings.Builder
	_ = writeJSON(&js, r)
	out := text.String()
	if strings.Contains(out, "no dry run would destroy anything") || !strings.Contains(out, "agent-b") {
		t.Errorf("report says no dry run would destroy anything beside node-agent podsweeper/agent-b (Unknown), not asked and not named:\n%s", out)
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(js.String()), &m)
	if !strings.Contains(js.String(), "agent-b") {
		t.Errorf("JSON names no program not asked either:\n%s", js.String())
	}
}

// report: the only program, a node agent in a dry run, is Pending (rescheduled, pulling its image): report says that
// no podsweeper program was found to ask, not that one was found and not asked.
func TestAuditYReportAllPendingNamesNotAsked(t *testing.T) {
	now := time.Now().UTC()
	b := programPod("podsweeper-node-agent", "r", "podsweeper", "agent-b", "node-b", corev1.PodPending, "--dry-run")
	e := newFakeCluster(t, b).closingAnswers().allowingReviews()
	c := e.cluster(5 * time.Second)
	r, err := c.report(testContext(t), now)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	_ = RenderReport(&text, r)
	if !strings.Contains(text.String(), "agent-b") {
		t.Errorf("report names no program not asked, node-agent podsweeper/agent-b (Pending) found:\n%s", text.String())
	}
}
