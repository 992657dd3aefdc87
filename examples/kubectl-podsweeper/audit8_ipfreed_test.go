package main

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// explain ip of an address cni-gc freed lately (the attachment of pod apps/web, gone), while cni-gc still holds the
// pod's PU (its destroy failed on its other network: waiting for a retry). The JSON tells that PU (pus); the text,
// made from it, tells the pod of the free and not the PU.
func TestAuditYIPTextTellsFreedPodsPU(t *testing.T) {
	now := time.Now().UTC()
	read := now.Add(-10 * time.Second)
	checked := now.Add(-5 * time.Second)
	next := now.Add(8 * time.Second)
	a := programPod("podsweeper-cni-gc", "r", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning)
	e := newFakeCluster(t, a).closingAnswers().allowingReviews()
	e.handle("kube-system/cni-gc-a", &programPages{at: now,
		addresses: map[string]*AddressStatus{"10.88.0.9": {IP: "10.88.0.9", ReservationsRead: &read, Freed: []FreedAddress{{
			At: now.Add(-20 * time.Second), Network: "podnet", ContainerID: "3a9f0c1b2d4e5f", IfName: "eth0",
			PodNamespace: "apps", PodName: "web", PodUID: "uid-web",
			Decision: FreeDecision{At: now.Add(-20 * time.Second), Reason: "PodGone", Row: 3, Why: "sandbox gone", Verdict: "free"}}}}},
		pus: []k8s.PUStatus{{PUID: "uid-web", Pod: "apps/web", State: "waiting for a retry", Age: "5m", LastChecked: &checked,
			LastRow: 1, Why: "pod not found", Attempts: 2, NextAttempt: &next, LastError: "cni: DEL of network other failed"}}})
	x, err := e.cluster(5*time.Second).explainIP(testContext(t), "10.88.0.9", "node-a", now)
	if err != nil {
		t.Fatal(err)
	}
	text, js := ipTextAndJSON(t, x)
	if !strings.Contains(js, `"puID": "uid-web"`) {
		t.Fatalf("JSON does not tell the PU:\n%s", js)
	}
	if !strings.Contains(text, "waiting for a retry") && !strings.Contains(text, "PU ") {
		t.Errorf("JSON tells cni-gc's PU uid-web of the pod of the free (waiting for a retry, 2 attempts); the text does not:\n%s", text)
	}
}
