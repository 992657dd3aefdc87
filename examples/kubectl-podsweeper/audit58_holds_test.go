package main

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// explain.md:77-80: every replica asked a standby (the leader Failed, none leads yet): its leader is named on a line
// `Not asked:`, and the answer cannot tell; explain.md:75: a program's pod being deleted still runs, and is asked.
func TestAuditHoldsStandbyLeaderFailedAndDeletingAsked58(t *testing.T) {
	deleting := a57Pod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning)
	now := metav1.NewTime(a57Now)
	deleting.DeletionTimestamp = &now
	deleting.Finalizers = []string{"x"}
	c := a57Cluster(t, map[string]http.Handler{
		"podsweeper/agent-a":    a58Status(t, k8s.EngineRunning),
		"podsweeper/cc-standby": a58Status(t, k8s.EngineNotRunning),
	},
		a58AppPod("apps", "web", a58UID, "node-a"), deleting,
		a57Pod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-leader", "node-b", corev1.PodFailed),
		a57Pod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-standby", "node-b", corev1.PodRunning))
	x, err := c.explainPod(a57Ctx(t), "apps", "web", "", "", a57Now)
	if err != nil {
		t.Fatal(err)
	}
	txt, js := a57RenderPod(t, x)
	a58Has(t, "the text", txt, "node-agent podsweeper/agent-a (node node-a) holds no PU of this pod.")
	a58Has(t, "the text", txt, "(a standby: its engine does not run) holds no PU of this pod.")
	a58Has(t, "the text", txt, "Not asked: the leader of cluster-controller cc")
	a58Has(t, "the text", txt, "podsweeper cannot tell all it knows of this pod")
	a58HasNot(t, "the text", txt, "knows nothing")
	a58Has(t, "the JSON", js, `"standby": true`)
}

// explain.md:466-470: a port-forward the API server did not open (the kubelet unreachable) is "could not be asked",
// the others are asked all the same, and the answer cannot tell.
func TestAuditHoldsPortForwardFailureCannotTell58(t *testing.T) {
	c := a57Cluster(t, map[string]http.Handler{"podsweeper/cc-0": a58Status(t, k8s.EngineRunning)},
		a58AppPod("apps", "web", a58UID, "node-a"),
		a57Pod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning),
		a57Pod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-0", "node-b", corev1.PodRunning))
	x, err := c.explainPod(a57Ctx(t), "apps", "web", "", "", a57Now)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := a57RenderPod(t, x)
	a58Has(t, "the text", txt, "node-agent podsweeper/agent-a (node node-a) could not be asked: port-forward to pod podsweeper/agent-a")
	a58Has(t, "the text", txt, "cluster-controller podsweeper/cc-0 holds no PU of this pod.")
	a58Has(t, "the text", txt, "podsweeper cannot tell all it knows of this pod: 1 of 2 programs could not be asked")
}

// explain.md:95-99: explain ip's times are told from when each page began to answer, on cni-gc's clock (at, pusAt).
func TestAuditHoldsIPTimesOnCNIGCsClock58(t *testing.T) {
	skew := a57Now.Add(-time.Hour) // cni-gc's clock, an hour behind
	read := skew.Add(-12 * time.Second).Format(time.RFC3339)
	c := a57Cluster(t, map[string]http.Handler{
		"kube-system/cni-gc-a": a57Program(skew, "", map[string]a57Page{
			addressPath:    {200, `{"ip":"10.88.0.9","reservationsRead":"` + read + `","reservations":[{"network":"podnet","dataDir":"/var/lib/cni/networks","file":"/var/lib/cni/networks/podnet/10.88.0.9","containerID":"abc","ifName":"eth0","reserved":"` + read + `","decision":{"at":"` + read + `","row":14,"why":"w","verdict":"keep"},"state":"kept"}]}`},
			k8s.StatusPath: {200, "[]"},
		}),
	}, a57Pod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning))
	x, err := c.explainIP(a57Ctx(t), "10.88.0.9", "node-a", a57Now)
	if err != nil {
		t.Fatal(err)
	}
	txt, js := a57RenderIP(t, x)
	a58Has(t, "the text", txt, "reserved 12s ago")
	a58Has(t, "the text", txt, "as the sweep 12s ago decided")
	a58Has(t, "the JSON", js, `"at": "`+skew.Format(time.RFC3339)+`"`)
}

var _ = context.Background

// explain.md:455-457: `explain pod --uid UID --node NODE` that finds no PU and no Event of that UID names the other
// nodes' programs on a line `Not asked:`, and the answer cannot tell.
func TestAuditHoldsUIDWithNodeNamesOtherNodes58(t *testing.T) {
	c := a57Cluster(t, map[string]http.Handler{
		"podsweeper/agent-a": a58Status(t, k8s.EngineRunning),
		"podsweeper/agent-b": a58Status(t, k8s.EngineRunning, a58PU(a58UID, "apps/web")),
	},
		a57Pod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning),
		a57Pod("podsweeper-node-agent", "na", "podsweeper", "agent-b", "node-b", corev1.PodRunning))
	x, err := c.explainPod(a57Ctx(t), "", "", a58UID, "node-a", a57Now)
	if err != nil {
		t.Fatal(err)
	}
	txt, js := a57RenderPod(t, x)
	a58Has(t, "the text", txt, "Not asked: the programs of the nodes but node-a")
	a58Has(t, "the text", txt, "podsweeper cannot tell")
	a58Has(t, "the JSON", js, `"unasked"`)
}

