package main

import (
	"bytes"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// docs/operating/explain.md:77-78: "A standby cluster controller, whose engine does not run, holds no PU, and says so
// (`(a standby: its engine does not run)`, `standby` in JSON)"; explain.md:33: "`-o json` prints what the text is made
// from". report asks a leader and its standby, neither in a dry run: the JSON says the second is a standby (its engine
// does not run), the text says of it that "it destroys", and nowhere that it is a standby.
func TestAuditReportStandbySaysSo58(t *testing.T) {
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/cc-leader":  statusPage(t, k8s.EngineRunning),
		"podsweeper/cc-standby": statusPage(t, k8s.EngineNotRunning),
	},
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-leader", "node-a", corev1.PodRunning),
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-standby", "node-b", corev1.PodRunning))
	r, err := c.report(testContext(t), clockNow)
	if err != nil {
		t.Fatal(err)
	}
	var txt, js bytes.Buffer
	if err := RenderReport(&txt, r); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	wantSays(t, "the JSON", js.String(), `"standby": true`)
	wantSays(t, "the text", txt.String(), "cluster-controller podsweeper/cc-standby (a standby: its engine does not run)")
	wantNotSays(t, "the text", txt.String(), "cluster-controller podsweeper/cc-standby runs without --dry-run: it destroys")
}

// The same of status --node holds: a node agent whose engine is stopping (Start's context done: its page says
// EngineNotRunning and still lists its PUs) is told in JSON as not running its engine (standby), and the text says so
// on the line `Not asked:` that names what its leader, if one leads, holds.
func TestAuditHoldsStatusStandbySaysSo58(t *testing.T) {
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a": statusPage(t, k8s.EngineNotRunning, idlePU(firstUID, "apps/web")),
	},
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning))
	s, err := c.status(testContext(t), "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	var txt, js bytes.Buffer
	if err := RenderStatus(&txt, s); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(&js, s); err != nil {
		t.Fatal(err)
	}
	wantSays(t, "the JSON", js.String(), `"standby": true`)
	wantSays(t, "the text", txt.String(), "its engine does not run")
}
