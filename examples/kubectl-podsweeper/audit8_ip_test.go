package main

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// explain ip: two cni-gc pods on the node (two releases): one Running, whose sweep read the reservations and which
// holds nothing of the address; the other in phase Unknown (its kubelet lost touch; it may run on, and holds its own
// latest frees). The answer says cni-gc knows nothing of the address, and names no cni-gc not asked.
func TestAuditYIPNamesCNIGCNotAsked(t *testing.T) {
	now := time.Now().UTC()
	read := now.Add(-10 * time.Second)
	a := programPod("podsweeper-cni-gc", "r", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning)
	b := programPod("podsweeper-cni-gc", "r", "kube-system", "cni-gc-b", "node-a", corev1.PodUnknown)
	b.Labels["app.kubernetes.io/instance"] = "other"
	e := newFakeCluster(t, a, b).closingAnswers().allowingReviews()
	e.handle("kube-system/cni-gc-a", &programPages{at: now, addresses: map[string]*AddressStatus{"10.88.0.9": {IP: "10.88.0.9", ReservationsRead: &read}}})
	x, err := e.cluster(5*time.Second).explainIP(testContext(t), "10.88.0.9", "node-a", now)
	if err != nil {
		t.Fatal(err)
	}
	text, js := ipTextAndJSON(t, x)
	if strings.Contains(text, "knows nothing") || !strings.Contains(text, "cni-gc-b") {
		t.Errorf("explain ip says cni-gc knows nothing of the address beside cni-gc kube-system/cni-gc-b (Unknown) of the node, not asked and not named:\n%s", text)
	}
	if !strings.Contains(js, "cni-gc-b") {
		t.Errorf("JSON names no cni-gc not asked either:\n%s", js)
	}
}

// explain ip: the first cni-gc of the node could not be asked (listener off), the second answers nothing: named on Not asked.
func TestAuditYHoldsIPNamesFirstCNIGCCouldNotBeAsked(t *testing.T) {
	now := time.Now().UTC()
	read := now.Add(-10 * time.Second)
	a := programPod("podsweeper-cni-gc", "r", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning, "--status-bind-address=0")
	b := programPod("podsweeper-cni-gc", "r", "kube-system", "cni-gc-b", "node-a", corev1.PodRunning)
	e := newFakeCluster(t, a, b).closingAnswers().allowingReviews()
	e.handle("kube-system/cni-gc-b", &programPages{at: now, addresses: map[string]*AddressStatus{"10.88.0.9": {IP: "10.88.0.9", ReservationsRead: &read}}})
	x, err := e.cluster(5*time.Second).explainIP(testContext(t), "10.88.0.9", "node-a", now)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := ipTextAndJSON(t, x)
	if strings.Contains(text, "knows nothing") || !strings.Contains(text, "Not asked: cni-gc kube-system/cni-gc-a") {
		t.Errorf("%s", text)
	}
}
