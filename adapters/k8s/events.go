package k8s

import (
	"fmt"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// The reasons and the action of the Kubernetes Events that Events records,
// for field selectors (kubectl get events --field-selector
// reason=PUAbandoned) and alerts.
const (
	// EventReasonDestroyed: a PU was destroyed (an Event of type Normal).
	EventReasonDestroyed = "PUDestroyed"
	// EventReasonAbandoned: the engine gave up destroying a PU (type
	// Warning); the policy engine may still hold it.
	EventReasonAbandoned = "PUAbandoned"
	// EventActionDestroy is the action of every Event Events records.
	EventActionDestroy = "Destroy"
)

// noteLimit is the longest note the API server accepts on an Event
// (events.k8s.io/v1 validation, 1 kB).
const noteLimit = 1024

// EventsOptions configure NewEvents.
type EventsOptions struct {
	// NodeName is the node the engine runs for: the engine's
	// deletion.Options.NodeName. The Events of PUs whose pod is gone regard
	// this Node. "" (a cluster-wide engine, which has no node): they regard
	// the pod that is gone instead.
	NodeName string
}

// Events records a Kubernetes Event for each destroy and each abandoned
// PU, where users of the cluster look (kubectl describe, kubectl get
// events). It implements deletion.Observer: pass it to
// deletion.Observers with the others as deletion.Options.Observer.
//
// What each Event regards (its regarding object, the involvedObject of
// kubectl get events) follows the PU's reason:
//
//   - SandboxChanged, PodTerminated: the pod the PU was created for, which
//     still exists (its name and UID, the PU's PUID), so that kubectl
//     describe pod shows it;
//   - UIDChanged, NodeChanged: the pod the PU was created for, by its name
//     and its old UID (the PUID), not the new pod that has that name now:
//     the Event is about the pod that went, and reading the new one's UID
//     would cost a request in the engine's worker. kubectl describe of the
//     new pod does not show it (it selects Events by UID); kubectl get
//     events --field-selector involvedObject.name=NAME does;
//   - PodGone: the Node (EventsOptions.NodeName), named as the kubelet
//     names it in its own Events (UID: the node's name), so that kubectl
//     describe node shows it, with the gone pod (name and PUID) as the
//     Event's related object. With no NodeName, the gone pod itself.
//
// Each Event's type is Normal for a destroy (reason EventReasonDestroyed)
// and Warning for an abandoned PU (EventReasonAbandoned); its action is
// EventActionDestroy; its note gives the engine's reason (PodGone, ...),
// the PUID, the pod and the sandbox, and for an abandoned PU the number of
// DestroyPU calls and the last error.
//
// Observe never blocks the engine: client-go's events.k8s.io recorder
// (the one mgr.GetEventRecorder returns) hands each Event to its
// broadcaster and returns, and the broadcaster writes it to the API server
// on a goroutine of its own, trying a write that does not reach the server
// up to 12 times, 10 s apart, before it drops the Event (one the server
// rejects is dropped at once). While the API server does not answer, each
// Event waits on a goroutine of its own: as many as the destroys meanwhile.
//
// Bursts: the broadcaster keeps each Event it wrote for six minutes, and a
// second one that repeats it (the same regarding and related objects,
// reason, type and action) within them is written as a PATCH that makes a
// series of the first; later ones only add to the series' count, written
// six to twelve minutes after the last of them. That is the aggregation of
// the events.k8s.io API, in place of the spam filter and the correlator of
// client-go's core/v1 recorder. The Events recorded here seldom repeat:
// each names its PU's pod as its regarding or related object, so that no
// Event's note hides another's, and a PU is destroyed once. The exception
// is a pod whose sandbox is replaced again and again: its next sandbox's
// PU has the same PUID, so its SandboxChanged Events within six minutes
// make one series, with the first one's note. A drain thus costs one
// Event, one POST, per destroy. What paces those POSTs is the
// engine: an Event is recorded when a destroy returns, and at most Workers
// destroys run at once; beyond that, the rate limit of the manager's
// rest.Config (QPS and Burst: the node agent's are the kubelet's 50 and
// 100; controller-runtime's GetConfig sets none) and the API server's
// priority and fairness. BENCHMARKS.md has a drain's numbers.
//
// The recorder's identity needs, in the API group events.k8s.io, create on
// events (and patch, for the series), in the pods' namespaces and in
// "default" (where the Events of a Node go): a ClusterRole, as
// examples/node-agent/deploy/clusterrole.yaml grants it.
type Events struct {
	recorder events.EventRecorder
	node     string
}

var _ deletion.Observer = (*Events)(nil)

// NewEvents returns an Events that records with rec, usually
// mgr.GetEventRecorder("podsweeper"): controller-runtime's recorder of
// events.k8s.io/v1 Events, which its manager starts and stops, and which
// reports "podsweeper" as the Events' reportingController. A nil rec is an
// error wrapping ErrInvalidSetup.
func NewEvents(rec events.EventRecorder, opts EventsOptions) (*Events, error) {
	if rec == nil {
		return nil, fmt.Errorf("%w: the event recorder is nil", ErrInvalidSetup)
	}
	return &Events{recorder: rec, node: opts.NodeName}, nil
}

// Observe records a Kubernetes Event for an EventDestroyed or an
// EventAbandoned, and ignores every other kind: a dry run
// (deletion.Options.DryRun), which destroys nothing, records none, not even
// when it gives up on a PU whose DryRunDestroyPU failed (Event.DryRun). It
// never blocks. A nil *Events records nothing.
func (e *Events) Observe(ev deletion.Event) {
	if e == nil || ev.DryRun {
		return
	}
	var typ, reason, note string
	switch ev.Kind {
	case deletion.EventDestroyed:
		typ, reason = corev1.EventTypeNormal, EventReasonDestroyed
		note = fmt.Sprintf("%s: destroyed PU %s of pod %s (%s)", ev.Reason, ev.PU.PUID, ev.PU.Pod, sandbox(ev.PU))
		if ev.DestroyCalls > 1 {
			note += fmt.Sprintf(" at call %d", ev.DestroyCalls)
		}
	case deletion.EventAbandoned:
		typ, reason = corev1.EventTypeWarning, EventReasonAbandoned
		note = fmt.Sprintf("%s: gave up destroying PU %s of pod %s (%s) after %s; the policy engine may still hold it: %v",
			ev.Reason, ev.PU.PUID, ev.PU.Pod, sandbox(ev.PU), calls(ev.DestroyCalls), ev.Err)
	default:
		return
	}
	note = shorten(note, noteLimit)
	regarding, related := e.objects(ev)
	// The note goes as an argument: an error's text may hold a '%'.
	if related == nil {
		e.recorder.Eventf(regarding, nil, typ, reason, EventActionDestroy, "%s", note)
		return
	}
	e.recorder.Eventf(regarding, related, typ, reason, EventActionDestroy, "%s", note)
}

// objects returns what the Event of ev regards, and its related object
// (nil when there is none): the Node for a pod that is gone, when there is
// a node, with that pod related; the pod the PU was created for otherwise.
func (e *Events) objects(ev deletion.Event) (regarding, related *corev1.ObjectReference) {
	pod := &corev1.ObjectReference{
		APIVersion: "v1",
		Kind:       "Pod",
		Namespace:  ev.PU.Pod.Namespace,
		Name:       ev.PU.Pod.Name,
		UID:        types.UID(ev.PU.PUID),
	}
	if ev.Reason != ports.ReasonPodGone || e.node == "" {
		return pod, nil
	}
	// The kubelet's own Events name the Node by its name as its UID, and
	// kubectl describe node finds Events by either UID.
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: e.node, UID: types.UID(e.node)}, pod
}

// sandbox describes pu's sandbox for a note.
func sandbox(pu ports.PU) string {
	if pu.SandboxID == "" {
		return "no sandbox recorded"
	}
	return "sandbox " + pu.SandboxID
}

// shorten cuts s to at most limit bytes, ending in "...", at the start of
// a character: a character cut in two would be sent as the 3 bytes of
// U+FFFD, and the API server rejects a note over its limit.
func shorten(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// calls says how many DestroyPU calls were made, for a note.
func calls(n int) string {
	if n == 1 {
		return "1 call"
	}
	return fmt.Sprintf("%d calls", n)
}
