package promises_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// doc.go: "It skips, with a log line, and never deletes, entries without
// K8S_POD_UID, K8S_POD_NAMESPACE and K8S_POD_NAME ... and entries it
// cannot read." ListPUs: "Entries without the pod's arguments,
// unreadable, unusable for a DEL or of a disableGC network are skipped,
// logged once." A results/ entry that is not a regular file (a symbolic
// link to a pod's entry, which libcni itself reads; a directory) is
// neither listed nor logged: the pod's attachment is invisible.
func TestAuditNonRegularEntryIsListedOrLogged(t *testing.T) {
	e := newEnv(t)
	real := e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{})
	outside := filepath.Join(t.TempDir(), "saved")
	if err := os.Rename(real, outside); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, real); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(e.cache, "results", "net2-sbD-eth0"), 0o755); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(p, a string) { mu.Lock(); lines = append(lines, a); mu.Unlock() }, funcr.Options{Verbosity: 9})
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	pus, err := c.ListPUs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	all := strings.Join(lines, "\n")
	mu.Unlock()
	for _, f := range []string{"net1-sbA-eth0", "net2-sbD-eth0"} {
		listed := f == "net1-sbA-eth0" && len(pus) == 1
		if !listed && !strings.Contains(all, f) {
			t.Errorf("entry %s neither listed (PUs %v) nor logged; log:\n%s", f, pus, all)
		}
	}
}
