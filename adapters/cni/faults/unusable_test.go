package faults_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// adapters/cni DestroyPU (go doc): "An entry of the PU that cannot be read or would run no plugin makes
// an error wrapping ErrUnusableEntry, marked ports.Permanent once every other attachment is freed."
// The PU of a pod tracked with sandbox sb-1, whose only cache entry (results/podnet-sb-1-eth0) can no
// longer be read, is destroyed as its pod is gone: the entry is left, and the answer must say why.
func TestTheUnusableOnlyEntryOfAGonePodIsReported(t *testing.T) {
	for _, reason := range []ports.Reason{ports.ReasonSandboxChanged, ports.ReasonPodGone} {
		e := newEnv(t)
		f := filepath.Join(e.cache, "results", "podnet-sb-1-eth0")
		write(t, f, `{"kind":"cniCacheV1","containerId":"sb-1","ifName":"eth0","networkName":"podnet","config":`) // truncated
		c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, Runtime: listRuntime{}})
		if err != nil {
			t.Fatal(err)
		}
		ev := ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: "sb-1", Reason: reason}
		err = c.DestroyPU(context.Background(), ev)
		if _, serr := os.Stat(f); serr != nil {
			t.Fatalf("the unreadable entry was removed: %v", serr)
		}
		if !errors.Is(err, cni.ErrUnusableEntry) {
			t.Errorf("DestroyPU(%v) = %v, want ErrUnusableEntry: the PU's entry %s cannot be read", ev, err, f)
		}
		t.Logf("%s: DestroyPU = %v", reason, err)
	}
}
