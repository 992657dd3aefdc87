package testdeploy

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The stand-ins for the controllers envtest does not run: each makes what
// its controller would, from the objects the chart's render created, and
// leaves the rest to the API server (defaults, admission) and the kubelet.

// daemonTolerations are the tolerations the DaemonSet controller adds to
// every pod of a DaemonSet (k8s.io/kubernetes/pkg/controller/daemon/util,
// AddOrUpdateDaemonPodTolerations), the last one to a hostNetwork pod only.
var daemonTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// RunDaemonSet makes the pod of the DaemonSet namespace/name for the node
// and binds it there, as the DaemonSet controller and the scheduler would:
// the template's labels, annotations and spec, the controller's
// tolerations and its required node affinity for the node, the DaemonSet
// as its controlling owner; it fails the test if the template may not run
// on the node (its node selector, the node's taints). It returns the pod as
// created; WaitReady waits for the kubelet to run it.
func (e *Env) RunDaemonSet(t *testing.T, namespace, name string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	ds := &appsv1.DaemonSet{}
	require.NoError(t, e.Cluster.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, ds))
	pod := podOf(namespace, ds.Name, ds.Spec.Template)
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}
	pod.Labels["pod-template-generation"] = fmt.Sprint(ds.Generation)
	tolerations := daemonTolerations
	if !pod.Spec.HostNetwork {
		tolerations = tolerations[:len(tolerations)-1]
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, tolerations...)
	e.requireFits(t, pod)
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{e.Node.Name}}},
		}}},
	}
	return e.createAndBind(t, pod)
}

// RunDeployment makes the pods of the Deployment namespace/name (its
// replicas, one when it says none), all on the node, and binds them there,
// as its ReplicaSet and the scheduler would: the template's labels,
// annotations and spec; it fails the test if the template may not run on
// the node. It returns the pods as created.
func (e *Env) RunDeployment(t *testing.T, namespace, name string) []*corev1.Pod {
	t.Helper()
	d := &appsv1.Deployment{}
	require.NoError(t, e.Cluster.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, d))
	var pods []*corev1.Pod
	for range ptr.Deref(d.Spec.Replicas, 1) {
		pod := podOf(namespace, d.Name, d.Spec.Template)
		e.requireFits(t, pod)
		pods = append(pods, e.createAndBind(t, pod))
	}
	return pods
}

// podOf returns a pod of the template, named after its owner.
func podOf(namespace, owner string, tmpl corev1.PodTemplateSpec) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: owner + "-", Labels: map[string]string{},
			Annotations: tmpl.Annotations},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	for k, v := range tmpl.Labels {
		pod.Labels[k] = v
	}
	return pod
}

// requireFits fails the test unless pod may run on the node, as the
// scheduler's filters of the node's labels and taints decide: its node
// selector matches the node's labels, it tolerates every NoSchedule and
// NoExecute taint of the node, and it asks for no node affinity (which
// this stand-in does not evaluate).
func (e *Env) requireFits(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	node := &corev1.Node{}
	require.NoError(t, e.Cluster.Client.Get(context.Background(), client.ObjectKey{Name: e.Node.Name}, node))
	for k, v := range pod.Spec.NodeSelector {
		require.Equal(t, v, node.Labels[k], "the node selector %s=%s matches node %s", k, v, node.Name)
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		t.Fatalf("pod of %s asks for a node affinity, which the tests' scheduler does not evaluate: %+v", pod.GenerateName, a.NodeAffinity)
	}
	for _, taint := range node.Spec.Taints {
		if taint.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		tolerated := false
		for _, tol := range pod.Spec.Tolerations {
			if tol.ToleratesTaint(klog.Background(), &taint, true) {
				tolerated = true
			}
		}
		require.True(t, tolerated, "pod of %s tolerates the taint %s of node %s", pod.GenerateName, taint.ToString(), node.Name)
	}
}

// createAndBind creates pod, then binds it to the node through the pod's
// binding subresource, as the scheduler does.
func (e *Env) createAndBind(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, e.Cluster.Client.Create(ctx, pod), "creating a pod of %s", pod.GenerateName)
	require.NoError(t, e.Cluster.Clientset.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: e.Node.Name},
	}, metav1.CreateOptions{}), "binding pod %s/%s to node %s", pod.Namespace, pod.Name, e.Node.Name)
	return pod
}

// BindClaim binds the PersistentVolumeClaim namespace/name to a new
// hostPath PersistentVolume at path on the node (a directory the test
// made, of its own), as the PersistentVolume controller binds a claim to a
// volume that matches it: the volume's claim reference and phase, the
// claim's volume name and phase.
func (e *Env) BindClaim(t *testing.T, namespace, name, path string) {
	t.Helper()
	ctx := context.Background()
	pvc := &corev1.PersistentVolumeClaim{}
	require.NoError(t, e.Cluster.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pvc))
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + namespace + "-" + name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(1<<30, resource.BinarySI)},
			AccessModes:                   pvc.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              ptr.Deref(pvc.Spec.StorageClassName, ""),
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: path, Type: ptr.To(corev1.HostPathDirectory)},
			},
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: namespace, Name: name, UID: pvc.UID},
		},
	}
	if req, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		pv.Spec.Capacity[corev1.ResourceStorage] = req
	}
	require.NoError(t, e.Cluster.Client.Create(ctx, pv))
	pv.Status.Phase = corev1.VolumeBound
	require.NoError(t, e.Cluster.Client.Status().Update(ctx, pv))
	pvc.Spec.VolumeName = pv.Name
	require.NoError(t, e.Cluster.Client.Update(ctx, pvc))
	pvc.Status.Phase = corev1.ClaimBound
	pvc.Status.AccessModes = pvc.Spec.AccessModes
	pvc.Status.Capacity = pv.Spec.Capacity
	require.NoError(t, e.Cluster.Client.Status().Update(ctx, pvc))
}
