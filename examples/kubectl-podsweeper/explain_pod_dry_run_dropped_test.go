package main

import (
	"strings"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// explain.md:462-464: "A PU an earlier round read that the last round finds in no answer and no Event (destroyed
// meanwhile, its Event not written yet) is named on a line `Not asked:`, and the answer cannot tell."
//
// A node agent in a dry run holds the PU of the live pod apps/web; the pod is deleted while it is asked, so the
// programs are asked again; meanwhile the dry run dropped the PU (PodGone) and its report says so (dropped). The
// last round finds the PU in the node agent's answer, its dry run's report of it, which the text tells ("no longer
// held (its pod is gone for good)"). It is no PU found in no answer: no `Not asked:` line is to name it, and the
// answer is not to say it cannot tell on its account.
func TestExplainPodDroppedMeanwhileIsNotUnasked(t *testing.T) {
	f := newFakeAPI(t)
	const uid = "6f1c2a4e-0d2b-4c4e-9a51-3f0c8e5b7d21"
	checked := time.Now().Add(-5 * time.Second).UTC()
	pu := k8s.PUStatus{PUID: uid, Pod: "apps/web", SandboxID: "3a9f0c1b2d4e5", State: "idle", Age: "4m12s",
		LastChecked: &checked, LastRow: 9, Why: "same pod, same sandbox"}
	pages := &programPages{pus: []k8s.PUStatus{pu}, dry: &dryRunPage{Reports: []k8s.WouldDestroy{}}}
	pages.onStatus = func() {
		// The pod is deleted while its programs are asked, and the dry run drops its PU (reported, dropped).
		f.setAppPods()
		pages.mu.Lock()
		pages.pus = []k8s.PUStatus{}
		pages.dry = &dryRunPage{Total: 1, Reports: []k8s.WouldDestroy{{At: time.Now().UTC(), PUID: uid, Pod: "apps/web",
			SandboxID: "3a9f0c1b2d4e5", Reason: "PodGone", Row: 1, Why: "pod not found", Dropped: true}}}
		pages.onStatus = nil
		pages.mu.Unlock()
	}
	f.addProgram("podsweeper-node-agent", "podsweeper", "node-agent-x7k2p", "node-a", pages, "--dry-run")
	f.addPod(*workloadPod("apps", "web", uid, "node-a"))
	r := f.run("explain", "pod", "apps/web")
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	mustContain(t, r.stdout, "was deleted while its programs were asked: they were asked again")
	mustContain(t, r.stdout, "no longer held (its pod is gone for good)")
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "Not asked:") && strings.Contains(l, uid) {
			t.Errorf("a PU the last round found in an answer (its dry run's report: dropped) is named as found in none: %q", l)
		}
	}
	if strings.Contains(r.stdout, "cannot tell") {
		t.Errorf("the answer says it cannot tell, though every program was asked and told what became of the PU")
	}
}
