package k8s_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
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

// NewStatusHandler's doc (go doc ./adapters/k8s NewStatusHandler; adapters/k8s/status.go): "while Start runs and the
// engine's Inventory is not listed yet (deletion.Engine.InventoryListed), it answers 503, for the PUs a restart left
// are not all known". EngineHeader's doc: "EngineRunning, its Start stopping included".
//
// An engine whose Inventory has never answered, whose Start's context is done while a check is still in a port
// (Start waits ShutdownTimeout for it: Start runs), answers 200 with its partial list and EngineRunning.
func TestStatusPage503WhileInventoryUnlistedAndStartStopping(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	inPort := make(chan struct{}, 16)
	alive := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: "6f1c2a4e-0d2b-4c4e-9a51-3f0c8e5b7d21"},
		Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		inPort <- struct{}{}
		<-release // a port that hangs, past the check's context
		return alive.DeepCopy(), nil
	})
	inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
		return nil, errors.New("the journal cannot be read") // never answers: the PUs a restart left are not known
	})
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	eng, err := deletion.New(getter, policy, deletion.Options{NodeName: "node-a", SweepInterval: time.Second,
		ShutdownTimeout: time.Minute, CheckTimeout: time.Second, Inventory: inv})
	if err != nil {
		t.Fatal(err)
	}
	get := pageOf(t, eng)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	returned := make(chan struct{})
	go func() { _ = eng.Start(ctx); close(returned) }()
	t.Cleanup(func() { cancel(); free(); <-returned })
	if err := eng.Track(ports.PU{PUID: string(alive.UID), Pod: types.NamespacedName{Namespace: "apps", Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	eng.TriggerAll()
	select {
	case <-inPort:
	case <-time.After(15 * time.Second):
		t.Fatal("no check came to the port")
	}
	if code, _ := get(); code != http.StatusServiceUnavailable {
		t.Fatalf("scenario: before the stop, the page of an engine whose Inventory is not listed answers %d, not 503", code)
	}
	if eng.InventoryListed() {
		t.Fatal("scenario: the Inventory is listed")
	}
	cancel() // Start stops: it waits up to ShutdownTimeout (a minute) for the check in the port
	time.Sleep(300 * time.Millisecond)
	select {
	case <-returned:
		t.Fatal("scenario: Start returned")
	default:
	}
	if eng.InventoryListed() {
		t.Fatal("scenario: the Inventory got listed")
	}
	code, h := get()
	if code != http.StatusServiceUnavailable {
		t.Errorf("Start runs (stopping, a check in its port) and its Inventory is not listed, yet the status page answers %d with %s %q "+
			"and the PUs it happens to hold, where its doc promises 503", code, k8s.EngineHeader, h)
	}
}

// go doc k8s.EngineHeader / NewStatusHandler: an engine not started (a standby's, before it leads) answers its page,
// EngineNotRunning, not 503, its Inventory not listed all the same; once started and before its Inventory is
// listed, 503.
func TestStandbyPageIsNotRunningNot503(t *testing.T) {
	listed := make(chan struct{})
	inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
		select {
		case <-listed:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	eng := goneEngine(t, inv)
	get := pageOf(t, eng)
	if code, h := get(); code != 200 || h != k8s.EngineNotRunning {
		t.Errorf("a standby's page: %d %q", code, h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() { _ = eng.Start(ctx); close(returned) }()
	t.Cleanup(func() { cancel(); <-returned })
	deadline := time.Now().Add(5 * time.Second)
	for !eng.Running() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if code, _ := get(); code != http.StatusServiceUnavailable {
		t.Errorf("started, its Inventory not listed: %d, want 503", code)
	}
	close(listed)
	for !eng.InventoryListed() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if code, h := get(); code != 200 || h != k8s.EngineRunning {
		t.Errorf("listed: %d %q", code, h)
	}
}

// go doc k8s.EngineHeader: EngineNotRunning for an engine not started (a standby's), EngineEnded for one whose Start
// has returned (its program stopping, in its grace period): kubectl podsweeper tells a standby from a program that
// ended. The page of an ended engine still lists the PUs it held.
func TestEndedEnginesPageSaysEndedNotStandby(t *testing.T) {
	alive := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: "6f1c2a4e-0d2b-4c4e-9a51-3f0c8e5b7d21"},
		Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return alive.DeepCopy(), nil })
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	eng, err := deletion.New(getter, policy, deletion.Options{NodeName: "node-a", SweepInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	get := pageOf(t, eng)
	if code, h := get(); code != 200 || h != k8s.EngineNotRunning {
		t.Errorf("before Start: %d %q, want 200 %q", code, h, k8s.EngineNotRunning)
	}
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() { _ = eng.Start(ctx); close(returned) }()
	if err := eng.Track(ports.PU{PUID: string(alive.UID), Pod: types.NamespacedName{Namespace: "apps", Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-returned
	if code, h := get(); code != 200 || h != k8s.EngineEnded {
		t.Errorf("Start returned: %d %q, want 200 %q", code, h, k8s.EngineEnded)
	}
	if eng.Len() != 1 {
		t.Errorf("scenario: the ended engine holds %d PUs, want the one it tracked", eng.Len())
	}
}

// goneEngine is an engine of node-a with Inventory inv, every pod of which is gone.
func goneEngine(t *testing.T, inv ports.Inventory) *deletion.Engine {
	t.Helper()
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound })
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	eng, err := deletion.New(getter, policy, deletion.Options{NodeName: "node-a", SweepInterval: time.Second, Inventory: inv})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

// pageOf serves eng's status page, and returns a getter of its status code and its EngineHeader.
func pageOf(t *testing.T, eng *deletion.Engine) func() (code int, engine string) {
	t.Helper()
	srv := httptest.NewServer(k8s.NewStatusHandler(eng))
	t.Cleanup(srv.Close)
	return func() (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + k8s.StatusPath)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, resp.Header.Get(k8s.EngineHeader)
	}
}

// NewStatusHandler: "while Start runs, or once it has returned, and the engine's Inventory is not listed ... it
// answers 503, for the PUs a restart left are not all known": an engine whose Start returned before any list of its
// Inventory answered does not answer an empty list, which would say it held nothing.
func TestEndedBeforeItsInventoryListedAnswers503(t *testing.T) {
	inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) { return nil, errors.New("the journal cannot be read") })
	eng := goneEngine(t, inv)
	get := pageOf(t, eng)
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() { _ = eng.Start(ctx); close(returned) }()
	for deadline := time.Now().Add(5 * time.Second); !eng.Running() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-returned
	if eng.InventoryListed() {
		t.Fatal("scenario: the Inventory never answered")
	}
	if code, h := get(); code != http.StatusServiceUnavailable {
		t.Errorf("Start returned before its Inventory was listed: the page answers %d (%q), want 503", code, h)
	}
}
