package contracts_test

import (
	"testing"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// docs/sdk/cni-freeing.md:30-33: "an attachment of a network whose config says "disableGC": true (..., or any file
// of ConfDir that names the network, by its own top-level "name") is never DELed." A whole file that does not load
// (no plugin yet), naming net1 by its top-level "name" and saying disableGC, with a key "NAME" beside it (which
// libcni, reading "name" exactly, ignores): the collector reads the name case-insensitively and keeps "zzz" instead.
func TestConfDisableGCNamedWithOtherCaseKey(t *testing.T) {
	e := newEnv(t)
	e.writeConf("05-net1.conflist", []byte(`{"cniVersion":"1.0.0","name":"net1","NAME":"zzz","disableGC":true,"plugins":[]}`))
	e.writeEntry("net1", "deadsb1", "eth0", e.goneNetNS("deadsb1"), "uid-gone", netConf("net1", "", false), "10.9.0.5")
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	err = destroyGone(t, c, "uid-gone", "deadsb1")
	if d := e.dels(); len(d) > 0 {
		t.Fatalf("05-net1.conflist names net1 by its top-level \"name\" and says disableGC: net1 is never DELed; DestroyPU DELed %v (err %v)", d, err)
	}
}

// Holds: the same file without the "NAME" key keeps net1.
func TestHoldsConfDisableGCInFileThatDoesNotLoad(t *testing.T) {
	e := newEnv(t)
	e.writeConf("05-net1.conflist", []byte(`{"cniVersion":"1.0.0","name":"net1","disableGC":true,"plugins":[]}`))
	e.writeEntry("net1", "deadsb1", "eth0", e.goneNetNS("deadsb1"), "uid-gone", netConf("net1", "", false), "10.9.0.5")
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	err = destroyGone(t, c, "uid-gone", "deadsb1")
	if d := e.dels(); len(d) > 0 {
		t.Fatalf("DELed %v (err %v)", d, err)
	}
}
