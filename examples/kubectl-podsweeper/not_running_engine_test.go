package main

// What a program whose engine does not check (not started yet, or ended with a check left behind) holds is told as it
// is: a node's program not started has not listed what it held before, and a check left behind still runs.

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// statusMux serves eng's status page.
func statusMux(eng *deletion.Engine) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle(k8s.StatusPath, k8s.NewStatusHandler(eng))
	return mux
}

// explain.md: a node's program whose engine has not started yet "has not listed its Inventory either, so the answer
// cannot tell all". A node agent just restarted, its engine not started (its page answers 200, "not running", no
// PU), while its Inventory holds the PU of a pod that is gone since: explain pod of that pod cannot tell all, and does
// not say that podsweeper knows nothing of it.
func TestANodeProgramNotStartedCannotTellWhatItHeldBefore(t *testing.T) {
	gone := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound })
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) {
		return []ports.PU{{PUID: firstUID, Pod: types.NamespacedName{Namespace: "apps", Name: "web"}, SandboxID: "sb-1"}}, nil
	})
	eng, err := deletion.New(gone, policy, deletion.Options{NodeName: "node-a", Inventory: inv})
	if err != nil {
		t.Fatal(err)
	}
	api := newFakeCluster(t, runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"))
	api.handle("podsweeper/agent-a", statusMux(eng))
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "node-a", time.Now().UTC())
	if err != nil {
		t.Fatal(err)
	}
	text, js := podTextAndJSON(t, x)
	wantSays(t, "explain pod", text, "(its engine has not started: no check runs yet)")
	wantSays(t, "explain pod", text, "cannot tell all it knows of this pod: a program whose engine has not started")
	wantNotSays(t, "explain pod", text, "knows nothing")
	wantSays(t, "the JSON", js, `"standby": true`)
}

// stuckGetter is a PodGetter whose reads block, whatever their context, until release is closed.
type stuckGetter struct {
	release chan struct{}
	once    sync.Once
}

func (g *stuckGetter) GetPod(context.Context, types.NamespacedName) (*corev1.Pod, error) {
	<-g.release
	return nil, ports.ErrPodNotFound
}

func (g *stuckGetter) unblock() { g.once.Do(func() { close(g.release) }) }

