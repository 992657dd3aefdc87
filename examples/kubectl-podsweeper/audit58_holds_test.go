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
	deleting := programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning)
	now := metav1.NewTime(clockNow)
	deleting.DeletionTimestamp = &now
	deleting.Finalizers = []string{"x"}
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a":    statusPage(t, k8s.EngineRunning),
		"podsweeper/cc-standby": statusPage(t, k8s.EngineNotRunning),
	},
		workloadPod("apps", "web", firstUID, "node-a"), deleting,
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-leader", "node-b", corev1.PodFailed),
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-standby", "node-b", corev1.PodRunning))
	x, err := c.explainPod(testContext(t), "apps", "web", "", "", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, js := podTextAndJSON(t, x)
	wantSays(t, "the text", txt, "node-agent podsweeper/agent-a (node node-a) holds no PU of this pod.")
	wantSays(t, "the text", txt, "(a standby: its engine does not run) holds no PU of this pod.")
	wantSays(t, "the text", txt, "Not asked: the leader of cluster-controller cc")
	wantSays(t, "the text", txt, "podsweeper cannot tell all it knows of this pod")
	wantNotSays(t, "the text", txt, "knows nothing")
	wantSays(t, "the JSON", js, `"standby": true`)
}

// explain.md:466-470: a port-forward the API server did not open (the kubelet unreachable) is "could not be asked",
// the others are asked all the same, and the answer cannot tell.
func TestAuditHoldsPortForwardFailureCannotTell58(t *testing.T) {
	c := clusterServing(t, map[string]http.Handler{"podsweeper/cc-0": statusPage(t, k8s.EngineRunning)},
		workloadPod("apps", "web", firstUID, "node-a"),
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning),
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-0", "node-b", corev1.PodRunning))
	x, err := c.explainPod(testContext(t), "apps", "web", "", "", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := podTextAndJSON(t, x)
	wantSays(t, "the text", txt, "node-agent podsweeper/agent-a (node node-a) could not be asked: port-forward to pod podsweeper/agent-a")
	wantSays(t, "the text", txt, "cluster-controller podsweeper/cc-0 holds no PU of this pod.")
	wantSays(t, "the text", txt, "podsweeper cannot tell all it knows of this pod: 1 of 2 programs could not be asked")
}

// explain.md:95-99: explain ip's times are told from when each page began to answer, on cni-gc's clock (at, pusAt).
func TestAuditHoldsIPTimesOnCNIGCsClock58(t *testing.T) {
	skew := clockNow.Add(-time.Hour) // cni-gc's clock, an hour behind
	read := skew.Add(-12 * time.Second).Format(time.RFC3339)
	c := clusterServing(t, map[string]http.Handler{
		"kube-system/cni-gc-a": servePages(skew, "", map[string]rawAnswer{
			addressPath:    {code: 200, body: `{"ip":"10.88.0.9","reservationsRead":"` + read + `","reservations":[{"network":"podnet","dataDir":"/var/lib/cni/networks","file":"/var/lib/cni/networks/podnet/10.88.0.9","containerID":"abc","ifName":"eth0","reserved":"` + read + `","decision":{"at":"` + read + `","row":14,"why":"w","verdict":"keep"},"state":"kept"}]}`},
			k8s.StatusPath: {code: 200, body: "[]"},
		}),
	}, programPod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning))
	x, err := c.explainIP(testContext(t), "10.88.0.9", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, js := ipTextAndJSON(t, x)
	wantSays(t, "the text", txt, "reserved 12s ago")
	wantSays(t, "the text", txt, "as the sweep 12s ago decided")
	wantSays(t, "the JSON", js, `"at": "`+skew.Format(time.RFC3339)+`"`)
}

var _ = context.Background

// explain.md:455-457: `explain pod --uid UID --node NODE` that finds no PU and no Event of that UID names the other
// nodes' programs on a line `Not asked:`, and the answer cannot tell.
func TestAuditHoldsUIDWithNodeNamesOtherNodes58(t *testing.T) {
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a": statusPage(t, k8s.EngineRunning),
		"podsweeper/agent-b": statusPage(t, k8s.EngineRunning, idlePU(firstUID, "apps/web")),
	},
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning),
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-b", "node-b", corev1.PodRunning))
	x, err := c.explainPod(testContext(t), "", "", firstUID, "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, js := podTextAndJSON(t, x)
	wantSays(t, "the text", txt, "Not asked: the programs of the nodes but node-a")
	wantSays(t, "the text", txt, "podsweeper cannot tell")
	wantSays(t, "the JSON", js, `"unasked"`)
}

