package contracts_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"

	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/internal/testnode"
)

// realPlugins holds the reference plugins, built by make test (CNI_PLUGINS_DIR).
var realPlugins = os.Getenv("CNI_PLUGINS_DIR")

// realHostLocalConf is a conflist of network name whose one plugin is the real host-local, keeping its
// reservations in dataDir.
func realHostLocalConf(name, dataDir string) []byte {
	c := map[string]any{"cniVersion": "1.0.0", "name": name, "plugins": []any{map[string]any{
		"type": "host-local",
		"ipam": map[string]any{"type": "host-local", "dataDir": dataDir, "ranges": []any{[]any{map[string]any{"subnet": "10.9.0.0/16"}}}},
	}}}
	b, _ := json.Marshal(c)
	return b
}

func realEnv(t *testing.T) *env {
	if _, err := os.Stat(filepath.Join(realPlugins, "host-local")); realPlugins == "" || err != nil {
		testnode.Unavailable(t, "no reference plugins in CNI_PLUGINS_DIR (make test builds them): %v", err)
	}
	e := newEnv(t)
	return e
}

// docs/sdk/cni-freeing.md:80 (row 16): "host-local's DEL of it would remove a file the collector never touches (a
// link in the network's directory naming its container), or may (a FIFO, a device, a directory, or a link whose
// content cannot be told, there) | keep". host-local's DEL walks the whole network directory and removes every file
// naming the container and interface, whatever its name: a link there named as no address is removed too.
func TestReservationLinkNamedNoAddressIsRemoved(t *testing.T) {
	e := realEnv(t)
	e.writeConf("10-net1.conflist", realHostLocalConf("net1", e.data))
	e.writeReservation(e.data, "net1", "10.9.0.7", "deadcontainer", "eth0", time.Hour)
	// Someone's file elsewhere, naming the container, linked into the network's directory under a name that is
	// no address: the collector never touches it.
	outside := filepath.Join(e.root, "outside-record")
	must(t, os.WriteFile(outside, []byte("deadcontainer\r\neth0"), 0o644))
	link := filepath.Join(e.data, "net1", "record")
	must(t, os.Symlink(outside, link))

	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.PluginDirs = []string{realPlugins}
	c, err := cni.New(o)
	must(t, err)
	sweepOnce(t, c, "10.9.0.7")
	if _, err := os.Lstat(link); err != nil {
		st := testcni.Address(t, c, "10.9.0.7")
		t.Fatalf("the link %s in the network's directory, naming the reservation's container, is one the collector never touches: the reservation is to be kept (row 16); the collector's DEL removed it (%v); page: %+v", link, err, st.Reservations)
	}
}

// The same for a directory in the network's directory named as no address: host-local's DEL walks into it and
// removes the files there naming the container.
func TestReservationDirectoryNamedNoAddressIsWalked(t *testing.T) {
	e := realEnv(t)
	e.writeConf("10-net1.conflist", realHostLocalConf("net1", e.data))
	e.writeReservation(e.data, "net1", "10.9.0.7", "deadcontainer", "eth0", time.Hour)
	sub := filepath.Join(e.data, "net1", "archive")
	must(t, os.MkdirAll(sub, 0o755))
	kept := filepath.Join(sub, "10.9.0.7")
	must(t, os.WriteFile(kept, []byte("deadcontainer\r\neth0"), 0o644))

	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.PluginDirs = []string{realPlugins}
	c, err := cni.New(o)
	must(t, err)
	sweepOnce(t, c, "10.9.0.7")
	if _, err := os.Lstat(kept); err != nil {
		st := testcni.Address(t, c, "10.9.0.7")
		t.Fatalf("a directory in the network's directory keeps its reservations (row 16: a directory there); the collector's DEL removed %s (%v); page: %+v", kept, err, st.Reservations)
	}
}

// Holds: the same link named as an address is kept (row 16).
func TestHoldsReservationLinkNamedAddressKeeps(t *testing.T) {
	e := realEnv(t)
	e.writeConf("10-net1.conflist", realHostLocalConf("net1", e.data))
	e.writeReservation(e.data, "net1", "10.9.0.7", "deadcontainer", "eth0", time.Hour)
	outside := filepath.Join(e.root, "outside-record")
	must(t, os.WriteFile(outside, []byte("deadcontainer\r\neth0"), 0o644))
	link := filepath.Join(e.data, "net1", "10.9.0.99")
	must(t, os.Symlink(outside, link))
	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.PluginDirs = []string{realPlugins}
	c, err := cni.New(o)
	must(t, err)
	sweepOnce(t, c, "10.9.0.7")
	if _, err := os.Lstat(link); err != nil {
		t.Fatalf("link removed: %v", err)
	}
}

