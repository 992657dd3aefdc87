package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
)

// What the commands render: what the API server and the programs answered,
// gathered by the cluster side (cluster.go) and rendered by the pure
// functions below, so that the text a person reads is tested from JSON
// answers alone (testdata/*.json and their golden outputs).

// Program is one pod of a podsweeper program, found by its chart's labels.
type Program struct {
	// Program is the chart's program: node-agent, cluster-controller or
	// cni-gc (app.kubernetes.io/name less its "podsweeper-").
	Program string `json:"program"`
	// Release is the chart's release (app.kubernetes.io/instance).
	Release   string `json:"release,omitempty"`
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Node      string `json:"node,omitempty"`
	// DryRun: the program runs with --dry-run.
	DryRun bool `json:"dryRun,omitempty"`
	// Restarts is how many times its pod's containers restarted (the
	// kubelet's restartCount): a dry run's reports from before a restart
	// are gone with its process.
	Restarts int32 `json:"restarts,omitempty"`
	// SharedWith names the other programs' pods (program namespace/pod) that
	// run in the node's network (hostNetwork) beside this one with the same
	// status port: a port-forward to any of them reaches the one listener
	// of the node's port, which one process holds. They are asked once,
	// under this one, and which of them answered cannot be told.
	SharedWith []string `json:"sharedWith,omitempty"`
}

// String names the program and its pod: node-agent podsweeper/agent-x7k2p;
// and those sharing its listener (SharedWith).
func (p Program) String() string {
	s := p.Program + " " + p.Namespace + "/" + p.Pod
	if len(p.SharedWith) > 0 {
		s += " (or " + strings.Join(p.SharedWith, ", ") + ": they share the node's network and its status port, whose one listener answers for them all)"
	}
	return s
}

// Answer is what one program's pod answered: its PUs (of the pod asked
// about, for explain pod; all, for status) and its dry run's reports; or
// why it could not be asked.
type Answer struct {
	Program Program `json:"program"`
	// PUs are its status page's entries (k8s.StatusPath).
	PUs []k8s.PUStatus `json:"pus"`
	// Reports are its dry run's reports (k8s.DryRunPath), oldest first;
	// ReportsTotal how many it made in all. Nil without a dry run.
	Reports      []k8s.WouldDestroy `json:"reports,omitempty"`
	ReportsTotal int                `json:"reportsTotal,omitempty"`
	// ReportsKept is how many reports its page keeps, of any pod (the
	// latest, ReportsTotal made in all): fewer, and the pod's earlier
	// reports may be gone.
	ReportsKept int `json:"reportsKept,omitempty"`
	// Error says why the program could not be asked; its other fields
	// are then empty.
	Error string `json:"error,omitempty"`
	// Standby: its page says its engine does not run (k8s.EngineHeader: a
	// standby's, before it leads): no check runs on what it lists, whatever
	// the program's leader holds.
	Standby bool `json:"standby,omitempty"`
	// Ended: its page says its engine's Start has returned (the program
	// stops, its pod deleted and in its grace period): no check runs on the
	// PUs it lists.
	Ended bool `json:"ended,omitempty"`
	// At is when the program answered its status page (its response
	// began): the times of PUs are told relative to it; ReportsAt, the
	// same for its dry run's report. Zero: the command's Now.
	At        time.Time `json:"at,omitzero"`
	ReportsAt time.Time `json:"reportsAt,omitzero"`
}

// now returns when a's status page answered, or, not told, the command's now.
func (a Answer) now(now time.Time) time.Time { return orNow(a.At, now) }

// reportsNow returns when a's dry run's report answered, or, not told, the command's now.
func (a Answer) reportsNow(now time.Time) time.Time { return orNow(a.ReportsAt, now) }

// orNow returns at, or now when at is zero.
func orNow(at, now time.Time) time.Time {
	if at.IsZero() {
		return now
	}
	return at
}

// Pod is the pod asked about, as the API server has it.
type Pod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	Node      string `json:"node,omitempty"`
	Phase     string `json:"phase,omitempty"`
	// Deleting: the pod has a deletion timestamp (it is being deleted).
	Deleting bool `json:"deleting,omitempty"`
	// StaticUID is a static pod's UID as its kubelet knows it (its mirror
	// pod's kubernetes.io/config.mirror annotation), by which its PUs and
	// libcni's cache name it; "" for any other pod.
	StaticUID string `json:"staticUID,omitempty"`
}

// is reports whether p is the pod of uid: its own UID, or, for a static
// pod, the kubelet's.
func (p *Pod) is(uid string) bool { return p.UID == uid || p.StaticUID != "" && p.StaticUID == uid }

// Event is one podsweeper Event (PUDestroyed, PUAbandoned) of the pod.
type Event struct {
	// Time is when it first happened: its note is of that occurrence (a
	// series keeps its first Event's note).
	Time   time.Time `json:"time"`
	Type   string    `json:"type"`
	Reason string    `json:"reason"`
	// Regarding is what the Event regards: Pod/<namespace>/<name> or
	// Node/<name> (a destroy of a pod that is gone, from a node's program).
	Regarding string `json:"regarding"`
	Note      string `json:"note"`
	// Count is how many times it happened (a series), at least 1; Last
	// when it last did, for a series (zero otherwise).
	Count int       `json:"count,omitempty"`
	Last  time.Time `json:"last,omitzero"`
	// EarlierUID is the UID of the pod it is of when that is not the pod
	// of that name now (an earlier pod of that name, which may have run on
	// another node); "": it is of the pod now, or no pod is now.
	EarlierUID string `json:"earlierUID,omitempty"`
	// uid and pod (namespace/name) are the pod it names; node the node it
	// regards, for one that regards a node.
	uid, pod, node string
	// timeExact and lastExact: Time, Last, are in microseconds (an
	// events.k8s.io eventTime, a series' lastObservedTime), not seconds.
	timeExact, lastExact bool
	// key is the Event object's namespace/name.
	key string
}

// PodExplanation is what explain pod renders: the question, the pod as
// the API server has it (nil: no such pod), what each program answered
// (only the PUs and reports of that pod) and the pod's Events.
type PodExplanation struct {
	// Now is when it was asked: the times are said relative to it.
	Now time.Time `json:"now"`
	// Namespace and Name, or UID, are what was asked.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	UID       string `json:"uid,omitempty"`
	// Node is the node given with --node: of the programs of a node, only
	// its were asked.
	Node string `json:"node,omitempty"`
	// Pod is the pod of that name (or UID) now; nil: there is none.
	Pod     *Pod     `json:"pod,omitempty"`
	Answers []Answer `json:"answers"`
	Events  []Event  `json:"events"`
	// EventsAt is when the Events were read, on your clock: they are told relative to it, as the pages' times are to
	// their pages' (nil: now).
	EventsAt *time.Time `json:"eventsAt,omitempty"`
	// before are the Events read before the programs were asked (Events are read again after): an earlier round's
	// PUs are accounted for by the Events written since (earlierPU).
	before   []Event
	Warnings []string `json:"warnings,omitempty"`
	// Unasked says, one line each, the programs of the pod's node that
	// may hold a PU of it and were not asked, and why (a pod of one that
	// does not run, or none on the node).
	Unasked []string `json:"unasked,omitempty"`
}

