package main

// A model of explain pod and status: clusters generated from bytes, the answers held to what their sources say.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// modelProgram is one program of a generated cluster.
type modelProgram struct {
	chart, ns, name, node string
	reachable             bool
	engine                string // k8s.EngineRunning, EngineNotRunning or EngineEnded
	dryRun                bool
	pus                   []k8s.PUStatus
	reports               []k8s.WouldDestroy
}

// modelCluster is the pod apps/web (live under firstUID, recreated under secondUID, or gone), the programs, and
// Events of the pod's destroys.
type modelCluster struct {
	podUID   string // "" gone
	programs []modelProgram
	events   []modelEvent
}

// modelEvent is an Event of a destroy of a PU of apps/web, regarding the pod or (for a pod that was gone) node-a with
// the pod related, recorded by podsweeper or by another controller (ours false), whose note is note.
type modelEvent struct {
	uid, reason, note string
	onNode, ours      bool
	ago               time.Duration
}

// object is e as the API server has it.
func (e modelEvent) object(i int) corev1.Event {
	pod := corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: types.UID(e.uid)}
	ev := corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: fmt.Sprintf("web.%d", i)}, InvolvedObject: pod,
		Reason: e.reason, Type: "Normal", Message: e.note, EventTime: metav1.NewMicroTime(time.Now().Add(-e.ago)),
		ReportingController: "podsweeper"}
	if e.onNode {
		ev.Namespace, ev.InvolvedObject, ev.Related = metav1.NamespaceDefault, corev1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-a"}, &pod
	}
	if !e.ours {
		ev.ReportingController = "another-controller"
	}
	return ev
}

// byteReader yields small numbers from b, 0 once it is spent.
type byteReader struct{ b []byte }

func (r *byteReader) n(k int) int {
	if len(r.b) == 0 {
		return 0
	}
	v := int(r.b[0]) % k
	r.b = r.b[1:]
	return v
}

// modelStates are the states a PU is generated in.
var modelStates = []string{"idle", "queued", "checking", stateRetrying, stateTurnWaiting}

// generateCluster makes a cluster of b.
func generateCluster(b []byte) modelCluster {
	r := &byteReader{b: b}
	c := modelCluster{podUID: []string{firstUID, secondUID, ""}[r.n(3)]}
	kinds := []struct{ chart, ns, node string }{
		{"podsweeper-node-agent", "podsweeper", "node-a"},
		{"podsweeper-cni-gc", "kube-system", "node-a"},
		{"podsweeper-cluster-controller", "podsweeper", ""},
	}
	checked := clockNow.Add(-5 * time.Second)
	for i, n := 0, 1+r.n(3); i < n; i++ {
		k := kinds[r.n(len(kinds))]
		p := modelProgram{chart: k.chart, ns: k.ns, node: k.node, name: fmt.Sprintf("prog-%d", i),
			reachable: r.n(4) != 0, engine: []string{k8s.EngineRunning, k8s.EngineRunning, k8s.EngineNotRunning, k8s.EngineEnded}[r.n(4)],
			dryRun: r.n(2) == 1}
		for j, m := 0, r.n(3); j < m; j++ {
			uid := []string{firstUID, secondUID}[r.n(2)]
			pu := k8s.PUStatus{PUID: uid, Pod: "apps/web", State: modelStates[r.n(len(modelStates))], Age: "1m0s"}
			if r.n(3) != 0 {
				pu.LastChecked, pu.LastRow, pu.Why = &checked, 9, "same pod, same sandbox"
				if pu.State == stateRetrying || pu.State == stateTurnWaiting {
					pu.LastRow, pu.Why = 1, "pod not found"
				}
			}
			if pu.State == stateRetrying || (pu.State == "checking" || pu.State == "queued") && pu.LastChecked != nil && r.n(2) == 1 { // a retry queued or being checked
				pu.Attempts = 1 + r.n(3)
			}
			if p.dryRun && pu.LastChecked != nil && r.n(2) == 1 {
				pu.ReportedRows = 1 << pu.LastRow // the engine reported its row before
			}
			if p.dryRun && r.n(3) == 0 {
				at := checked
				if r.n(2) == 1 {
					at = clockNow.Add(time.Second) // reported after its status page was read
				}
				// Dropped: the engine no longer held it; one dropped before the page was read was tracked again since.
				p.reports = append(p.reports, k8s.WouldDestroy{At: at, PUID: uid, Pod: "apps/web", Reason: "PodGone", Row: 1, Why: "pod not found",
					Dropped: r.n(2) == 1})
			}
			p.pus = append(p.pus, pu)
		}
		// A report page lists its reports oldest first.
		slices.SortStableFunc(p.reports, func(a, b k8s.WouldDestroy) int { return a.At.Compare(b.At) })
		c.programs = append(c.programs, p)
	}
	for i, n := 0, r.n(3); i < n; i++ {
		c.events = append(c.events, modelEvent{uid: []string{firstUID, secondUID}[r.n(2)],
			reason: []string{k8s.EventReasonDestroyed, k8s.EventReasonAbandoned}[r.n(2)], note: fmt.Sprintf("note of event %d", i),
			onNode: r.n(2) == 1, ours: r.n(4) != 0, ago: time.Duration(1+r.n(50)) * time.Minute})
	}
	return c
}

