package promises_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/ports"
)

// doc.go: "A cached config that would run no plugin (a conflist of none, a
// config of another network) is never "freed": the entry stays, and
// DestroyPU answers ports.Permanent." and DestroyPU: "An attachment gone
// already ... is nothing to do, so DestroyPU is idempotent."
//
// The entry results/net1-sbA-eth0 holds an attachment of network net2
// (networkName and config both net2): a config of another network than
// the entry's. DestroyPU runs net2's DEL, libcni removes
// results/net2-sbA-eth0 (not this file), DestroyPU answers nil, the entry
// stays, and every later DestroyPU runs the DEL again.
func TestAuditEntryOfAnotherNetworkThanItsFileName(t *testing.T) {
	e := newEnv(t)
	p := e.write("net2", "sbA", "uid1", e.netns("a", false), time.Time{})
	misnamed := filepath.Join(e.cache, "results", "net1-sbA-eth0")
	if err := os.Rename(p, misnamed); err != nil {
		t.Fatal(err)
	}
	rt := &fakeRuntime{}
	rt.set(sb("sbA", "uid1", false, time.Now().Add(-time.Hour)))
	c := e.collector(rt, 0)
	err1 := c.DestroyPU(context.Background(), gone("uid1"))
	err2 := c.DestroyPU(context.Background(), gone("uid1"))
	_, statErr := os.Stat(misnamed)
	if statErr == nil && (!ports.IsPermanent(err1) || e.delsOf("sbA") > 0) {
		t.Fatalf("entry %s (of network net2) still there after DestroyPU = %v, then %v; DELs run: %d; want no DEL and a permanent ErrUnusableEntry", misnamed, err1, err2, e.delsOf("sbA"))
	}
}
