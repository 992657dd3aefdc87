package deletion

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podsweeper/podsweeper/ports"
)

// Observation is what one check of an entry saw: GetPod's answer, then the SandboxExtractor's when Decide asks for it
// (AskSandbox), then the SandboxProber's when it asks (AskProber).
type Observation struct {
	// Pod and Err are what PodGetter.GetPod returned.
	Pod *corev1.Pod
	Err error
	// NodeName is the node this engine works for; "" turns the node check off.
	NodeName string
	// DestroyTerminated turns row 11 on: a finished pod is gone for its PU.
	DestroyTerminated bool
	// HasExtractor: a SandboxExtractor is configured. SandboxAsked: it was called, and SandboxID and SandboxErr hold
	// its answer.
	HasExtractor bool
	SandboxAsked bool
	SandboxID    string
	SandboxErr   error
	// HasProber: a SandboxProber is configured. ProberAsked: it was asked about the entry's sandbox, and SandboxDead
	// and ProberErr hold its answer.
	HasProber, ProberAsked bool
	SandboxDead            bool
	ProberErr              error
}

// Action is what Decide tells the engine to do with an entry.
type Action uint8

const (
	// Keep the entry and check it again later.
	Keep Action = iota
	// Destroy the PU, for Verdict.Reason.
	Destroy
	// Adopt keeps the entry and records Verdict.SandboxID as its sandbox.
	Adopt
	// AskSandbox: call the SandboxExtractor on Observation.Pod, record its answer in the Observation and call Decide
	// again.
	AskSandbox
	// AskProber: call the SandboxProber on Observation.Pod and the entry's sandbox, record its answer in the
	// Observation and call Decide again.
	AskProber
)

var actionNames = [...]string{Keep: "Keep", Destroy: "Destroy", Adopt: "Adopt", AskSandbox: "AskSandbox", AskProber: "AskProber"}

// String returns the action's name.
func (a Action) String() string { return nameOf(actionNames[:], int(a), "Action") }

// nameOf returns names[i], or type(i) when i has no name.
func nameOf(names []string, i int, typ string) string {
	if i < len(names) && names[i] != "" {
		return names[i]
	}
	return fmt.Sprintf("%s(%d)", typ, i)
}

// Verdict is the outcome of Decide.
type Verdict struct {
	Action Action
	// Reason is set when Action is Destroy.
	Reason ports.Reason
	// SandboxID is the sandbox to record when Action is Adopt.
	SandboxID string
	// Requeue asks the engine to requeue the live pod once the entry is removed (row 10: the main controller must
	// create the PU of the new sandbox).
	Requeue bool
	// Row is the row of the decision table that decided (1 to 12; rows 11 and 12, added last, are tried in their
	// place), or 0 for AskSandbox and AskProber, which decide nothing yet.
	Row int
}

// rows holds each row of the decision table: the verdict it decides (row 7 adopts the sandbox found; 0 is AskSandbox,
// which decides nothing yet) and its few words, for logs, String and Status.
var rows = [...]struct {
	v   Verdict
	why string
}{
	0:  {Verdict{Action: AskSandbox}, "sandbox needed"},
	1:  {Verdict{Action: Destroy, Reason: ports.ReasonPodGone, Row: 1}, "pod not found"},
	2:  {Verdict{Action: Keep, Row: 2}, "pod lookup failed"},
	3:  {Verdict{Action: Destroy, Reason: ports.ReasonNodeChanged, Row: 3}, "pod bound to another node"},
	4:  {Verdict{Action: Destroy, Reason: ports.ReasonUIDChanged, Row: 4}, "pod recreated with another UID"},
	5:  {Verdict{Action: Keep, Row: 5}, "same pod, sandbox not checked"},
	6:  {Verdict{Action: Keep, Row: 6}, "same pod, sandbox lookup failed"},
	7:  {Verdict{Action: Adopt, Row: 7}, "same pod, first sandbox recorded"},
	8:  {Verdict{Action: Keep, Row: 8}, "same pod, sandbox not known yet"},
	9:  {Verdict{Action: Keep, Row: 9}, "same pod, same sandbox"},
	10: {Verdict{Action: Destroy, Reason: ports.ReasonSandboxChanged, Requeue: true, Row: 10}, "same pod, sandbox replaced"},
	11: {Verdict{Action: Destroy, Reason: ports.ReasonPodTerminated, Row: 11}, "same pod, finished (Succeeded or Failed)"},
	12: {Verdict{Action: Destroy, Reason: ports.ReasonSandboxDead, Requeue: true, Row: 12}, "same pod, its sandbox dead, no other yet"},
}

