package meanwhile_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// cni-freeing.md: host-local's reservations are read "(the container ID, `\r\n`, the interface, as host-local
// writes them; a file otherwise written is never touched ...)"; "where host-local releases a container more than once
// in one DEL ..., the releases after the first match nothing and remove those files: a reservation whose container
// such a file names is kept (row 16)".
//
// A network whose chain runs host-local twice (two plugins, each with "ipam": host-local, in one data directory):
// the DEL of a leaked reservation would run both host-locals; the first would release the container's reservations,
// the second then match nothing and remove the file that holds the container's ID alone. It is kept, row 16.
func TestAuditNeverTouchedFileSurvivesTwoHostLocalsInOneChain(t *testing.T) {
	e := newEnv(t, testcni.PluginsDir(t))
	conf := `{"cniVersion":"1.0.0","name":"twice","plugins":[
 {"type":"host-local","ipam":{"type":"host-local","dataDir":"` + e.data + `","ranges":[[{"subnet":"10.1.0.0/24"}]]}},
 {"type":"host-local","ipam":{"type":"host-local","dataDir":"` + e.data + `","ranges":[[{"subnet":"10.2.0.0/24"}]]}}]}`
	testcni.Write(t, filepath.Join(e.conf, "10-twice.conflist"), conf)
	dir := filepath.Join(e.data, "twice")
	reserve(t, filepath.Join(dir, "10.1.0.5"), "deadbeef\r\neth0")
	reserve(t, filepath.Join(dir, "10.2.0.5"), "deadbeef\r\neth0")
	legacy := filepath.Join(dir, "10.1.0.9")
	reserve(t, legacy, "deadbeef") // otherwise written: the ID alone (never touched, as the doc says)

	o := &obs{}
	c := e.collector(t, func(op *cni.Options) { op.Observer = o })
	kept := filepath.Join(dir, "10.1.0.5")
	resyncUntil(t, c, 20*time.Second, func() bool { return rowOf(t, c, filepath.Base(kept)) == 16 })
	if row := rowOf(t, c, filepath.Base(kept)); row != 16 || !testcni.Exists(kept) || len(o.freedTimes()) > 0 {
		t.Fatalf("the reservation is not kept by row 16 (row %d, held %v, %d freed)", row, testcni.Exists(kept), len(o.freedTimes()))
	}
	if !testcni.Exists(legacy) {
		t.Errorf("%s, a file holding the container's ID alone (never touched, cni-freeing.md:69-70), was removed", legacy)
	}
}

// The same with the chain's two host-locals in two data directories: the reservation leaked in the first (the
// second's ADD never ran: containerd#12130), an ID-alone file in the second.
func TestAuditNeverTouchedFileSurvivesTwoHostLocalDataDirs(t *testing.T) {
	e := newEnv(t, testcni.PluginsDir(t))
	data2 := filepath.Join(filepath.Dir(e.data), "networks2")
	conf := `{"cniVersion":"1.0.0","name":"two","plugins":[
 {"type":"host-local","ipam":{"type":"host-local","dataDir":"` + e.data + `","ranges":[[{"subnet":"10.1.0.0/24"}]]}},
 {"type":"host-local","ipam":{"type":"host-local","dataDir":"` + data2 + `","ranges":[[{"subnet":"10.2.0.0/24"}]]}}]}`
	testcni.Write(t, filepath.Join(e.conf, "10-two.conflist"), conf)
	leaked := filepath.Join(e.data, "two", "10.1.0.5")
	reserve(t, leaked, "deadbeef\r\neth0")
	legacy := filepath.Join(data2, "two", "10.2.0.9")
	reserve(t, legacy, "deadbeef")

	o := &obs{}
	c := e.collector(t, func(op *cni.Options) { op.Observer = o })
	kept := leaked
	resyncUntil(t, c, 20*time.Second, func() bool { return rowOf(t, c, filepath.Base(kept)) == 16 })
	if row := rowOf(t, c, filepath.Base(kept)); row != 16 || !testcni.Exists(kept) || len(o.freedTimes()) > 0 {
		t.Fatalf("the reservation is not kept by row 16 (row %d, held %v, %d freed)", row, testcni.Exists(kept), len(o.freedTimes()))
	}
	if !testcni.Exists(legacy) {
		t.Errorf("%s, a file holding the container's ID alone (never touched, cni-freeing.md:69-70), was removed", legacy)
	}
}

