package main

import (
	"strings"
	"testing"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// explain.md:79-82: "A standby cluster controller, whose engine does not run, holds no PU, and says so ...: when
// every replica of a program asked is a standby (its leader ended, and none leads yet), its leader is named on a
// line `Not asked:`, and the answer cannot tell."
//
// Two installs of the cluster controller under the same release name (app.kubernetes.io/instance "rel"), in two
// namespaces: helm's release names are per namespace, and the kustomize bases set no instance at all. In team-a,
// the leader ended and its one replica left is a standby; team-b's leader runs. Every replica of team-a's program
// asked is a standby: its leader, which may hold a PU of the pod, is to be named on a line `Not asked:`, and the
// answer cannot tell. The plugin takes team-b's leader for team-a's.
func TestStandbyOfAReleaseInAnotherNamespace(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-cluster-controller", "team-a", "cc-a-fghij", "", &programPages{engine: k8s.EngineNotRunning})
	f.addProgram("podsweeper-cluster-controller", "team-b", "cc-b-abcde", "", &programPages{engine: k8s.EngineRunning})
	f.addProgram("podsweeper-node-agent", "team-b", "node-agent-x7k2p", "node-a", &programPages{engine: k8s.EngineRunning})
	r := f.run("explain", "pod", "apps/cache")
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	mustContain(t, r.stdout, "cluster-controller team-a/cc-a-fghij (a standby: its engine does not run) holds no PU of this pod.")
	if !strings.Contains(r.stdout, "Not asked: the leader of cluster-controller") {
		t.Errorf("every replica of team-a's cluster controller asked is a standby, and no line `Not asked:` names its leader")
	}
	if strings.Contains(r.stdout, "podsweeper knows nothing of this pod") {
		t.Errorf("the answer says podsweeper knows nothing of the pod, though team-a's leader, which may hold its PU, was not asked")
	}
}

// explain.md:450-452: "`status --node` names on a line `Not asked:` (`unasked` in JSON) each program's pod of the
// node that does not run (Pending, Unknown, or ended with none in its place)".
//
// Two installs of the node agent under the same release name, in two namespaces (helm's release names are per
// namespace; the kustomize bases set no instance). team-a's agent on node-a ended (Failed) and nothing runs in its
// place: team-b's agent is another program's pod, with PUs of its own. team-a's is to be named on a line
// `Not asked:`; the plugin takes team-b's agent for its replacement.
func TestStatusEndedAgentOfAReleaseInAnotherNamespace(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "team-b", "node-agent-b", "node-a", &programPages{engine: k8s.EngineRunning})
	f.addProgram("podsweeper-node-agent", "team-a", "node-agent-a", "node-a", nil)
	f.mu.Lock()
	for i := range f.pods {
		if f.pods[i].Name == "node-agent-a" {
			f.pods[i].Status.Phase = "Failed"
		}
	}
	f.mu.Unlock()
	r := f.run("status", "--node", "node-a")
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	if !strings.Contains(r.stdout, "Not asked: node-agent team-a/node-agent-a on node node-a is Failed: not asked.") {
		t.Errorf("team-a's node agent on node-a ended with none of its install in its place, and no line `Not asked:` names it")
	}
}

// explain.md:452-454: "`report` ... says of a table with no row that a program could not be asked, or was not, when
// one could not or was not, rather than that no dry run would destroy anything."
//
// The two installs of TestStandbyOfAReleaseInAnotherNamespace, in dry runs: team-a's leader ended and its
// replica left is a standby; team-b's leader runs and reports nothing. team-a's leader was not asked (none leads
// yet), and the table of no row says that no dry run would destroy anything.
func TestReportStandbyOfAReleaseInAnotherNamespace(t *testing.T) {
	f := newFakeAPI(t)
	empty := &dryRunPage{Reports: []k8s.WouldDestroy{}}
	f.addProgram("podsweeper-cluster-controller", "team-a", "cc-a-fghij", "", &programPages{engine: k8s.EngineNotRunning, dry: empty}, "--dry-run")
	f.addProgram("podsweeper-cluster-controller", "team-b", "cc-b-abcde", "", &programPages{engine: k8s.EngineRunning, dry: empty}, "--dry-run")
	r := f.run("report")
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	if strings.Contains(r.stdout, "(none: no dry run would destroy anything yet)") {
		t.Errorf("team-a's leader was not asked (every replica of team-a's install asked is a standby), and the report says no dry run would destroy anything")
	}
}