// Matches reports whether a PU of pod (namespace/name) and puID is one of
// the pod asked about: by its UID when one was asked (with a name too, the
// PUs of other pods of that name are not its), by name otherwise.
func (x *PodExplanation) Matches(pod, puID string) bool {
	if x.UID != "" {
		return puID == x.UID || x.Pod != nil && x.Pod.is(puID)
	}
	return x.Name != "" && pod == x.Namespace+"/"+x.Name
}

// The states of a PU (deletion.PUStatus.State) in which its check decided to destroy it.
const (
	stateRetrying    = "waiting for a retry"  // its destroy failed
	stateTurnWaiting = "waiting for its turn" // under the destroy rate
)

// states says each state of a PU (deletion.PUStatus.State) in words.
var states = map[string]string{
	"tracking":       "being tracked",
	"idle":           "tracked, waiting for its next check",
	"queued":         "queued for a check",
	"checking":       "being checked now",
	stateRetrying:    "its destroy failed: waiting for a retry",
	stateTurnWaiting: "to be destroyed, waiting for its turn under --max-destroys-per-second",
	deletion.StateLeaving: "no longer held: its tracking has ended (destroyed, given up on, dropped by its dry run, or untracked), " +
		"and the program's journal and report are being told; it leaves the page once they are",
}

// RenderPod writes x for a person.
func RenderPod(w io.Writer, x *PodExplanation) error {
	p := &printer{w: w}
	switch pod := x.Pod; {
	case pod == nil && x.UID != "" && x.Name == "":
		by := "no PU and no podsweeper Event names it"
		if slices.ContainsFunc(x.Answers, func(a Answer) bool { return a.Error != "" }) || len(x.Unasked) > 0 || len(x.Answers) == 0 {
			by = "no podsweeper Event names it, and no program asked names it by a PU"
		}
		p.f("Pod with UID %s: not known by name (%s), and the API server is not asked for a pod by UID alone: whether it lives is not known (give NAMESPACE/NAME too).\n", x.UID, by)
	case pod == nil && x.UID != "":
		p.f("Pod with UID %s (%s/%s): no pod of that name has that UID in the API server (deleted, never created, or named otherwise).\n", x.UID, x.Namespace, x.Name)
	case pod == nil:
		p.f("Pod %s/%s: no such pod in the API server (deleted, or never created).\n", x.Namespace, x.Name)
	default:
		p.f("Pod %s/%s (UID %s) on node %s: %s.\n", pod.Namespace, pod.Name, pod.UID, orNone(pod.Node, "none yet"), podPhase(pod))
		if pod.StaticUID != "" {
			p.f("It is the mirror pod of a static pod, whose kubelet's UID is %s: a PU under either UID is this pod's.\n", pod.StaticUID)
		}
	}
	for _, w := range x.Warnings {
		p.f("Note: %s\n", w)
	}
	held := 0
	var none []string
	for _, a := range x.Answers {
		if a.Error != "" {
			p.f("\n%s%s could not be asked: %s\n", a.Program, onNode(a.Program), a.Error)
			continue
		}
		reports := latestReports(a.Reports)
		if len(a.PUs) == 0 && len(reports) == 0 {
			none = append(none, a.Program.String()+onNode(a.Program)+standby(a))
			continue
		}
		held++
		p.f("\n%s%s%s%s:\n", a.Program, onNode(a.Program), standby(a), dryRun(a.Program))
		for _, s := range a.PUs {
			renderPU(p, x, a, s)
		}
		for _, r := range reports {
			if tracked(a.PUs, r.PUID) {
				continue
			}
			switch {
			case r.GaveUp:
				p.f("  PU %s of pod %s%s: no longer held (its dry run gave up on it).\n", r.PUID, r.Pod, sandboxOf(r.SandboxID))
				p.f("    dry run       gave up on destroying it, %s: %s: %s (%s); a real run would have recorded a PUAbandoned Event.\n",
					r.Reason, r.Why, r.Error, ago(a.reportsNow(x.Now), r.At))
				continue
			case r.Dropped:
				p.f("  PU %s of pod %s%s: no longer held (its pod is gone for good).\n", r.PUID, r.Pod, sandboxOf(r.SandboxID))
			default:
				p.f("  PU %s of pod %s%s: reported, and not on its status page when it was read.\n", r.PUID, r.Pod, sandboxOf(r.SandboxID))
			}
			p.f("    dry run       would have destroyed it, %s: row %d of the decision table, %s (%s).\n",
				r.Reason, r.Row, r.Why, ago(a.reportsNow(x.Now), r.At))
		}
	}
	if len(none) > 0 {
		p.f("\n")
		for _, n := range none {
			p.f("%s holds no PU of this pod.\n", n)
		}
	}
	if len(x.Answers) == 0 {
		p.f("\nNo podsweeper program was found to ask.\n")
	}
	if len(x.Unasked) > 0 {
		p.f("\n")
		for _, u := range x.Unasked {
			p.f("Not asked: %s.\n", u)
		}
	}
	p.f("\n")
	if len(x.Events) == 0 {
		p.f("No podsweeper Event names this pod (an Event lasts the API server's --event-ttl, 1h by default).\n")
	} else {
		p.f("Events:\n")
		for _, e := range x.Events {
			count := ""
			switch {
			case e.Count > 1 && !e.Last.IsZero():
				count = fmt.Sprintf(" (%d times, the last %s; the note is the first's)", e.Count, ago(x.eventsNow(), e.Last))
			case e.Count > 1:
				count = fmt.Sprintf(" (%d times)", e.Count)
			}
			earlier := ""
			if e.EarlierUID != "" {
				earlier = fmt.Sprintf(" (of an earlier pod of that name, UID %s)", e.EarlierUID)
			}
			p.f("  %s  %s %s, regarding %s%s%s: %s\n", ago(x.eventsNow(), e.Time), e.Type, e.Reason, e.Regarding, earlier, count, e.Note)
		}
	}
	unasked, unlisted := 0, 0
	for _, a := range x.Answers {
		switch {
		case a.Error != "":
			unasked++
		case notStarted(a):
			unlisted++
		}
	}
	// A node's program whose engine has not started has not listed its Inventory: what it held before is not told.
	const notListed = "podsweeper cannot tell all it knows of this pod: a program whose engine has not started (above) has not listed the PUs it held before it started, and may hold one of this pod"
	// A dry run that keeps its latest reports only, none of them of the pod, may have reported it earlier (an earlier
	// PU of it, whatever PU of it it holds now).
	cut := slices.ContainsFunc(x.Answers, func(a Answer) bool {
		return a.Error == "" && a.ReportsTotal > a.ReportsKept && len(latestReports(a.Reports)) == 0
	})
	// A dry run whose program restarted has lost the reports it made before: one may have been of the pod.
	restarted := slices.ContainsFunc(x.Answers, func(a Answer) bool {
		return a.Error == "" && a.Program.DryRun && a.Program.Restarts > 0 && len(latestReports(a.Reports)) == 0
	})
	const restartedDryRun = "podsweeper cannot tell all it knows of this pod: a dry run's program restarted (its pod's restart count), and the reports it made before are gone (one may have been of this pod)"
	if held > 0 {
		// What the programs asked hold is above; what those not asked may hold is not.
		if restarted {
			p.f("%s.\n", restartedDryRun)
		}
		if cut {
			p.f("podsweeper cannot tell all it knows of this pod: a dry run keeps its latest reports only, none of them of this pod (an earlier one may have been): see kubectl podsweeper report.\n")
		}
		switch {
		case unasked > 0:
			p.f("podsweeper cannot tell all it knows of this pod: %d of %d programs could not be asked (above), and may hold a PU of it too.\n", unasked, len(x.Answers))
		case len(x.Unasked) > 0:
			p.f("podsweeper cannot tell all it knows of this pod: a program that may hold a PU of it was not asked (above).\n")
		case unlisted > 0:
			p.f("%s too.\n", notListed)
		}
		return p.err
	}
	switch {
	case unasked > 0:
		p.f("podsweeper cannot tell all it knows of this pod: %d of %d programs could not be asked, and none of the others holds a PU of it.\n", unasked, len(x.Answers))
	case len(x.Unasked) > 0:
		p.f("podsweeper cannot tell all it knows of this pod: a program that may hold a PU of it was not asked (above), and none of the others holds one.\n")
	case unlisted > 0:
		p.f("%s.\n", notListed)
	case len(x.Answers) == 0:
		p.f("podsweeper cannot tell what it knows of this pod: no program was found to ask.\n")
	case restarted:
		p.f("%s; no program holds a PU of it now.\n", restartedDryRun)
	case slices.ContainsFunc(x.Answers, func(a Answer) bool { return a.ReportsTotal > a.ReportsKept }):
		p.f("podsweeper cannot tell all it knows of this pod: no program holds a PU of it now, and a dry run keeps its latest reports only (an earlier one may have been of this pod): see kubectl podsweeper report.\n")
	case len(x.Events) > 0 || x.Pod != nil:
	case x.Node != "":
		p.f("podsweeper knows nothing of this pod on node %s: no program asked holds a PU of it (of the programs of a node, only node %s's were asked: --node), and no podsweeper Event of it remains.\n", x.Node, x.Node)
	default:
		p.f("podsweeper knows nothing of this pod: no program holds a PU of it, and no podsweeper Event of it remains.\n")
	}
	return p.err
}

