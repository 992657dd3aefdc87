package deletion

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podsweeper/podsweeper/ports"
)

// Observation is what one check of an entry saw. The engine fills it in
// steps: first with GetPod's answer, then, only when Decide asks for it with
// AskSandbox, with the SandboxExtractor's, then, when it asks with AskProber,
// with the SandboxProber's.
type Observation struct {
	// Pod and Err are what PodGetter.GetPod returned.
	Pod *corev1.Pod
	Err error
	// NodeName is the node this engine works for; "" turns the node check off.
	NodeName string
	// DestroyTerminated turns row 11 on: a finished pod is gone for its PU.
	DestroyTerminated bool
	// HasExtractor reports that a SandboxExtractor is configured.
	HasExtractor bool
	// SandboxAsked reports that the SandboxExtractor was called; SandboxID and
	// SandboxErr then hold its answer.
	SandboxAsked bool
	SandboxID    string
	SandboxErr   error
	// HasProber reports that a SandboxProber is configured. ProberAsked
	// reports that it was asked about the entry's sandbox; SandboxDead and
	// ProberErr then hold its answer.
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
	// AskSandbox: call the SandboxExtractor on Observation.Pod, record its
	// answer in the Observation and call Decide again.
	AskSandbox
	// AskProber: call the SandboxProber on Observation.Pod and the entry's
	// sandbox, record its answer in the Observation and call Decide again.
	AskProber
)

var actionNames = [...]string{Keep: "Keep", Destroy: "Destroy", Adopt: "Adopt", AskSandbox: "AskSandbox", AskProber: "AskProber"}

// String returns the action's name.
func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("Action(%d)", a)
}

// Verdict is the outcome of Decide.
type Verdict struct {
	Action Action
	// Reason is set when Action is Destroy.
	Reason ports.Reason
	// SandboxID is the sandbox to record when Action is Adopt.
	SandboxID string
	// Requeue asks the engine to requeue the live pod once the entry is
	// removed (row 10: the main controller must create the PU of the new sandbox).
	Requeue bool
	// Row is the row of the decision table that decided (1 to 12), or 0 for
	// AskSandbox and AskProber, which decide nothing yet. Rows keep their
	// numbers: rows 11 and 12 were added last, and are tried in their place
	// (see Decide).
	Row int
}

// rowText describes each row of the decision table, for logs and String.
var rowText = [...]string{
	0:  "sandbox needed",
	1:  "pod not found",
	2:  "pod lookup failed",
	3:  "pod bound to another node",
	4:  "pod recreated with another UID",
	5:  "same pod, sandbox not checked",
	6:  "same pod, sandbox lookup failed",
	7:  "same pod, first sandbox recorded",
	8:  "same pod, sandbox not known yet",
	9:  "same pod, same sandbox",
	10: "same pod, sandbox replaced",
	11: "same pod, finished (Succeeded or Failed)",
	12: "same pod, its sandbox dead, no other yet",
}

// verdictOfRow returns the verdict row decides, sandbox being the entry's
// sandbox (the one row 7 adopts). Every row but 0 decides one verdict.
func verdictOfRow(row int, sandbox string) Verdict {
	v := Verdict{Row: row}
	switch row {
	case 1:
		v.Action, v.Reason = Destroy, ports.ReasonPodGone
	case 3:
		v.Action, v.Reason = Destroy, ports.ReasonNodeChanged
	case 4:
		v.Action, v.Reason = Destroy, ports.ReasonUIDChanged
	case 7:
		v.Action, v.SandboxID = Adopt, sandbox
	case 10:
		v.Action, v.Reason, v.Requeue = Destroy, ports.ReasonSandboxChanged, true
	case 11:
		v.Action, v.Reason = Destroy, ports.ReasonPodTerminated
	case 12:
		v.Action, v.Reason, v.Requeue = Destroy, ports.ReasonSandboxDead, true
	case 0:
		v.Action = AskSandbox
	}
	return v
}

// Why describes in a few words the row that decided.
func (v Verdict) Why() string {
	if v.Row >= 0 && v.Row < len(rowText) {
		return rowText[v.Row]
	}
	return "unknown row"
}

// String returns a short form of v, for logs and test failures.
func (v Verdict) String() string {
	s := fmt.Sprintf("row %d %s: %s", v.Row, v.Action, v.Why())
	if v.Action == Destroy {
		s += " (" + string(v.Reason) + ")"
	}
	return s
}

// IsNotFound reports whether err from a PodGetter means the pod does not
// exist: it matches ports.ErrPodNotFound or a Kubernetes NotFound status error.
func IsNotFound(err error) bool {
	return err != nil && (errors.Is(err, ports.ErrPodNotFound) || apierrors.IsNotFound(err))
}

