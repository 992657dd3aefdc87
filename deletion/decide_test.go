package deletion_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

const (
	testNode = "node-a"
	testUID  = "uid-1"
)

var testKey = types.NamespacedName{Namespace: "default", Name: "web-0"}

func livePod(uid, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: testKey.Namespace, Name: testKey.Name, UID: types.UID(uid)},
		Spec:       corev1.PodSpec{NodeName: node},
	}
}

// finishedPod is the entry's pod, finished in that phase.
func finishedPod(phase corev1.PodPhase) *corev1.Pod {
	p := livePod(testUID, testNode)
	p.Status.Phase = phase
	return p
}

func entryWith(sandbox string) ports.PU {
	return ports.PU{PUID: testUID, Pod: testKey, SandboxID: sandbox}
}

// sandboxAnswer is the observation once the extractor has answered.
func sandboxAnswer(pod *corev1.Pod, id string, err error) deletion.Observation {
	return deletion.Observation{Pod: pod, NodeName: testNode, HasExtractor: true, SandboxAsked: true, SandboxID: id, SandboxErr: err}
}

var errBoom = errors.New("boom")

// TestDecideTable has one row per line of the decision table (README and
// Decide's doc comment), then the edges.
func TestDecideTable(t *testing.T) {
	statusNotFound := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, testKey.Name)
	keep := func(row int) deletion.Verdict { return deletion.Verdict{Action: deletion.Keep, Row: row} }
	destroy := func(row int, r ports.Reason) deletion.Verdict {
		return deletion.Verdict{Action: deletion.Destroy, Reason: r, Row: row, Requeue: r == ports.ReasonSandboxChanged || r == ports.ReasonSandboxDead}
	}
	ask := deletion.Verdict{Action: deletion.AskSandbox}

	tests := []struct {
		name  string
		entry ports.PU
		obs   deletion.Observation
		want  deletion.Verdict
	}{
		// The table, row by row.
		{"1 pod not found", entryWith("sb1"),
			deletion.Observation{Err: ports.ErrPodNotFound, NodeName: testNode, HasExtractor: true}, destroy(1, ports.ReasonPodGone)},
		{"2 get fails", entryWith("sb1"),
			deletion.Observation{Err: errBoom, NodeName: testNode, HasExtractor: true}, keep(2)},
		{"3 pod on another node", entryWith("sb1"),
			deletion.Observation{Pod: livePod(testUID, "node-b"), NodeName: testNode, HasExtractor: true}, destroy(3, ports.ReasonNodeChanged)},
		{"4 pod recreated with another UID", entryWith("sb1"),
			deletion.Observation{Pod: livePod("uid-2", testNode), NodeName: testNode, HasExtractor: true}, destroy(4, ports.ReasonUIDChanged)},
		{"5 same UID, no extractor", entryWith("sb1"),
			deletion.Observation{Pod: livePod(testUID, testNode), NodeName: testNode}, keep(5)},
		{"6 same UID, extractor fails", entryWith("sb1"),
			sandboxAnswer(livePod(testUID, testNode), "", errBoom), keep(6)},
		{"7 same UID, no sandbox recorded: adopt", entryWith(""),
			sandboxAnswer(livePod(testUID, testNode), "sb1", nil), deletion.Verdict{Action: deletion.Adopt, SandboxID: "sb1", Row: 7}},
		{"8 same UID, sandbox not known yet", entryWith("sb1"),
			sandboxAnswer(livePod(testUID, testNode), "", nil), keep(8)},
		{"9 same UID, same sandbox", entryWith("sb1"),
			sandboxAnswer(livePod(testUID, testNode), "sb1", nil), keep(9)},
		{"10 same UID, sandbox replaced", entryWith("sb1"),
			sandboxAnswer(livePod(testUID, testNode), "sb2", nil), destroy(10, ports.ReasonSandboxChanged)},
		{"12 same UID, no sandbox yet, the PU's dead", entryWith("sb1"),
			probed(sandboxAnswer(livePod(testUID, testNode), "", nil), true, nil), destroy(12, ports.ReasonSandboxDead)},
		{"11 same UID, pod Succeeded, DestroyTerminated", entryWith("sb1"),
			deletion.Observation{Pod: finishedPod(corev1.PodSucceeded), NodeName: testNode, HasExtractor: true, DestroyTerminated: true}, destroy(11, ports.ReasonPodTerminated)},
		{"11 same UID, pod Failed, DestroyTerminated", entryWith("sb1"),
			deletion.Observation{Pod: finishedPod(corev1.PodFailed), NodeName: testNode, HasExtractor: true, DestroyTerminated: true}, destroy(11, ports.ReasonPodTerminated)},

		// Edges.
		{"Kubernetes NotFound status error counts as gone", entryWith(""),
			deletion.Observation{Err: statusNotFound}, destroy(1, ports.ReasonPodGone)},
		{"wrapped ErrPodNotFound counts as gone", entryWith(""),
			deletion.Observation{Err: fmt.Errorf("get: %w", ports.ErrPodNotFound)}, destroy(1, ports.ReasonPodGone)},
		{"wrapped NotFound status error counts as gone", entryWith(""),
			deletion.Observation{Err: fmt.Errorf("get: %w", statusNotFound)}, destroy(1, ports.ReasonPodGone)},
		{"other status errors keep", entryWith(""),
			deletion.Observation{Err: apierrors.NewServiceUnavailable("down")}, keep(2)},
		{"nil pod with nil error keeps", entryWith("sb1"),
			deletion.Observation{NodeName: testNode, HasExtractor: true}, keep(2)},
		{"a pod of another name keeps", entryWith("sb1"),
			deletion.Observation{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other", UID: "uid-9"}}}, keep(2)},
		{"a pod of another namespace keeps", entryWith("sb1"),
			deletion.Observation{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: testKey.Name, UID: "uid-9"}}}, keep(2)},
		{"a pod without a UID keeps", entryWith(""),
			deletion.Observation{Pod: &corev1.Pod{}, NodeName: testNode}, keep(2)},
		{"a pod with no name or namespace and another UID keeps", entryWith(""),
			deletion.Observation{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-9"}}}, keep(2)},
		{"a pod with no name and another UID keeps", entryWith(""),
			deletion.Observation{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testKey.Namespace, UID: "uid-9"}}}, keep(2)},
		{"a pod with no namespace and another UID keeps", entryWith(""),
			deletion.Observation{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: testKey.Name, UID: "uid-9"}}}, keep(2)},
		{"a pod with no name or namespace and the PU's UID is the PU's pod", entryWith(""),
			deletion.Observation{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: testUID}}}, keep(5)},
		{"a finished pod is kept without DestroyTerminated", entryWith(""),
			deletion.Observation{Pod: finishedPod(corev1.PodSucceeded), NodeName: testNode}, keep(5)},
		{"a running pod is kept with DestroyTerminated", entryWith(""),
			deletion.Observation{Pod: livePod(testUID, testNode), NodeName: testNode, DestroyTerminated: true}, keep(5)},
		{"a finished pod of another UID is a recreated pod (row 4 first)", entryWith(""),
			deletion.Observation{Pod: func() *corev1.Pod { p := finishedPod(corev1.PodFailed); p.UID = "uid-2"; return p }(), DestroyTerminated: true}, destroy(4, ports.ReasonUIDChanged)},
		{"a finished pod on another node moved (row 3 first)", entryWith(""),
			deletion.Observation{Pod: func() *corev1.Pod { p := finishedPod(corev1.PodFailed); p.Spec.NodeName = "node-b"; return p }(), NodeName: testNode, DestroyTerminated: true}, destroy(3, ports.ReasonNodeChanged)},
		{"node check off when NodeName is empty", entryWith(""),
			deletion.Observation{Pod: livePod(testUID, "node-b")}, keep(5)},
		{"node check comes before the UID check", entryWith(""),
			deletion.Observation{Pod: livePod("uid-2", "node-b"), NodeName: testNode}, destroy(3, ports.ReasonNodeChanged)},
		{"an unbound pod has not moved", entryWith(""),
			deletion.Observation{Pod: livePod(testUID, ""), NodeName: testNode}, keep(5)},
		{"an unbound recreated pod is another pod", entryWith(""),
			deletion.Observation{Pod: livePod("uid-2", ""), NodeName: testNode}, destroy(4, ports.ReasonUIDChanged)},
		{"nil extractor with nothing recorded keeps", entryWith(""),
			deletion.Observation{Pod: livePod(testUID, testNode), NodeName: testNode}, keep(5)},
		{"extractor configured, not asked yet: ask", entryWith("sb1"),
			deletion.Observation{Pod: livePod(testUID, testNode), NodeName: testNode, HasExtractor: true}, ask},
		{"nothing recorded and extractor fails: keep, adopt nothing", entryWith(""),
			sandboxAnswer(livePod(testUID, testNode), "sb1", errBoom), keep(6)},
		{"nothing recorded and nothing known: keep", entryWith(""),
			sandboxAnswer(livePod(testUID, testNode), "", nil), keep(8)},
		{"no sandbox yet, a prober configured, not asked yet: ask it", entryWith("sb1"),
			func() deletion.Observation {
				o := sandboxAnswer(livePod(testUID, testNode), "", nil)
				o.HasProber = true
				return o
			}(), deletion.Verdict{Action: deletion.AskProber}},
		{"no sandbox yet, the PU's alive or being created: keep", entryWith("sb1"),
			probed(sandboxAnswer(livePod(testUID, testNode), "", nil), false, nil), keep(8)},
		{"no sandbox yet, the prober fails: keep", entryWith("sb1"),
			probed(sandboxAnswer(livePod(testUID, testNode), "", nil), true, errBoom), keep(8)},
		{"nothing recorded, a prober: nothing to ask, keep", entryWith(""),
			func() deletion.Observation {
				o := sandboxAnswer(livePod(testUID, testNode), "", nil)
				o.HasProber = true
				return o
			}(), keep(8)},
		{"another sandbox runs: changed, whatever the prober says", entryWith("sb1"),
			probed(sandboxAnswer(livePod(testUID, testNode), "sb2", nil), true, nil), destroy(10, ports.ReasonSandboxChanged)},
		{"the extractor fails: keep, whatever the prober says", entryWith("sb1"),
			probed(sandboxAnswer(livePod(testUID, testNode), "", errBoom), true, nil), keep(6)},
		{"a GetPod error wins over a pod", entryWith("sb1"),
			deletion.Observation{Pod: livePod("uid-2", testNode), Err: errBoom}, keep(2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := deletion.Decide(tt.entry, tt.obs)
			assert.Equal(t, tt.want, got, "got %v", got)
			// The slim pod, all a slim pod cache holds, decides alike.
			slim := tt.obs
			slim.Pod = deletion.SlimPod(tt.obs.Pod)
			assert.Equal(t, tt.want, deletion.Decide(tt.entry, slim), "on the slim pod")
		})
	}
}

