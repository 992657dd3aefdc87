package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/internal/testcontainerd"
	"github.com/podsweeper/podsweeper/internal/testdeploy"
)

// The controller as an operator installs it, on a real containerd node:
// its image (`make images`) imported into the node's containerd, its chart
// rendered by helm and applied through the API server, and the two
// replicas of its Deployment run by the kubelet, each in a network of its
// own, with its ServiceAccount's token, its RBAC (the Lease in its own
// namespace), the chart's claim of the shared PU directory (bound to a
// directory of the node, as a ReadWriteMany volume of the operator's would
// be) and its probes. The node has no kube-proxy: the chart's
// kubeAPI.host and kubeAPI.port point the pods at the node's address,
// which the node relays to the API server (see internal/testdeploy).
//
// Both replicas become Ready and one takes the Lease; as leader it
// registers a PU for a pod (its file in the shared directory) and destroys
// it once the pod is deleted, with a PUDestroyed Event; and when its pod
// is deleted, it releases the Lease and the other replica takes it.
func TestDeploymentFromTheChartTakesItsLease(t *testing.T) {
	e := testdeploy.Start(t, "node-cc", testcontainerd.Options{})
	img := e.ImportImage(t, "cluster-controller")
	const ns = "podsweeper-cluster"
	objs := testdeploy.Render(t, "chart", "podsweeper-cluster-controller", ns, e.Values(t, img))
	e.Apply(t, ns, objs)
	// The shared directory, owned by the controller's user as an NFS
	// export for it would be (a hostPath volume takes no fsGroup).
	pus := filepath.Join(e.Node.Dir, "pus")
	require.NoError(t, os.Mkdir(pus, 0o755))
	require.NoError(t, os.Chown(pus, 65532, 65532))
	e.BindClaim(t, ns, testdeploy.Named(t, objs, "PersistentVolumeClaim"), pus)

	created := time.Now()
	replicas := e.RunDeployment(t, ns, testdeploy.Named(t, objs, "Deployment"))
	require.Len(t, replicas, 2, "the chart's two replicas")
	for i, p := range replicas {
		replicas[i] = e.WaitReady(t, p)
		assert.NotEmpty(t, replicas[i].Status.PodIP, "a network of its own")
		assert.False(t, replicas[i].Spec.HostNetwork)
	}
	t.Logf("both replicas Ready %v after they were created", time.Since(created).Round(time.Millisecond))

	ctx := context.Background()
	leader := leaseHolder(t, e, ns, replicas, "")
	t.Logf("replica %s holds the Lease", leader.Name)

	// The leader's engine runs: a pod's PU is registered, and destroyed
	// once the pod is deleted.
	e.Cluster.CreateNamespace(t, "apps")
	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: testcontainerd.PauseImage}},
			AutomountServiceAccountToken: ptr.To(false)}}
	require.NoError(t, e.Cluster.Client.Create(ctx, web))
	file := filepath.Join(pus, string(web.UID))
	if !assert.Eventually(t, func() bool { _, err := os.Stat(file); return err == nil }, 60*time.Second, 50*time.Millisecond,
		"the leader registers the pod's PU in the shared directory") {
		t.Fatalf("the leader:\n%s", e.Describe(t, leader))
	}
	require.NoError(t, e.Cluster.Client.Delete(ctx, web))
	if !assert.Eventually(t, func() bool { _, err := os.Stat(file); return errors.Is(err, fs.ErrNotExist) }, 60*time.Second, 50*time.Millisecond,
		"the leader destroys the deleted pod's PU") {
		t.Fatalf("the leader:\n%s", e.Describe(t, leader))
	}
	require.Eventually(t, func() bool {
		evs, err := e.Cluster.Clientset.EventsV1().Events("apps").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, ev := range evs.Items {
			if ev.Reason == k8s.EventReasonDestroyed && ev.Regarding.UID == web.UID {
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "a %s Event regarding the pod", k8s.EventReasonDestroyed)

	// The leader's pod deleted: SIGTERM, the Lease released, the standby takes it.
	var standby *corev1.Pod
	for _, p := range replicas {
		if p.Name != leader.Name {
			standby = p
		}
	}
	deleted := time.Now()
	require.NoError(t, e.Cluster.Client.Delete(ctx, leader))
	next := leaseHolder(t, e, ns, []*corev1.Pod{standby}, leader.Name)
	t.Logf("replica %s took the Lease %v after the leader's pod was deleted", next.Name, time.Since(deleted).Round(time.Millisecond))
	for _, p := range []*corev1.Pod{standby} {
		got := &corev1.Pod{}
		require.NoError(t, e.Cluster.Client.Get(ctx, client.ObjectKeyFromObject(p), got))
		assert.Zero(t, got.Status.ContainerStatuses[0].RestartCount, "replica %s never restarted", p.Name)
	}
}

// leaseHolder waits until the chart's Lease in namespace is held by one of
// pods (its holder identity is the pod's hostname, its name, then "_" and a
// unique suffix), by none other and not by the pod named not, and returns
// that pod.
func leaseHolder(t *testing.T, e *testdeploy.Env, namespace string, pods []*corev1.Pod, not string) *corev1.Pod {
	t.Helper()
	var holder *corev1.Pod
	var last string
	require.Eventually(t, func() bool {
		lease := &coordinationv1.Lease{}
		if err := e.Cluster.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: defaultLeaderElectionID}, lease); err != nil {
			last = err.Error()
			return false
		}
		last = ptr.Deref(lease.Spec.HolderIdentity, "")
		for _, p := range pods {
			if p.Name != not && strings.HasPrefix(last, p.Name+"_") {
				holder = p
				return true
			}
		}
		return false
	}, 60*time.Second, 50*time.Millisecond, "one of the replicas takes the Lease (last seen: %q)", last)
	return holder
}
