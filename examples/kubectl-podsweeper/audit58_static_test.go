package main

import (
	"fmt"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// docs/operating/explain.md:16-20: "By a UID alone, the pod is found among the pods the programs hold PUs of, 32 read
// at most: those held under a kubelet's UID (a hash, not a UUID) first, then those named after a node asked, then
// kube-system's, then the others". The static pod kube-system/etcd-node-a is asked by its mirror pod's UID: the node
// agent holds it under its kubelet's UID (a hash), the cluster controller under its earlier mirror pod's UID (a UUID:
// the mirror pod was recreated). 33 other static pods are held by the node agent under kubelet UIDs. The pod held
// under a kubelet's UID is not read among the first: the cluster controller's PU, read first, ranks it as a pod named
// after a node, behind the 33, so that it is left unread and the answer cannot tell what it could have.
func TestAuditStaticPodKubeletUIDReadFirst58(t *testing.T) {
	const (
		kubelet = "9c3f5e2a1b7d4e6f8a0b2c4d6e8f0a1b" // a static pod's kubelet UID: a hash
		mirror  = "41aa07c9-55e2-4d3c-a0f1-2b8c6e9d7f10"
		mirror0 = "2b8c6e9d-55e2-4d3c-a0f1-41aa07c97f10" // the earlier mirror pod's
	)
	agentPUs := []k8s.PUStatus{idlePU(kubelet, "kube-system/etcd-node-a")}
	for i := range 33 {
		agentPUs = append(agentPUs, idlePU(fmt.Sprintf("%032x", i+1), fmt.Sprintf("infra/static-%02d-node-x", i)))
	}
	etcd := workloadPod("kube-system", "etcd-node-a", mirror, "node-a")
	etcd.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: kubelet}
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a": statusPage(t, k8s.EngineRunning, agentPUs...),
		"podsweeper/cc-0":    statusPage(t, k8s.EngineRunning, idlePU(mirror0, "kube-system/etcd-node-a")),
	},
		etcd,
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning),
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-0", "node-b", corev1.PodRunning))
	x, err := c.explainPod(testContext(t), "", "", mirror, "", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := podTextAndJSON(t, x)
	if x.Pod == nil || x.Name != "etcd-node-a" {
		t.Errorf("the static pod held under a kubelet's UID was not found among the first read:\n%s", txt)
	}
}
