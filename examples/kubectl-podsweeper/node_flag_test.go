package main

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

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

// explain pod apps/web --node node-b: no pod apps/web when first read (gone, so --node names where it ran); while
// the programs are asked, a pod apps/web is created and scheduled to node-a, whose agent tracks it. The answer tells
// the pod, live on node-a, and asked node-b's programs only: explain.md says the programs of the pod's node are then
// named on a line Not asked.
func TestNodeFlagPodCreatedElsewhereNamesNotAsked(t *testing.T) {
	now := time.Now().UTC()
	a := programPod("podsweeper-node-agent", "r", "podsweeper", "agent-a", "node-a", corev1.PodRunning)
	b := programPod("podsweeper-node-agent", "r", "podsweeper", "agent-b", "node-b", corev1.PodRunning)
	e := newFakeCluster(t, a, b).closingAnswers().allowingReviews()
	var gets atomic.Int32
	created := workloadPod("apps", "web", "uid-new", "node-a")
	e.fake.PrependReactor("get", "pods", func(act k8stesting.Action) (bool, runtime.Object, error) {
		g := act.(k8stesting.GetAction)
		if g.GetNamespace() != "apps" || g.GetName() != "web" {
			return false, nil, nil
		}
		if gets.Add(1) == 1 {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "web")
		}
		return true, created.DeepCopy(), nil
	})
	e.handle("podsweeper/agent-a", &programPages{at: now, pus: []k8s.PUStatus{{PUID: "uid-new", Pod: "apps/web", State: "tracking", Age: "1s"}}})
	e.handle("podsweeper/agent-b", &programPages{at: now})
	x, err := e.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "node-b", now)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if x.Pod == nil || x.Pod.Node != "node-a" {
		t.Fatalf("the pod is not told as created on node-a:\n%s", out)
	}
	if !strings.Contains(out, "Not asked:") || !strings.Contains(out, "node-a") || len(x.Unasked) == 0 {
		t.Errorf("the pod runs on node-a, node-b's programs alone were asked, and no line Not asked names node-a's:\n%s", out)
	}
}

// The same with --node given as the pod's own node at first (live on node-b), and the pod recreated on node-a meanwhile.
func TestNodeFlagPodRecreatedElsewhereNamesNotAsked(t *testing.T) {
	now := time.Now().UTC()
	a := programPod("podsweeper-node-agent", "r", "podsweeper", "agent-a", "node-a", corev1.PodRunning)
	b := programPod("podsweeper-node-agent", "r", "podsweeper", "agent-b", "node-b", corev1.PodRunning)
	e := newFakeCluster(t, a, b).closingAnswers().allowingReviews()
	var gets atomic.Int32
	first := workloadPod("apps", "web", "uid-old", "node-b")
	created := workloadPod("apps", "web", "uid-new", "node-a")
	e.fake.PrependReactor("get", "pods", func(act k8stesting.Action) (bool, runtime.Object, error) {
		g := act.(k8stesting.GetAction)
		if g.GetNamespace() != "apps" || g.GetName() != "web" {
			return false, nil, nil
		}
		if gets.Add(1) == 1 {
			return true, first.DeepCopy(), nil
		}
		return true, created.DeepCopy(), nil
	})
	e.handle("podsweeper/agent-a", &programPages{at: now, pus: []k8s.PUStatus{{PUID: "uid-new", Pod: "apps/web", State: "tracking", Age: "1s"}}})
	e.handle("podsweeper/agent-b", &programPages{at: now})
	x, err := e.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "node-b", now)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if x.Pod == nil || x.Pod.Node != "node-a" {
		t.Fatalf("the pod is not told as recreated on node-a:\n%s", out)
	}
	if len(x.Unasked) == 0 {
		t.Errorf("the pod runs on node-a now, node-b's programs alone were asked, and no line Not asked names node-a's:\n%s", out)
	}
}
