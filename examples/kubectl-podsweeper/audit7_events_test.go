package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// An Event of an earlier pod of that name (PodGone, regarding node-b, the
// earlier pod related) is marked so, in text and in JSON, beside the pod of
// that name now on node-a.
func TestAuditXHoldsEarlierPodsEventMarked(t *testing.T) {
	now := time.Now().UTC()
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "node-b.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-b", UID: "node-b"},
		Related:        &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: types.UID("old-uid")},
		Reason:         "PUDestroyed", Type: "Normal", Message: "PodGone: destroyed PU old-uid of pod apps/web (no sandbox recorded)",
		EventTime: metav1.NewMicroTime(now.Add(-20 * time.Second)), ReportingController: "podsweeper"}
	c, _ := clusterAndFake(t, map[string]http.Handler{
		"podsweeper/agent-a": rawPages{at: now, pages: map[string]rawAnswer{"/debug/podsweeper": {code: 200, body: `[]`}}},
	}, 5*time.Second, runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"), webPod("node-a"), ev)
	x, err := c.explainPod(context.Background(), "apps", "web", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	var js bytes.Buffer
	_ = RenderPodJSON(&js, x)
	if !strings.Contains(out, "(of an earlier pod of that name, UID old-uid)") || !strings.Contains(js.String(), `"earlierUID": "old-uid"`) {
		t.Fatalf("got:\n%s\n%s", out, js.String())
	}
}