// latestReport returns the latest of reports (oldest first) of the PU puID; nil: none.
func latestReport(reports []k8s.WouldDestroy, puID string) *k8s.WouldDestroy {
	for i := len(reports) - 1; i >= 0; i-- {
		if reports[i].PUID == puID {
			return &reports[i]
		}
	}
	return nil
}

// nextAttempt says when the next attempt of s, a PU whose destroy failed, comes, as its program read at now: at its
// time, now (its retry's check queued or under way, of a PU its last check decided to destroy: the engine tells no
// time then; or a check an ended engine left behind), or none (no check runs, or its last check kept it).
func nextAttempt(s k8s.PUStatus, now time.Time, standby, ended bool) string {
	retry := s.LastAction == deletion.Destroy.String()
	switch {
	case leftBehind(s, ended) && retry:
		return "the next is under way: a check its ended engine left behind"
	case standby || ended:
		return "none planned: no check runs"
	case s.NextAttempt != nil:
		return "next " + in(now, *s.NextAttempt)
	case s.State == "queued" && retry:
		return "the next is queued now"
	case s.State == "checking" && retry:
		return "the next runs now"
	}
	return "none planned"
}

// renderPU writes one PU that a answered.
func renderPU(p *printer, x *PodExplanation, a Answer, s k8s.PUStatus) {
	p.f("  PU %s of pod %s%s, tracked %s:\n", s.PUID, s.Pod, sandboxOf(s.SandboxID), s.Age)
	if x.Pod != nil && !x.Pod.is(s.PUID) && s.Pod == x.Pod.Namespace+"/"+x.Pod.Name {
		p.f("    note          this PU is of an earlier pod of that name (UID %s); the pod now is another (UID %s).\n", s.PUID, x.Pod.UID)
	}
	p.f("    state         %s.\n", stateWords(s, a.Program, a.Standby, a.Ended))
	if s.LastChecked == nil {
		p.f("    last check    none yet.\n")
	} else {
		p.f("    last check    %s: row %d of the decision table, %s.\n", ago(a.now(x.Now), *s.LastChecked), s.LastRow, s.Why)
	}
	if s.Vetoed {
		p.f("    veto          a confirming read (the API server's of the pod, or the runtime's of its sandbox) overrode the destroy its check decided: the PU is kept.\n")
	}
	stopped := a.Standby || a.Ended // no check runs: no attempt comes
	switch {
	case s.Attempts > 0:
		p.f("    attempts      %d destroy call(s) failed; %s.\n", s.Attempts, nextAttempt(s, a.now(x.Now), a.Standby, a.Ended))
	case s.NextAttempt != nil && !stopped: // its first destroy waits for its turn under the rate
		p.f("    next attempt  %s.\n", in(a.now(x.Now), *s.NextAttempt))
	}
	if s.LastError != "" {
		p.f("    last error    %s\n", s.LastError)
	}
	latest := latestReport(a.Reports, s.PUID)
	switch {
	case notReportedYet(a, s):
		// Its check decided to destroy it since whatever it reported last: the dry run reports it once its dry run
		// of the destroy succeeds.
		why := "its dry run of the destroy failed; it reports it once one succeeds"
		switch {
		case leftBehind(s, a.Ended):
			why = "its engine has ended, and the check of its retry it left behind is still under way"
		case stopped:
			why = "no check runs now"
		case s.State == stateTurnWaiting:
			why = "it reports it once its turn under the destroy rate comes"
		case s.State == "checking":
			why = "its dry run of the destroy failed, and its check runs again now; it reports it once one succeeds"
		}
		last := ""
		if latest != nil {
			last = fmt.Sprintf(" (its last report: %s, row %d, %s)", latest.Reason, latest.Row, ago(a.reportsNow(x.Now), latest.At))
		} else if s.WouldDestroy != "" {
			last = fmt.Sprintf(" (its last report: %s)", s.WouldDestroy)
		}
		if reportedAlready(s) {
			p.f("    dry run       would destroy it: its check decided so again, row %d, which it reported already%s.\n", s.LastRow, last)
			break
		}
		p.f("    dry run       would destroy it: its check decided so, not reported yet: %s%s.\n", why, last)
	case latest != nil && latest.GaveUp && !trackedAgain(a, *latest): // it gave up on it after the page was read
		p.f("    dry run       gave up on destroying it, %s: %s: %s (%s); it no longer holds it.\n",
			latest.Reason, latest.Why, latest.Error, ago(a.reportsNow(x.Now), latest.At))
	case latest != nil && latest.GaveUp: // it gave up on it, and tracks it again since
		p.f("    dry run       gave up on destroying it then, %s: %s: %s (%s), and holds it again since.\n",
			latest.Reason, latest.Why, latest.Error, ago(a.reportsNow(x.Now), latest.At))
	case latest != nil: // its dry run's report, read after the status page, says what it did last
		held := ""
		switch {
		case trackedAgain(a, *latest):
			held = "; it dropped it then, its pod gone for good, and holds it again since"
		case latest.Dropped:
			held = "; it no longer holds it (its pod is gone for good)"
		}
		p.f("    dry run       reported it would destroy it, %s: row %d of the decision table, %s (%s)%s.\n",
			latest.Reason, latest.Row, latest.Why, ago(a.reportsNow(x.Now), latest.At), held)
	case s.WouldDestroy != "":
		p.f("    dry run       reported it would destroy it: %s (its last report).\n", s.WouldDestroy)
	case a.Program.DryRun && s.LastChecked != nil:
		p.f("    dry run       would keep it.\n")
	case a.Program.DryRun:
		p.f("    dry run       has not decided yet: it reports after its first check.\n")
	}
}

