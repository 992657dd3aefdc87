package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// status --node node-a, as command runs it: the node agent's pod on node-a
// is in phase Unknown (its node stopped reporting: the program may run, and
// hold PUs, but it is not asked). The answer says "No podsweeper program
// runs on node node-a": it tells nothing of the program there, not even
// that it was not asked; explain pod names the same pod "not asked".
func TestAuditXStatusNeverSaysNoProgramRunsWhenOneWasNotAsked(t *testing.T) {
	now := time.Now().UTC()
	agent := runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a")
	agent.Status.Phase = corev1.PodUnknown
	c, _ := clusterAndFake(t, map[string]http.Handler{}, 5*time.Second, agent)
	s, err := c.status(context.Background(), "node-a", now)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := RenderStatus(&b, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "agent-a") {
		t.Fatalf("status names nothing of node-agent podsweeper/agent-a on node-a (phase Unknown, not asked):\n%s", b.String())
	}
}
