package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// explain pod --uid U --node node-b, for a pod U that lives on node-a, named
// by no Event: the cluster controller's PU of U names it, so the plugin
// finds it live on node-a after the programs were asked. node-a's node agent,
// a program of the pod's node that holds its PU, was not asked; the answer
// neither says so on a Not asked: line nor notes that the pod runs on
// another node than --node (as it does when an Event names the pod first),
// and it does not say it cannot tell.
func TestAuditXUIDWithAnotherNodeNamesTheUnaskedProgramsOfThePodsNode(t *testing.T) {
	now := time.Now().UTC()
	const uid = "6f1c2a4e-0000-0000-0000-000000000001"
	pu := `[{"puID":"` + uid + `","pod":"apps/web","state":"idle","age":"4m"}]`
	c, _ := clusterAndFake(t, map[string]http.Handler{
		"podsweeper/cc-abcde": rawPages{at: now, pages: map[string]rawAnswer{"/debug/podsweeper": {code: 200, body: pu}}},
		"podsweeper/agent-a":  rawPages{at: now, pages: map[string]rawAnswer{"/debug/podsweeper": {code: 200, body: pu}}},
		"podsweeper/agent-b":  rawPages{at: now, pages: map[string]rawAnswer{"/debug/podsweeper": {code: 200, body: `[]`}}},
	}, 5*time.Second,
		runningProgram("podsweeper-cluster-controller", "podsweeper", "cc-abcde", "node-c"),
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"),
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-b", "node-b"),
		webPod("node-a"))
	x, err := c.explainPod(context.Background(), "", "", uid, "node-b", now)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if !strings.Contains(out, "on node node-a") {
		t.Fatalf("the pod was not found live on node-a:\n%s", out)
	}
	if !strings.Contains(out, "not node-b") && !strings.Contains(out, "cannot tell") && !strings.Contains(out, "Not asked: ") {
		t.Fatalf("node-a's programs, of the pod's node, were not asked, and the answer says nothing of it:\n%s", out)
	}
}

// The same question with the pod's name: the pod is known before the
// programs are asked, and a Note says it runs on node-a, not node-b.
func TestAuditXHoldsNameUIDWithAnotherNodeNotes(t *testing.T) {
	now := time.Now().UTC()
	const uid = "6f1c2a4e-0000-0000-0000-000000000001"
	pu := `[{"puID":"` + uid + `","pod":"apps/web","state":"idle","age":"4m"}]`
	c, _ := clusterAndFake(t, map[string]http.Handler{
		"podsweeper/cc-abcde": rawPages{at: now, pages: map[string]rawAnswer{"/debug/podsweeper": {code: 200, body: pu}}},
		"podsweeper/agent-a":  rawPages{at: now, pages: map[string]rawAnswer{"/debug/podsweeper": {code: 200, body: pu}}},
		"podsweeper/agent-b":  rawPages{at: now, pages: map[string]rawAnswer{"/debug/podsweeper": {code: 200, body: `[]`}}},
	}, 5*time.Second,
		runningProgram("podsweeper-cluster-controller", "podsweeper", "cc-abcde", "node-c"),
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"),
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-b", "node-b"),
		webPod("node-a"))
	x, err := c.explainPod(context.Background(), "apps", "web", uid, "node-b", now)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if !strings.Contains(out, "the pod runs on node node-a, not node-b") {
		t.Fatalf("got:\n%s", out)
	}
}
