package contracts_test

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// docs/sdk/cni-freeing.md:46-49: "While a file of ConfDir, or of a network's own directory of plugin configs
// (...), cannot be read (its permissions, a read that fails, or a link into a directory the collector does not see,
// or that loops), nothing is, for it may say so of any network." A named pipe named as a config in ConfDir is read by
// the runtime's libcni (whatever a writer feeds it: a network with disableGC, say) and cannot be read by the
// collector; the doc keeps every network for a FIFO in a network's own directory (row 13) too.
func TestConfDirFIFOIsPassedOver(t *testing.T) {
	e := newEnv(t)
	must(t, unix.Mkfifo(filepath.Join(e.conf, "00-fed.conflist"), 0o644))
	e.writeEntry("net1", "deadsb1", "eth0", e.goneNetNS("deadsb1"), "uid-gone", netConf("net1", "", false), "10.9.0.5")
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	err = destroyGone(t, c, "uid-gone", "deadsb1")
	if d := e.dels(); len(d) > 0 {
		t.Fatalf("a config file of ConfDir that cannot be read (a named pipe) may say disableGC of any network: nothing is to be decided; DestroyPU DELed %v (err %v)", d, err)
	}
}

// Holds: a config file of ConfDir that is a link into a directory the collector does not see keeps every network.
func TestHoldsConfDirLinkToNothingKeepsAll(t *testing.T) {
	e := newEnv(t)
	must(t, unix.Symlink(filepath.Join(e.root, "not-mounted", "x.conflist"), filepath.Join(e.conf, "00-x.conflist")))
	e.writeEntry("net1", "deadsb1", "eth0", e.goneNetNS("deadsb1"), "uid-gone", netConf("net1", "", false), "10.9.0.5")
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	err = destroyGone(t, c, "uid-gone", "deadsb1")
	if d := e.dels(); len(d) > 0 {
		t.Fatalf("DELed %v (err %v)", d, err)
	}
}
