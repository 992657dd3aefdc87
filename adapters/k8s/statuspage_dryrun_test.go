package k8s_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// DryRunReport's doc (adapters/k8s/dryrun.go:32-40): "The engine reports each PU once per reason ...; the status
// page (NewStatusHandler) shows the PUs still tracked, a reported reason included." A dry run's PU of a finished pod
// (DestroyTerminated, row 11) is kept and checked every sweep: it is reported once, and its status page entry names
// the reason.
func TestDryRunReportsOncePerReason(t *testing.T) {
	done := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "batch", Name: "job-x", UID: "9d2c4b1a-7e6f-4a3b-8c2d-1e0f9a8b7c6d"},
		Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return done.DeepCopy(), nil })
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { t.Error("a dry run destroyed"); return nil })
	report := k8s.NewDryRunReport(0)
	eng, err := deletion.New(getter, policy, deletion.Options{NodeName: "node-a", SweepInterval: deletion.MinSweepInterval,
		DestroyTerminated: true, DryRun: true, Observer: report})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() { _ = eng.Start(ctx); close(returned) }()
	defer func() { cancel(); <-returned }()
	if err := eng.Track(ports.PU{PUID: string(done.UID), Pod: types.NamespacedName{Namespace: "batch", Name: "job-x"}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // many sweeps of 100ms
	kept, total := report.Reports()
	if total != 1 || len(kept) != 1 || kept[0].Reason != "PodTerminated" || kept[0].Dropped {
		t.Errorf("reports: total %d, %+v", total, kept)
	}
	srv := httptest.NewServer(k8s.NewStatusHandler(eng))
	defer srv.Close()
	resp, err := http.Get(srv.URL + k8s.StatusPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var pus []k8s.PUStatus
	_ = json.NewDecoder(resp.Body).Decode(&pus)
	if len(pus) != 1 || pus[0].WouldDestroy != "PodTerminated" {
		t.Errorf("status page: %+v", pus)
	}
}

// NewStatusHandler's doc (status.go:58-66): while Start runs and the engine's Inventory is not listed yet, the page
// answers 503; before Start (a standby's), it answers with EngineNotRunning.
func TestStatusPage503WhileInventoryUnlisted(t *testing.T) {
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, nil })
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) { return nil, context.DeadlineExceeded })
	eng, err := deletion.New(getter, policy, deletion.Options{NodeName: "node-a", Inventory: inv})
	if err != nil {
		t.Fatal(err)
	}
	get := pageOf(t, eng)
	if code, h := get(); code != http.StatusOK || h != k8s.EngineNotRunning {
		t.Errorf("before Start: %d %q", code, h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() { _ = eng.Start(ctx); close(returned) }()
	defer func() { cancel(); <-returned }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, _ := get()
		if code == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Start runs, its Inventory fails, and the page answers %d", code)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
