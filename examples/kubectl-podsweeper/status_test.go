package main

// status --node: every PU of the programs on a node.

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// explain.md:67-69: a program whose engine has not listed its Inventory
// yet answers 503 and could not be asked.
func TestStatusProgramAnswering503CouldNotBeAsked(t *testing.T) {
	c := newFakeCluster(t, runningProgram("podsweeper-node-agent", "ps", "agent-a", "node-a")).closingAnswers().listingEventsWhole()
	c.handle("ps/agent-a", &programPages{at: askedAt, status: 503, body: "not yet\n"})
	cl := c.inNamespace("")
	ts, _, err := cl.programs(testContext(t), "node-a", false)
	if err != nil {
		t.Fatal(err)
	}
	answers, _, err := cl.askAll(testContext(t), ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = RenderStatus(&b, &NodeStatus{Now: askedAt, Node: "node-a", Answers: answers})
	if !strings.Contains(b.String(), "node-agent ps/agent-a could not be asked: reading its status on port 8084: /debug/podsweeper answered 503") {
		t.Fatalf("got:\n%s", b.String())
	}
}

// explain.md:447-449 (troubleshooting list of explain.md): "`status --node` names on a line `Not asked:` (`unasked`
// in JSON) each program's pod of the node that does not run (Pending, Unknown, ...)".
func TestStatusNamesPendingProgram(t *testing.T) {
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

// The same of status --node holds: a node agent whose engine has not started (its page says EngineNotRunning and lists
// the PUs its handler tracked) is told in JSON as not running its engine (standby), and the text says its engine has
// not started (a node agent elects no leader: none is named).
func TestStatusStandbySaysSo(t *testing.T) {
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
	wantSays(t, "the text", txt.String(), "its engine has not started")
	wantNotSays(t, "the text", txt.String(), "the leader of")
}

// explain.md:33: "`-o json` prints what the text is made from"; main.go's status help: "every PU of the programs on a
// node: its pod, its state, its last check's row and why, its attempts, its next attempt and what a dry run would
// do"; explain.md:84-85: "A dry run's report of a PU still on the status page is told under that PU (`reported it
// would destroy it`): what the dry run did last". A node agent in a dry run holds one PU; its report page, read right
// after its status page, reports it would destroy it (PodGone). The JSON says the program is in a dry run and its
// report; the text's row says "-" under DRY RUN, as for a program that is in none and reports nothing, and no line
// says that it is in a dry run.
func TestStatusDryRunSaysSo(t *testing.T) {
	pu := idlePU(firstUID, "apps/web")
	at := clockNow.Add(-time.Second).Format(time.RFC3339Nano)
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a": servePages(clockNow, k8s.EngineRunning, map[string]rawAnswer{
			k8s.StatusPath: {code: 200, body: mustJSON(t, []k8s.PUStatus{pu})},
			k8s.DryRunPath: {code: 200, body: `{"total":1,"reports":[{"at":"` + at + `","puID":"` + firstUID + `","pod":"apps/web","reason":"PodGone","row":1,"why":"pod not found"}]}`},
		}),
	},
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning, "--dry-run"))
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
	wantSays(t, "the JSON", js.String(), `"dryRun": true`)
	wantSays(t, "the JSON", js.String(), `"reason": "PodGone"`)
	if !strings.Contains(txt.String(), "PodGone") {
		t.Errorf("the text does not say the dry run's report of the PU (PodGone), which the JSON holds:\n%s", txt.String())
	}
}

