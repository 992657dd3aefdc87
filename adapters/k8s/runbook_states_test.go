package k8s_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// committing is an Observer that holds the first event of kind, as a journal's commit under way, until release is
// called; told is closed once it holds it.
func committing(kind deletion.EventKind) (obs deletion.Observer, told <-chan struct{}, release func()) {
	held, done := make(chan struct{}), make(chan struct{})
	var once, releasing sync.Once
	return deletion.ObserverFunc(func(ev deletion.Event) {
		if ev.Kind == kind {
			once.Do(func() { close(held); <-done })
		}
	}), held, func() { releasing.Do(func() { close(done) }) }
}

// statusPage serves eng's status page until the test ends, and returns a func that reads it.
func statusPage(t *testing.T, eng *deletion.Engine) func() []k8s.PUStatus {
	srv := httptest.NewServer(k8s.NewStatusHandler(eng))
	t.Cleanup(srv.Close)
	return func() []k8s.PUStatus {
		t.Helper()
		resp, err := http.Get(srv.URL + k8s.StatusPath)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var pus []k8s.PUStatus
		if err := json.NewDecoder(resp.Body).Decode(&pus); err != nil {
			t.Fatalf("status %d: %v", resp.StatusCode, err)
		}
		return pus
	}
}

// waitFor waits for ch to be closed, 10 s at most.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal(what)
	}
}

// docs/operating/runbooks.md, "The status page": every tracked PU with its state, each state named. A PU whose Track
// is telling the Observer (a journal's commit under way: the node agent's Inventory) is on the page as "tracking":
// the runbook names it.
func TestRunbookStatusPageStates(t *testing.T) {
	listed := runbookStates(t)
	alive := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: "6f1c2a4e-0d2b-4c4e-9a51-3f0c8e5b7d21"},
		Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return alive.DeepCopy(), nil })
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	obs, told, release := committing(deletion.EventTracked)
	eng, err := deletion.New(getter, policy, deletion.Options{NodeName: "node-a", Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() { _ = eng.Start(ctx); close(returned) }()
	tracked := make(chan error, 1)
	go func() {
		tracked <- eng.Track(ports.PU{PUID: string(alive.UID), Pod: types.NamespacedName{Namespace: "apps", Name: "web"}})
	}()
	defer func() { release(); <-tracked; cancel(); <-returned }()
	waitFor(t, told, "the Observer was never told of the PU")
	pus := statusPage(t, eng)()
	for _, p := range pus {
		if !slices.Contains(listed, p.State) {
			t.Errorf("the status page lists PU %s in state %q, which the runbook's list of states (%q) lacks", p.PUID, p.State, listed)
		}
	}
	if len(pus) == 0 {
		t.Errorf("the PU being tracked is not on the page")
	}
}

// docs/operating/runbooks.md and deletion.StateLeaving: a PU destroyed while the Observer commits its EventDestroyed
// stays on the page, "leaving", until the Observer has heard its end, telling the check that ended it (row 1); the
// runbook names the state.
func TestALeavingPUIsOnThePageUntilTheObserverHeardItsEnd(t *testing.T) {
	listed := runbookStates(t)
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound })
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	obs, told, release := committing(deletion.EventDestroyed)
	defer release()
	eng, err := deletion.New(getter, policy, deletion.Options{NodeName: "node-a", Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Track(ports.PU{PUID: "6f1c2a4e-0d2b-4c4e-9a51-3f0c8e5b7d21", Pod: types.NamespacedName{Namespace: "apps", Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	swept := make(chan struct{})
	go func() { eng.Sweep(context.Background()); close(swept) }()
	waitFor(t, told, "the Observer was never told of the destroy")
	page := statusPage(t, eng)
	pus := page()
	if len(pus) != 1 || pus[0].State != deletion.StateLeaving {
		t.Fatalf("while the Observer commits its destroy, the page lists %+v, not the PU leaving", pus)
	}
	if !slices.Contains(listed, pus[0].State) {
		t.Errorf("the runbook's list of states (%q) lacks %q", listed, pus[0].State)
	}
	if pus[0].LastChecked == nil || pus[0].LastRow != 1 {
		t.Errorf("the leaving PU tells its last check %v, row %d: want the check that destroyed it, row 1", pus[0].LastChecked, pus[0].LastRow)
	}
	if eng.Len() != 0 {
		t.Errorf("Len() is %d: a leaving PU is not tracked", eng.Len())
	}
	release()
	<-swept
	if pus := page(); len(pus) != 0 {
		t.Errorf("once the Observer heard its end, the page lists %+v", pus)
	}
}

// runbookStates returns the states the runbook's paragraph on the status page names, in backquotes, between
// "with its state (" and the next "),".
func runbookStates(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "operating", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(strings.Join(strings.Fields(string(b)), " "), "tracked PU with its state (")
	list, _, ok2 := strings.Cut(after, "),")
	if !ok || !ok2 {
		t.Fatal("the runbook has no list of the status page's states")
	}
	var states []string
	for i, part := range strings.Split(list, "`") {
		if i%2 == 1 {
			states = append(states, part)
		}
	}
	return states
}
