package main

import (
	"context"
	"net/http"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// A pod gone, asked by name with --node: only that node's programs are asked (--node narrows), and an answer that
// finds nothing says so of that node, not of podsweeper: another node's program may hold a PU of a pod of that name.
func TestNodeFlagOnAGonePodKnowsNothingOfThatNodeOnly(t *testing.T) {
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a": statusPage(t, k8s.EngineRunning),
		"podsweeper/agent-b": statusPage(t, k8s.EngineRunning, idlePU(firstUID, "apps/gone")),
	},
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning),
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-b", "node-b", corev1.PodRunning))
	x, err := c.explainPod(testContext(t), "apps", "gone", "", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, js := podTextAndJSON(t, x)
	wantSays(t, "the text", txt, "podsweeper knows nothing of this pod on node node-a")
	wantSays(t, "the text", txt, "only node node-a's were asked: --node")
	wantSays(t, "the JSON", js, `"node": "node-a"`)
}

// The pod asked with --node runs on that node, and is recreated on another while the programs are asked: the answer
// says, as for a pod that ran elsewhere from the start, in a Note that it runs on another node, and names that node's
// programs as not asked.
func TestNodeFlagOnAPodRecreatedElsewhereWhileAskedSaysWhereItRuns(t *testing.T) {
	var c *cluster
	var once sync.Once
	agent := statusPage(t, k8s.EngineRunning, idlePU(firstUID, "apps/web"))
	recreate := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() {
			cs := c.cs.(hybridCS).Clientset
			ctx := context.Background()
			if err := cs.CoreV1().Pods("apps").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
				t.Error(err)
			}
			if _, err := cs.CoreV1().Pods("apps").Create(ctx, workloadPod("apps", "web", secondUID, "node-b"), metav1.CreateOptions{}); err != nil {
				t.Error(err)
			}
		})
		agent.ServeHTTP(w, r)
	})
	c = clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a": recreate,
		"podsweeper/agent-b": statusPage(t, k8s.EngineRunning, idlePU(secondUID, "apps/web")),
	},
		workloadPod("apps", "web", firstUID, "node-a"),
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning),
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-b", "node-b", corev1.PodRunning))
	x, err := c.explainPod(testContext(t), "apps", "web", "", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := podTextAndJSON(t, x)
	wantSays(t, "the text", txt, "Not asked: the programs of node node-b")
	wantSays(t, "the text", txt, "Note: the pod runs on node node-b, not node-a")
}