// reportedAfter reports whether p reported pu after its status page was read (at clockNow): what it did last.
func reportedAfter(p modelProgram, pu k8s.PUStatus) bool {
	for _, r := range p.reports {
		if r.PUID == pu.PUID && r.At.After(clockNow) {
			return true
		}
	}
	return false
}

// serve puts c on a fake API server.
func (c modelCluster) serve(t *testing.T) *fakeAPI {
	f := newFakeAPI(t)
	for _, p := range c.programs {
		pages := &programPages{pus: p.pus, engine: p.engine, at: clockNow}
		if !p.reachable {
			pages.status, pages.body = 503, "not ready\n"
		}
		var args []string
		if p.dryRun {
			pages.dry = &dryRunPage{Total: len(p.reports), Reports: append([]k8s.WouldDestroy{}, p.reports...)}
			args = append(args, "--dry-run")
		}
		f.addProgram(p.chart, p.ns, p.name, p.node, pages, args...)
	}
	if c.podUID != "" {
		f.addPod(*workloadPod("apps", "web", c.podUID, "node-a"))
	}
	for i, e := range c.events {
		f.addEvent(e.object(i))
	}
	return f
}

// checkExplainPod runs explain pod apps/web on the cluster of b, in text and in JSON, and holds the answer to what its
// sources say.
func checkExplainPod(t *testing.T, b []byte) {
	c := generateCluster(b)
	f := c.serve(t)
	text := f.run("explain", "pod", "apps/web")
	js := f.run("explain", "pod", "apps/web", "-o", "json")
	if text.code != 0 || js.code != 0 {
		t.Fatalf("%+v: exit %d and %d", c, text.code, js.code)
	}
	var x PodExplanation
	if err := json.Unmarshal([]byte(js.stdout), &x); err != nil {
		t.Fatalf("the JSON does not read: %v", err)
	}
	out := text.stdout
	unreachable, unlisted, held, idleChecked, keepable, reportedAgain, notYet := false, false, false, false, 0, 0, 0
	// status --node node-a: the PUs of node-a's programs asked, those not reported yet, reported already, and
	// reported by a report of the PU as tracked now (not one that dropped it before its page was read).
	var nodePUs []string
	nodeNotYet, nodeAgain, nodeReported := 0, 0, 0
	droppedAfter, droppedBefore := 0, 0 // PUs on a page whose latest report dropped them after, or before, it was read
	for _, p := range c.programs {
		if !p.reachable {
			unreachable = true
			continue
		}
		// A node's program whose engine has not started has not listed its Inventory.
		unlisted = unlisted || p.engine == k8s.EngineNotRunning && p.chart != "podsweeper-cluster-controller"
		for _, pu := range p.pus {
			if p.engine == k8s.EngineEnded && pu.State == "checking" && !strings.Contains(out, "a check it began") {
				t.Errorf("%s's engine ended with a check of PU %s under way, and the answer does not say so:\n%s", p.name, pu.PUID, out)
			}
		}
		for _, pu := range p.pus {
			held = true
			// Every PU of the pod on a page asked is told.
			if !strings.Contains(out, "PU "+pu.PUID+" of pod apps/web") {
				t.Errorf("%s's PU %s (%s) is not told:\n%s", p.name, pu.PUID, pu.State, out)
			}
			idleChecked = idleChecked || p.engine == k8s.EngineRunning && pu.State == "idle"
			if p.dryRun && (pu.State == stateRetrying || pu.State == stateTurnWaiting || pu.Attempts > 0) && pu.ReportedRows != 0 && !reportedAfter(p, pu) {
				reportedAgain++ // its check decided again a row the engine reported: never reported again
			}
			if p.dryRun && (pu.State == stateRetrying || pu.State == stateTurnWaiting || pu.Attempts > 0) && pu.ReportedRows == 0 && !reportedAfter(p, pu) {
				notYet++
			}
			reported, latest := false, k8s.WouldDestroy{}
			for _, r := range p.reports {
				if r.PUID == pu.PUID {
					reported, latest = true, r
				}
			}
			switch {
			case p.dryRun && latest.Dropped && latest.At.After(clockNow):
				droppedAfter++
			case p.dryRun && latest.Dropped:
				droppedBefore++
			}
			if p.node == "node-a" {
				nodePUs = append(nodePUs, pu.PUID)
				pending := p.dryRun && (pu.State == stateRetrying || pu.State == stateTurnWaiting || pu.Attempts > 0) && !reportedAfter(p, pu)
				switch {
				case pending && pu.ReportedRows != 0:
					nodeAgain++
				case pending:
					nodeNotYet++
				case p.dryRun && reported && (!latest.Dropped || latest.At.After(clockNow)):
					nodeReported++
				}
			}
			if p.dryRun && pu.LastChecked != nil && !reported && pu.WouldDestroy == "" && pu.State != stateRetrying && pu.State != stateTurnWaiting && pu.Attempts == 0 {
				keepable++
			}
		}
		held = held || len(p.reports) > 0
	}
	if unreachable {
		for _, want := range []string{"could not be asked", "cannot tell all"} {
			if !strings.Contains(out, want) {
				t.Errorf("a program could not be asked, and the answer does not say %q:\n%s", want, out)
			}
		}
	}
	if (unreachable || held || unlisted) && strings.Contains(out, "knows nothing") {
		t.Errorf("a program holds the pod's PU, could not be asked or has not listed its Inventory, and the answer knows nothing:\n%s", out)
	}
	if unlisted && !strings.Contains(out, "cannot tell all") {
		t.Errorf("a node's program has not started its engine (nor listed its Inventory), and the answer does not say it cannot tell all:\n%s", out)
	}
	if !idleChecked && strings.Contains(out, "waiting for its next check") {
		t.Errorf("no running engine holds an idle PU, and the answer says one waits for its next check:\n%s", out)
	}
	if n, want := strings.Count(out, "not reported yet"), notYet; n != want {
		t.Errorf("%d PU(s) told not reported yet, of %d whose dry run of a decided destroy failed and that no report since tells:\n%s", n, want, out)
	}
	if n := strings.Count(out, "which it reported already"); n != reportedAgain {
		t.Errorf("%d PU(s) told reported already, of %d whose row the engine reported:\n%s", n, reportedAgain, out)
	}
	// A PU on its program's page, its latest report dropping it: no longer held only when the report came after the
	// page was read; before, it was tracked again since.
	if n := strings.Count(out, "it no longer holds it"); n > droppedAfter {
		t.Errorf("%d PU(s) on a page told no longer held, of %d whose latest report dropped them after the page was read:\n%s", n, droppedAfter, out)
	}
	if n := strings.Count(out, "holds it again since"); n > droppedBefore {
		t.Errorf("%d PU(s) told held again, of %d on a page whose latest report dropped them before it was read:\n%s", n, droppedBefore, out)
	}
	if n := strings.Count(out, "would keep it"); n > keepable {
		t.Errorf("%d PU(s) a dry run would keep, of %d it checked and decided to keep:\n%s", n, keepable, out)
	}
	// status --node node-a holds the same: every PU of its programs asked is listed, and its DRY RUN column tells
	// "not reported yet", "reported already" and a report exactly as explain pod does.
	st := f.run("status", "--node", "node-a")
	for _, puid := range nodePUs {
		if !strings.Contains(st.stdout, puid) {
			t.Errorf("status --node node-a does not list PU %s:\n%s", puid, st.stdout)
		}
	}
	for _, c := range []struct {
		says string
		want int
	}{{"would destroy: not reported yet", nodeNotYet}, {"reported already", nodeAgain}, {"would destroy: PodGone", nodeReported}} {
		if n := strings.Count(st.stdout, c.says); n != c.want {
			t.Errorf("status --node node-a says %q of %d PU(s), want %d:\n%s", c.says, n, c.want, st.stdout)
		}
	}
	if len(x.Answers) != len(c.programs) {
		t.Errorf("JSON: %d answers, of %d programs", len(x.Answers), len(c.programs))
	}
	// Every podsweeper Event of the pod's destroys is told, and only those.
	ours := 0
	for _, e := range c.events {
		if told := strings.Contains(out, e.note); told != e.ours {
			t.Errorf("Event %+v told %v:\n%s", e, told, out)
		}
		if e.ours {
			ours++
		}
	}
	if len(x.Events) != ours {
		t.Errorf("JSON: %d Events, of %d podsweeper Events of the pod", len(x.Events), ours)
	}
	if ours > 0 && (strings.Contains(out, "knows nothing") || strings.Contains(out, "No podsweeper Event names this pod")) {
		t.Errorf("a podsweeper Event names the pod, and the answer knows nothing of it:\n%s", out)
	}
}