// The same with one host-local of two ranges (dual stack, the common case): host-local's DEL releases the container
// once per range; the first release removes both of its files, the second matches nothing and falls back to the files
// that hold the container's ID alone.
func TestAuditNeverTouchedFileSurvivesDualStackHostLocal(t *testing.T) {
	e := newEnv(t, testcni.PluginsDir(t))
	conf := `{"cniVersion":"1.0.0","name":"dual","plugins":[
 {"type":"host-local","ipam":{"type":"host-local","dataDir":"` + e.data + `","ranges":[[{"subnet":"10.1.0.0/24"}],[{"subnet":"fd00::/64"}]]}}]}`
	testcni.Write(t, filepath.Join(e.conf, "10-dual.conflist"), conf)
	dir := filepath.Join(e.data, "dual")
	reserve(t, filepath.Join(dir, "10.1.0.5"), "deadbeef\r\neth0")
	reserve(t, filepath.Join(dir, "fd00::5"), "deadbeef\r\neth0")
	legacy := filepath.Join(dir, "10.1.0.9")
	reserve(t, legacy, "deadbeef")

	o := &obs{}
	c := e.collector(t, func(op *cni.Options) { op.Observer = o })
	kept := filepath.Join(dir, "10.1.0.5")
	resyncUntil(t, c, 20*time.Second, func() bool { return rowOf(t, c, filepath.Base(kept)) == 16 })
	if row := rowOf(t, c, filepath.Base(kept)); row != 16 || !testcni.Exists(kept) || len(o.freedTimes()) > 0 {
		t.Fatalf("the reservation is not kept by row 16 (row %d, held %v, %d freed)", row, testcni.Exists(kept), len(o.freedTimes()))
	}
	if !testcni.Exists(legacy) {
		t.Errorf("%s, a file holding the container's ID alone (never touched, cni-freeing.md:69-70), was removed", legacy)
	}
}

// The same chain, its second data directory's network directory a link (to another disk): host-local's DEL does not
// walk through it, so what it holds, a directory named as an address (which a DEL walking it would walk into), keeps
// nothing: the first data directory's leaked reservation is freed (row 18), and the linked directory's content stays.
func TestALinkedNetworkDirectoryOfTheChainKeepsNoReservation(t *testing.T) {
	e := newEnv(t, testcni.PluginsDir(t))
	data2 := filepath.Join(filepath.Dir(e.data), "networks2")
	conf := `{"cniVersion":"1.0.0","name":"two","plugins":[
 {"type":"host-local","ipam":{"type":"host-local","dataDir":"` + e.data + `","ranges":[[{"subnet":"10.1.0.0/24"}]]}},
 {"type":"host-local","ipam":{"type":"host-local","dataDir":"` + data2 + `","ranges":[[{"subnet":"10.2.0.0/24"}]]}}]}`
	testcni.Write(t, filepath.Join(e.conf, "10-two.conflist"), conf)
	leaked := filepath.Join(e.data, "two", "10.1.0.5")
	reserve(t, leaked, "deadbeef\r\neth0")
	disk := filepath.Join(filepath.Dir(e.data), "disk", "two")
	inside := filepath.Join(disk, "10.2.0.50")
	if err := os.MkdirAll(inside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(data2, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(disk, filepath.Join(data2, "two")); err != nil {
		t.Fatal(err)
	}

	o := &obs{}
	c := e.collector(t, func(op *cni.Options) { op.Observer = o })
	resyncUntil(t, c, 20*time.Second, func() bool { return !testcni.Exists(leaked) })
	if testcni.Exists(leaked) {
		t.Fatalf("the leaked reservation is kept (row %d) by what a linked network directory, which no DEL walks, holds", rowOf(t, c, filepath.Base(leaked)))
	}
	if !testcni.Exists(inside) {
		t.Errorf("%s, behind the link, was removed", inside)
	}
}