// eventsNow returns when x's Events were read, or, not told, its now.
func (x *PodExplanation) eventsNow() time.Time {
	if x.EventsAt == nil {
		return x.Now
	}
	return *x.EventsAt
}

// RenderPodJSON writes x as indented JSON.
func RenderPodJSON(w io.Writer, x *PodExplanation) error {
	return writeJSON(w, x)
}

// NodeStatus is what status renders: every PU of the programs on a node.
type NodeStatus struct {
	Now     time.Time `json:"now"`
	Node    string    `json:"node"`
	Answers []Answer  `json:"answers"`
	// Unasked says, one line each, the programs of the node that may hold
	// PUs and were not asked, and why (a pod of one that does not run).
	Unasked []string `json:"unasked,omitempty"`
}

// RenderStatus writes every PU of s's programs as a table, one program
// after the other.
func RenderStatus(w io.Writer, s *NodeStatus) error {
	p := &printer{w: w}
	if len(s.Answers) == 0 && len(s.Unasked) == 0 {
		p.f("No podsweeper program runs on node %s.\n", s.Node)
		return p.err
	}
	if len(s.Answers) == 0 {
		p.f("No podsweeper program of node %s could be asked.\n", s.Node)
		p.notAsked(s.Unasked)
		return p.err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROGRAM\tPOD\tPU\tSTATE\tLAST CHECK\tROW\tWHY\tATTEMPTS\tNEXT\tDRY RUN")
	var errs []string
	for _, a := range s.Answers {
		if a.Error != "" {
			errs = append(errs, fmt.Sprintf("%s could not be asked: %s", a.Program, a.Error))
			continue
		}
		if len(a.PUs) == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\tholds no PU%s\t\t\t\t\t\t\n", a.Program, standby(a))
		}
		for _, u := range a.PUs {
			check, row, why := "-", "-", "-"
			if u.LastChecked != nil {
				check, row, why = ago(a.now(s.Now), *u.LastChecked), fmt.Sprint(u.LastRow), u.Why
			}
			next := "-"
			switch stopped := a.Standby || a.Ended; { // no check runs on an engine that does not run
			case u.NextAttempt != nil && !stopped:
				next = in(a.now(s.Now), *u.NextAttempt)
			case u.Attempts > 0 && !stopped && u.LastAction == deletion.Destroy.String() && (u.State == "queued" || u.State == "checking"):
				next = "now"
			}
			dry := "-"
			switch r := latestReport(a.Reports, u.PUID); {
			case notReportedYet(a, u) && reportedAlready(u):
				dry = fmt.Sprintf("would destroy: row %d, reported already", u.LastRow)
			case notReportedYet(a, u):
				dry = "would destroy: not reported yet"
			case r != nil && r.GaveUp && !trackedAgain(a, *r):
				dry = "gave up: " + string(r.Reason)
			case r != nil && !trackedAgain(a, *r) && r.At.After(a.At): // a report made after the page: what it did last
				dry = "would destroy: " + string(r.Reason)
			case u.WouldDestroy != "":
				dry = "would destroy: " + u.WouldDestroy
			case r != nil && !trackedAgain(a, *r): // its dry run's report, of this tracking
				dry = "would destroy: " + string(r.Reason)
			}
			state := u.State + standby(a) // an engine that does not run says why no check runs
			if leftBehind(u, a.Ended) {
				state = u.State + " (its engine has ended; a check it left behind is still under way)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", a.Program, u.Pod, u.PUID, state, check, row, why, u.Attempts, next, dry)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, e := range errs {
		p.f("%s\n", e)
	}
	p.notAsked(s.Unasked)
	// A node's program whose engine has not started has not listed its Inventory: what it held before is not told.
	for _, a := range s.Answers {
		if notStarted(a) {
			p.f("podsweeper cannot tell all the PUs of node %s: %s has not listed the PUs it held before it started, and may hold more.\n",
				s.Node, a.Program)
		}
	}
	return p.err
}

// notAsked writes a line `Not asked:` for each of unasked.
func (p *printer) notAsked(unasked []string) {
	for _, u := range unasked {
		p.f("Not asked: %s.\n", u)
	}
}

// Report is what report renders: every program's dry-run report.
type Report struct {
	Now     time.Time `json:"now"`
	Answers []Answer  `json:"answers"`
	// Unasked says, one line each, the programs' pods that do not run
	// (Pending, Unknown, or ended with none in their place): not asked.
	Unasked []string `json:"unasked,omitempty"`
}

// unreported returns how many PUs of a its checks decided to destroy, whose dry run of the destroy failed or waits
// its turn, are not reported yet, and report's note of them (n 0: none).
func unreported(a Answer) (n int, note string) {
	var pods []string // of the PUs not reported yet
	for _, u := range a.PUs {
		if notReportedYet(a, u) && !reportedAlready(u) {
			pods = append(pods, u.Pod)
		}
	}
	if len(pods) == 0 {
		return 0, ""
	}
	// status --node tells the programs of a node; a cluster-wide program's PUs are told pod by pod.
	see := "kubectl podsweeper status --node " + orNone(a.Program.Node, "NODE")
	if a.Program.Node == "" {
		slices.Sort(pods)
		see = "kubectl podsweeper explain pod POD, for " + strings.Join(slices.Compact(pods), ", ")
	}
	return len(pods), fmt.Sprintf("%s would destroy %d PU(s) not reported yet: its checks decided so, and a dry run of their destroy failed or waits its turn (%s).",
		a.Program, len(pods), see)
}

// RenderReport writes every report of r's programs in one table, and
// which programs run without a dry run.
func RenderReport(w io.Writer, r *Report) error {
	p := &printer{w: w}
	if len(r.Answers) == 0 && len(r.Unasked) == 0 {
		p.f("No podsweeper program was found to ask.\n")
		return p.err
	}
	if len(r.Answers) == 0 {
		p.f("No podsweeper program could be asked.\n")
		p.notAsked(r.Unasked)
		return p.err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROGRAM\tNODE\tPOD\tPU\tREASON\tROW\tWHY\tWHEN\tHELD")
	var notes []string
	rows, pending := 0, 0
	for _, a := range r.Answers {
		switch {
		case a.Error != "":
			notes = append(notes, fmt.Sprintf("%s could not be asked: %s", a.Program, a.Error))
			continue
		case (a.Standby || a.Ended) && len(a.Reports) == 0:
			notes = append(notes, fmt.Sprintf("%s%s reports nothing.", a.Program, standby(a)))
			if n, note := unreported(a); n > 0 { // what it decided before its engine stopped, or while it ran
				pending += n
				notes = append(notes, note)
			}
			continue
		case a.Standby || a.Ended:
			notes = append(notes, fmt.Sprintf("%s%s: its reports above are from before.", a.Program, standby(a)))
		case !a.Program.DryRun:
			notes = append(notes, fmt.Sprintf("%s runs without --dry-run: it destroys, and reports nothing.", a.Program))
			continue
		case len(a.Reports) < a.ReportsTotal:
			notes = append(notes, fmt.Sprintf("%s reported %d in all; it keeps the latest %d.", a.Program, a.ReportsTotal, len(a.Reports)))
		}
		if n, note := unreported(a); n > 0 {
			pending += n
			notes = append(notes, note)
		}
		latest := map[string]k8s.WouldDestroy{} // a PU's latest report says whether it is held, whatever its earlier ones said
		for _, d := range a.Reports {
			latest[d.PUID] = d
		}
		for _, d := range a.Reports {
			held := "yes"
			switch l := latest[d.PUID]; {
			case l.GaveUp && !trackedAgain(a, l):
				held = "no: gave up"
			case l.Dropped && !trackedAgain(a, l):
				held = "no: pod gone"
			}
			why := d.Why
			if d.GaveUp {
				why = "gave up: " + d.Error
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", a.Program, orNone(a.Program.Node, "-"), d.Pod, d.PUID, d.Reason, d.Row, why, ago(a.reportsNow(r.Now), d.At), held)
			rows++
		}
	}
	unasked := slices.ContainsFunc(r.Answers, func(a Answer) bool { return a.Error != "" }) || len(r.Unasked) > 0
	switch {
	case rows == 0 && pending > 0:
		fmt.Fprintln(tw, "(none reported yet: a dry run would destroy PUs it has not reported, below)\t\t\t\t\t\t\t\t")
	case rows == 0 && len(notes) < len(r.Answers) && unasked:
		// A program that could not be asked may be in a dry run that would destroy something: no word on every one.
		fmt.Fprintln(tw, "(none from the programs asked: a program could not be asked, or was not, below)\t\t\t\t\t\t\t\t")
	case rows == 0 && len(notes) < len(r.Answers) && slices.ContainsFunc(r.Answers, func(a Answer) bool {
		return a.Standby && nodeScoped[a.Program.Program]
	}):
		// A node's program whose engine has not started has not listed its Inventory: what it would destroy is not known.
		fmt.Fprintln(tw, "(none from the engines that run: a node's program has not started its engine, below)\t\t\t\t\t\t\t\t")
	case rows == 0 && len(notes) < len(r.Answers):
		fmt.Fprintln(tw, "(none: no dry run would destroy anything yet)\t\t\t\t\t\t\t\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notes {
		p.f("%s\n", n)
	}
	p.notAsked(r.Unasked)
	return p.err
}

// The lists of the JSON answers are empty lists when there is nothing in
// them, never null, whatever gathered them: each type's MarshalJSON makes
// its nil lists empty.

// orEmpty is s, or an empty list for nil.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// MarshalJSON writes a with its PUs a list, empty for none.
func (a Answer) MarshalJSON() ([]byte, error) {
	type answer Answer
	a.PUs = orEmpty(a.PUs)
	return json.Marshal(answer(a))
}

// MarshalJSON writes x with its answers and Events lists, empty for none.
func (x PodExplanation) MarshalJSON() ([]byte, error) {
	type podExplanation PodExplanation
	x.Answers, x.Events = orEmpty(x.Answers), orEmpty(x.Events)
	return json.Marshal(podExplanation(x))
}

// MarshalJSON writes s with its answers a list, empty for none.
func (s NodeStatus) MarshalJSON() ([]byte, error) {
	type nodeStatus NodeStatus
	s.Answers = orEmpty(s.Answers)
	return json.Marshal(nodeStatus(s))
}

// MarshalJSON writes r with its answers a list, empty for none.
func (r Report) MarshalJSON() ([]byte, error) {
	type report Report
	r.Answers = orEmpty(r.Answers)
	return json.Marshal(report(r))
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printer writes formatted text and keeps the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// latestReports returns the last report of each PU, in the order of
// their last reports.
func latestReports(rs []k8s.WouldDestroy) []k8s.WouldDestroy {
	last := map[string]int{}
	for i, r := range rs {
		last[r.PUID] = i
	}
	var out []k8s.WouldDestroy
	for i, r := range rs {
		if last[r.PUID] == i {
			out = append(out, r)
		}
	}
	return out
}

// trackedAgain reports whether a holds again the PU of d, a report that dropped it: its status page, read after d
// was made, lists the PU not leaving (tracked again since: by the Inventory's list or the agent).
func trackedAgain(a Answer, d k8s.WouldDestroy) bool {
	return d.Dropped && !a.At.IsZero() && !d.At.After(a.At) &&
		slices.ContainsFunc(a.PUs, func(s k8s.PUStatus) bool { return s.PUID == d.PUID && s.State != deletion.StateLeaving })
}

// tracked reports whether pus holds the PU puID.
func tracked(pus []k8s.PUStatus, puID string) bool {
	return slices.ContainsFunc(pus, func(s k8s.PUStatus) bool { return s.PUID == puID })
}

// podPhase says the pod's phase and whether it is being deleted.
func podPhase(p *Pod) string {
	phase := orNone(p.Phase, "no phase yet")
	if p.Deleting {
		return phase + ", being deleted"
	}
	return phase
}

// standby says, of a program whose engine does not run (Answer.Standby,
// Answer.Ended), why no check runs on what it holds.
func standby(a Answer) string {
	switch {
	case a.Ended:
		return " (its engine has ended: no check runs)"
	case a.Standby && elects(a.Program):
		return " (a standby: its engine does not run)"
	case a.Standby:
		return " (its engine has not started: no check runs yet)"
	}
	return ""
}

// notStarted reports whether a, answered, is of a node's program whose
// engine has not started: it has not listed its Inventory (the PUs it held
// before it started), and may hold more than its page lists.
func notStarted(a Answer) bool { return a.Error == "" && a.Standby && !elects(a.Program) }

// elects reports whether p's replicas elect a leader, whose engine alone
// runs: the cluster controller's. A node's program runs its engine once it
// starts.
func elects(p Program) bool { return p.Program == "cluster-controller" }

// leftBehind reports whether s, of an engine that ended, is being checked: a check Start left behind (stuck in a port
// past its ShutdownTimeout) runs on, and may still end in a destroy.
func leftBehind(s k8s.PUStatus, ended bool) bool { return ended && s.State == "checking" }

// stateWords says the state of s in words, held by an engine that is a
// standby's, has not started or has ended (no check runs on it), of p.
func stateWords(s k8s.PUStatus, p Program, standby, ended bool) string {
	switch {
	case s.State == deletion.StateLeaving:
	case leftBehind(s, ended):
		return "held: its engine has ended, and a check it began of it, left behind, is still under way (" + s.State + ")"
	case ended:
		return "held, and no check runs on it: its engine has ended (" + s.State + ")"
	case standby && elects(p):
		return "held, and no check runs on it: a standby's engine does not run (" + s.State + ")"
	case standby:
		return "held, and no check runs on it yet: its engine has not started (" + s.State + ")"
	}
	if words, ok := states[s.State]; ok && !strings.Contains(words, s.State) { // named as status's STATE column names it
		return words + " (" + s.State + ")"
	} else if ok {
		return words
	}
	return orNone("", s.State)
}

// onNode says on which node p runs, if it is node-scoped.
func onNode(p Program) string {
	if p.Node == "" {
		return ""
	}
	return " (node " + p.Node + ")"
}

func dryRun(p Program) string {
	if p.DryRun {
		return ", in a dry run (it destroys nothing)"
	}
	return ""
}

func sandboxOf(id string) string {
	if id == "" {
		return ""
	}
	return ", sandbox " + shortID(id)
}

// shortID shortens a container runtime's 64-digit ID as crictl does.
func shortID(id string) string {
	if len(id) > 13 && !strings.ContainsAny(id, "-/") {
		return id[:13]
	}
	return id
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

// ago says how long before now t was, in whole seconds.
func ago(now, t time.Time) string {
	d := now.Sub(t).Round(time.Second)
	if d < 0 {
		return "just now"
	}
	return d.String() + " ago"
}

// in says how long after now t is, in whole seconds.
func in(now, t time.Time) string {
	d := t.Sub(now).Round(time.Second)
	if d <= 0 {
		return "due now"
	}
	return "in " + d.String()
}

// IPExplanation is what explain ip renders: the address asked about on a
// node, what cni-gc on that node holds and decided of it, the PUs of its
// engine of the pods that hold it, and those pods now.
type IPExplanation struct {
	// Now is when it was asked: the times are said relative to it.
	Now  time.Time `json:"now"`
	IP   string    `json:"ip"`
	Node string    `json:"node"`
	// Program is cni-gc's pod on the node; nil: none runs there.
	Program *Program `json:"program,omitempty"`
	// Error says why it could not be asked; Address is then nil.
	Error string `json:"error,omitempty"`
	// Address is cni-gc's answer (adapters/cni's AddressStatus).
	Address *AddressStatus `json:"address,omitempty"`
	// PUs are cni-gc's PUs of the pods of Address's attachments.
	PUs []k8s.PUStatus `json:"pus,omitempty"`
	// Pods are the pods that Address's attachments and frees name, as
	// the API server has them now.
	Pods []PodNow `json:"pods,omitempty"`
	// At is when cni-gc answered its address page (its response began):
	// the times of Address are told relative to it; PUsAt, the same for
	// its status page, which PUs come from. Zero: Now.
	At    time.Time `json:"at,omitzero"`
	PUsAt time.Time `json:"pusAt,omitzero"`
	// PUsError says why cni-gc's status page could not be read: PUs are
	// then not told, and Address stands.
	PUsError string `json:"pusError,omitempty"`
	// Standby: cni-gc's status page says its engine has not started
	// (k8s.EngineHeader): no check runs yet on the PUs it lists. Ended: that its engine's Start
	// has returned (cni-gc stops): no check runs on the PUs it lists.
	Standby bool `json:"standby,omitempty"`
	Ended   bool `json:"ended,omitempty"`
	// Unasked says, one line each, the other cni-gc pods of the node that
	// could not be asked before Program answered: each holds its own
	// latest frees, which the answer then does not tell.
	Unasked []string `json:"unasked,omitempty"`
}

// PodNow is a pod as the CNI cache recorded it (its namespace, name and
// UID), and the pod of that name in the API server now (nil: none).
type PodNow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	Pod       *Pod   `json:"pod,omitempty"`
}

// The answer of cni-gc's cni.AddressPath, as adapters/cni's AddressStatus
// writes it (the plugin builds for any OS, adapters/cni for Linux only:
// TestAddressStatusIsCNIs holds them the same).
type (
	// AddressStatus is cni.AddressStatus.
	AddressStatus struct {
		IP               string              `json:"ip"`
		Attachments      []AttachmentStatus  `json:"attachments,omitempty"`
		Reservations     []ReservationStatus `json:"reservations,omitempty"`
		ReservationsRead *time.Time          `json:"reservationsRead,omitempty"`
		Freed            []FreedAddress      `json:"freed,omitempty"`
		Unread           []string            `json:"unread,omitempty"`
	}
	// AttachmentStatus is cni.AttachmentStatus.
	AttachmentStatus struct {
		Network      string        `json:"network"`
		ContainerID  string        `json:"containerID"`
		IfName       string        `json:"ifName"`
		PodNamespace string        `json:"podNamespace"`
		PodName      string        `json:"podName"`
		PodUID       string        `json:"podUID"`
		Written      time.Time     `json:"written"`
		DisableGC    bool          `json:"disableGC,omitempty"`
		File         string        `json:"file,omitempty"`
		NeverTouched string        `json:"neverTouched,omitempty"`
		Decision     *FreeDecision `json:"decision,omitempty"`
	}
	// FreeDecision is cni.FreeDecision.
	FreeDecision struct {
		At      time.Time `json:"at"`
		Reason  string    `json:"reason,omitempty"`
		DryRun  bool      `json:"dryRun,omitempty"`
		Row     int       `json:"row"`
		Why     string    `json:"why"`
		Verdict string    `json:"verdict"`
	}
	// ReservationStatus is cni.ReservationStatus.
	ReservationStatus struct {
		Network     string       `json:"network"`
		DataDir     string       `json:"dataDir"`
		File        string       `json:"file"`
		ContainerID string       `json:"containerID"`
		IfName      string       `json:"ifName"`
		Reserved    time.Time    `json:"reserved"`
		Decision    FreeDecision `json:"decision"`
		State       string       `json:"state"`
		Error       string       `json:"error,omitempty"`
	}
	// FreedAddress is cni.FreedAddress.
	FreedAddress struct {
		At           time.Time    `json:"at"`
		Reservation  bool         `json:"reservation,omitempty"`
		Network      string       `json:"network"`
		File         string       `json:"file,omitempty"`
		ContainerID  string       `json:"containerID"`
		IfName       string       `json:"ifName"`
		PodNamespace string       `json:"podNamespace,omitempty"`
		PodName      string       `json:"podName,omitempty"`
		PodUID       string       `json:"podUID,omitempty"`
		Decision     FreeDecision `json:"decision"`
	}
)

// at returns when cni-gc answered its address page, or, not told, Now.
func (x *IPExplanation) at() time.Time { return orNow(x.At, x.Now) }

// pusAt returns when cni-gc answered its status page, or, not told, Now.
func (x *IPExplanation) pusAt() time.Time { return orNow(x.PUsAt, x.Now) }

// Held reports whether x's answer says that something holds the address:
// an attachment or a reservation, or a recent free of it.
func (x *IPExplanation) Held() bool {
	a := x.Address
	return a != nil && (len(a.Attachments) > 0 || len(a.Reservations) > 0 || len(a.Freed) > 0)
}

// reservationStates says each state of a reservation
// (cni.ReservationStatus.State) in words.
var reservationStates = map[string]string{
	"kept":                               "kept",
	"reported":                           "reported, never touched",
	"would free":                         "a dry run would free it",
	"to free":                            "to be freed, waiting for its turn under --max-destroys-per-second",
	"freed":                              "freed",
	"free failed":                        "its free failed; tried again at the next sweep",
	"kept: decided again before its DEL": "kept: decided again right before its DEL, on its network's config and the runtime as they were then",
	"kept: could not be decided again before its DEL": "kept: what its DEL is decided on could not be read again right before it",
	"released meanwhile, by its runtime":              "released meanwhile by its runtime, before its DEL",
	"never touched":                                   "never touched",
}

// RenderIP writes x for a person.
func RenderIP(w io.Writer, x *IPExplanation) error {
	p := &printer{w: w}
	p.f("Address %s on node %s.\n", x.IP, x.Node)
	switch {
	case x.Program == nil:
		p.f("\nNo cni-gc runs on node %s: no one was asked.\n", x.Node)
		if len(x.Unasked) > 0 {
			p.notAsked(x.Unasked)
		}
		return p.err
	case x.Error != "":
		p.f("\n%s%s could not be asked: %s\n", *x.Program, onNode(*x.Program), x.Error)
		if len(x.Unasked) > 0 {
			p.f("\n")
			p.notAsked(x.Unasked)
		}
		return p.err
	}
	a := x.Address
	if len(x.Unasked) > 0 {
		p.f("\n")
		p.notAsked(x.Unasked)
	}
	p.f("\n%s%s%s:\n", *x.Program, onNode(*x.Program), dryRun(*x.Program))
	for _, u := range a.Unread {
		p.f("  could not read %s\n", u)
	}
	sweep := "no round of the sweep has read host-local's reservations yet (none has run, or none could read them)"
	if a.ReservationsRead != nil {
		sweep = "host-local's reservations as the sweep " + ago(x.at(), *a.ReservationsRead) + " read them"
	}
	if x.PUsError != "" {
		p.f("  its PUs are not told: it could not be asked for them: %s\n", x.PUsError)
	}
	switch {
	case x.Ended:
		p.f("  its engine has ended (its status page says so: cni-gc stops): no check runs on the PUs it lists.\n")
	case x.Standby:
		p.f("  its engine has not started (its status page says so): no check runs yet on the PUs it lists.\n")
	}
	if !x.Held() && len(a.Unread) > 0 {
		p.f("  Of what it could read, no attachment of libcni's cache and no host-local reservation holds it (%s), and cni-gc freed none of it lately.\n", sweep)
		p.f("\ncni-gc cannot tell all that holds this address: it could not read all it holds (above).\n")
		return p.err
	}
	if !x.Held() && (len(x.Unasked) > 0 || a.ReservationsRead == nil) {
		p.f("  No attachment of libcni's cache and no host-local reservation holds it (%s), and cni-gc freed none of it lately.\n", sweep)
		if len(x.Unasked) > 0 {
			p.f("\ncni-gc cannot tell all that holds this address: a cni-gc of the node could not be asked (above), and may have freed it.\n")
		} else {
			p.f("\ncni-gc cannot tell all that holds this address: no round of its sweep has read host-local's reservations yet.\n")
		}
		return p.err
	}
	if !x.Held() {
		p.f("  No attachment of libcni's cache and no host-local reservation holds it (%s), and cni-gc freed none of it lately.\n", sweep)
		p.f("\ncni-gc knows nothing of this address.\n")
		return p.err
	}
	// podAndPU tells the pod an attachment names, as the API server has it now, and cni-gc's PU of it.
	podAndPU := func(at AttachmentStatus) { // each attachment and free with its pod, and cni-gc's PU of it

		p.f("    pod         %s\n", x.podNow(at.PodNamespace, at.PodName, at.PodUID))
		for _, s := range x.PUs {
			if s.PUID != at.PodUID {
				continue
			}
			p.f("    PU          tracked %s%s: %s.\n", s.Age, sandboxOf(s.SandboxID), stateWords(s, Program{Program: "cni-gc"}, x.Standby, x.Ended))
			if s.LastChecked == nil {
				p.f("    last check  none yet.\n")
			} else {
				p.f("    last check  %s: row %d of the decision table, %s.\n", ago(x.pusAt(), *s.LastChecked), s.LastRow, s.Why)
			}
			if s.Attempts > 0 {
				p.f("    attempts    %d destroy call(s) failed; %s.\n", s.Attempts, nextAttempt(s, x.pusAt(), x.Standby, x.Ended))
			}
			if s.LastError != "" {
				p.f("    last error  %s\n", s.LastError)
			}
			if s.WouldDestroy != "" {
				p.f("    dry run     reported it would destroy it: %s (its last report).\n", s.WouldDestroy)
			}
		}
	}
	for _, at := range a.Attachments {
		if at.NeverTouched != "" {
			owner := "of no pod"
			switch {
			case at.PodUID != "":
				owner = fmt.Sprintf("of pod %s/%s (UID %s)", at.PodNamespace, at.PodName, at.PodUID)
			case at.PodName != "":
				owner = fmt.Sprintf("of pod %s/%s (its UID is not in the entry)", at.PodNamespace, at.PodName)
			}
			p.f("  attachment    libcni's cache entry %s, network %s, interface %s, sandbox %s, %s, written %s.\n",
				at.File, orNone(at.Network, "unknown"), orNone(at.IfName, "unknown"), shortID(at.ContainerID), owner, ago(x.at(), at.Written))
			p.f("    freeing     never: cni-gc does not use this entry: %s.\n", at.NeverTouched)
			if at.PodName != "" {
				podAndPU(at)
			}
			continue
		}
		p.f("  attachment    network %s, interface %s, sandbox %s, of pod %s/%s (UID %s), added %s.\n",
			at.Network, at.IfName, shortID(at.ContainerID), at.PodNamespace, at.PodName, at.PodUID, ago(x.at(), at.Written))
		podAndPU(at)
		switch d := at.Decision; {
		case at.DisableGC:
			p.f("    freeing     never: its network's config says disableGC.\n")
		case d == nil:
			p.f("    freeing     not decided: the engine has not asked cni-gc to free this sandbox since it started.\n")
		case d.Row < 0:
			p.f("    freeing     %s%s, asked for %s: kept, decided by no row of the freeing table: %s.\n", ago(x.at(), d.At), dryRunWord(d.DryRun), d.Reason, d.Why)
		default:
			p.f("    freeing     %s%s, asked for %s: row %d of the freeing table, %s: %s.\n", ago(x.at(), d.At), dryRunWord(d.DryRun), d.Reason, d.Row, d.Why, d.Verdict)
		}
	}
	for _, r := range a.Reservations {
		p.f("  reservation   host-local's %s, network %s, of container %s, interface %s, reserved %s.\n",
			r.File, r.Network, shortID(r.ContainerID), r.IfName, ago(x.at(), r.Reserved))
		switch {
		case slices.ContainsFunc(a.Attachments, func(at AttachmentStatus) bool { return at.ContainerID == r.ContainerID }):
		case slices.ContainsFunc(a.Unread, func(u string) bool { return strings.HasPrefix(u, "libcni's cache") }):
			p.f("    pod         not known: cni-gc could not read all of libcni's cache.\n")
		case r.Decision.Row == 16:
			p.f("    pod         not told here: cni-gc says an entry of libcni's cache names that container (row 16), of another address or network.\n")
		case r.Decision.Row == 18: // cni-gc found no entry of it, at the sweep
			p.f("    pod         none known: no attachment of libcni's cache is of that container.\n")
		default:
			p.f("    pod         none known: no attachment of libcni's cache that holds this address is of that container.\n")
		}
		state := orNone(reservationStates[r.State], r.State)
		if r.Decision.Reason != "" {
			state += " (" + r.Decision.Reason + ")"
		}
		if r.Decision.Row < 0 {
			p.f("    freeing     %s, as the sweep %s decided by no row of the freeing table: %s.\n", state, ago(x.at(), r.Decision.At), r.Decision.Why)
		} else {
			p.f("    freeing     %s, as the sweep %s decided: row %d of the freeing table, %s.\n", state, ago(x.at(), r.Decision.At), r.Decision.Row, r.Decision.Why)
		}
		if r.Error != "" {
			p.f("    last error  %s\n", r.Error)
		}
	}
	for _, f := range a.Freed {
		if f.Reservation {
			p.f("  freed         %s: host-local's %s, network %s, of container %s, interface %s (%s): row %d of the freeing table, %s.\n",
				ago(x.at(), f.At), f.File, f.Network, shortID(f.ContainerID), f.IfName, f.Decision.Reason, f.Decision.Row, f.Decision.Why)
			continue
		}
		p.f("  freed         %s: the attachment of pod %s/%s (UID %s), network %s, interface %s, sandbox %s, asked for %s: row %d of the freeing table, %s.\n",
			ago(x.at(), f.At), f.PodNamespace, f.PodName, f.PodUID, f.Network, f.IfName, shortID(f.ContainerID), f.Decision.Reason, f.Decision.Row, f.Decision.Why)
		podAndPU(AttachmentStatus{PodNamespace: f.PodNamespace, PodName: f.PodName, PodUID: f.PodUID})
	}
	switch {
	case len(a.Attachments) == 0 && len(a.Reservations) == 0 && len(a.Unread) > 0:
		p.f("  Of what it could read, no attachment of libcni's cache and no host-local reservation holds it now (%s): it cannot tell all that holds it.\n", sweep)
	case len(a.Attachments) == 0 && len(a.Reservations) == 0:
		p.f("  No attachment of libcni's cache and no host-local reservation holds it now (%s).\n", sweep)
	}
	// What it told holds the address, or held it, may not be all.
	switch {
	case len(x.Unasked) > 0:
		p.f("\ncni-gc cannot tell all that holds this address: a cni-gc of the node could not be asked (above), and may hold it too, or have freed it.\n")
	case a.ReservationsRead == nil:
		p.f("\ncni-gc cannot tell all that holds this address: no round of its sweep has read host-local's reservations yet, and one may hold it too.\n")
	case len(a.Unread) > 0 && (len(a.Attachments) > 0 || len(a.Reservations) > 0):
		p.f("\ncni-gc cannot tell all that holds this address: it could not read all it holds (above).\n")
	}
	return p.err
}

// podNow says whether the pod namespace/name of UID uid lives.
func (x *IPExplanation) podNow(namespace, name, uid string) string {
	for _, pn := range x.Pods {
		if pn.Namespace != namespace || pn.Name != name || pn.UID != uid {
			continue
		}
		switch {
		case pn.Pod == nil:
			return "gone: no such pod in the API server."
		case uid == "":
			return fmt.Sprintf("a pod of that name, UID %s, is live on node %s: whether it is this entry's cannot be told.", pn.Pod.UID, orNone(pn.Pod.Node, "none yet"))
		case !pn.Pod.is(uid):
			return fmt.Sprintf("gone: the pod of that name now is another (UID %s).", pn.Pod.UID)
		default:
			return fmt.Sprintf("live on node %s: %s.", orNone(pn.Pod.Node, "none yet"), podPhase(pn.Pod))
		}
	}
	return "not asked of the API server."
}

func dryRunWord(dry bool) string {
	if dry {
		return " (a dry run)"
	}
	return ""
}

// RenderIPJSON writes x as indented JSON.
func RenderIPJSON(w io.Writer, x *IPExplanation) error {
	return writeJSON(w, x)
}

// notReportedYet reports whether u, of a's dry run, is a PU whose check decided to destroy it and whose dry run of
// the destroy failed (retried, its check queued or under way meanwhile) or waits its turn: what it would do is not in its
// reports, unless a report of it came after its status page was read (what the dry run did last).
func notReportedYet(a Answer, u k8s.PUStatus) bool {
	// A retry's check queued or under way: its failed attempts still count, unless its last check kept it (a page
	// that does not tell its last action is taken at its attempts).
	retry := u.Attempts > 0 && (u.LastAction == "" || u.LastAction == deletion.Destroy.String())
	waiting := u.State == stateRetrying || u.State == stateTurnWaiting || (u.State == "checking" || u.State == "queued") && retry
	latest := latestReport(a.Reports, u.PUID)
	return a.Program.DryRun && waiting && (latest == nil || a.At.IsZero() || !latest.At.After(a.At))
}

// reportedAlready reports whether the dry run reported the row u's last check took, since it tracked u's PU (its
// status page's reportedRows, whatever its report page still keeps): a dry run reports each row of a PU once, and no
// report of it follows.
func reportedAlready(u k8s.PUStatus) bool {
	return u.LastChecked != nil && u.ReportedRows.Has(u.LastRow)
}