// verdictOfRow returns the verdict row decides, sandbox being the one row 7 adopts.
func verdictOfRow(row int, sandbox string) Verdict {
	v := rows[row].v
	if row == 7 {
		v.SandboxID = sandbox
	}
	return v
}

// Why describes in a few words the row that decided.
func (v Verdict) Why() string {
	if v.Row >= 0 && v.Row < len(rows) {
		return rows[v.Row].why
	}
	return "unknown row"
}

// String returns a short form of v, for logs and test failures; "no verdict" for the zero Verdict (an event that
// carries none).
func (v Verdict) String() string {
	if v == (Verdict{}) {
		return "no verdict"
	}
	s := fmt.Sprintf("row %d %s: %s", v.Row, v.Action, v.Why())
	if v.Action == Destroy {
		s += " (" + string(v.Reason) + ")"
	}
	return s
}

// IsNotFound reports whether err from a PodGetter means the pod does not exist: it matches ports.ErrPodNotFound or a
// Kubernetes NotFound status error. An error that cannot be read (ports.Readable is false: a typed nil anywhere in its
// chain, whatever its Is says) is not. err is read once (ports.Match): an error whose chain changes between two
// readings is told by one of them.
func IsNotFound(err error) bool {
	if pe, ok := err.(*portError); ok { // the engine's own reading of a port's answer, made once (boundary.go)
		return pe.notFound
	}
	return ports.Match(err, notFoundHere)
}

// notFoundHere reports whether e itself, not an error it wraps, says the pod does not exist.
func notFoundHere(e error) bool {
	if e == ports.ErrPodNotFound {
		return true
	}
	if is, ok := e.(interface{ Is(error) bool }); ok && is.Is(ports.ErrPodNotFound) {
		return true
	}
	s, ok := e.(apierrors.APIStatus)
	// Its status read once, alone: apierrors would walk e's chain again, and read Status twice (its reason, then its
	// code), which may answer two statuses.
	return ok && apierrors.IsNotFound(&apierrors.StatusError{ErrStatus: s.Status()})
}