// Decide holds the whole destroy decision table for one check of one entry.
// It does no I/O: the engine gathers the Observation and carries out the
// Verdict. The rows, in the order they are tried:
//
//  1. GetPod says not found: Destroy, PodGone.
//  2. GetPod fails otherwise, returns a nil pod, a pod without a UID (no
//     API server returns one), another pod than the one asked for, or a pod
//     without a name or namespace and of another UID: Keep. Never destroy
//     on an error or on an answer that cannot be told from one.
//  3. NodeName is set and the pod is bound to another node: Destroy,
//     NodeChanged. (A pod not bound to any node yet cannot have moved.)
//  4. The pod's UID is not the entry's PUID (recreated under the same name):
//     Destroy, UIDChanged.
//  11. DestroyTerminated is set and the pod has finished (phase Succeeded
//     or Failed): Destroy, PodTerminated. (Numbered last, tried here.)
//  5. Same UID, no SandboxExtractor: Keep.
//  6. Same UID, the SandboxExtractor fails: Keep.
//  7. Same UID, the entry has no sandbox yet: Adopt the current one.
//  12. Same UID, the current sandbox is "" (the pod waits for one), and the
//     SandboxProber says the entry's sandbox is dead: Destroy, SandboxDead,
//     and requeue the pod once the entry is removed. (Tried here.)
//  8. Same UID, the current sandbox is "" (not known yet): Keep, as when
//     the SandboxProber fails or there is none.
//  9. Same UID, same sandbox as recorded: Keep.
//  10. Same UID, another sandbox than recorded: Destroy, SandboxChanged,
//     and requeue the pod once the entry is removed.
//
// Until the SandboxExtractor has been asked (Observation.SandboxAsked), rows
// 6 to 10 and 12 answer AskSandbox; then, until the SandboxProber has been
// asked (Observation.ProberAsked), rows 8 and 12 answer AskProber.
func Decide(e ports.PU, o Observation) Verdict {
	if o.Err != nil {
		if IsNotFound(o.Err) {
			return Verdict{Action: Destroy, Reason: ports.ReasonPodGone, Row: 1}
		}
		return Verdict{Action: Keep, Row: 2}
	}
	pod := o.Pod
	if pod == nil || !samePod(e, pod) {
		return Verdict{Action: Keep, Row: 2}
	}
	if boundElsewhere(pod, o.NodeName) {
		return Verdict{Action: Destroy, Reason: ports.ReasonNodeChanged, Row: 3}
	}
	if string(pod.UID) != e.PUID {
		return Verdict{Action: Destroy, Reason: ports.ReasonUIDChanged, Row: 4}
	}
	if o.DestroyTerminated && finished(pod) {
		return Verdict{Action: Destroy, Reason: ports.ReasonPodTerminated, Row: 11}
	}
	if !o.HasExtractor {
		return Verdict{Action: Keep, Row: 5}
	}
	if !o.SandboxAsked {
		return Verdict{Action: AskSandbox}
	}
	switch {
	case o.SandboxErr != nil:
		return Verdict{Action: Keep, Row: 6}
	case e.SandboxID == "" && o.SandboxID != "":
		return Verdict{Action: Adopt, SandboxID: o.SandboxID, Row: 7}
	case o.SandboxID == "" && o.HasProber && e.SandboxID != "" && !o.ProberAsked:
		return Verdict{Action: AskProber}
	case o.SandboxID == "" && e.SandboxID != "" && o.ProberAsked && o.ProberErr == nil && o.SandboxDead:
		return Verdict{Action: Destroy, Reason: ports.ReasonSandboxDead, Requeue: true, Row: 12}
	case o.SandboxID == "":
		return Verdict{Action: Keep, Row: 8}
	case o.SandboxID == e.SandboxID:
		return Verdict{Action: Keep, Row: 9}
	default:
		return Verdict{Action: Destroy, Reason: ports.ReasonSandboxChanged, Requeue: true, Row: 10}
	}
}

// samePod reports whether pod can be the answer for e's pod: a getter that
// returns a pod without a UID, or of another name or namespace, is broken,
// and its answer must not destroy anything. An empty name or namespace is
// not held against a pod of the entry's own UID (some getters leave them
// out), but it is against any other: "another pod of that name" cannot be
// told from "a pod of no name".
func samePod(e ports.PU, pod *corev1.Pod) bool {
	if pod.UID == "" || (pod.Name != "" && pod.Name != e.Pod.Name) || (pod.Namespace != "" && pod.Namespace != e.Pod.Namespace) {
		return false
	}
	return (pod.Name != "" && pod.Namespace != "") || string(pod.UID) == e.PUID
}

// boundElsewhere is row 3's test: node is set and pod is bound to another
// node. A pod bound to no node yet cannot have moved.
func boundElsewhere(pod *corev1.Pod, node string) bool {
	return node != "" && pod.Spec.NodeName != "" && pod.Spec.NodeName != node
}

// finished is row 11's test: pod's containers have all ended for good
// (phase Succeeded or Failed).
func finished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// SlimPod returns a new pod holding only what the decision table reads of
// pod (Decide, Engine.Classify, and adapters/cri's extractor, which knows a
// pod by its UID): its type, name, namespace and UID, spec.nodeName and
// status.phase. On it, the table decides what it decides on pod, whatever
// the observation; a row that reads another field must keep it here
// (TestDecideTable decides every row on the slim pod too, and adapters/k8s's
// FuzzSlimPodDecidesAlike compares both on random pods). pod is not
// modified and shares nothing with the result that can change, so it may
// be the informer's own object. A nil pod gives nil.
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

// PodClass is how the decision table reads a pod on its own (see
// Engine.Classify).
type PodClass uint8

const (
	// PodLive: a PU of the pod is kept while its UID and sandbox hold.
	PodLive PodClass = iota
	// PodElsewhere: the pod is not bound to the engine's node; no PU of it
	// belongs to this engine.
	PodElsewhere
	// PodFinished: the pod has finished and the engine destroys the PUs of
	// finished pods (row 11).
	PodFinished
)

var podClassNames = [...]string{PodLive: "Live", PodElsewhere: "Elsewhere", PodFinished: "Finished"}

// String returns the class's name.
func (k PodClass) String() string {
	if int(k) < len(podClassNames) {
		return podClassNames[k]
	}
	return fmt.Sprintf("PodClass(%d)", k)
}
