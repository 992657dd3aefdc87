package main

import (
	"strings"
	"testing"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// explain.md:455-457: "`explain pod --node NODE` for a pod that runs on another node asks NODE's programs, says so in
// a `Note:`, and names the programs of the pod's node on a line `Not asked:`, whether the pod was named or found by
// --uid, or created or recreated there while the programs were asked."
//
// apps/web runs on node-b; asked with --node node-a. While node-a's programs are asked, the pod is deleted. The
// answer says in a Note that the pod runs on node node-b, not node-a; node-b's programs, which held its PU until
// now (their destroy under way), are not named on a line `Not asked:`, and the answer says that podsweeper knows
// nothing of the pod on node-a as if only node-a's programs could hold what is asked.
func TestNodeFlagPodOnAnotherNodeDeletedWhileAsked(t *testing.T) {
	f := newFakeAPI(t)
	const uid = "6f1c2a4e-0d2b-4c4e-9a51-3f0c8e5b7d21"
	a := &programPages{engine: k8s.EngineRunning}
	a.onStatus = func() { f.setAppPods() } // the pod is deleted while node-a's programs are asked
	f.addProgram("podsweeper-node-agent", "podsweeper", "node-agent-a", "node-a", a)
	f.addProgram("podsweeper-node-agent", "podsweeper", "node-agent-b", "node-b", &programPages{engine: k8s.EngineRunning})
	f.addPod(*workloadPod("apps", "web", uid, "node-b"))
	r := f.run("explain", "pod", "apps/web", "--node", "node-a")
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	mustContain(t, r.stdout, "Note: the pod runs on node node-b, not node-a")
	if !strings.Contains(r.stdout, "Not asked: the programs of node node-b") {
		t.Errorf("the pod ran on node-b when asked with --node node-a, and no line `Not asked:` names node-b's programs")
	}
}
