package k8s

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// realisticPod is testdata/realistic-pod.json: a Deployment's pod as the API
// server returns it (two containers, a projected token volume, five
// conditions, two container statuses, the managed fields of
// kube-controller-manager and the kubelet), decoded strictly.
func realisticPod(t testing.TB) *corev1.Pod {
	t.Helper()
	data, err := os.ReadFile("testdata/realistic-pod.json")
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var pod corev1.Pod
	require.NoError(t, dec.Decode(&pod))
	return &pod
}

func slim(t testing.TB, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	obj, err := SlimPod(pod)
	require.NoError(t, err)
	if pod == nil {
		require.Nil(t, obj)
		return nil
	}
	return obj.(*corev1.Pod)
}

func TestSlimPodKeepsOnlyWhatPodsweeperReads(t *testing.T) {
	full := realisticPod(t)
	full.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	full.Annotations[corev1.MirrorPodAnnotationKey] = "0123abcd"
	full.Spec.HostNetwork = true
	before := full.DeepCopy()

	got := slim(t, full)

	want := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-5d8f9c7b6-x2x9k", Namespace: "shop", UID: "9a3b6c2e-4f1d-4b7a-8e2c-5d6f7a8b9c01",
			ResourceVersion:   "48213377",
			DeletionTimestamp: full.DeletionTimestamp,
			Annotations:       map[string]string{corev1.MirrorPodAnnotationKey: "0123abcd"},
		},
		Spec:   corev1.PodSpec{NodeName: "worker-3", HostNetwork: true},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	assert.Equal(t, want, got)
	assert.Equal(t, before, full, "the pod given is not modified")
	assert.NotSame(t, full.DeletionTimestamp, got.DeletionTimestamp, "the slim pod shares nothing that can change")
	assert.Equal(t, got, slim(t, got), "idempotent")

	// Without the mirror annotation, the slim pod has no annotations at all.
	delete(full.Annotations, corev1.MirrorPodAnnotationKey)
	assert.Nil(t, slim(t, full).Annotations)
}

func TestSlimPodPassesOtherObjectsThrough(t *testing.T) {
	tombstone := toolscache.DeletedFinalStateUnknown{Key: "shop/web", Obj: realisticPod(t)}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-3", Labels: map[string]string{"zone": "a"}}}
	for _, obj := range []any{tombstone, node, (*corev1.Pod)(nil), "not an object", nil} {
		got, err := SlimPod(obj)
		require.NoError(t, err)
		assert.Equal(t, obj, got, "%T", obj)
	}
}

// classifiers are engines with and without a node, with and without
// DestroyTerminated: every way Engine.Classify can read a pod.
func classifiers(t testing.TB, nodes ...string) []*deletion.Engine {
	t.Helper()
	var out []*deletion.Engine
	for _, node := range append([]string{""}, nodes...) {
		for _, terminated := range []bool{false, true} {
			c, err := deletion.New(ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound }),
				ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil }),
				deletion.Options{NodeName: node, DestroyTerminated: terminated})
			require.NoError(t, err)
			out = append(out, c)
		}
	}
	return out
}

