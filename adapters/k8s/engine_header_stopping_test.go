package k8s_test

import (
	"context"
	"encoding/json"
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

// EngineHeader: EngineRunning while Start runs; EngineNotRunning for an engine not started or whose Start has
// returned; EngineEnded "for one whose Start stops or has returned". An engine whose Start's context is done, a check
// still in a port (ShutdownTimeout not over), has neither not started nor returned: it still holds its PUs, and starts
// no check and no destroy of them. Its page says EngineEnded, not EngineNotRunning (a standby's), nor EngineRunning
// (whose PUs wait for retries that would come). A program's pod being deleted runs its grace period and is asked
// (docs/operating/explain.md).
func TestEngineHeaderEndedWhileStartStops(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	inPort := make(chan struct{}, 16)
	alive := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: "6f1c2a4e-0d2b-4c4e-9a51-3f0c8e5b7d21"},
		Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	var blocking sync.Mutex
	block := false
	getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		blocking.Lock()
		b := block
		blocking.Unlock()
		if b {
			inPort <- struct{}{}
			<-release // a port that hangs, past the check's cancelled context
		}
		return alive.DeepCopy(), nil
	})
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	eng, err := deletion.New(getter, policy, deletion.Options{NodeName: "node-a", SweepInterval: time.Second,
		ShutdownTimeout: time.Minute, CheckTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(k8s.NewStatusHandler(eng))
	t.Cleanup(srv.Close)
	get := func() (string, []k8s.PUStatus) {
		t.Helper()
		resp, err := http.Get(srv.URL + k8s.StatusPath)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var pus []k8s.PUStatus
		if resp.StatusCode == http.StatusOK {
			_ = json.NewDecoder(resp.Body).Decode(&pus)
		}
		return resp.Header.Get(k8s.EngineHeader), pus
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	returned := make(chan struct{})
	go func() { _ = eng.Start(ctx); close(returned) }()
	t.Cleanup(func() { cancel(); free(); <-returned })
	if err := eng.Track(ports.PU{PUID: string(alive.UID), Pod: types.NamespacedName{Namespace: "apps", Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		h, pus := get()
		if h == k8s.EngineRunning && len(pus) == 1 && pus[0].LastChecked != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the engine never ran with its PU checked: header %q, %d PUs", h, len(pus))
		}
		time.Sleep(20 * time.Millisecond)
	}
	blocking.Lock()
	block = true
	blocking.Unlock()
	eng.TriggerAll()
	select {
	case <-inPort: // a check is in the port, and stays there
	case <-time.After(10 * time.Second):
		t.Fatal("no check came to the port")
	}
	cancel() // Start stops: it waits up to ShutdownTimeout (a minute) for the check in the port
	var h string
	var pus []k8s.PUStatus
	for time.Now().Before(deadline.Add(10 * time.Second)) {
		if h, pus = get(); h != k8s.EngineRunning {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case <-returned:
		t.Fatal("Start returned though a check is still in its port: the scenario did not hold")
	default:
	}
	if h == k8s.EngineNotRunning {
		t.Errorf("Start has not returned (a check still in its port) and the engine holds %d PU(s), yet its page says %s %q, "+
			"the header of an engine not started or whose Start has returned, which holds no PU", len(pus), k8s.EngineHeader, h)
	}
	// EngineHeader: EngineEnded "for one whose Start stops or has returned": no check of its own starts, and no
	// attempt comes (kubectl podsweeper tells its PUs held with none to come, not waiting for their next check).
	if h != k8s.EngineEnded || !eng.Stopping() {
		t.Errorf("Start stops (its context done, a check still in its port): its page says %s %q, want %q; Stopping() %v",
			k8s.EngineHeader, h, k8s.EngineEnded, eng.Stopping())
	}
}
