package deletion_test

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// FuzzDecide checks the properties that must hold whatever the observation:
// Decide never panics, never destroys on an error other than not found,
// never destroys the PU of a pod that is alive with the same UID on the same
// node in the same sandbox, and only adopts into an empty entry.
func FuzzDecide(f *testing.F) {
	f.Add("uid-1", "sb1", uint8(0), "uid-1", "node-a", "node-a", true, true, "sb1", false, false, false, false, false)
	f.Add("uid-1", "", uint8(0), "uid-1", "node-a", "node-a", true, true, "sb1", false, false, false, false, false)
	f.Add("uid-1", "sb1", uint8(1), "", "", "node-a", false, false, "", false, false, false, false, false)
	f.Add("uid-1", "sb1", uint8(2), "", "", "node-a", false, false, "", false, false, false, false, false)
	f.Add("uid-1", "sb1", uint8(0), "uid-2", "node-b", "node-a", true, true, "sb2", false, false, false, false, false)
	f.Add("uid-1", "sb1", uint8(0), "uid-1", "", "node-a", true, true, "", false, true, false, false, false)
	f.Add("uid-1", "sb1", uint8(0), "uid-1", "node-a", "", true, false, "sb2", true, false, false, false, false)
	f.Add("uid-1", "sb1", uint8(0), "uid-1", "node-a", "node-a", true, true, "", false, false, true, true, false)
	f.Fuzz(func(t *testing.T, puid, recorded string, errKind uint8, podUID, podNode, node string,
		hasExtractor, asked bool, current string, sandboxFails, nilPod, hasProber, dead, proberFails bool) {
		e := ports.PU{PUID: puid, Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: recorded}
		o := deletion.Observation{NodeName: node, HasExtractor: hasExtractor, SandboxAsked: asked, SandboxID: current}
		switch errKind % 3 {
		case 1:
			o.Err = ports.ErrPodNotFound
		case 2:
			o.Err = errors.New("api down")
		}
		if !nilPod {
			o.Pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: types.UID(podUID)}, Spec: corev1.PodSpec{NodeName: podNode}}
		}
		if sandboxFails {
			o.SandboxErr = errors.New("runtime down")
		}
		o.HasProber, o.ProberAsked, o.SandboxDead = hasProber, hasProber && asked, dead
		if proberFails {
			o.ProberErr = errors.New("prober down")
		}

		v := deletion.Decide(e, o)

		if v.Action > deletion.AskSandbox {
			t.Fatalf("unknown action %v", v)
		}
		if v.Action == deletion.Destroy && o.Err != nil && !deletion.IsNotFound(o.Err) {
			t.Fatalf("destroyed on an error: %v", v)
		}
		if v.Action == deletion.Destroy && o.Err == nil && o.Pod == nil {
			t.Fatalf("destroyed without a pod or an error: %v", v)
		}
		alive := o.Err == nil && o.Pod != nil && podUID == puid && (node == "" || podNode == "" || podNode == node)
		sameSandbox := !hasExtractor || !asked || sandboxFails || current == "" || recorded == "" || current == recorded
		deadSandbox := current == "" && recorded != "" && o.ProberAsked && dead && !proberFails
		if v.Action == deletion.Destroy && alive && sameSandbox && !deadSandbox {
			t.Fatalf("destroyed a live PU: %v for %+v", v, o)
		}
		if v.Reason == ports.ReasonSandboxDead && !deadSandbox {
			t.Fatalf("destroyed for a dead sandbox the prober did not report: %v for %+v", v, o)
		}
		if v.Action == deletion.Adopt && (recorded != "" || v.SandboxID == "" || v.SandboxID != current) {
			t.Fatalf("bad adoption %v of %q into %q", v, current, recorded)
		}
		if v.Action == deletion.AskSandbox && (!hasExtractor || asked) {
			t.Fatalf("asked for a sandbox needlessly: %v", v)
		}
		if v.Action == deletion.AskProber && (!hasProber || o.ProberAsked || recorded == "") {
			t.Fatalf("asked the prober needlessly: %v", v)
		}
		requeue := v.Reason == ports.ReasonSandboxChanged || v.Reason == ports.ReasonSandboxDead
		if (v.Action == deletion.Destroy) != (v.Reason != "") || v.Requeue != requeue {
			t.Fatalf("inconsistent verdict %+v", v)
		}
		if (v.Row == 0) != (v.Action == deletion.AskSandbox || v.Action == deletion.AskProber) {
			t.Fatalf("verdict without its row %+v", v)
		}
	})
}