// probed is o with the SandboxProber's answer about the PU's sandbox.
func probed(o deletion.Observation, dead bool, err error) deletion.Observation {
	o.HasProber, o.ProberAsked, o.SandboxDead, o.ProberErr = true, true, dead, err
	return o
}

func TestVerdictString(t *testing.T) {
	v := deletion.Verdict{Action: deletion.Destroy, Reason: ports.ReasonSandboxChanged, Row: 10}
	assert.Equal(t, "row 10 Destroy: same pod, sandbox replaced (SandboxChanged)", v.String())
	assert.Equal(t, "row 0 AskSandbox: sandbox needed", deletion.Verdict{Action: deletion.AskSandbox}.String())
	assert.Equal(t, "Action(9)", deletion.Action(9).String())
	assert.Equal(t, "unknown row", deletion.Verdict{Row: 42}.Why())
}

func TestIsNotFound(t *testing.T) {
	assert.True(t, deletion.IsNotFound(ports.ErrPodNotFound))
	assert.True(t, deletion.IsNotFound(apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "x")))
	assert.False(t, deletion.IsNotFound(nil))
	assert.False(t, deletion.IsNotFound(errBoom))
	assert.False(t, deletion.IsNotFound(apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "x", errBoom)))
}

// ports.Reasons: "Reasons lists every Reason: first those of the pod (gone, moved, recreated, finished: rows 1, 3, 4 and
// 11 of the decision table), then those of its sandbox (replaced, dead: rows 10 and 12)." The reasons are read from
// Decide itself, one Observation per destroy row. (The list is not in the order of the decision table.)
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

// TestDecideAllocatesNothing: a check's decision allocates nothing, a gone
// pod's (its error read through ports.Readable) included: the budget of
// BENCHMARKS.md's BenchmarkDecide. (Any other error is asked
// apimachinery's IsNotFound too, whose errors.As allocates once.)
func TestDecideAllocatesNothing(t *testing.T) {
	for name, o := range map[string]deletion.Observation{
		"row 1, ErrPodNotFound wrapped": {Err: fmt.Errorf("get: %w", ports.ErrPodNotFound), NodeName: testNode, HasExtractor: true},
		"row 9, a live pod":             sandboxAnswer(livePod(testUID, testNode), "sb-1", nil),
		"row 10, another sandbox":       sandboxAnswer(livePod(testUID, testNode), "sb-2", nil),
	} {
		if n := testing.AllocsPerRun(100, func() { _ = deletion.Decide(entryWith("sb-1"), o) }); n != 0 {
			t.Errorf("%s: Decide allocates %v times a call, want 0", name, n)
		}
	}
}
