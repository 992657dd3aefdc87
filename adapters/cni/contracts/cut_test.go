package contracts_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// docs/sdk/cni-freeing.md:41-43: "an entry cut short (libcni writes it in place) whose cached config is cut too
// keeps its network by no row until it is whole, as a config being written does."
// libcni marshals containerId before config, and config before networkName: an entry cut inside its config (the
// likeliest cut: the config is its largest field but the result) names its network only by its file name.
func TestCutEntryInsideConfigKeepsNetwork(t *testing.T) {
	e := newEnv(t)
	rt := &testcni.Runtime{}
	// The network's config in ConfDir does not say disableGC; the entry being written (of a sandbox being created,
	// another pod's) was added with a config that does.
	e.writeConf("10-net1.conflist", netConf("net1", "", false))
	e.writeEntry("net1", "deadsb1", "eth0", e.goneNetNS("deadsb1"), "uid-gone", netConf("net1", "", false), "10.9.0.5")
	whole := entryJSON("net1", "newsb2", "eth0", e.presentNetNS("newsb2"), "uid-other", netConf("net1", "", true), "10.9.0.6")
	i := bytes.Index(whole, []byte(`"config":"`))
	cut := whole[:i+len(`"config":"`)+12] // cut inside the base64 of its config
	must(t, os.WriteFile(filepath.Join(e.cache, "results", "net1-newsb2-eth0"), cut, 0o600))

	c, err := cni.New(e.opts(rt, (&logRec{}).logger()))
	must(t, err)
	err = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-gone", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-uid-gone"},
		SandboxID: "deadsb1", Reason: ports.ReasonPodGone})
	if d := e.dels(); len(d) > 0 {
		t.Fatalf("network net1 has a cache entry cut short inside its cached config (being written): its attachments are to be kept by no row until it is whole; DestroyPU DELed %v (err %v)", d, err)
	}
	if err == nil {
		t.Fatalf("DestroyPU answered nil, and kept")
	}
	_ = time.Second
}

// The same entry cut after its config (its config whole, "networkName" not yet written): kept, as the doc says.
func TestHoldsCutEntryAfterConfigKeepsNetwork(t *testing.T) {
	e := newEnv(t)
	rt := &testcni.Runtime{}
	e.writeConf("10-net1.conflist", netConf("net1", "", false))
	e.writeEntry("net1", "deadsb1", "eth0", e.goneNetNS("deadsb1"), "uid-gone", netConf("net1", "", false), "10.9.0.5")
	whole := entryJSON("net1", "newsb2", "eth0", e.presentNetNS("newsb2"), "uid-other", netConf("net1", "", true), "10.9.0.6")
	i := bytes.Index(whole, []byte(`"ifName"`))
	must(t, os.WriteFile(filepath.Join(e.cache, "results", "net1-newsb2-eth0"), whole[:i], 0o600))
	c, err := cni.New(e.opts(rt, (&logRec{}).logger()))
	must(t, err)
	err = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-gone", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-uid-gone"},
		SandboxID: "deadsb1", Reason: ports.ReasonPodGone})
	if d := e.dels(); len(d) > 0 {
		t.Fatalf("DELed %v of a disableGC network (err %v)", d, err)
	}
}

// The same cut entry and host-local's reservations of its network: docs/sdk/cni-freeing.md:33-37 and 41-43 keep the
// network's reservations by no row too ("as a config being written does").
func TestCutEntryInsideConfigKeepsReservations(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
	e.writeReservation(e.data, "net1", "10.9.0.7", "oldcontainer", "eth0", time.Hour)
	whole := entryJSON("net1", "newsb2", "eth0", e.presentNetNS("newsb2"), "uid-other", netConf("net1", e.data, true), "10.9.0.6")
	i := bytes.Index(whole, []byte(`"config":"`))
	must(t, os.WriteFile(filepath.Join(e.cache, "results", "net1-newsb2-eth0"), whole[:i+len(`"config":"`)+12], 0o600))
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	sweepOnce(t, c, "10.9.0.7")
	st := testcni.Address(t, c, "10.9.0.7")
	if d := e.dels(); len(d) > 0 {
		t.Fatalf("network net1 has a cache entry cut short inside its cached config: its reservations are kept by no row until it is whole; the sweep DELed %v; page: %+v", d, st.Reservations)
	}
}

// docs/sdk/cni-freeing.md:38-41: "A cache entry that is a link is never used (...), but what it holds and its cached
// config's disableGC count as any entry's". A link to an entry in a directory the collector's pod does not mount (the
// runtime's libcni reads it: its cached config may say disableGC of its network, net1 by its name): the collector
// cannot read it, and DELs net1's other attachments as if it said nothing (the doc keeps every network for a config
// of ConfDir that is such a link, cni-freeing.md:46-49).
func TestCacheLinkToUnseenEntryKeepsNetwork(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", "", false))
	e.writeEntry("net1", "deadsb1", "eth0", e.goneNetNS("deadsb1"), "uid-gone", netConf("net1", "", false), "10.9.0.5")
	must(t, os.Symlink(filepath.Join(e.root, "not-mounted", "net1-othersb-eth0"), filepath.Join(e.cache, "results", "net1-othersb-eth0")))
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	err = destroyGone(t, c, "uid-gone", "deadsb1")
	if d := e.dels(); len(d) > 0 {
		t.Fatalf("net1 has a cache entry (a link to what the collector does not see) whose cached config's disableGC cannot be told; DestroyPU DELed %v (err %v)", d, err)
	}
}

// The same promise (docs/sdk/cni-freeing.md:41-43) at the first instant of libcni's write: os.WriteFile truncates the
// entry to nothing before it writes; the empty entry's network is told by its file name alone.
func TestEmptyEntryBeingWrittenKeepsNetwork(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", "", false))
	e.writeEntry("net1", "deadsb1", "eth0", e.goneNetNS("deadsb1"), "uid-gone", netConf("net1", "", false), "10.9.0.5")
	must(t, os.WriteFile(filepath.Join(e.cache, "results", "net1-newsb2-eth0"), nil, 0o600))
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	err = destroyGone(t, c, "uid-gone", "deadsb1")
	if d := e.dels(); len(d) > 0 {
		t.Fatalf("net1's entry net1-newsb2-eth0 is being written (empty): its cached config is cut; DestroyPU DELed %v (err %v)", d, err)
	}
}
