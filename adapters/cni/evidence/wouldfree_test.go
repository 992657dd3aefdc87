package evidence_test

import (
	"slices"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// doc: WouldFree "returns the host-local reservations that the last resync of a
// dry run (Options.DryRun) found it would free, in the order of their files".
// Two containers, one of which holds two addresses, interleaved by file name.
func TestAuditWouldFreeInOrderOfTheirFiles(t *testing.T) {
	e := newEnv(t)
	e.writeConf(t, "10-net1.conflist", hostLocalConf("net1", e.data, "10.0.0.0/24", false))
	old := time.Now().Add(-time.Hour)
	e.reserve(t, "net1", "10.0.0.1", "c1", "eth0", old)
	e.reserve(t, "net1", "10.0.0.2", "c2", "eth0", old)
	e.reserve(t, "net1", "10.0.0.3", "c1", "eth0", old)
	o := e.opts(&fakeRuntime{})
	o.DryRun = true
	c, err := cni.New(o)
	if err != nil {
		t.Fatal(err)
	}
	runRound(t, c, func() bool { return len(c.WouldFree()) == 3 })
	var got []string
	for _, r := range c.WouldFree() {
		got = append(got, r.Path())
	}
	if !slices.IsSorted(got) {
		t.Fatalf("WouldFree is not in the order of the reservations' files: %q", got)
	}
}