// explain.md:8-14: a pod recreated on another node while its node's programs are asked is asked again there, and the
// earlier pod's PU an earlier round read and the last round did not is named on a line `Not asked:`.
func TestAuditHoldsRecreatedElsewhereAskedAgain58(t *testing.T) {
	var c *cluster
	agent := a58Once(a58Status(t, k8s.EngineRunning, a58PU(a58UID, "apps/web")), func() {
		cs := c.cs.(a57CS).Clientset
		ctx := context.Background()
		_ = cs.CoreV1().Pods("apps").Delete(ctx, "web", metav1.DeleteOptions{})
		_, _ = cs.CoreV1().Pods("apps").Create(ctx, a58AppPod("apps", "web", a58UID2, "node-b"), metav1.CreateOptions{})
	})
	c = a57Cluster(t, map[string]http.Handler{
		"podsweeper/agent-a": agent,
		"podsweeper/agent-b": a58Status(t, k8s.EngineRunning, a58PU(a58UID2, "apps/web")),
	},
		a58AppPod("apps", "web", a58UID, "node-a"),
		a57Pod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning),
		a57Pod("podsweeper-node-agent", "na", "podsweeper", "agent-b", "node-b", corev1.PodRunning))
	x, err := c.explainPod(a57Ctx(t), "apps", "web", "", "", a57Now)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := a57RenderPod(t, x)
	a58Has(t, "the text", txt, "they were asked again")
	a58Has(t, "the text", txt, "PU "+a58UID2+" of pod apps/web")
	a58Has(t, "the text", txt, "Not asked: PU "+a58UID+" of pod apps/web")
	a58Has(t, "the text", txt, "podsweeper cannot tell")
}

// explain.md:447-451: report names each program's pod that does not run on a line `Not asked:`, and says of a table
// with no row that a program was not asked, rather than that no dry run would destroy anything.
func TestAuditHoldsReportEmptyTableWithPendingProgram58(t *testing.T) {
	c := a57Cluster(t, map[string]http.Handler{
		"podsweeper/agent-a": a58DryRunAgent(t, `{"total":0,"reports":[]}`),
	},
		a57Pod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning, "--dry-run"),
		a57Pod("podsweeper-node-agent", "na", "podsweeper", "agent-b", "node-b", corev1.PodPending, "--dry-run"))
	r, err := c.report(a57Ctx(t), a57Now)
	if err != nil {
		t.Fatal(err)
	}
	var txt bytes.Buffer
	if err := RenderReport(&txt, r); err != nil {
		t.Fatal(err)
	}
	a58Has(t, "the text", txt.String(), "(none from the programs asked: a program could not be asked, or was not, below)")
	a58Has(t, "the text", txt.String(), "Not asked: node-agent podsweeper/agent-b on node node-b is Pending: not asked.")
	a58HasNot(t, "the text", txt.String(), "no dry run would destroy anything")
}

// explain.md:15-16 and :85-87: a static pod asked by name whose mirror pod is recreated (another UID, the same
// kubelet's UID) while its programs are asked: the PUs under the kubelet's UID and the mirror pod's are told, and the
// mirror pod's recreation is said in a Note.
func TestAuditHoldsStaticMirrorRecreatedWhileAsked58(t *testing.T) {
	const kubelet, mirror1, mirror2 = "9c3f5e2a1b7d4e6f8a0b2c4d6e8f0a1b", a58UID, a58UID2
	etcd := func(uid string) *corev1.Pod {
		p := a58AppPod("kube-system", "etcd-node-a", uid, "node-a")
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: kubelet}
		return p
	}
	var c *cluster
	agent := a58Once(a58Status(t, k8s.EngineRunning, a58PU(kubelet, "kube-system/etcd-node-a")), func() {
		cs := c.cs.(a57CS).Clientset
		ctx := context.Background()
		_ = cs.CoreV1().Pods("kube-system").Delete(ctx, "etcd-node-a", metav1.DeleteOptions{})
		_, _ = cs.CoreV1().Pods("kube-system").Create(ctx, etcd(mirror2), metav1.CreateOptions{})
	})
	c = a57Cluster(t, map[string]http.Handler{
		"podsweeper/agent-a": agent,
		"podsweeper/cc-0":    a58Status(t, k8s.EngineRunning, a58PU(mirror1, "kube-system/etcd-node-a")),
	},
		etcd(mirror1),
		a57Pod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning),
		a57Pod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-0", "node-b", corev1.PodRunning))
	x, err := c.explainPod(a57Ctx(t), "kube-system", "etcd-node-a", kubelet, "", a57Now)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := a57RenderPod(t, x)
	a58Has(t, "the text", txt, "PU "+kubelet+" of pod kube-system/etcd-node-a")
	a58Has(t, "the text", txt, "PU "+mirror1+" of pod kube-system/etcd-node-a")
	a58Has(t, "the text", txt, "was recreated while its programs were asked")
	a58Has(t, "the text", txt, "It is the mirror pod of a static pod, whose kubelet's UID is "+kubelet)
}