// TestExplainPodAgreesWithItsSources holds explain pod, on generated clusters (programs of each kind, reachable or
// not, running, a standby or ended, in a dry run or not, holding PUs of the pod and of the pod before it in every
// state, with or without reports; Events of the pod's destroys, podsweeper's and another controller's, regarding the
// pod or its node), to what their sources say: every PU of the pod is told; every podsweeper Event of the pod is told,
// and no other; a program that could not be
// asked, and a node's program whose engine has not started (its Inventory not listed), make the answer say that it
// cannot tell all; "knows nothing" only when nothing holds the pod; a check an ended engine left under way is told; a PU
// on its page is said no longer held only by a report made after the page was read; status --node lists every PU of
// the node's programs asked and tells "not reported yet", "reported already" and a report as explain pod does; no PU
// of an engine that does not run waits for its next check; a dry run would keep only what it checked and decided
// to keep.
func TestExplainPodAgreesWithItsSources(t *testing.T) {
	for i := range 24 {
		b := make([]byte, 32)
		for j := range b {
			b[j] = byte((i*131 + j*37 + i*j*7) % 251)
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkExplainPod(t, b) })
	}
}

// FuzzExplainPod is TestExplainPodAgreesWithItsSources on clusters the fuzzer makes.
func FuzzExplainPod(f *testing.F) {
	f.Add([]byte{0, 1, 2, 1, 0, 1, 2, 2, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) { checkExplainPod(t, b) })
}
