package contracts_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// go doc Options.ConfDir (collector.go:85-91): "A directory that does not exist holds no config; a path that is there
// and no directory (a file, a loop of links, a link to nothing, whose target may hold a config) is invalid."
// New: "when ConfDir ... is there and is not a directory (a file, a loop of links, a link to nothing: every read of it
// would fail)". A ConfDir reached through a link to nothing the collector sees (its parent, /etc/cni here, links into
// a directory the collector's pod does not mount, where the runtime reads the configs) is taken as a directory that
// does not exist: no config, no disableGC, and every network's attachments are DELed.
func TestConfDirBelowLinkToNothing(t *testing.T) {
	e := newEnv(t)
	etc := filepath.Join(e.root, "etc-cni")
	must(t, os.Symlink(filepath.Join(e.root, "not-mounted", "cni"), etc))
	e.writeEntry("net1", "deadsb1", "eth0", e.goneNetNS("deadsb1"), "uid-gone", netConf("net1", "", false), "10.9.0.5")
	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.ConfDir = filepath.Join(etc, "net.d")
	c, err := cni.New(o)
	if errors.Is(err, cni.ErrInvalidOptions) {
		return // refused, as a link to nothing is
	}
	must(t, err)
	err = destroyGone(t, c, "uid-gone", "deadsb1")
	if d := e.dels(); len(d) > 0 {
		t.Fatalf("ConfDir %s is reached through a link to nothing the collector sees (whose target may hold a config saying disableGC): New accepted it as holding no config, and DestroyPU DELed %v (err %v)", o.ConfDir, d, err)
	}
}

// Holds: ConfDir itself a link to nothing is refused.
func TestHoldsConfDirLinkToNothingRefused(t *testing.T) {
	e := newEnv(t)
	link := filepath.Join(e.root, "net.d")
	must(t, os.Symlink(filepath.Join(e.root, "not-mounted", "net.d"), link))
	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.ConfDir = link
	if _, err := cni.New(o); !errors.Is(err, cni.ErrInvalidOptions) {
		t.Fatalf("New: %v", err)
	}
}

// docs/sdk/cni-freeing.md:113-114: "`unread` also names ... the data directories, or network directories in them, the
// last round could not read." A network's host-local data directory reached through a link to nothing the collector
// sees (its parent links into what its pod does not mount, where host-local keeps reservations) is taken as holding
// none, and the page's unread does not name it (a data directory that is itself such a link is named).
func TestDataDirBelowLinkToNothingIsUnread(t *testing.T) {
	e := newEnv(t)
	varlib := filepath.Join(e.root, "varlib-cni")
	must(t, os.Symlink(filepath.Join(e.root, "not-mounted", "cni"), varlib))
	dataDir := filepath.Join(varlib, "networks")
	e.writeConf("10-net1.conflist", netConf("net1", dataDir, false))
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	ctxSweep(t, c)
	st := testcni.Address(t, c, "10.9.0.7")
	for _, u := range st.Unread {
		if strings.Contains(u, dataDir) {
			return
		}
	}
	t.Fatalf("the data directory %s could not be read (below a link to nothing the collector sees); unread: %q", dataDir, st.Unread)
}

// Holds: a data directory that is itself a link to nothing is named in unread.
func TestHoldsDataDirLinkToNothingIsUnread(t *testing.T) {
	e := newEnv(t)
	dataDir := filepath.Join(e.root, "networks")
	must(t, os.Symlink(filepath.Join(e.root, "not-mounted", "networks"), dataDir))
	e.writeConf("10-net1.conflist", netConf("net1", dataDir, false))
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	ctxSweep(t, c)
	st := testcni.Address(t, c, "10.9.0.7")
	for _, u := range st.Unread {
		if strings.Contains(u, dataDir) {
			return
		}
	}
	t.Fatalf("unread: %q", st.Unread)
}

// docs/sdk/cni-freeing.md:126-127: "no host-local reservation of a sandbox the runtime lists, ready or not, or whose
// cache entry exists, is freed". libcni's results directory a link to nothing the collector sees (into what its pod
// does not mount, where the runtime's libcni keeps the entries): read as a cache that holds nothing, and a
// reservation whose container's entry is there is freed.
func TestResultsLinkToNothingFreesCachedReservation(t *testing.T) {
	e := newEnv(t)
	results := filepath.Join(e.cache, "results")
	must(t, os.Remove(results))
	hidden := filepath.Join(e.root, "not-mounted", "results")
	must(t, os.Symlink(hidden, results))
	e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
	e.writeReservation(e.data, "net1", "10.9.0.7", "cachedsb", "eth0", time.Hour)
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	// The runtime's view: the entry of cachedsb is there (the collector's pod does not see it).
	must(t, os.MkdirAll(hidden, 0o755))
	e.writeEntry("net1", "cachedsb", "eth0", e.presentNetNS("cachedsb"), "uid-x", netConf("net1", e.data, false), "10.9.0.7")
	must(t, os.Rename(hidden, hidden+".unseen"))
	ctxSweep(t, c) // the round cannot read the cache: it decides nothing
	if d := e.dels(); len(d) > 0 {
		t.Fatalf("libcni's results directory is a link the collector cannot follow (its entries, cachedsb's among them, cannot be told); the sweep DELed %v; page: %+v", d, testcni.Address(t, c, "10.9.0.7"))
	}
}

// Holds: a ConfDir that is a file is refused by New (go doc Options.ConfDir: "a path that is there and no directory
// (a file, ...) is invalid").
func TestHoldsConfDirFileRefused(t *testing.T) {
	e := newEnv(t)
	f := filepath.Join(e.root, "conf-file")
	must(t, os.WriteFile(f, nil, 0o644))
	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.ConfDir = f
	if _, err := cni.New(o); !errors.Is(err, cni.ErrInvalidOptions) {
		t.Fatalf("New: %v", err)
	}
}