// explain.md:8-14: a pod recreated on another node while its node's programs are asked is asked again there, and the
// earlier pod's PU an earlier round read and the last round did not is named on a line `Not asked:`.
func TestAuditHoldsRecreatedElsewhereAskedAgain58(t *testing.T) {
	var c *cluster
	agent := onFirstRequest(statusPage(t, k8s.EngineRunning, idlePU(firstUID, "apps/web")), func() {
		cs := c.cs.(hybridCS).Clientset
		ctx := context.Background()
		_ = cs.CoreV1().Pods("apps").Delete(ctx, "web", metav1.DeleteOptions{})
		_, _ = cs.CoreV1().Pods("apps").Create(ctx, workloadPod("apps", "web", secondUID, "node-b"), metav1.CreateOptions{})
	})
	c = clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a": agent,
		"podsweeper/agent-b": statusPage(t, k8s.EngineRunning, idlePU(secondUID, "apps/web")),
	},
		workloadPod("apps", "web", firstUID, "node-a"),
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning),
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-b", "node-b", corev1.PodRunning))
	x, err := c.explainPod(testContext(t), "apps", "web", "", "", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := podTextAndJSON(t, x)
	wantSays(t, "the text", txt, "they were asked again")
	wantSays(t, "the text", txt, "PU "+secondUID+" of pod apps/web")
	wantSays(t, "the text", txt, "Not asked: PU "+firstUID+" of pod apps/web")
	wantSays(t, "the text", txt, "podsweeper cannot tell")
}

// explain.md:447-451: report names each program's pod that does not run on a line `Not asked:`, and says of a table
// with no row that a program was not asked, rather than that no dry run would destroy anything.
func TestAuditHoldsReportEmptyTableWithPendingProgram58(t *testing.T) {
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a": dryRunAgent(t, `{"total":0,"reports":[]}`),
	},
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning, "--dry-run"),
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-b", "node-b", corev1.PodPending, "--dry-run"))
	r, err := c.report(testContext(t), clockNow)
	if err != nil {
		t.Fatal(err)
	}
	var txt bytes.Buffer
	if err := RenderReport(&txt, r); err != nil {
		t.Fatal(err)
	}
	wantSays(t, "the text", txt.String(), "(none from the programs asked: a program could not be asked, or was not, below)")
	wantSays(t, "the text", txt.String(), "Not asked: node-agent podsweeper/agent-b on node node-b is Pending: not asked.")
	wantNotSays(t, "the text", txt.String(), "no dry run would destroy anything")
}

// explain.md:15-16 and :85-87: a static pod asked by name whose mirror pod is recreated (another UID, the same
// kubelet's UID) while its programs are asked: the PUs under the kubelet's UID and the mirror pod's are told, and the
// mirror pod's recreation is said in a Note.
func TestAuditHoldsStaticMirrorRecreatedWhileAsked58(t *testing.T) {
	const kubelet, mirror1, mirror2 = "9c3f5e2a1b7d4e6f8a0b2c4d6e8f0a1b", firstUID, secondUID
	etcd := func(uid string) *corev1.Pod {
		p := workloadPod("kube-system", "etcd-node-a", uid, "node-a")
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: kubelet}
		return p
	}
	var c *cluster
	agent := onFirstRequest(statusPage(t, k8s.EngineRunning, idlePU(kubelet, "kube-system/etcd-node-a")), func() {
		cs := c.cs.(hybridCS).Clientset
		ctx := context.Background()
		_ = cs.CoreV1().Pods("kube-system").Delete(ctx, "etcd-node-a", metav1.DeleteOptions{})
		_, _ = cs.CoreV1().Pods("kube-system").Create(ctx, etcd(mirror2), metav1.CreateOptions{})
	})
	c = clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a": agent,
		"podsweeper/cc-0":    statusPage(t, k8s.EngineRunning, idlePU(mirror1, "kube-system/etcd-node-a")),
	},
		etcd(mirror1),
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning),
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-0", "node-b", corev1.PodRunning))
	x, err := c.explainPod(testContext(t), "kube-system", "etcd-node-a", kubelet, "", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := podTextAndJSON(t, x)
	wantSays(t, "the text", txt, "PU "+kubelet+" of pod kube-system/etcd-node-a")
	wantSays(t, "the text", txt, "PU "+mirror1+" of pod kube-system/etcd-node-a")
	wantSays(t, "the text", txt, "was recreated while its programs were asked")
	wantSays(t, "the text", txt, "It is the mirror pod of a static pod, whose kubelet's UID is "+kubelet)
}
