package deletion_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// ports.Reasons: "Reasons lists every Reason: first those of the pod (gone, moved, recreated, finished: rows 1, 3, 4 and
// 11 of the decision table), then those of its sandbox (replaced, dead: rows 10 and 12)." The reasons are read from
// Decide itself, one Observation per destroy row. (The audit found the doc saying "in the order of the decision
// table", which the list never was.)
func TestAuditReasonsListThePodsThenItsSandboxs(t *testing.T) {
	pu := ports.PU{PUID: "uid-1", Pod: nsKey("web"), SandboxID: "sb-1"}
	live := deletiontest.Pod(pu.Pod, "uid-1", "node-a")
	finished := live.DeepCopy()
	finished.Status.Phase = corev1.PodSucceeded
	base := deletion.Observation{NodeName: "node-a", DestroyTerminated: true, HasExtractor: true, HasProber: true,
		SandboxAsked: true, ProberAsked: true}
	obs := func(f func(o *deletion.Observation)) deletion.Observation { o := base; f(&o); return o }
	destroyRows := []deletion.Observation{
		obs(func(o *deletion.Observation) { o.Err = ports.ErrPodNotFound }),
		obs(func(o *deletion.Observation) { o.Pod = deletiontest.Pod(pu.Pod, "uid-1", "node-b") }),
		obs(func(o *deletion.Observation) { o.Pod = deletiontest.Pod(pu.Pod, "uid-2", "node-a") }),
		obs(func(o *deletion.Observation) { o.Pod = finished }),
		obs(func(o *deletion.Observation) { o.Pod, o.SandboxID = live, "sb-2" }),
		obs(func(o *deletion.Observation) { o.Pod, o.SandboxID, o.SandboxDead = live, "", true }),
	}
	reasonOf := map[int]ports.Reason{}
	for _, o := range destroyRows {
		v := deletion.Decide(pu, o)
		if v.Action != deletion.Destroy {
			t.Fatalf("%+v: %v", o, v)
		}
		reasonOf[v.Row] = v.Reason
	}
	var want []ports.Reason
	for _, row := range []int{1, 3, 4, 11, 10, 12} {
		want = append(want, reasonOf[row])
	}
	if got := ports.Reasons(); !slices.Equal(got, want) {
		t.Errorf("ports.Reasons() = %v, want the pod's then its sandbox's: %v", got, want)
	}
}