// docs/sdk/cni-freeing.md:63 reads a reservation as "the container ID on line 1, the interface on line 2"; row 16
// (:80): "a file never touched stays so"; the page tells a file "that does not read as host-local's" as never
// touched (:110-111). A reservation whose lines are split by "\n" alone reads as one, but host-local's DEL matches
// "ID\r\nIF" only: finding none, it falls back to removing the files holding the container ID alone, the one-line
// file the collector tells as never touched.
func TestReservationDelRemovesNeverTouchedOneLineFile(t *testing.T) {
	e := realEnv(t)
	e.writeConf("10-net1.conflist", realHostLocalConf("net1", e.data))
	d := filepath.Join(e.data, "net1")
	must(t, os.MkdirAll(d, 0o755))
	lf := filepath.Join(d, "10.9.0.7")
	must(t, os.WriteFile(lf, []byte("deadcontainer\neth0"), 0o644))
	one := filepath.Join(d, "10.9.0.8")
	must(t, os.WriteFile(one, []byte("deadcontainer"), 0o644))
	old := time.Now().Add(-time.Hour)
	must(t, os.Chtimes(lf, old, old))
	must(t, os.Chtimes(one, old, old))

	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.PluginDirs = []string{realPlugins}
	c, err := cni.New(o)
	must(t, err)
	sweepOnce(t, c, "10.9.0.7", "10.9.0.8")
	before := testcni.Address(t, c, "10.9.0.8")
	if _, err := os.Lstat(one); err != nil {
		t.Fatalf("%s, told never touched (%+v), was removed by the collector's DEL of container deadcontainer: %v; 10.9.0.7: %+v",
			one, before.Reservations, err, testcni.Address(t, c, "10.9.0.7").Reservations)
	}
}

// The same with host-local's own files only: a dual-stack container's two reservations (one DEL releases both), and
// a one-line reservation of the container (host-local before v0.8), told never touched. The second DEL, of a
// reservation the first released, finds no "ID\r\nIF" and falls back to removing the one-line file.
func TestReservationSecondDelRemovesNeverTouchedOneLineFile(t *testing.T) {
	e := realEnv(t)
	e.writeConf("10-net1.conflist", realHostLocalConf("net1", e.data))
	e.writeReservation(e.data, "net1", "10.9.0.7", "deadcontainer", "eth0", time.Hour)
	e.writeReservation(e.data, "net1", "fd00::7", "deadcontainer", "eth0", time.Hour)
	one := filepath.Join(e.data, "net1", "10.9.0.8")
	must(t, os.WriteFile(one, []byte("deadcontainer"), 0o644))
	old := time.Now().Add(-time.Hour)
	must(t, os.Chtimes(one, old, old))

	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.PluginDirs = []string{realPlugins}
	c, err := cni.New(o)
	must(t, err)
	sweepOnce(t, c, "10.9.0.7", "fd00::7", "10.9.0.8")
	if _, err := os.Lstat(one); err != nil {
		t.Fatalf("%s, told never touched (%+v), was removed by the collector's DELs of container deadcontainer: %v",
			one, testcni.Address(t, c, "10.9.0.8").Reservations, err)
	}
}

// Holds: a directory named as an address in the network's directory keeps the network's reservations (row 16).
func TestHoldsReservationDirectoryNamedAddressKeeps(t *testing.T) {
	e := realEnv(t)
	e.writeConf("10-net1.conflist", realHostLocalConf("net1", e.data))
	e.writeReservation(e.data, "net1", "10.9.0.7", "deadcontainer", "eth0", time.Hour)
	sub := filepath.Join(e.data, "net1", "10.9.0.99")
	must(t, os.MkdirAll(sub, 0o755))
	kept := filepath.Join(sub, "x")
	must(t, os.WriteFile(kept, []byte("deadcontainer\r\neth0"), 0o644))
	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.PluginDirs = []string{realPlugins}
	c, err := cni.New(o)
	must(t, err)
	sweepOnce(t, c, "10.9.0.7")
	if _, err := os.Lstat(kept); err != nil {
		t.Fatalf("removed: %v", err)
	}
}

