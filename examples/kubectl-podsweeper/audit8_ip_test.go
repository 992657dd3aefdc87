package main

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func ayIPText(t *testing.T, x *IPExplanation) (string, string) {
	var b, j strings.Builder
	if err := RenderIP(&b, x); err != nil {
		t.Fatal(err)
	}
	_ = RenderIPJSON(&j, x)
	return b.String(), j.String()
}

// explain ip: two cni-gc pods on the node (two releases): one Running, whose sweep read the reservations and which
// holds nothing of the address; the other in phase Unknown (its kubelet lost touch; it may run on, and holds its own
// latest frees). The answer says cni-gc knows nothing of the address, and names no cni-gc not asked.
func TestAuditYIPNamesCNIGCNotAsked(t *testing.T) {
	now := time.Now().UTC()
	read := now.Add(-10 * time.Second)
	a := ayProgPod("cni-gc", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning)
	b := ayProgPod("cni-gc", "kube-system", "cni-gc-b", "node-a", corev1.PodUnknown)
	b.Labels["app.kubernetes.io/instance"] = "other"
	e := newAYEnv(t, a, b)
	e.page("kube-system", "cni-gc-a", &ayPages{at: now, address: &AddressStatus{IP: "10.88.0.9", ReservationsRead: &read}})
	x, err := e.cluster().explainIP(ayCtx, "10.88.0.9", "node-a", now)
	if err != nil {
		t.Fatal(err)
	}
	text, js := ayIPText(t, x)
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
	a := ayProgPod("cni-gc", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning, "--status-bind-address=0")
	b := ayProgPod("cni-gc", "kube-system", "cni-gc-b", "node-a", corev1.PodRunning)
	e := newAYEnv(t, a, b)
	e.page("kube-system", "cni-gc-b", &ayPages{at: now, address: &AddressStatus{IP: "10.88.0.9", ReservationsRead: &read}})
	x, err := e.cluster().explainIP(ayCtx, "10.88.0.9", "node-a", now)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := ayIPText(t, x)
	if strings.Contains(text, "knows nothing") || !strings.Contains(text, "Not asked: cni-gc kube-system/cni-gc-a") {
		t.Errorf("%s", text)
	}
}
