package main

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// explain pod apps/web --node node-b: no pod apps/web when first read (gone, so --node names where it ran); while
// the programs are asked, a pod apps/web is created and scheduled to node-a, whose agent tracks it. The answer tells
// the pod, live on node-a, and asked node-b's programs only: explain.md says the programs of the pod's node are then
// named on a line Not asked.
func TestAuditYNodeFlagPodCreatedElsewhereNamesNotAsked(t *testing.T) {
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
func TestAuditYNodeFlagPodRecreatedElsewhereNamesNotAsked(t *testing.T) {
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
