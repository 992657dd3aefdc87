package remembers_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// DestroyPU (go doc): "two calls for one pod at once free it once, the second after the first", while ListPUs,
// SandboxDead and DryRunDestroyPU run beside them.
func TestAuditHoldsConcurrentDestroyFreesOnce(t *testing.T) {
	e := newEnv(t)
	log := filepath.Join(e.bin, "slow.log")
	script := "#!/bin/sh\ncat >/dev/null\necho \"$CNI_COMMAND $CNI_CONTAINERID\" >> " + log + "\nsleep 0.3\necho '{\"cniVersion\":\"1.0.0\"}'\n"
	if err := os.WriteFile(filepath.Join(e.bin, "slow"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e.writeEntry(t, "net1", "sbX", "eth0", "uid-1", conflist("net1", "slow"), time.Now().Add(-time.Hour))
	rt := &fakeRuntime{answer: func(int) ([]*runtimeapi.PodSandbox, error) {
		return []*runtimeapi.PodSandbox{sb("sbX", "uid-1", runtimeapi.PodSandboxState_SANDBOX_NOTREADY)}, nil
	}}
	c := mustNew(t, cni.Options{CacheDir: e.cache, PluginDirs: []string{e.bin}, ConfDir: e.conf, HostLocalDataDir: e.data, Runtime: rt})
	ev := ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "pod"}, SandboxID: "sbX", Reason: ports.ReasonPodGone}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = c.DestroyPU(context.Background(), ev) }()
	}
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = c.ListPUs(context.Background())
			_, _ = c.SandboxDead(context.Background(), podOf("uid-1"), "sbX")
			_ = c.DryRunDestroyPU(context.Background(), ev)
			_ = testcni.Address(t, c, "10.99.0.5")
		}()
	}
	wg.Wait()
	b, _ := os.ReadFile(log)
	if errs[0] != nil || errs[1] != nil || strings.Count(string(b), "DEL sbX") != 1 {
		t.Fatalf("errors %v; plugin calls %q", errs, b)
	}
}
