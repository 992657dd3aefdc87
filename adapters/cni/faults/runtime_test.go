package faults_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
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
	// An entry that may be the pod's (its container cannot be read): the runtime must be asked.
	testcni.Write(t, filepath.Join(cache, "results", "podnet-sb-1-eth0"), `{"kind":"cniCacheV1","containerId":"sb-1",`)
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

// ports.PolicyHandler (go doc): "DestroyPU must be idempotent: destroying a PU the policy engine does
// not know ... must succeed, or answer an error wrapped with Permanent." A pod whose attachments the
// runtime's own DEL freed (the cache holds nothing of it) is destroyed at once, for every reason,
// while the runtime hangs: there is nothing to free, whatever it would answer.
func TestAPUTheCacheHoldsNothingOfIsDestroyedWithoutTheRuntime(t *testing.T) {
	e := newEnv(t)
	// Another pod's attachment, and its sandbox's entry: nothing of uid-1.
	testcni.Write(t, filepath.Join(e.cache, "results", "podnet-sb-9-eth0"), `{"kind":"cniCacheV1","containerId":"sb-9","ifName":"eth0","networkName":"podnet",`+
		`"cniArgs":[["K8S_POD_UID","uid-9"],["K8S_POD_NAMESPACE","ns"],["K8S_POD_NAME","q"]],"config":"eyJjbmlWZXJzaW9uIjoiMS4wLjAiLCJuYW1lIjoicG9kbmV0IiwidHlwZSI6ImZha2VwbHVnaW4ifQ=="}`)
	rt := hangingRuntime{release: make(chan struct{})}
	defer close(rt.release)
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, ResyncInterval: time.Hour, Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	for _, reason := range []ports.Reason{ports.ReasonPodGone, ports.ReasonUIDChanged, ports.ReasonNodeChanged, ports.ReasonPodTerminated,
		ports.ReasonSandboxChanged, ports.ReasonSandboxDead} {
		ev := ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: "sb-1", Reason: reason}
		done := make(chan error, 1)
		go func() { done <- c.DestroyPU(context.Background(), ev) }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("DestroyPU(%s) of a PU the cache holds nothing of = %v, want nil", reason, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("DestroyPU(%s) of a PU the cache holds nothing of waits for a runtime that hangs", reason)
		}
		var dry ports.DryRunner = c
		if err := dry.DryRunDestroyPU(context.Background(), ev); err != nil {
			t.Errorf("DryRunDestroyPU(%s) of a PU the cache holds nothing of = %v, want nil", reason, err)
		}
	}
}

type panickingRuntime struct{}

func (panickingRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	panic("runtime client bug")
}

// adapters/cni Options.Runtime (go doc): a list "that fails or takes longer keeps everything (a plain
// error, never permanent, whatever it says)". A Runtime that panics is someone else's bug: the
// list fails, the pod is kept, and the process lives on (the list runs on a goroutine of its own, where
// the engine's recovery cannot reach).
func TestARuntimeThatPanicsFailsTheList(t *testing.T) {
	e := newEnv(t)
	testcni.Write(t, filepath.Join(e.cache, "results", "podnet-sb-1-eth0"), `{"kind":"cniCacheV1","containerId":"sb-1",`)
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, Runtime: panickingRuntime{}})
	if err != nil {
		t.Fatal(err)
	}
	err = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: "sb-1", Reason: ports.ReasonPodGone})
	if err == nil || ports.IsPermanent(err) || !strings.Contains(err.Error(), "runtime client bug") {
		t.Fatalf("DestroyPU with a Runtime that panics = %v, want a plain error naming the panic", err)
	}
}
