package main

// The plugin's answers from programs that run podsweeper's own deletion engine.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// explain.md:8-9 ("a PU is in the answer until it is destroyed") and 55-56
// (it says it cannot tell, rather than that podsweeper knows nothing): a
// node agent restarted (Running, its status page served) whose journal still
// holds the PU of apps/web, to destroy, while the engine's first list of it
// is not in yet. The real engine's real status page answers [].
func TestKnowsNothingBeforeJournalRestored(t *testing.T) {
	j := lateJournal{release: make(chan struct{})}
	defer close(j.release)
	eng := startEngine(t, goneGetter{}, noopPolicy{}, deletion.Options{Inventory: j, NodeName: "node-a"}, 300*time.Millisecond)

	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"))
	out := explainFromEngine(t, e, "podsweeper/agent-a", eng, nil, "apps", "web", "node-a")
	if strings.Contains(out, "podsweeper knows nothing of this pod") {
		t.Errorf("the node agent's journal holds PU uid-web of apps/web, to be destroyed once its first list is in; the plugin says podsweeper knows nothing of the pod")
	}
}

// explain.md:152-167 with the real engine and its real pages: a pod deleted
// under a dry run: its PU, dropped, is told no longer held from the report.
func TestDeletedUnderDryRunWithTheRealEngine(t *testing.T) {
	report := k8s.NewDryRunReport(0)
	eng := startEngine(t, goneGetter{}, noopPolicy{}, deletion.Options{NodeName: "node-a", DryRun: true, Observer: report, SweepInterval: 100 * time.Millisecond}, 100*time.Millisecond)
	track(t, eng, ports.PU{PUID: "uid-web", Pod: types.NamespacedName{Namespace: "apps", Name: "web"}, SandboxID: "3a9f0c1b2d4e5"})
	waitFor(t, func() bool { kept, _ := report.Reports(); return len(kept) > 0 && len(eng.Status()) == 0 }, func() string { return "no report" })
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a", "--dry-run"))
	out := explainFromEngine(t, e, "podsweeper/agent-a", eng, report, "apps", "web", "")
	if !strings.Contains(out, "PU uid-web of pod apps/web, sandbox 3a9f0c1b2d4e5: no longer held (its pod is gone for good).") ||
		!strings.Contains(out, "would have destroyed it, PodGone: row 1 of the decision table") {
		t.Error("not told")
	}
}

// explain.md: "a PU is in the answer until it is destroyed, and the destroy's Event after". A dry run whose dry run
// of a gone pod's destroy fails for good gives up on the PU, which leaves the status page, and records no Event: its
// report tells it gave up, in explain pod, status and report; podsweeper never "knows nothing" of the pod.
func TestADryRunThatGivesUpOnAPUTellsIt(t *testing.T) {
	report := k8s.NewDryRunReport(0)
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	dry := dryRunnerFunc(func(context.Context, ports.DestroyEvent) error {
		return ports.Permanent(errors.New("the policy engine refuses to destroy it"))
	})
	eng := startEngine(t, goneGetter{}, struct {
		ports.PolicyHandler
		ports.DryRunner
	}{policy, dry}, deletion.Options{NodeName: "node-a", DryRun: true, Observer: report, SweepInterval: 100 * time.Millisecond}, 100*time.Millisecond)
	track(t, eng, ports.PU{PUID: "uid-web", Pod: types.NamespacedName{Namespace: "apps", Name: "web"}, SandboxID: "3a9f0c1b2d4e5"})
	waitFor(t, func() bool { kept, _ := report.Reports(); return len(kept) > 0 && len(eng.Status()) == 0 }, func() string { return "no report" })
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a", "--dry-run"))
	out := explainFromEngine(t, e, "podsweeper/agent-a", eng, report, "apps", "web", "")
	wantNotSays(t, "explain pod", out, "knows nothing")
	wantSays(t, "explain pod", out, "PU uid-web of pod apps/web, sandbox 3a9f0c1b2d4e5: no longer held (its dry run gave up on it).")
	wantSays(t, "explain pod", out, "gave up on destroying it, PodGone: its dry run of the destroy failed for good: permanent: the policy engine refuses to destroy it")
	wantSays(t, "report", reportText(t, e.c, time.Now()), "no: gave up")
}

