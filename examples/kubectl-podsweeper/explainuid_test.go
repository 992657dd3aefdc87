package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// TestExplainUIDAsksWhereTheEarlierPodRan: explain pod NAMESPACE/NAME
// --uid of an earlier pod of that name asks where that pod's PU may be
// (as --uid alone does), not only the node of the pod of that name now.
func TestExplainUIDAsksWhereTheEarlierPodRan(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding(map[string]any{
		"puID": firstUID, "pod": "apps/web", "state": "waiting for a retry", "age": "6m2s", "lastChecked": time.Now(),
		"lastRow": 4, "why": "pod recreated with another UID", "attempts": 3, "nextAttempt": time.Now().Add(6 * time.Second), "lastError": "destroying: busy"}))
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-b", "node-b", holding(map[string]any{
		"puID": secondUID, "pod": "apps/web", "state": "idle", "age": "20s", "lastChecked": time.Now(), "lastRow": 9, "why": "same pod, same sandbox"}))
	f.addPod(corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: secondUID},
		Spec: corev1.PodSpec{NodeName: "node-b"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})

	r := f.run("explain", "pod", "apps/web", "--uid", firstUID)
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "PU "+firstUID+" of pod apps/web")
	assert.Contains(t, r.stdout, "na-a (node node-a)")

	// The pod of that name, by its own UID: its node's programs only.
	r = f.run("explain", "pod", "apps/web", "--uid", secondUID)
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "PU "+secondUID+" of pod apps/web")
	assert.NotContains(t, r.stdout, "na-a")
	assert.False(t, strings.Contains(r.stdout, "every node's programs were asked"))
}

// podEvent is a podsweeper Event of a destroy of the PU uid of the pod
// apps/name, regarding that pod.
func podEvent(name, uid, reason string, at time.Time) corev1.Event {
	return corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name + "." + uid},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: name, UID: types.UID(uid)},
		Reason:         k8s.EventReasonDestroyed, Type: corev1.EventTypeNormal, ReportingController: "podsweeper",
		EventTime: metav1.NewMicroTime(at), Message: reason + ": destroyed PU " + uid + " of pod apps/" + name}
}

// TestExplainNameAndUIDIsThePodOfThatUID: explain pod NAMESPACE/NAME --uid
// of an earlier pod of that name answers about the pod of that UID, as
// --uid alone does: not the pod of that name now (named in a note), its PU
// or its Events.
func TestExplainNameAndUIDIsThePodOfThatUID(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-1", "node-a", holding(map[string]any{
		"puID": secondUID, "pod": "apps/web", "state": "idle", "age": "20s"}))
	f.addPod(corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: secondUID},
		Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	f.addEvent(podEvent("web", firstUID, "UIDChanged", time.Now().Add(-time.Minute)))
	f.addEvent(podEvent("web", secondUID, "SandboxChanged", time.Now()))

	for _, args := range [][]string{
		{"explain", "pod", "apps/web", "--uid", firstUID, "--node", "node-a"},
		{"explain", "pod", "--uid", firstUID, "--node", "node-a"},
	} {
		r := f.run(args...)
		assert.Equal(t, 0, r.code)
		assert.Contains(t, r.stdout, "Pod with UID "+firstUID+" (apps/web): no pod of that name has that UID in the API server", "%q", args)
		assert.Contains(t, r.stdout, "Note: the pod named apps/web now has UID "+secondUID, "%q", args)
		assert.Contains(t, r.stdout, "UIDChanged: destroyed PU "+firstUID, "%q", args)
		assert.NotContains(t, r.stdout, "PU "+secondUID+" of pod", "%q", args)
		assert.NotContains(t, r.stdout, "SandboxChanged", "%q", args)
		assert.NotContains(t, r.stdout, "Running", "%q", args)
	}
}