// The same for host-local's own names, lock and last_reserved_ip.*: they are no reservations, and host-local's DEL
// walks them as any file of the directory. One naming the container is kept, and so is the reservation (row 16);
// a directory of that name is walked into, and keeps it too.
func TestHostLocalsOwnNamesAreWalkedByItsDEL(t *testing.T) {
	for _, tc := range []struct {
		name string
		dir  bool
	}{{"lock", false}, {"last_reserved_ip.0", false}, {"last_reserved_ip.0", true}} {
		t.Run(fmt.Sprintf("%s dir=%v", tc.name, tc.dir), func(t *testing.T) {
			e := realEnv(t)
			e.writeConf("10-net1.conflist", realHostLocalConf("net1", e.data))
			e.writeReservation(e.data, "net1", "10.9.0.7", "deadcontainer", "eth0", time.Hour)
			kept := filepath.Join(e.data, "net1", tc.name)
			if tc.dir {
				must(t, os.MkdirAll(kept, 0o755))
				kept = filepath.Join(kept, "record")
			}
			must(t, os.WriteFile(kept, []byte("deadcontainer\r\neth0"), 0o644))
			o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
			o.PluginDirs = []string{realPlugins}
			c, err := cni.New(o)
			must(t, err)
			sweepOnce(t, c, "10.9.0.7")
			if _, err := os.Lstat(kept); err != nil {
				t.Fatalf("%s, naming the reservation's container, is never touched: the collector's DEL removed it (%v); page: %+v", kept, err, testcni.Address(t, c, "10.9.0.7").Reservations)
			}
		})
	}
}

// Row 16 keeps a reservation whose DEL would remove a file the collector never touches "in the network's directory":
// host-local's DEL walks its network's directory in the data directories of its own config only. A file naming the
// container in another data directory, under a directory of the same network name (another config's), is walked by
// no DEL of the reservation's network, and keeps nothing: the dead container's reservation is freed (row 18), and the
// other data directory's file stays.
func TestAFileInAnotherDataDirectoryKeepsNoReservation(t *testing.T) {
	e := realEnv(t)
	other := filepath.Join(e.root, "data2")
	e.writeConf("10-net1.conflist", realHostLocalConf("net1", e.data))
	e.writeConf("20-net2.conflist", realHostLocalConf("net2", other))
	e.writeReservation(e.data, "net1", "10.9.0.7", "deadcontainer", "eth0", time.Hour)
	must(t, os.MkdirAll(filepath.Join(other, "net1"), 0o755))
	outside := filepath.Join(e.root, "outside-record")
	must(t, os.WriteFile(outside, []byte("deadcontainer\r\neth0"), 0o644))
	link := filepath.Join(other, "net1", "record")
	must(t, os.Symlink(outside, link))
	archive := filepath.Join(other, "net1", "10.9.0.50")
	must(t, os.MkdirAll(archive, 0o755)) // a directory there: a DEL walking it might remove what it holds

	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.PluginDirs = []string{realPlugins}
	c, err := cni.New(o)
	must(t, err)
	sweepOnce(t, c, "10.9.0.7")
	res := filepath.Join(e.data, "net1", "10.9.0.7")
	if _, err := os.Lstat(res); err == nil {
		st := testcni.Address(t, c, "10.9.0.7")
		t.Fatalf("the dead container's reservation %s is kept: files in another data directory, which no DEL of net1 walks, were taken as ones its DEL would remove (row 16); page: %+v", res, st.Reservations)
	}
	for _, f := range []string{link, archive} {
		if _, err := os.Lstat(f); err != nil {
			t.Errorf("%s, in another data directory, was removed: %v", f, err)
		}
	}
}

// The same for a network's directory that is a link, in another data directory: no DEL walks through it, so what it
// holds keeps no reservation of the other data directory.
func TestALinkedNetworkDirectoryElsewhereKeepsNoReservation(t *testing.T) {
	e := realEnv(t)
	other := filepath.Join(e.root, "data2")
	e.writeConf("10-net1.conflist", realHostLocalConf("net1", e.data))
	e.writeConf("20-net2.conflist", realHostLocalConf("net2", other))
	e.writeReservation(e.data, "net1", "10.9.0.7", "deadcontainer", "eth0", time.Hour)
	target := filepath.Join(e.root, "disk", "net1")
	must(t, os.MkdirAll(filepath.Join(target, "10.9.0.60"), 0o755)) // a directory, named as an address
	must(t, os.MkdirAll(other, 0o755))
	must(t, os.Symlink(target, filepath.Join(other, "net1")))

	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.PluginDirs = []string{realPlugins}
	c, err := cni.New(o)
	must(t, err)
	sweepOnce(t, c, "10.9.0.7")
	if _, err := os.Lstat(filepath.Join(e.data, "net1", "10.9.0.7")); err == nil {
		st := testcni.Address(t, c, "10.9.0.7")
		t.Fatalf("the dead container's reservation is kept by what a linked network directory of another data directory holds; page: %+v", st.Reservations)
	}
	if _, err := os.Lstat(filepath.Join(target, "10.9.0.60")); err != nil {
		t.Errorf("the linked directory's content was removed: %v", err)
	}
}