// explain.md:191-211 with the real engine and page: a PU waiting for a retry:
// its state, its failed calls, its next, its last error.
func TestRetryWithTheRealEngine(t *testing.T) {
	eng := startEngine(t, goneGetter{}, failingPolicy{}, deletion.Options{SweepInterval: 100 * time.Millisecond}, 100*time.Millisecond)
	track(t, eng, ports.PU{PUID: "uid-db", Pod: types.NamespacedName{Namespace: "apps", Name: "db"}})
	waitFor(t, func() bool {
		st := eng.Status()
		return len(st) == 1 && st[0].Attempts >= 2 && st[0].State == "waiting for a retry"
	},
		func() string { return fmt.Sprintf("status %+v", eng.Status()) })
	e := newFakeCluster(t, podsweeperProgram("cluster-controller", "podsweeper", "cc-1", ""))
	out := explainFromEngine(t, e, "podsweeper/cc-1", eng, nil, "apps", "db", "")
	if !strings.Contains(out, "its destroy failed: waiting for a retry.") || !strings.Contains(out, "destroy call(s) failed; next ") ||
		!strings.Contains(out, "row 1 of the decision table, pod not found") || !strings.Contains(out, "directory not empty") {
		t.Error("retry not told")
	}
}

// explain.md:3-6 ("a veto of the confirming read") and adapters/k8s
// status.go:23-26 (Vetoed: the Confirmer overrode a destroy the cache's
// answer decided, or the SandboxConfirmer a sandbox change the
// SandboxExtractor's list decided). The real engine's veto here is the
// runtime's (SandboxConfirmer) of a sandbox change its list decided; the
// plugin says the API server's confirming read overrode a destroy the cache
// decided.
func TestVetoToldAsTheAPIServers(t *testing.T) {
	eng := startEngine(t, livePodGetter{}, noopPolicy{}, deletion.Options{NodeName: "node-a", SweepInterval: 100 * time.Millisecond,
		SandboxExtractor: newSandboxLister{}, SandboxConfirmer: oldSandboxRuntime{}}, 100*time.Millisecond)
	track(t, eng, ports.PU{PUID: "uid-web", Pod: types.NamespacedName{Namespace: "apps", Name: "web"}, SandboxID: "old"})
	waitFor(t, func() bool { st := eng.Status(); return len(st) == 1 && st[0].Vetoed }, func() string { return fmt.Sprintf("no veto: %+v", eng.Status()) })
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"), workloadPod("apps", "web", "uid-web", "node-a"))
	out := explainFromEngine(t, e, "podsweeper/agent-a", eng, nil, "apps", "web", "")
	if strings.Contains(out, "the confirming read of the API server overrode the destroy the cache decided") {
		t.Errorf("the veto is the runtime's read (SandboxConfirmer) overriding a sandbox change its list decided; the plugin tells it as the API server's read overriding a destroy the cache decided")
	}
}

// explain.md:3-7 ("what a dry run would do"): the real engine's dry run
// reported SandboxDead once, and its last check since keeps the PU (row 8):
// the status page's wouldDestroy is the reason it reported last. The plugin
// says, in the present, that the dry run would destroy it, beside a last
// check that keeps it.
func TestDryRunWouldDestroyAfterAKeep(t *testing.T) {
	report := k8s.NewDryRunReport(0)
	var calls atomic.Int32
	eng := startEngine(t, livePodGetter{}, noopPolicy{}, deletion.Options{NodeName: "node-a", DryRun: true, Observer: report,
		SweepInterval: 100 * time.Millisecond, SandboxExtractor: noSandbox{}, SandboxProber: flakyProber{&calls}}, 100*time.Millisecond)
	track(t, eng, ports.PU{PUID: "uid-web", Pod: types.NamespacedName{Namespace: "apps", Name: "web"}, SandboxID: "old"})
	waitFor(t, func() bool {
		st := eng.Status()
		return len(st) == 1 && st[0].WouldDestroy != "" && st[0].LastVerdict.Row != 12 && st[0].LastVerdict.Row != 0
	}, func() string { return fmt.Sprintf("status %+v", eng.Status()) })
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a", "--dry-run"), workloadPod("apps", "web", "uid-web", "node-a"))
	out := explainFromEngine(t, e, "podsweeper/agent-a", eng, report, "apps", "web", "")
	if strings.Contains(out, "dry run       would destroy it") {
		t.Errorf("the dry run's last check kept the PU; the plugin says the dry run would destroy it")
	}
}

