package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

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

// TestAStatusPageOfNoPUsCannotTell: a status page that answers a list of something else than PUs ([{"hello":"world"}],
// a page of another server on the program's port) is no program's status page: as one that answers null, the answer
// says the program's page could not be read and that podsweeper cannot tell what it knows, never that it knows nothing.
func TestAStatusPageOfNoPUsCannotTell(t *testing.T) {
	for _, body := range []string{`[{"hello":"world"}]`, `[{"puID":"u1","state":"idle"}]`, `[{"puID":"u1","pod":"web","state":"idle"}]`} {
		c := newA4(t, a4Prog("podsweeper-node-agent", "ps", "agent-a", "node-a"))
		c.handle("ps", "agent-a", a4Raw{body: body})
		x, err := c.cluster("").explainPod(a4Ctx(t), "apps", "web", "", "", a4Now)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		_ = RenderPod(&b, x)
		if out := b.String(); strings.Contains(out, "knows nothing of this pod") || !strings.Contains(out, "is no PU") {
			t.Errorf("a status page answering %s: want it read as no program's page (\"is no PU\"), never \"knows nothing\"; got\n%s", body, out)
		}
	}
}

// TestAPodThatKeptChangingCannotTell: the pod is recreated on another node while each round asks its programs (or,
// at the last, deleted): after the last round the programs of its node now (or, for a pod gone, of the nodes where
// it ran before) were not asked, and may hold a PU of it. The answer names them on a `Not asked:` line and says it
// cannot tell all podsweeper knows of the pod, never that it knows nothing (docs/operating/explain.md, "When a
// program could not be asked").
func TestAPodThatKeptChangingCannotTell(t *testing.T) {
	for _, deleteLast := range []bool{false, true} {
		nodes := []string{"a", "b", "c", "d", "e"}
		agentA := &a3Program{at: a3Now, pus: []k8s.PUStatus{a3PU("uid-a", "apps/web")}}
		objs := []runtime.Object{a3Pod("apps", "web", "uid-a", "node-a")}
		for _, n := range nodes[1:] {
			objs = append(objs, a3ProgPod("podsweeper-node-agent", "podsweeper", "agent-"+n, "node-"+n))
		}
		api := a3Setup(t, agentA, &a3Program{at: a3Now}, objs...)
		for _, n := range nodes[1:] {
			api.handle("podsweeper", "agent-"+n, &a3Program{at: a3Now, pus: []k8s.PUStatus{a3PU("uid-"+n, "apps/web")}})
		}
		on, moves := 0, 0
		api.onForward = func(ns, name string) {
			if name != "agent-"+nodes[on] {
				return
			}
			gvr := corev1.SchemeGroupVersion.WithResource("pods")
			_ = api.fake.Tracker().Delete(gvr, "apps", "web")
			moves++
			if deleteLast && moves == maxRounds {
				return
			}
			on++
			if err := api.fake.Tracker().Add(a3Pod("apps", "web", "uid-"+nodes[on], "node-"+nodes[on])); err != nil {
				t.Error(err)
			}
		}
		x, err := api.cluster(5*time.Second).explainPod(a3Ctx(t), "apps", "web", "", "", a3Now)
		if err != nil {
			t.Fatal(err)
		}
		out := a3Render(t, x)
		if len(x.Unasked) == 0 || !strings.Contains(out, "Not asked: ") || !strings.Contains(out, "cannot tell all it knows of this pod") ||
			strings.Contains(out, "knows nothing") {
			t.Errorf("the pod kept changing (deleted at the last round: %v), and the programs that hold its PU now were not asked: want a `Not asked:` line and that it cannot tell; got\n%s", deleteLast, out)
		}
	}
}
