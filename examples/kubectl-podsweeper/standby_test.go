package main

// A program that stands by (a cluster controller that does not lead) holds no PU, and the answers say so.

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// explain.md:140-142 and its golden (explain-live.txt): "The controller's
// second replica, a standby, holds none." ... "cluster-controller
// podsweeper/podsweeper-cluster-controller-5d8f7-fghij holds no PU of this
// pod."; program/status.go:57-58: "It serves on every replica, leader or
// not, as the probes do: a standby's page says it holds no PU."
// The cluster controller's engine has an Inventory (its PU directory) and
// runs on the leader only (adapters/k8s: NeedLeaderElection): a standby's
// engine is never started, so its Inventory is never listed. Its real
// status page, on the real handler, then answers 503 for as long as it is
// a standby, and the plugin says it could not be asked.
func TestStandbyHoldsNoPU(t *testing.T) {
	now := time.Now().UTC()
	inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) { return nil, nil })
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound })
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	standby, err := deletion.New(getter, policy, deletion.Options{Inventory: inv})
	if err != nil {
		t.Fatal(err)
	}
	api := newFakeCluster(t,
		podsweeperProgram("cluster-controller", "podsweeper", "cc-standby", "node-b"),
		workloadPod("apps", "web", "web-uid", "node-a"))
	mux := http.NewServeMux()
	mux.Handle(k8s.StatusPath, k8s.NewStatusHandler(standby)) // not started: a standby's
	api.handle("podsweeper/cc-standby", mux)
	c := api.cluster(5 * time.Second)
	x, err := c.explainPod(context.Background(), "apps", "web", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "cluster-controller podsweeper/cc-standby (a standby: its engine does not run) holds no PU of this pod.") {
		t.Fatalf("the cluster controller's standby (its engine not started, as on every standby) is not told as holding no PU:\n%s", out)
	}
}

// explain.md:77-80: "A standby cluster controller, whose engine does not run, holds no PU, and says so (`(a standby:
// its engine does not run)`, `standby` in JSON)". A cluster controller whose engine does not run (its Start has
// returned: k8s.EngineHeader) still serves its dry run's report, which holds a report of the pod from when it led:
// JSON says standby; does the text?
func TestStandbyWithReportToldInText(t *testing.T) {
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

// explain.md:77-80: every replica asked a standby (the leader Failed, none leads yet): its leader is named on a line
// `Not asked:`, and the answer cannot tell; explain.md:75: a program's pod being deleted still runs, and is asked.
func TestStandbyLeaderFailedAndDeletingAsked(t *testing.T) {
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
