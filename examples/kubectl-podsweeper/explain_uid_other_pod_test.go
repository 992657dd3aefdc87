package main

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// explain.md:9-13: the pod "deleted or recreated meanwhile is told as it is then, with a `Note:`, and when other
// programs may then hold what is asked (the pod gone, or on another node than the one asked), the programs are asked
// again, three rounds at most; a pod that changed at each leaves the programs of its node now, or of the nodes it may
// have run on, not asked, on a line `Not asked:`"; explain.md:269-271 (A pod asked by its UID): "With
// `NAMESPACE/NAME` too, when the pod of that name now has another UID, the programs asked are those of the node the
// Events name".
//
// Asked: apps/web --uid U, an earlier pod of that name, gone; its destroy's Event names node-a, whose programs are
// asked. The pod of that name now is another (a StatefulSet's pod that crash-loops, recreated under another UID at
// each moment). What is asked, U's PUs, is where it was: no other program may hold it because another pod of that
// name was recreated. The plugin asks again, three rounds, and ends naming "the programs of the nodes but node-a,
// where a pod of that name may have run" on a line `Not asked:`, and says it cannot tell.
func TestUIDAskedOtherPodOfTheNameChanging(t *testing.T) {
	f := newFakeAPI(t)
	const u = "6f1c2a4e-0d2b-4c4e-9a51-3f0c8e5b7d21"
	var n atomic.Int32
	agent := &programPages{engine: k8s.EngineRunning}
	agent.onStatus = func() {
		i := n.Add(1)
		f.setAppPods(*workloadPod("apps", "web", fmt.Sprintf("0b7e3d52-8c1a-4f0e-b6d2-9e4a1c7f5a%02d", i), "node-b"))
	}
	f.addProgram("podsweeper-node-agent", "podsweeper", "node-agent-a", "node-a", agent)
	f.addProgram("podsweeper-node-agent", "podsweeper", "node-agent-b", "node-b", &programPages{engine: k8s.EngineRunning})
	f.addPod(*workloadPod("apps", "web", "0b7e3d52-8c1a-4f0e-b6d2-9e4a1c7f5a00", "node-b"))
	f.addEvent(corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "node-a.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-a"},
		Related:        &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: u},
		Reason:         k8s.EventReasonDestroyed, Type: "Normal", ReportingController: "podsweeper",
		Message:   "PodGone: destroyed PU " + u + " of pod apps/web (no sandbox recorded)",
		EventTime: metav1.NewMicroTime(time.Now().Add(-time.Minute))})
	r := f.run("explain", "pod", "apps/web", "--uid", u)
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("node-a's programs were asked %d times: the pod asked (UID %s) did not change, another pod of its name did", got, u)
	}
	if strings.Contains(r.stdout, "Not asked: the programs of the nodes but node-a") || strings.Contains(r.stdout, "cannot tell") {
		t.Errorf("the answer names other nodes' programs as not asked and cannot tell, for the changes of another pod than the one asked")
	}
}
