package edges_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/podsweeper/podsweeper/internal/testcni"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestALinkedCacheEntrysDisableGCKeepsItsReservations: the same link as TestALinkedCacheEntrysDisableGCKeepsItsNetwork, for the sweep
// of host-local's reservations (row 13 reads "a config of its network says disableGC"; the freeing table's
// "whatever the row" covers any entry of the cache of that network): net1's leaked reservation is DELed.
func TestALinkedCacheEntrysDisableGCKeepsItsReservations(t *testing.T) {
	e := newEnv(t)
	e.sweepPlugin("")
	e.netConf("10-net1.conflist", "net1", "")
	target := filepath.Join(t.TempDir(), "net1-bbb-eth0")
	testcni.Write(t, target, string(e.entryJSON(entry{Network: "net1", ID: "bbb", UID: "uid-b", NS: "ns", Name: "pod-b", IP: "10.1.0.21", Config: e.disableGCConf()})))
	if err := os.Symlink(target, filepath.Join(e.cache, "results", "net1-bbb-eth0")); err != nil {
		t.Fatal(err)
	}
	p := e.reservation("net1", "10.1.0.40", "zzz")
	l := &logs{}
	o := e.opts(l)
	o.Runtime = &countingRuntime{f: func(context.Context, int) ([]*runtimeapi.PodSandbox, error) { return nil, nil }}
	c := newCollector(t, o)
	resyncUntil(t, c, func() bool {
		st := testcni.Address(t, c, "10.1.0.40")
		return len(st.Reservations) == 1 && st.Reservations[0].State != "to free"
	})
	if _, err := os.Stat(p); err != nil {
		st := testcni.Address(t, c, "10.1.0.40")
		t.Errorf("net1's reservation was DELed though an entry of net1's cache (a link) says disableGC: %s", dump(st.Reservations))
	}
}
