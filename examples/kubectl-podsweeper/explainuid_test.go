package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const laterUID = "0b7e3d52-8c1a-4f0e-b6d2-9e4a1c7f5a30"

// TestExplainUIDAsksWhereTheEarlierPodRan: explain pod NAMESPACE/NAME
// --uid of an earlier pod of that name asks where that pod's PU may be
// (as --uid alone does), not only the node of the pod of that name now.
func TestExplainUIDAsksWhereTheEarlierPodRan(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-a", "node-a", holding(map[string]any{
		"puID": earlierUID, "pod": "apps/web", "state": "waiting for a retry", "age": "6m2s", "lastChecked": time.Now(),
		"lastRow": 4, "why": "pod recreated with another UID", "attempts": 3, "nextAttempt": time.Now().Add(6 * time.Second), "lastError": "destroying: busy"}))
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-b", "node-b", holding(map[string]any{
		"puID": laterUID, "pod": "apps/web", "state": "idle", "age": "20s", "lastChecked": time.Now(), "lastRow": 9, "why": "same pod, same sandbox"}))
	f.addPod(corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: laterUID},
		Spec: corev1.PodSpec{NodeName: "node-b"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})

	r := f.run("explain", "pod", "apps/web", "--uid", earlierUID)
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "PU "+earlierUID+" of pod apps/web")
	assert.Contains(t, r.stdout, "na-a (node node-a)")

	// The pod of that name, by its own UID: its node's programs only.
	r = f.run("explain", "pod", "apps/web", "--uid", laterUID)
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "PU "+laterUID+" of pod apps/web")
	assert.NotContains(t, r.stdout, "na-a")
	assert.False(t, strings.Contains(r.stdout, "every node's programs were asked"))
}
