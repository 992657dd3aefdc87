package main

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func webPod(node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: types.UID("6f1c2a4e-0000-0000-0000-000000000001")},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

// A node agent that restarts (503) could not be asked: the answer says it
// cannot tell, never that podsweeper knows nothing.
func TestAuditXHoldsRestartingProgramIsCannotTell(t *testing.T) {
	now := time.Now().UTC()
	c, _ := clusterAndFake(t, map[string]http.Handler{
		"podsweeper/agent-a": rawPages{at: now, pages: map[string]rawAnswer{
			"/debug/podsweeper": {code: 503, body: "the deletion engine has not listed its Inventory yet"},
		}},
	}, 5*time.Second, runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"))
	x, err := c.explainPod(context.Background(), "apps", "gone", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if strings.Contains(out, "knows nothing") || !strings.Contains(out, "cannot tell") || !strings.Contains(out, "could not be asked") {
		t.Fatalf("got:\n%s", out)
	}
}

// A user who may not create pods/portforward gets a forbiddenError.
func TestAuditXHoldsForbiddenPortForward(t *testing.T) {
	now := time.Now().UTC()
	c, _ := clusterAndFake(t, map[string]http.Handler{
		"podsweeper/agent-a": forbiddenForward{},
	}, 5*time.Second, runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"), webPod("node-a"))
	x, err := c.explainPod(context.Background(), "apps", "web", "", "", now)
	if err == nil {
		t.Logf("answer:\n%s", podText(t, x))
	}
	var f *forbiddenError
	if !errors.As(err, &f) || !strings.Contains(err.Error(), "forbidden: you may not") || !strings.Contains(err.Error(), "pods/portforward") {
		t.Fatalf("want a forbidden of pods/portforward, got %v", err)
	}
}

// A program's times are told from its page's Podsweeper-Time, on its clock:
// a program whose clock is an hour behind the command's, whose PU was checked
// 5s before it answered, is told "5s ago".
func TestAuditXHoldsProgramsClock(t *testing.T) {
	now := time.Now().UTC()
	progNow := now.Add(-time.Hour)
	checked := progNow.Add(-5 * time.Second).Format(time.RFC3339Nano)
	c, _ := clusterAndFake(t, map[string]http.Handler{
		"podsweeper/agent-a": rawPages{at: progNow, pages: map[string]rawAnswer{
			"/debug/podsweeper": {code: 200, body: `[{"puID":"6f1c2a4e-0000-0000-0000-000000000001","pod":"apps/web","state":"idle","age":"4m","lastChecked":"` + checked + `","lastRow":9,"why":"same pod, same sandbox"}]`},
		}},
	}, 5*time.Second, runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"), webPod("node-a"))
	x, err := c.explainPod(context.Background(), "apps", "web", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if !strings.Contains(out, "last check    5s ago") {
		t.Fatalf("got:\n%s", out)
	}
}