// Decide holds the whole destroy decision table for one check of one entry. It does no I/O: the engine gathers the
// Observation and carries out the Verdict. The rows, in the order they are tried:
//
//  1. GetPod says not found: Destroy, PodGone.
//  2. GetPod fails otherwise, or answers what cannot be told from a failure (a nil pod, no UID, another pod than
//     asked for, no name or namespace and another UID): Keep. Never destroy on an error.
//  3. NodeName is set and the pod is bound to another node: Destroy, NodeChanged. (A pod bound to no node yet cannot
//     have moved.)
//  4. The pod's UID is not the PUID (recreated): Destroy, UIDChanged.
//  11. DestroyTerminated is set and the pod has finished (phase Succeeded or Failed): Destroy, PodTerminated.
//  5. Same UID, no SandboxExtractor: Keep.
//  6. Same UID, the SandboxExtractor fails: Keep.
//  7. Same UID, the entry has no sandbox yet, and the SandboxExtractor reports one (not ""): Adopt it.
//  12. Same UID, no current sandbox, and the SandboxProber says the entry's is dead: Destroy, SandboxDead, and
//     requeue the pod.
//  8. Same UID, no current sandbox: Keep (so when the prober fails or is none).
//  9. Same UID, same sandbox as recorded: Keep.
//  10. Same UID, another sandbox: Destroy, SandboxChanged, and requeue the pod.
//
// Until the SandboxExtractor has been asked (Observation.SandboxAsked), rows 6 to 10 and 12 answer AskSandbox; then,
// for an entry with a sandbox recorded, until the SandboxProber has been asked (Observation.ProberAsked), rows 8 and
// 12 answer AskProber (an entry without one has no sandbox to probe: row 8 at once).
func Decide(e ports.PU, o Observation) Verdict {
	if o.Err != nil {
		if IsNotFound(o.Err) {
			return rows[1].v
		}
		return rows[2].v
	}
	pod := o.Pod
	if pod == nil || !samePod(e, pod) {
		return rows[2].v
	}
	if boundElsewhere(pod, o.NodeName) {
		return rows[3].v
	}
	if string(pod.UID) != e.PUID {
		return rows[4].v
	}
	if o.DestroyTerminated && finished(pod) {
		return rows[11].v
	}
	if !o.HasExtractor {
		return rows[5].v
	}
	if !o.SandboxAsked {
		return rows[0].v
	}
	switch {
	case o.SandboxErr != nil:
		return rows[6].v
	case e.SandboxID == "" && o.SandboxID != "":
		return verdictOfRow(7, o.SandboxID)
	case o.SandboxID == "" && o.HasProber && e.SandboxID != "" && !o.ProberAsked:
		return Verdict{Action: AskProber}
	case o.SandboxID == "" && e.SandboxID != "" && o.HasProber && o.ProberAsked && o.ProberErr == nil && o.SandboxDead:
		return rows[12].v
	case o.SandboxID == "":
		return rows[8].v
	case o.SandboxID == e.SandboxID:
		return rows[9].v
	default:
		return rows[10].v
	}
}

// samePod reports whether pod can be the answer for e's pod: not one without a UID or of another name or namespace.
// An empty name or namespace is not held against a pod of the entry's own UID (some getters leave them out), but is
// against any other: it cannot be told from a broken answer.
func samePod(e ports.PU, pod *corev1.Pod) bool {
	if pod.UID == "" || (pod.Name != "" && pod.Name != e.Pod.Name) || (pod.Namespace != "" && pod.Namespace != e.Pod.Namespace) {
		return false
	}
	return (pod.Name != "" && pod.Namespace != "") || string(pod.UID) == e.PUID
}

// boundElsewhere is row 3's test: pod is bound to another node than node.
func boundElsewhere(pod *corev1.Pod, node string) bool {
	return node != "" && pod.Spec.NodeName != "" && pod.Spec.NodeName != node
}

// finished is row 11's test: pod's phase is Succeeded or Failed.
func finished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// SlimPod returns a new pod holding only what the decision table reads of pod (Decide, Engine.Classify, and
// adapters/cri's extractor): its type, name, namespace, UID, spec.nodeName and status.phase, on which the table decides
// what it decides on pod (a row that reads another field must keep it here; the tests compare both). pod, which may be
// an informer's own object, is not modified and shares nothing mutable with the result. A nil pod gives nil.
func SlimPod(pod *corev1.Pod) *corev1.Pod {
	if pod == nil {
		return nil
	}
	slim := &corev1.Pod{TypeMeta: pod.TypeMeta}
	slim.Name, slim.Namespace, slim.UID = pod.Name, pod.Namespace, pod.UID
	slim.Spec.NodeName = pod.Spec.NodeName
	slim.Status.Phase = pod.Status.Phase
	return slim
}

// PodClass is how the decision table reads a pod on its own (see Engine.Classify).
type PodClass uint8

const (
	// PodLive: a PU of the pod is kept while its UID and sandbox hold.
	PodLive PodClass = iota
	// PodElsewhere: the pod is not bound to the engine's node; no PU of it belongs to this engine.
	PodElsewhere
	// PodFinished: the pod has finished and the engine destroys the PUs of finished pods (row 11).
	PodFinished
)

var podClassNames = [...]string{PodLive: "Live", PodElsewhere: "Elsewhere", PodFinished: "Finished"}

// String returns the class's name.
func (k PodClass) String() string { return nameOf(podClassNames[:], int(k), "PodClass") }