// TestSlimPodDecidesAlikeOnEveryRow: for a realistic pod and an
// observation reaching each row of the decision table, Decide gives the
// same verdict on the slim pod, and Engine.Classify and PodsWithOwnNetwork
// the same answers.
func TestSlimPodDecidesAlikeOnEveryRow(t *testing.T) {
	const node = "worker-3"
	base := realisticPod(t)
	pu := func(sandbox string) ports.PU {
		return ports.PU{PUID: string(base.UID), Pod: types.NamespacedName{Namespace: base.Namespace, Name: base.Name}, SandboxID: sandbox}
	}
	with := func(f func(*corev1.Pod)) *corev1.Pod { p := base.DeepCopy(); f(p); return p }
	asked := func(id string, err error) deletion.Observation {
		return deletion.Observation{Pod: base, NodeName: node, HasExtractor: true, SandboxAsked: true, SandboxID: id, SandboxErr: err}
	}
	boom := errors.New("boom")
	rows := []struct {
		row int
		pu  ports.PU
		obs deletion.Observation
	}{
		{1, pu("sb1"), deletion.Observation{Pod: base, Err: ports.ErrPodNotFound, NodeName: node}},
		{2, pu("sb1"), deletion.Observation{Pod: base, Err: boom, NodeName: node}},
		{2, pu("sb1"), deletion.Observation{Pod: with(func(p *corev1.Pod) { p.Name, p.UID = "other", "uid-9" }), NodeName: node}},
		{2, pu("sb1"), deletion.Observation{Pod: with(func(p *corev1.Pod) { p.UID = "" }), NodeName: node}},
		{3, pu("sb1"), deletion.Observation{Pod: with(func(p *corev1.Pod) { p.Spec.NodeName = "worker-7" }), NodeName: node}},
		{4, pu("sb1"), deletion.Observation{Pod: with(func(p *corev1.Pod) { p.UID = "uid-2" }), NodeName: node}},
		{5, pu("sb1"), deletion.Observation{Pod: base, NodeName: node}},
		{6, pu("sb1"), asked("", boom)},
		{7, pu(""), asked("sb1", nil)},
		{8, pu("sb1"), asked("", nil)},
		{9, pu("sb1"), asked("sb1", nil)},
		{10, pu("sb1"), asked("sb2", nil)},
		{11, pu("sb1"), deletion.Observation{Pod: with(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), NodeName: node, DestroyTerminated: true}},
		{11, pu("sb1"), deletion.Observation{Pod: with(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), DestroyTerminated: true}},
	}
	engines := classifiers(t, node)
	seen := map[int]bool{}
	for _, r := range rows {
		t.Run(fmt.Sprintf("row %d", r.row), func(t *testing.T) {
			full := deletion.Decide(r.pu, r.obs)
			require.Equal(t, r.row, full.Row, "the case reaches its row: %v", full)
			seen[r.row] = true
			s := r.obs
			s.Pod = slim(t, r.obs.Pod)
			assert.Equal(t, full, deletion.Decide(r.pu, s))
			for _, c := range engines {
				assert.Equal(t, c.Classify(r.obs.Pod), c.Classify(s.Pod))
			}
			assert.Equal(t, PodsWithOwnNetwork(r.obs.Pod), PodsWithOwnNetwork(s.Pod))
		})
	}
	for row := 1; row <= 11; row++ {
		assert.True(t, seen[row], "row %d has a case", row)
	}
	// The filter's two rejections survive the slimming.
	hostNet := with(func(p *corev1.Pod) { p.Spec.HostNetwork = true })
	mirror := with(func(p *corev1.Pod) { p.Annotations[corev1.MirrorPodAnnotationKey] = "" })
	assert.False(t, PodsWithOwnNetwork(slim(t, hostNet)), "host network")
	assert.False(t, PodsWithOwnNetwork(slim(t, mirror)), "mirror pod")
	assert.True(t, PodsWithOwnNetwork(slim(t, base)))
}

// handlerEvents are the events the pod handler gets for a pod, given the
// pod, the pod changed, and the pod replaced by one of another UID.
var handlerEvents = []struct {
	name string
	call func(h *podHandler, p [3]*corev1.Pod)
}{
	{"add", func(h *podHandler, p [3]*corev1.Pod) { h.OnAdd(p[0], false) }},
	{"update", func(h *podHandler, p [3]*corev1.Pod) { h.OnUpdate(p[0], p[1]) }},
	{"resync", func(h *podHandler, p [3]*corev1.Pod) { h.OnUpdate(p[0], p[0]) }},
	{"replace", func(h *podHandler, p [3]*corev1.Pod) { h.OnUpdate(p[0], p[2]) }},
	{"delete", func(h *podHandler, p [3]*corev1.Pod) { h.OnDelete(p[0]) }},
	{"tombstone", func(h *podHandler, p [3]*corev1.Pod) {
		h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: p[0].Namespace + "/" + p[0].Name, Obj: p[0]})
	}},
}

// handlerCalls is what the pod handler asks of the engine for one event.
func handlerCalls(c *deletion.Engine, filter func(*corev1.Pod) bool, event func(*podHandler)) ([]ports.PU, []types.NamespacedName) {
	f := &fakeEngine{classifier: c}
	event(&podHandler{engine: f, filter: filter})
	return f.calls()
}

