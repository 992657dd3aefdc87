package faults_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// hangingRuntime answers no list until release is closed, whatever its context says.
type hangingRuntime struct{ release chan struct{} }

func (h hangingRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	<-h.release
	return nil, nil
}

// adapters/cni Options.Runtime (go doc): "Each list of its sandboxes is given 10s, or ResyncInterval
// if shorter: one that fails or takes longer keeps everything (a plain error, never permanent,
// whatever it says) and is asked again." A runtime that hangs must make DestroyPU answer, keeping
// everything, after ResyncInterval (here 200ms), not block for as long as the runtime hangs.
func TestARuntimeThatIgnoresItsContextIsLeftBehind(t *testing.T) {
	root := t.TempDir()
	cache, bin := filepath.Join(root, "cache"), filepath.Join(root, "bin")
	for _, d := range []string{filepath.Join(cache, "results"), bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rt := hangingRuntime{release: make(chan struct{})}
	defer close(rt.release)
	c, err := cni.New(cni.Options{CacheDir: cache, PluginDirs: []string{bin}, ConfDir: filepath.Join(root, "conf"),
		ResyncInterval: 200 * time.Millisecond, Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, Reason: ports.ReasonPodGone})
	}()
	select {
	case err := <-done:
		if err == nil || ports.IsPermanent(err) {
			t.Fatalf("DestroyPU with a runtime that cannot be asked answered %v, want a plain error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("DestroyPU still waits for a runtime that hangs 5s after a list given 200ms")
	}
}
