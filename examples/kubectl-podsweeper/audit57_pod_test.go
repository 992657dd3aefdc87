package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// explain.md:33-34: "`--timeout` (20s) bounds each program's question, from the port-forward's upgrade on: a
// program not answered by then `could not be asked`"; and the first promise: the answer then cannot tell. The
// node agent of the pod's node never finishes its status page.
func TestAuditHoldsHangingPageCannotTell(t *testing.T) {
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	hang := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block })
	c := clusterServing(t, map[string]http.Handler{"podsweeper/na-a": hang},
		programPod("podsweeper-node-agent", "na", "podsweeper", "na-a", "node-a", corev1.PodRunning),
		workloadPod("apps", "web", firstUID, "node-a"),
	)
	c.timeout = time.Second
	x, err := c.explainPod(testContext(t), "apps", "web", "", "", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := podTextAndJSON(t, x)
	if !strings.Contains(txt, "could not be asked") || !strings.Contains(txt, "cannot tell") || strings.Contains(txt, "knows nothing") {
		t.Errorf("a hanging page:\n%s", txt)
	}
}

// explain.md:77-80: "A standby cluster controller, whose engine does not run, holds no PU, and says so (`(a standby:
// its engine does not run)`, `standby` in JSON)". A cluster controller whose engine does not run (its Start has
// returned: k8s.EngineHeader) still serves its dry run's report, which holds a report of the pod from when it led:
// JSON says standby; does the text?
func TestAuditStandbyWithReportToldInText(t *testing.T) {
	at := clockNow
	standbyPages := map[string]rawAnswer{
		k8s.StatusPath: {code: http.StatusOK, body: `[]`},
		k8s.DryRunPath: {code: http.StatusOK, body: `{"total":1,"reports":[{"at":"2026-12-06T11:59:00Z","puID":"` + firstUID +
			`","pod":"apps/web","reason":"PodGone","row":1,"why":"pod not found"}]}`},
	}
	leaderPages := map[string]rawAnswer{
		k8s.StatusPath: {code: http.StatusOK, body: `[]`},
		k8s.DryRunPath: {code: http.StatusOK, body: `{"total":0,"reports":[]}`},
	}
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/cc-1": servePages(at, k8s.EngineNotRunning, standbyPages),
		"podsweeper/cc-2": servePages(at, k8s.EngineRunning, leaderPages),
	},
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-1", "node-x", corev1.PodRunning, "--dry-run"),
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-2", "node-y", corev1.PodRunning, "--dry-run"),
	)
	x, err := c.explainPod(testContext(t), "apps", "web", "", "", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, js := podTextAndJSON(t, x)
	if !strings.Contains(js, `"standby": true`) {
		t.Fatalf("JSON says no standby:\n%s", js)
	}
	if !strings.Contains(txt, "standby") {
		t.Errorf("JSON says cc-1 is a standby (its engine does not run, it holds no PU); the text says not:\n%s", txt)
	}
}

// explain.md:15-16, 85-87: "A static pod is one pod under its two UIDs (the kubelet's, and its mirror pod's in the
// API server)"; "A static pod is known by its kubelet's UID too (its mirror pod's `kubernetes.io/config.mirror`), as
// its PUs and libcni's cache know it." And the brief: every line of text says what the JSON says. Asked by name, a
// static pod's JSON says its kubelet UID (pod.staticUID); the text never says it: a reader of the text cannot tell
// that a PU under that UID would be this pod's.
func TestAuditStaticUIDToldInText(t *testing.T) {
	const kubeletUID = "8d3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b"
	mirror := workloadPod("kube-system", "etcd-node-a", firstUID, "node-a")
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: kubeletUID}
	prog := servePages(clockNow, k8s.EngineRunning, map[string]rawAnswer{k8s.StatusPath: {code: http.StatusOK, body: `[]`}})
	c := clusterServing(t, map[string]http.Handler{"podsweeper/na-a": prog},
		programPod("podsweeper-node-agent", "na", "podsweeper", "na-a", "node-a", corev1.PodRunning),
		mirror,
	)
	x, err := c.explainPod(testContext(t), "kube-system", "etcd-node-a", "", "", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, js := podTextAndJSON(t, x)
	if !strings.Contains(js, `"staticUID": "`+kubeletUID+`"`) {
		t.Fatalf("JSON says no staticUID:\n%s", js)
	}
	if !strings.Contains(txt, kubeletUID) {
		t.Errorf("JSON says the pod's kubelet UID is %s (pod.staticUID); the text says nothing of it:\n%s", kubeletUID, txt)
	}
}
