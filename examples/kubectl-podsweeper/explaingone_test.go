package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// What explain pod says of a pod that is gone, or that it can name by
// nothing but its UID: it asks where a PU of it may be, and says only
// what the answers it got tell.

// nodeEvent is a podsweeper Event of the destroy of the PU uid of the pod
// apps/name that is gone, from node's program: it regards the node.
func nodeEvent(node, name, uid string, at time.Time) corev1.Event {
	return corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: node + "." + uid},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: node, UID: types.UID(node)},
		Related:        &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: name, UID: types.UID(uid)},
		Reason:         k8s.EventReasonDestroyed, Type: corev1.EventTypeNormal, ReportingController: "podsweeper",
		EventTime: metav1.NewMicroTime(at), Message: "PodGone: destroyed PU " + uid + " of pod apps/" + name}
}

// TestExplainGonePodByNameAsksEveryNode: explain pod NAMESPACE/NAME of a
// pod that is gone shows "for each program that holds a PU of that pod"
// its PU: an Event of an earlier pod of that name, destroyed on node-a,
// does not keep the plugin from asking node-b, where the later pod of that
// name ran and its PU still waits.
func TestExplainGonePodByNameAsksEveryNode(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding())
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-b", "node-b", holding(map[string]any{
		"puID": secondUID, "pod": "apps/web", "state": "waiting for a retry", "age": "2m", "attempts": 2}))
	f.addEvent(nodeEvent("node-a", "web", firstUID, time.Now().Add(-10*time.Minute)))

	r := f.run("explain", "pod", "apps/web")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "PU "+secondUID+" of pod apps/web")
	assert.Contains(t, r.stdout, "na-b (node node-b)")

	// Asked by the earlier pod's UID, its Event tells where it ran.
	r = f.run("explain", "pod", "apps/web", "--uid", firstUID)
	assert.Equal(t, 0, r.code)
	assert.NotContains(t, r.stdout, "na-b")
	assert.NotContains(t, r.stdout, "every node's programs were asked")
}

// TestExplainUIDAloneOfAPodNamedByNothingSaysItIsNotKnown: explain pod
// --uid of a pod that no PU and no Event names cannot look the pod up
// (the API server finds no pod by UID): it says so, and does not say
// there is no pod of that UID (it may be a live pod podsweeper never
// tracked).
func TestExplainUIDAloneOfAPodNamedByNothingSaysItIsNotKnown(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding())
	f.addPod(corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: secondUID},
		Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})

	r := f.run("explain", "pod", "--uid", secondUID)
	assert.Equal(t, 0, r.code)
	assert.NotContains(t, r.stdout, "no pod of that UID")
	assert.Contains(t, r.stdout, "whether it lives is not known")
}

// TestExplainUIDAloneOfALivePodNamedByItsEventAsksItsNode: explain pod
// --uid of a live pod that a podsweeper Event names finds the pod, and so
// its node, before it asks: that node's programs only, and the pod's
// state.
func TestExplainUIDAloneOfALivePodNamedByItsEventAsksItsNode(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding())
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-b", "node-b", holding(map[string]any{
		"puID": secondUID, "pod": "apps/web", "state": "idle", "age": "2m"}))
	f.addPod(corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: secondUID},
		Spec: corev1.PodSpec{NodeName: "node-b"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	f.addEvent(podEvent("web", secondUID, "SandboxChanged", time.Now().Add(-time.Minute)))

	r := f.run("explain", "pod", "--uid", secondUID)
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "Pod apps/web (UID "+secondUID+") on node node-b")
	assert.NotContains(t, r.stdout, "every node's programs were asked")
	assert.NotContains(t, r.stdout, "na-a")
	assert.Contains(t, r.stdout, "PU "+secondUID+" of pod apps/web")
}

// TestExplainSaysItCannotTellWhatAProgramThatWasNotAskedKnows: "podsweeper
// knows nothing of this pod" is said only when every program was asked
// and none holds it: with one that could not be asked, or none found to
// ask, it says it cannot tell.
func TestExplainSaysItCannotTellWhatAProgramThatWasNotAskedKnows(t *testing.T) {
	f := newFakeAPI(t)
	r := f.run("explain", "pod", "apps/nope")
	assert.Equal(t, 0, r.code)
	assert.NotContains(t, r.stdout, "knows nothing")
	assert.Contains(t, r.stdout, "no program was found to ask")

	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding())
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-b", "node-b", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "internal error", http.StatusInternalServerError)
	}))
	r = f.run("explain", "pod", "apps/nope")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "could not be asked")
	assert.NotContains(t, r.stdout, "knows nothing")
	assert.Contains(t, r.stdout, "1 of 2 programs could not be asked")
}

// TestExplainWithNoEventSaysEventsExpire: the Events of a destroy last the
// API server's --event-ttl: a pod with none is not said to have had no
// destroy.
func TestExplainWithNoEventSaysEventsExpire(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding())
	r := f.run("explain", "pod", "apps/nope")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "--event-ttl")
	assert.NotContains(t, r.stdout, "none destroyed one")
}

// explain.md: for a pod that is gone, "its node is read from the Events of its destroys", and the answer cannot tell
// when a program of the pod's node was not asked, each named on a line `Not asked:`. explain pod --uid of a gone pod
// asked on node-b, whose destroy's Event the node agent of node-a posted: node-a's programs (its cni-gc, which posts
// no Event, may hold a PU of it) are named, and the answer cannot tell.
func TestExplainUIDOnAnotherNodeNamesTheNodeItsEventsName(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding())
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-b", "node-b", holding())
	f.addEvent(nodeEvent("node-a", "web", firstUID, time.Now().Add(-time.Minute)))

	r := f.run("explain", "pod", "--uid", firstUID, "--node", "node-b")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "the programs of node node-a, which an Event of the pod's destroy names (--node node-b was asked)")
	assert.Contains(t, r.stdout, "cannot tell")
}
