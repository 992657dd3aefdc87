package meanwhile_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// cni-freeing.md:38-41: "A cache entry that is a link is never used (libcni writes regular files; a DEL through it
// would remove the link alone), but what it holds and its cached config's `disableGC` count as any entry's, and a PU
// whose entry it is answers `ErrUnusableEntry`".
//
// The same slow first DEL: meanwhile the second attachment's entry becomes a link (to the same JSON elsewhere). The
// collector DELs through it all the same, libcni removes the link alone, and DestroyPU answers nil.
func TestAuditDestroyPUEntryBecomesLinkIsNeverUsed(t *testing.T) {
	e := newEnv(t, "")
	testcni.Write(t, filepath.Join(e.plugins, "slowdel"), "#!/bin/sh\ncat >/dev/null\nsleep 2\nexit 0\n")
	marker := filepath.Join(filepath.Dir(e.cache), "okdel-ran")
	testcni.Write(t, filepath.Join(e.plugins, "okdel"), "#!/bin/sh\ncat >/dev/null\ntouch "+marker+"\nexit 0\n")
	for _, p := range []string{"slowdel", "okdel"} {
		if err := os.Chmod(filepath.Join(e.plugins, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	results := filepath.Join(e.cache, "results")
	testcni.Write(t, filepath.Join(results, "a-slow-sb1-eth0"), entry("a-slow", "sb1", "eth0", "u1", "slowdel"))
	second := filepath.Join(results, "b-fast-sb1-net1")
	testcni.Write(t, second, entry("b-fast", "sb1", "net1", "u1", "okdel"))
	target := filepath.Join(filepath.Dir(e.cache), "elsewhere-b-fast-sb1-net1")
	testcni.Write(t, target, entry("b-fast", "sb1", "net1", "u1", "okdel"))
	c := e.collector(t, nil)

	done := make(chan error, 1)
	go func() {
		done <- c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "u1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: "sb1", Reason: ports.ReasonPodGone})
	}()
	time.Sleep(700 * time.Millisecond) // a-slow's DEL runs
	if err := os.Remove(second); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, second); err != nil {
		t.Fatal(err)
	}
	err := <-done
	if testcni.Exists(marker) {
		t.Errorf("the collector ran a DEL through the link %s (a cache entry that is a link is never used)", second)
	}
	if !testcni.Exists(second) {
		t.Errorf("the link %s was removed by the DEL run through it (\"a DEL through it would remove the link alone\")", second)
	}
	if !errors.Is(err, cni.ErrUnusableEntry) {
		t.Errorf("DestroyPU = %v, want ErrUnusableEntry for the entry that is a link", err)
	}
}