type goneGetter struct{}

func (goneGetter) GetPod(context.Context, types.NamespacedName) (*corev1.Pod, error) {
	return nil, ports.ErrPodNotFound
}

type noopPolicy struct{}

func (noopPolicy) DestroyPU(context.Context, ports.DestroyEvent) error { return nil }

// lateJournal is a journal (Inventory) whose first list is late: the
// node agent restarted, and its state file is still being read.
type lateJournal struct{ release chan struct{} }

func (j lateJournal) ListPUs(ctx context.Context) ([]ports.PU, error) {
	select {
	case <-j.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return []ports.PU{{PUID: "uid-web", Pod: types.NamespacedName{Namespace: "apps", Name: "web"}, SandboxID: "3a9f0c1b2d4e5"}}, nil
}

type failingPolicy struct{}

func (failingPolicy) DestroyPU(context.Context, ports.DestroyEvent) error {
	return errors.New("remove /var/lib/podsweeper/pus/uid-db: directory not empty")
}

type livePodGetter struct{}

func (livePodGetter) GetPod(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: "uid-web"},
		Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}, nil
}

// newSandboxLister answers from a list a moment old (it has MaxAge): the pod
// runs in sandbox "new".
type newSandboxLister struct{}

func (newSandboxLister) SandboxID(context.Context, *corev1.Pod) (string, error) { return "new", nil }

func (newSandboxLister) MaxAge() time.Duration { return time.Second }

// oldSandboxRuntime is the runtime read that confirms: still sandbox "old".
type oldSandboxRuntime struct{}

func (oldSandboxRuntime) SandboxID(context.Context, *corev1.Pod) (string, error) { return "old", nil }

type noSandbox struct{}

func (noSandbox) SandboxID(context.Context, *corev1.Pod) (string, error) { return "", nil }

// flakyProber says the sandbox is dead at its first answer, then that it is not.
type flakyProber struct{ calls *atomic.Int32 }

func (p flakyProber) SandboxDead(context.Context, *corev1.Pod, string) (bool, error) {
	return p.calls.Add(1) == 1, nil
}

// startEngine starts the real deletion engine with getter, policy and opts
// for the test's time, and gives it a moment to begin.
func startEngine(t *testing.T, getter ports.PodGetter, policy ports.PolicyHandler, opts deletion.Options, settle time.Duration) *deletion.Engine {
	t.Helper()
	eng, err := deletion.New(getter, policy, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = eng.Start(ctx) }()
	time.Sleep(settle)
	return eng
}

// track has eng track pu.
func track(t *testing.T, eng *deletion.Engine, pu ports.PU) {
	t.Helper()
	if err := eng.Track(pu); err != nil {
		t.Fatal(err)
	}
}

// waitFor waits up to 10s for done, failing with what it says otherwise.
func waitFor(t *testing.T, done func() bool, failure func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatal(failure())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// explainFromEngine is the text of explain pod namespace/name (on node,
// when not "") with the program pod prog answering eng's real status page
// and, when report is not nil, its dry run's report page.
func explainFromEngine(t *testing.T, e *fakeCluster, prog string, eng *deletion.Engine, report http.Handler, namespace, name, node string) string {
	t.Helper()
	mux := http.NewServeMux() // as program.serveStatus serves it
	mux.Handle(k8s.StatusPath, k8s.NewStatusHandler(eng))
	if report != nil {
		mux.Handle(k8s.DryRunPath, report)
	}
	e.handle(prog, mux)
	x, err := e.c.explainPod(context.Background(), namespace, name, "", node, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	return out
}

// dryRunnerFunc lets a function serve as a ports.DryRunner.
type dryRunnerFunc func(context.Context, ports.DestroyEvent) error

func (f dryRunnerFunc) DryRunDestroyPU(ctx context.Context, ev ports.DestroyEvent) error {
	return f(ctx, ev)
}
