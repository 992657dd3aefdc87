package main

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
)

// The pod apps/web moves at every read: each Get of it answers a pod of a
// new UID on the other node. After three rounds, the programs of its node
// now are named Not asked, and the answer cannot tell.
func TestAuditXHoldsPodKeptMoving(t *testing.T) {
	now := time.Now().UTC()
	page := func(node string) http.Handler {
		return rawPages{at: now, pages: map[string]rawAnswer{"/debug/podsweeper": {code: 200, body: `[]`}}}
	}
	c, fc := clusterAndFake(t, map[string]http.Handler{
		"podsweeper/agent-a": page("node-a"), "podsweeper/agent-b": page("node-b"),
	}, 5*time.Second,
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"),
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-b", "node-b"))
	var n atomic.Int64
	fc.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		g := a.(k8stesting.GetAction)
		if g.GetNamespace() != "apps" || g.GetName() != "web" {
			return false, nil, nil
		}
		i := n.Add(1)
		node := "node-a"
		if i%2 == 0 {
			node = "node-b"
		}
		return true, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: types.UID("uid-" + string(rune('0'+i)))},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}, nil
	})
	x, err := c.explainPod(context.Background(), "apps", "web", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if strings.Contains(out, "knows nothing") || !strings.Contains(out, "Not asked:") || !strings.Contains(out, "cannot tell") {
		t.Fatalf("got:\n%s", out)
	}
	t.Logf("\n%s", out)
}
