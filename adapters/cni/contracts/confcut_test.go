package contracts_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

func destroyGone(t *testing.T, c *cni.Collector, uid, sandboxID string) error {
	t.Helper()
	return c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: uid, Pod: types.NamespacedName{Namespace: "ns", Name: "pod-" + uid},
		SandboxID: sandboxID, Reason: ports.ReasonPodGone})
}

// docs/sdk/cni-freeing.md:33-37: "A file of ConfDir being written (not whole JSON yet, ...) is not read until it is
// whole: the network it names keeps its attachments and its reservations by no row ...; one whose top-level name
// cannot be told yet keeps every network." libcni reads the last of two top-level "name" keys. A file cut inside a
// second top-level key's name (`"na`) may be naming its network again: its network cannot be told yet.
func TestConfCutInsideSecondNameKey(t *testing.T) {
	e := newEnv(t)
	// Whole, it will be {"cniVersion":"1.0.0","name":"net1","name":"net2","disableGC":true,...}: network net2.
	e.writeConf("05-being-written.conflist", []byte(`{"cniVersion":"1.0.0","name":"net1","na`))
	e.writeEntry("net2", "deadsb1", "eth0", e.goneNetNS("deadsb1"), "uid-gone", netConf("net2", "", false), "10.9.0.5")
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	err = destroyGone(t, c, "uid-gone", "deadsb1")
	if d := e.dels(); len(d) > 0 {
		t.Fatalf("a config of ConfDir cut inside a second top-level key (which may be \"name\") names no network yet: every network is to be kept; DestroyPU DELed %v (err %v)", d, err)
	}
}

// Holds: cut inside the second "name"'s value keeps every network.
func TestHoldsConfCutInsideSecondNameValue(t *testing.T) {
	e := newEnv(t)
	e.writeConf("05-being-written.conflist", []byte(`{"cniVersion":"1.0.0","name":"net1","name":"ne`))
	e.writeEntry("net2", "deadsb1", "eth0", e.goneNetNS("deadsb1"), "uid-gone", netConf("net2", "", false), "10.9.0.5")
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	err = destroyGone(t, c, "uid-gone", "deadsb1")
	if d := e.dels(); len(d) > 0 {
		t.Fatalf("DELed %v (err %v)", d, err)
	}
}