// status --node node-a, as command runs it: the node agent's pod on node-a
// is in phase Unknown (its node stopped reporting: the program may run, and
// hold PUs, but it is not asked). The answer says "No podsweeper program
// runs on node node-a": it tells nothing of the program there, not even
// that it was not asked; explain pod names the same pod "not asked".
func TestStatusNeverSaysNoProgramRunsWhenOneWasNotAsked(t *testing.T) {
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

// explain.md: "status lists every PU of the programs on a node". A cni-gc rollout on node-a: the old pod in its grace
// period holds the node's status port, its replacement restarts until the port is free; both run in the node's
// network, so a port-forward to either reaches the old process's listener. Its PU is told once, and the answer says
// that which of the two answered cannot be told; not that each holds it.
func TestStatusOfHostNetworkPodsSharingAListenerIsToldOnce(t *testing.T) {
	page := statusPage(t, "", idlePU(firstUID, "apps/web"))
	hostNet := func(p *corev1.Pod) *corev1.Pod { p.Spec.HostNetwork = true; return p }
	c := clusterServing(t, map[string]http.Handler{"kube-system/cni-gc-new": page, "kube-system/cni-gc-old": page},
		hostNet(programPod("podsweeper-cni-gc", "cg", "kube-system", "cni-gc-new", "node-a", corev1.PodRunning)),
		hostNet(programPod("podsweeper-cni-gc", "cg", "kube-system", "cni-gc-old", "node-a", corev1.PodRunning)))
	text := statusOfNodeA(t, c)
	if n := strings.Count(text, firstUID); n != 1 {
		t.Errorf("the PU of one listener told %d times:\n%s", n, text)
	}
	wantSays(t, "the text", text, "or cni-gc kube-system/cni-gc-old: they share the node's network and its status port")
}

// explain.md: pods of one node's network on one status port "are asked once, and told as one ... which of them
// answered cannot be told". A rollout that turns the dry run on: the old pod (no --dry-run) holds the port and answers,
// its report page 404 as any program's without a dry run: its PU is told, not "could not be asked" as an image that
// predates the report page. A rollout of a dry run whose old pod restarted (its reports before are gone) answers no
// report of a gone pod: the answer cannot tell, as that pod's alone would.
func TestASharedListenerIsInADryRunAsAllItsPodsAreAndRestartedAsAnyHas(t *testing.T) {
	hostNet := func(p *corev1.Pod, restarts int32) *corev1.Pod {
		p.Spec.HostNetwork = true
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "cni-gc", RestartCount: restarts}}
		return p
	}
	t.Run("a rollout that turns the dry run on", func(t *testing.T) {
		page := statusPage(t, "", idlePU(firstUID, "apps/web"))
		c := clusterServing(t, map[string]http.Handler{"kube-system/cni-gc-abc": page, "kube-system/cni-gc-xyz": page},
			hostNet(programPod("podsweeper-cni-gc", "cg", "kube-system", "cni-gc-abc", "node-a", corev1.PodRunning, "--dry-run"), 0),
			hostNet(programPod("podsweeper-cni-gc", "cg", "kube-system", "cni-gc-xyz", "node-a", corev1.PodRunning), 0))
		text := statusOfNodeA(t, c)
		wantSays(t, "the text", text, firstUID)
		wantNotSays(t, "the text", text, "could not be asked")
	})
	t.Run("a dry run whose old pod restarted", func(t *testing.T) {
		pages := &programPages{pus: []k8s.PUStatus{}, dry: &dryRunPage{Reports: []k8s.WouldDestroy{}}}
		c := newFakeCluster(t,
			hostNet(programPod("podsweeper-cni-gc", "cg", "kube-system", "cni-gc-abc", "node-a", corev1.PodRunning, "--dry-run"), 0),
			hostNet(programPod("podsweeper-cni-gc", "cg", "kube-system", "cni-gc-xyz", "node-a", corev1.PodRunning, "--dry-run"), 1)).
			closingAnswers().listingEventsWhole()
		c.handle("kube-system/cni-gc-abc", pages)
		c.handle("kube-system/cni-gc-xyz", pages)
		x, err := c.inNamespace("").explainPod(testContext(t), "apps", "gone", "", "node-a", askedAt)
		if err != nil {
			t.Fatal(err)
		}
		text := podText(t, x)
		wantNotSays(t, "the text", text, "knows nothing")
		wantSays(t, "the text", text, "a dry run's program restarted")
	})
}

// statusOfNodeA is the text of status --node node-a of c.
func statusOfNodeA(t *testing.T, c *cluster) string {
	t.Helper()
	s, err := c.status(testContext(t), "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	var txt bytes.Buffer
	if err := RenderStatus(&txt, s); err != nil {
		t.Fatal(err)
	}
	return txt.String()
}
