package main

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
)

// firstThenLater answers its first request with first, every later one with later.
type firstThenLater struct {
	n            atomic.Int64
	at           time.Time
	first, later string
}

func (h *firstThenLater) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/debug/podsweeper" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Podsweeper-Time", h.at.Format(time.RFC3339Nano))
	if h.n.Add(1) == 1 {
		_, _ = w.Write([]byte(h.first))
		return
	}
	_, _ = w.Write([]byte(h.later))
}

// Round 1: the pod apps/web lives on node-a, and the node agent there holds
// its PU (being checked). The pod is deleted while the programs are asked:
// round 1 is asked again, and its answers dropped. By round 2 the agent has
// destroyed the PU (PodGone); its Event, which adapters/k8s's recorder writes
// on a goroutine of its own (and retries, 10 s apart), is not in the API
// server yet. The answer says podsweeper knows nothing of the pod, though
// the plugin itself read the PU a moment before: the PU is not in the answer
// and the destroy's Event is not either.
func TestAuditXAPUReadInAnEarlierRoundIsNeverKnowsNothing(t *testing.T) {
	now := time.Now().UTC()
	agent := &firstThenLater{at: now,
		first: `[{"puID":"6f1c2a4e-0000-0000-0000-000000000001","pod":"apps/web","sandboxID":"3a9f0c1b2d4e5","state":"checking","age":"4m12s"}]`,
		later: `[]`}
	c, fc := clusterAndFake(t, map[string]http.Handler{"podsweeper/agent-a": agent}, 5*time.Second,
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"))
	var gets atomic.Int64
	fc.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		g := a.(k8stesting.GetAction)
		if g.GetNamespace() != "apps" || g.GetName() != "web" {
			return false, nil, nil
		}
		if gets.Add(1) == 1 { // the first read: live on node-a
			return true, webPod("node-a"), nil
		}
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "web")
	})
	x, err := c.explainPod(context.Background(), "apps", "web", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if agent.n.Load() < 2 {
		t.Fatalf("the agent was asked %d times, want 2 rounds:\n%s", agent.n.Load(), out)
	}
	if strings.Contains(out, "knows nothing") {
		t.Fatalf("says podsweeper knows nothing of a pod whose PU the plugin read in its first round, destroyed since, whose Event is not written yet:\n%s", out)
	}
}
