package faults_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
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
		testcni.Write(t, f, `{"kind":"cniCacheV1","containerId":"sb-1","ifName":"eth0","networkName":"podnet","config":`) // truncated
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

// adapters/cni ListPUs (go doc): "Entries without the pod's arguments, unreadable, unusable for a DEL or of a
// disableGC network are skipped, logged once." An entry whose cached result libcni cannot load before a DEL (a result
// of a CNI version this libcni does not know, as a newer runtime's may write) is unusable: ListPUs lists no PU of it,
// so no resync tracks it again to be given up on again, and DestroyPU answers ErrUnusableEntry, permanent, leaving it.
func TestAnEntryWhoseCachedResultCannotBeLoadedIsUnusable(t *testing.T) {
	e := newEnv(t)
	f := filepath.Join(e.cache, "results", "podnet-sb-1-eth0")
	// {"cniVersion":"1.0.0","name":"podnet","plugins":[{"type":"bridge"}]}
	testcni.Write(t, f, `{"kind":"cniCacheV1","containerId":"sb-1","ifName":"eth0","networkName":"podnet",`+
		`"cniArgs":[["K8S_POD_UID","uid-1"],["K8S_POD_NAMESPACE","ns"],["K8S_POD_NAME","p"]],`+
		`"config":"eyJjbmlWZXJzaW9uIjoiMS4wLjAiLCJuYW1lIjoicG9kbmV0IiwicGx1Z2lucyI6W3sidHlwZSI6ImJyaWRnZSJ9XX0=",`+
		`"result":{"cniVersion":"9.9.9"}}`)
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, Runtime: listRuntime{}})
	if err != nil {
		t.Fatal(err)
	}
	pus, err := c.ListPUs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(pus) != 0 {
		t.Errorf("ListPUs lists %+v: an entry whose cached result cannot be loaded for a DEL is tracked, and given up on, at every resync", pus)
	}
	ev := ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: "sb-1", Reason: ports.ReasonPodGone}
	if err := c.DestroyPU(context.Background(), ev); !errors.Is(err, cni.ErrUnusableEntry) || !ports.IsPermanent(err) {
		t.Errorf("DestroyPU = %v, want a permanent ErrUnusableEntry", err)
	}
	if _, err := os.Stat(f); err != nil {
		t.Errorf("the unusable entry was removed: %v", err)
	}
}