// k8s.EngineHeader: no check runs on the PUs an ended engine lists; but a check Start left behind (stuck in a port
// that ignores its context, past Options.ShutdownTimeout) still runs, and may end in a destroy. Its PU, "checking" on
// the page of an engine that ended, is told with its check under way, not as one no check runs on, by explain pod and
// status alike.
func TestACheckAnEndedEngineLeftBehindIsToldUnderWay(t *testing.T) {
	getter := &stuckGetter{release: make(chan struct{})}
	defer getter.unblock()
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	eng, err := deletion.New(getter, policy, deletion.Options{NodeName: "node-a", ShutdownTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() { _ = eng.Start(ctx); close(returned) }()
	key := types.NamespacedName{Namespace: "apps", Name: "web"}
	if err := eng.Track(ports.PU{PUID: firstUID, Pod: key, SandboxID: "sb-1"}); err != nil {
		t.Fatal(err)
	}
	eng.TriggerPod(key)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if st := eng.Status(); len(st) == 1 && st[0].State == "checking" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the PU's check never began: %+v", eng.Status())
		}
	}
	cancel()
	<-returned // past its ShutdownTimeout, the check left behind
	api := newFakeCluster(t, runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"))
	api.handle("podsweeper/agent-a", statusMux(eng))
	c := api.cluster(5 * time.Second)
	x, err := c.explainPod(testContext(t), "apps", "web", "", "node-a", time.Now().UTC())
	if err != nil {
		t.Fatal(err)
	}
	text, _ := podTextAndJSON(t, x)
	status := statusText(t, c, "node-a", time.Now().UTC())
	wantSays(t, "status", status, "checking (its engine has ended; a check it left behind is still under way)")
	wantNotSays(t, "status", status, "no check runs")
	if len(x.Answers) != 1 || !x.Answers[0].Ended || len(x.Answers[0].PUs) != 1 || x.Answers[0].PUs[0].State != "checking" {
		t.Fatalf("scenario: want the ended engine's page with its PU checking:\n%s", text)
	}
	wantSays(t, "explain pod", text, "a check it began of it, left behind, is still under way (checking)")
	wantNotSays(t, "explain pod", text, "held, and no check runs on it")
}

// explain.md: a node's program whose engine has not started says so, and its PUs are told. cni-gc not started,
// holding the PU of the pod whose attachment holds the address (tracked before Start): explain ip tells that no check
// runs yet on it, and not that cni-gc holds no PU.
func TestExplainIPOfACNIGCNotStartedTellsItsPU(t *testing.T) {
	text, _ := explainIPOfCNIGC(t, k8s.EngineNotRunning)
	wantSays(t, "explain ip", text, "its engine has not started")
	wantSays(t, "explain ip", text, "held, and no check runs on it yet: its engine has not started")
	wantNotSays(t, "explain ip", text, "holds no PU")
}

// explain.md: the answer cannot tell when "none of that program's release runs on that node while it runs on others",
// named on a line `Not asked:`. Two releases of the node agent: a's runs on node n, b's on nodes x and y only; b's,
// missing on n, is named, and the answer of a pod of n does not know nothing.
func TestAReleaseMissingOnTheNodeBesideAnotherIsNotAsked(t *testing.T) {
	api := newFakeCluster(t,
		programPod("podsweeper-node-agent", "a", "ns-a", "agent-a-n", "n", corev1.PodRunning, "--status-bind-address=0"),
		programPod("podsweeper-node-agent", "b", "ns-b", "agent-b-x", "x", corev1.PodRunning, "--status-bind-address=0"),
		programPod("podsweeper-node-agent", "b", "ns-b", "agent-b-y", "y", corev1.PodRunning, "--status-bind-address=0"),
		workloadPod("apps", "web", firstUID, "n"))
	c := api.cluster(5 * time.Second)
	x, err := c.explainPod(testContext(t), "apps", "web", "", "", time.Now().UTC())
	if err != nil {
		t.Fatal(err)
	}
	text, _ := podTextAndJSON(t, x)
	wantSays(t, "explain pod", text, "Not asked: no node-agent of release ns-b/b runs on node n (it runs on other nodes)")
	wantNotSays(t, "explain pod", text, "knows nothing")
	wantNotSays(t, "explain pod", text, "release ns-a/a")
	s, err := c.status(testContext(t), "n", time.Now().UTC())
	if err != nil {
		t.Fatal(err)
	}
	var named bool
	for _, u := range s.Unasked {
		named = named || u == "no node-agent of release ns-b/b runs on node n (it runs on other nodes): what one there would hold is not told"
	}
	if !named {
		t.Errorf("status --node n does not name release b's node agent missing on n: %q", s.Unasked)
	}
}

// The same when the other release's pod on the node does not run (Pending): it is named not asked, and the missing
// release is named by its release.
func TestAReleaseMissingOnTheNodeBesideAnotherNotRunningIsNamedByItsRelease(t *testing.T) {
	api := newFakeCluster(t,
		programPod("podsweeper-node-agent", "a", "ns-a", "agent-a-n", "n", corev1.PodPending, "--status-bind-address=0"),
		programPod("podsweeper-node-agent", "b", "ns-b", "agent-b-x", "x", corev1.PodRunning, "--status-bind-address=0"),
		workloadPod("apps", "web", firstUID, "n"))
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", time.Now().UTC())
	if err != nil {
		t.Fatal(err)
	}
	text, _ := podTextAndJSON(t, x)
	wantSays(t, "explain pod", text, "no node-agent of release ns-b/b runs on node n (it runs on other nodes)")
}

// explain.md: an ended engine's PUs are told held "but for a check it began and left behind ..., told still under
// way"; so is a dry run's retry whose check was left behind: its dry-run line does not say that no check runs.
func TestADryRunRetryLeftBehindByAnEndedEngineIsToldUnderWay(t *testing.T) {
	checked := clockNow.Add(-2 * time.Second)
	pu := k8s.PUStatus{PUID: firstUID, Pod: "apps/web", State: "checking", Age: "1m0s", LastChecked: &checked, LastRow: 1,
		Why: "pod not found", Attempts: 1}
	api := newFakeCluster(t, runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", "--dry-run"))
	api.handle("podsweeper/agent-a", servePages(clockNow, k8s.EngineEnded, map[string]rawAnswer{
		k8s.StatusPath: {code: 200, body: mustJSON(t, []k8s.PUStatus{pu})},
		k8s.DryRunPath: {code: 200, body: `{"total":0,"reports":[]}`},
	}))
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	text := podText(t, x)
	wantSays(t, "explain pod", text, "a check it began of it, left behind, is still under way")
	wantSays(t, "explain pod", text, "the check of its retry it left behind is still under way")
	wantNotSays(t, "explain pod", text, "no check runs now")
}

// explain.md: a node's program whose engine has not started "has not listed its Inventory either (the PUs it held
// before it started), so the answer cannot tell all": status --node of a node agent just restarted, its page empty,
// says so rather than only that it holds no PU; one whose engine runs does not.
func TestStatusOfANodeProgramNotStartedCannotTellAll(t *testing.T) {
	for _, engine := range []string{k8s.EngineNotRunning, k8s.EngineRunning} {
		api := newFakeCluster(t, runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"))
		api.handle("podsweeper/agent-a", &programPages{at: clockNow, engine: engine, pus: []k8s.PUStatus{}})
		out := statusText(t, api.cluster(5*time.Second), "node-a", clockNow)
		const cannot = "podsweeper cannot tell all the PUs of node node-a: node-agent podsweeper/agent-a has not listed the PUs it held before it started"
		if engine == k8s.EngineNotRunning {
			wantSays(t, "status", out, "holds no PU (its engine has not started: no check runs yet)")
			wantSays(t, "status", out, cannot)
		} else {
			wantNotSays(t, "status", out, "cannot tell all")
		}
	}
}