// FuzzSlimPodDecidesAlike: on any pod, the slim pod gets the answers the
// full one gets from Decide (for PUs of that pod and of others, on every
// node setting, with and without a sandbox), from Engine.Classify, from
// PodsWithOwnNetwork and from the pod handler (its Track and TriggerPod
// calls on add, update, resync and delete); SlimPod leaves the pod as it
// was and keeps none of the fields it drops.
func FuzzSlimPodDecidesAlike(f *testing.F) {
	f.Add("web-0", "shop", "uid-1", "worker-3", "Running", false, false, false, "prometheus.io/port", "9090", "app", "web", uint8(2), "101", "sb1")
	f.Add("etcd-worker-3", "kube-system", "uid-2", "worker-3", "Running", true, true, false, "", "", "", "", uint8(1), "7", "")
	f.Add("job-x", "batch", "uid-3", "", "Succeeded", false, false, true, "a", "", "job-name", "x", uint8(0), "", "sb2")
	f.Add("cilium-x7", "kube-system", "uid-4", "worker-3", "Running", true, false, false, "", "", "k8s-app", "cilium", uint8(1), "9", "sb1")
	engines := classifiers(f, "worker-3", "worker-7")
	f.Fuzz(func(t *testing.T, name, ns, uid, node, phase string, hostNetwork, mirror, deleting bool,
		annKey, annVal, labelKey, labelVal string, containers uint8, rv, sandbox string) {
		pod := fuzzPod(name, ns, uid, node, phase, hostNetwork, mirror, deleting, annKey, annVal, labelKey, labelVal, int(containers%5), rv)
		before := pod.DeepCopy()
		s := slim(t, pod)
		if !reflect.DeepEqual(before, pod) {
			t.Fatalf("SlimPod modified its pod")
		}
		if again := slim(t, s); !reflect.DeepEqual(again, s) {
			t.Fatalf("SlimPod is not idempotent: %+v then %+v", s, again)
		}
		if s.Labels != nil || s.OwnerReferences != nil || s.ManagedFields != nil || s.Spec.Containers != nil || s.Spec.Volumes != nil ||
			s.Status.Conditions != nil || s.Status.ContainerStatuses != nil || len(s.Annotations) > 1 {
			t.Fatalf("the slim pod kept a field it drops: %+v", s)
		}

		key := types.NamespacedName{Namespace: ns, Name: name}
		pus := []ports.PU{
			{PUID: uid, Pod: key, SandboxID: sandbox},
			{PUID: uid + "-old", Pod: key},
			{PUID: uid, Pod: types.NamespacedName{Namespace: ns, Name: name + "-other"}, SandboxID: sandbox},
		}
		for _, pu := range pus {
			for _, engineNode := range []string{"", node, "worker-7"} {
				for _, o := range []deletion.Observation{
					{NodeName: engineNode},
					{NodeName: engineNode, DestroyTerminated: true, HasExtractor: true},
					{NodeName: engineNode, DestroyTerminated: true, HasExtractor: true, SandboxAsked: true, SandboxID: "sb1"},
					{NodeName: engineNode, HasExtractor: true, SandboxAsked: true, SandboxID: ""},
				} {
					o.Pod = pod
					want := deletion.Decide(pu, o)
					o.Pod = s
					if got := deletion.Decide(pu, o); got != want {
						t.Fatalf("Decide(%+v) on the slim pod: %v, on the full one: %v", pu, got, want)
					}
				}
			}
		}
		if PodsWithOwnNetwork(pod) != PodsWithOwnNetwork(s) {
			t.Fatalf("PodsWithOwnNetwork: %v on the full pod, %v on the slim one", PodsWithOwnNetwork(pod), PodsWithOwnNetwork(s))
		}
		changed := pod.DeepCopy()
		changed.ResourceVersion += "1"
		replaced := pod.DeepCopy()
		replaced.UID += "-new"
		full := [3]*corev1.Pod{pod, changed, replaced}
		slimmed := [3]*corev1.Pod{s, slim(t, changed), slim(t, replaced)}
		for _, c := range engines {
			if c.Classify(pod) != c.Classify(s) {
				t.Fatalf("Classify: %v on the full pod, %v on the slim one", c.Classify(pod), c.Classify(s))
			}
			for _, filter := range []func(*corev1.Pod) bool{nil, PodsWithOwnNetwork} {
				for _, ev := range handlerEvents {
					wantPUs, wantKeys := handlerCalls(c, filter, func(h *podHandler) { ev.call(h, full) })
					gotPUs, gotKeys := handlerCalls(c, filter, func(h *podHandler) { ev.call(h, slimmed) })
					if !reflect.DeepEqual(wantPUs, gotPUs) || !reflect.DeepEqual(wantKeys, gotKeys) {
						t.Fatalf("the handler's %s: tracks %v and triggers %v on full pods, %v and %v on slim ones", ev.name, wantPUs, wantKeys, gotPUs, gotKeys)
					}
				}
			}
		}
	})
}

// fuzzPod builds a pod with the fields given and, around them, the fields
// a real pod has that SlimPod drops.
func fuzzPod(name, ns, uid, node, phase string, hostNetwork, mirror, deleting bool,
	annKey, annVal, labelKey, labelVal string, containers int, rv string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, UID: types.UID(uid), ResourceVersion: rv, Generation: 1,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name + "-rs", UID: types.UID(uid + "-rs")}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
		Spec:   corev1.PodSpec{NodeName: node, HostNetwork: hostNetwork, ServiceAccountName: "default"},
		Status: corev1.PodStatus{Phase: corev1.PodPhase(phase), PodIP: "10.0.0.1", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if labelKey != "" {
		pod.Labels = map[string]string{labelKey: labelVal}
	}
	if annKey != "" {
		pod.Annotations = map[string]string{annKey: annVal}
	}
	if mirror {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[corev1.MirrorPodAnnotationKey] = annVal
	}
	if deleting {
		pod.DeletionTimestamp = &metav1.Time{Time: time.Unix(1_800_000_000, 0)}
	}
	for i := range containers {
		c := fmt.Sprintf("c%d", i)
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "registry.example/" + c + ":1",
			Env: []corev1.EnvVar{{Name: "N", Value: labelVal}}})
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: c, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: c, Ready: true})
	}
	return pod
}
