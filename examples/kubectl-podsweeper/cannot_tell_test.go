package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// TestCannotTellBesideAHeldPU: when a program could not be asked, or one of the pod's node was not asked, the answer
// says that it cannot tell all podsweeper knows of the pod, also when another program holds a PU of it: what the one
// not asked holds is not in the answer (docs/operating/explain.md, "When a program could not be asked").
func TestCannotTellBesideAHeldPU(t *testing.T) {
	now := time.Now()
	agent := Answer{Program: Program{Program: "node-agent", Namespace: "podsweeper", Pod: "agent-a", Node: "node-a"},
		PUs: []k8s.PUStatus{{PUID: "uid-web", Pod: "apps/web", State: "idle", Age: "1m"}}}
	for _, c := range []struct {
		name    string
		answers []Answer
		unasked []string
	}{
		{"a program could not be asked", []Answer{agent, {Program: Program{Program: "cni-gc", Namespace: "podsweeper", Pod: "cni-a", Node: "node-a"},
			Error: "connection refused"}}, nil},
		{"a program of the node was not asked", []Answer{agent}, []string{"cni-gc podsweeper/cni-a on node node-a is Pending: not asked."}},
	} {
		x := &PodExplanation{Now: now, Namespace: "apps", Name: "web", Pod: &Pod{Name: "web", Namespace: "apps", UID: "uid-web", Node: "node-a", Phase: "Running"},
			Answers: c.answers, Unasked: c.unasked}
		var b bytes.Buffer
		if err := RenderPod(&b, x); err != nil {
			t.Fatal(err)
		}
		if out := b.String(); !strings.Contains(out, "PU uid-web of pod apps/web") || !strings.Contains(out, "podsweeper cannot tell all it knows of this pod") {
			t.Errorf("%s, beside the agent's PU: want the PU and that it cannot tell all it knows; got\n%s", c.name, out)
		}
	}
}
