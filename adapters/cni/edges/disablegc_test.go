package edges_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// disableGCConf is a cached config of net1 that says disableGC.
func (e *env) disableGCConf() string {
	return fmt.Sprintf(`{"cniVersion":"1.0.0","name":"net1","disableGC":true,"plugins":[{"type":"sweep","ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":"10.1.0.0/16"}]]}}]}`, e.data)
}

// gonePodDEL sets up pod A's attachment of net1 (its namespace gone: row 4), lets prepare add what else the cache
// holds, runs DestroyPU(PodGone) for A, and returns whether a DEL of net1 ran.
func gonePodDEL(t *testing.T, prepare func(e *env)) (delRan bool, e *env, err error) {
	e = newEnv(t)
	marker := filepath.Join(t.TempDir(), "dels")
	e.sweepPlugin(`echo "$CNI_CONTAINERID" >> ` + marker)
	e.netConf("10-net1.conflist", "net1", "")
	e.cacheEntry(entry{Network: "net1", ID: "aaa", UID: "uid-a", NS: "ns", Name: "pod-a", IP: "10.1.0.20",
		NetNS: filepath.Join(e.netnsDir, "gone")})
	prepare(e)
	l := &logs{}
	c := newCollector(t, e.opts(l))
	err = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-a", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-a"},
		SandboxID: "aaa", Reason: ports.ReasonPodGone})
	_, serr := os.Stat(marker)
	return serr == nil, e, err
}

// TestALinkedCacheEntrysDisableGCKeepsItsNetwork: an entry of the cache of net1 that is a link to a whole entry whose cached
// config says disableGC (the runtime's libcni reads through it). "any entry of the cache of that network, one the
// collector does not use included": net1 is never DELed.
func TestALinkedCacheEntrysDisableGCKeepsItsNetwork(t *testing.T) {
	ran, _, err := gonePodDEL(t, func(e *env) {
		target := filepath.Join(e.t.TempDir(), "net1-bbb-eth0")
		testcni.Write(e.t, target, string(e.entryJSON(entry{Network: "net1", ID: "bbb", UID: "uid-b", NS: "ns", Name: "pod-b", IP: "10.1.0.21", Config: e.disableGCConf()})))
		if err := os.Symlink(target, filepath.Join(e.cache, "results", "net1-bbb-eth0")); err != nil {
			e.t.Fatal(err)
		}
	})
	if ran {
		t.Errorf("an entry of net1's cache (a link) says disableGC, and a DEL of net1 ran (DestroyPU: %v)", err)
	}
}

// TestACutShortCacheEntrysDisableGCKeepsItsNetwork: an entry of the cache of net1 cut short at its end (libcni writes entries in
// place); the cached config in it, whole, says disableGC. net1 is never DELed, or, as ConfDir's files being written,
// nothing is decided until it can be read. A DEL of net1 runs.
func TestACutShortCacheEntrysDisableGCKeepsItsNetwork(t *testing.T) {
	ran, _, err := gonePodDEL(t, func(e *env) {
		b := e.entryJSON(entry{Network: "net1", ID: "bbb", UID: "uid-b", NS: "ns", Name: "pod-b", IP: "10.1.0.21", Config: e.disableGCConf()})
		testcni.Write(e.t, filepath.Join(e.cache, "results", "net1-bbb-eth0"), string(b[:len(b)-3]))
	})
	if ran {
		t.Errorf("an entry of net1's cache whose cached config says disableGC cannot be read in full, and a DEL of net1 ran (DestroyPU: %v)", err)
	}
}

// TestHoldsDisableGCOfUnusedEntry: an entry of net1 of no pod whose cached config says disableGC keeps net1.
func TestHoldsDisableGCOfUnusedEntry(t *testing.T) {
	ran, _, err := gonePodDEL(t, func(e *env) {
		e.cacheEntry(entry{Network: "net1", ID: "bbb", IP: "10.1.0.21", Config: e.disableGCConf()})
	})
	if ran {
		t.Errorf("an entry of no pod of net1 says disableGC, and a DEL of net1 ran (DestroyPU: %v)", err)
	}
}

// TestHoldsRow4Frees: the control: without any disableGC, the gone pod's attachment whose namespace is gone is
// DELed (row 4).
func TestHoldsRow4Frees(t *testing.T) {
	ran, _, err := gonePodDEL(t, func(*env) {})
	if !ran || err != nil {
		t.Errorf("row 4: want a DEL and nil, got DEL %v, %v", ran, err)
	}
}

// TestDestroyPUOfAPUWhoseEntryIsALinkIsUnusable: the PU's only cache entry is a link (to a whole entry of its pod, which the
// runtime's libcni reads through). The collector never reads or DELs it; DestroyPU must not answer as if it freed
// the pod ("An entry of the PU that cannot be read or would run no plugin makes an error wrapping
// ErrUnusableEntry"). It answers nil, and the engine forgets a pod whose address is still held.
func TestDestroyPUOfAPUWhoseEntryIsALinkIsUnusable(t *testing.T) {
	e := newEnv(t)
	e.sweepPlugin("")
	e.netConf("10-net1.conflist", "net1", "")
	target := filepath.Join(t.TempDir(), "net1-aaa-eth0")
	testcni.Write(t, target, string(e.entryJSON(entry{Network: "net1", ID: "aaa", UID: "uid-a", NS: "ns", Name: "pod-a", IP: "10.1.0.95",
		NetNS: filepath.Join(e.netnsDir, "gone")})))
	link := filepath.Join(e.cache, "results", "net1-aaa-eth0")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	c := newCollector(t, e.opts(&logs{}))
	err := c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-a", Pod: podA, SandboxID: "aaa", Reason: ports.ReasonPodGone})
	if _, serr := os.Lstat(link); serr == nil && err == nil {
		t.Errorf("DestroyPU = nil, and the PU's cache entry (a link) is still there, never touched")
	}
}
