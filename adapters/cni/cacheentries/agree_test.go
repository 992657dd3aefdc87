package cacheentries_test

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

// cni-freeing.md:50-53: the same verdicts order a pod's sandboxes for ListPUs (dead first, then those nothing
// is told of, then those that may be being created, the ready one last) and answer SandboxDead; DryRunDestroyPU
// answers as DestroyPU does.
func TestHoldsListSandboxDeadDryRunAgree(t *testing.T) {
	e := newEnv(t)
	t0 := time.Now().Add(-time.Hour)
	e.write(filepath.Join(e.root, "netns", "present"), "")
	e.entry("podnet", "ready", "eth0", "uid-a", "", loggerConf("podnet", ""), "10.88.0.1", t0)
	e.entry("podnet", "creating", "eth0", "uid-a", filepath.Join(e.root, "netns", "present"), loggerConf("podnet", ""), "10.88.0.2", t0.Add(time.Minute))
	e.entry("podnet", "unknown", "eth0", "uid-a", "", loggerConf("podnet", ""), "10.88.0.3", t0.Add(2*time.Minute))
	e.entry("podnet", "dead", "eth0", "uid-a", filepath.Join(e.root, "netns", "gone"), loggerConf("podnet", ""), "10.88.0.4", t0.Add(3*time.Minute))
	rt := &fakeRuntime{sbs: []*runtimeapi.PodSandbox{sb("ready", "uid-a", true, t0)}}
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want := []string{"dead", "unknown", "creating", "ready"}
	for i, id := range want {
		pus, err := c.ListPUs(ctx)
		if err != nil || len(pus) != 1 || pus[0].SandboxID != id {
			t.Fatalf("step %d: ListPUs %+v %v, want %s", i, pus, err, id)
		}
		dead, _ := c.SandboxDead(ctx, podOf("uid-a"), id)
		if dead != (id == "dead") {
			t.Errorf("SandboxDead(%s) = %v", id, dead)
		}
		ev := ports.DestroyEvent{PUID: "uid-a", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-uid-a"}, SandboxID: id, Reason: ports.ReasonSandboxChanged}
		derr := c.DryRunDestroyPU(ctx, ev)
		rerr := c.DestroyPU(ctx, ev)
		if (derr == nil) != (rerr == nil) {
			t.Errorf("%s: dry run %v, destroy %v", id, derr, rerr)
		}
		_ = os.Remove(filepath.Join(e.cache, "results", "podnet-"+id+"-eth0")) // next in the order

	}
}

// DryRunDestroyPU answers as DestroyPU would with a context that has ended too: nil for a PU the cache holds
// nothing of, an error (the pod kept) where DestroyPU would have to list the Runtime or run a DEL.
func TestDryRunAgreesWithDestroyPUOnAnEndedContext(t *testing.T) {
	for _, tc := range []struct {
		name    string
		runtime bool
		puid    string
	}{
		{"unknown PU", true, "uid-b"},
		{"unknown PU, no Runtime", false, "uid-b"},
		{"dead sandbox", true, "uid-a"},
		{"dead sandbox, no Runtime", false, "uid-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.entry("podnet", "dead", "eth0", "uid-a", filepath.Join(e.root, "netns", "gone"), loggerConf("podnet", ""), "10.88.0.4", time.Now().Add(-time.Hour))
			o := e.opts(nil)
			if tc.runtime {
				o = e.opts(&fakeRuntime{})
			}
			c, err := cni.New(o)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			ev := ports.DestroyEvent{PUID: tc.puid, Pod: types.NamespacedName{Namespace: "ns", Name: "pod-" + tc.puid}, Reason: ports.ReasonPodGone}
			derr := c.DryRunDestroyPU(ctx, ev)
			rerr := c.DestroyPU(ctx, ev)
			if (derr == nil) != (rerr == nil) {
				t.Errorf("context ended: dry run answers %v, DestroyPU %v", derr, rerr)
			}
			if want := tc.puid == "uid-b"; (rerr == nil) != want {
				t.Errorf("context ended: DestroyPU answers %v; want nil only for a PU the cache holds nothing of", rerr)
			}
		})
	}
}
