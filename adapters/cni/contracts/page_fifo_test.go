package contracts_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// docs/sdk/cni-freeing.md:113-114: "`unread` also names the cache entries it could not read (cut short, a link to
// nothing it sees)"; addresses.go AddressStatus.Unread: "what the Collector could not read for this answer ... or
// libcni's cache, whose attachments then go untold". A named pipe in results/ under libcni's name of an entry is
// never read (its attachment, whatever address it holds, goes untold), and the page does not name it; a link to the
// same pipe is named.
func TestPageUnreadNamesFIFOEntry(t *testing.T) {
	e := newEnv(t)
	must(t, unix.Mkfifo(filepath.Join(e.cache, "results", "net1-fifosb-eth0"), 0o600))
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	st := testcni.Address(t, c, "10.9.0.5")
	for _, u := range st.Unread {
		if strings.Contains(u, "net1-fifosb-eth0") {
			return
		}
	}
	t.Fatalf("the cache entry net1-fifosb-eth0 (a named pipe) was not read, and the page's unread does not name it: %q", st.Unread)
}

// Holds: a link in results/ to a named pipe is named in unread.
func TestHoldsPageUnreadNamesLinkToFIFOEntry(t *testing.T) {
	e := newEnv(t)
	p := filepath.Join(e.root, "pipe")
	must(t, unix.Mkfifo(p, 0o600))
	must(t, unix.Symlink(p, filepath.Join(e.cache, "results", "net1-fifosb-eth0")))
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	st := testcni.Address(t, c, "10.9.0.5")
	for _, u := range st.Unread {
		if strings.Contains(u, "net1-fifosb-eth0") {
			return
		}
	}
	t.Fatalf("unread %q", st.Unread)
}

// adapters/cni/collector.go:455-457 (go doc DestroyPU): "An entry of the PU that cannot be read or would run no
// plugin makes an error wrapping ErrUnusableEntry, marked ports.Permanent once every other attachment is freed."
// A named pipe in results/ under libcni's name of an entry of the PU's sandbox cannot be read: DestroyPU answers
// nil, as if the pod held nothing more.
func TestDestroyPUFIFOEntryOfPUIsUnusable(t *testing.T) {
	e := newEnv(t)
	e.writeEntry("net1", "deadsb1", "eth0", e.goneNetNS("deadsb1"), "uid-gone", netConf("net1", "", false), "10.9.0.5")
	must(t, unix.Mkfifo(filepath.Join(e.cache, "results", "net2-deadsb1-eth1"), 0o600))
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	err = destroyGone(t, c, "uid-gone", "deadsb1")
	if !errors.Is(err, cni.ErrUnusableEntry) {
		t.Fatalf("the PU's entry net2-deadsb1-eth1 cannot be read (a named pipe): DestroyPU is to wrap ErrUnusableEntry; it answered %v (DELs %v)", err, e.dels())
	}
}

// Holds: the same entry as a link to a named pipe makes ErrUnusableEntry.
func TestHoldsDestroyPULinkToFIFOEntryOfPUIsUnusable(t *testing.T) {
	e := newEnv(t)
	e.writeEntry("net1", "deadsb1", "eth0", e.goneNetNS("deadsb1"), "uid-gone", netConf("net1", "", false), "10.9.0.5")
	p := filepath.Join(e.root, "pipe")
	must(t, unix.Mkfifo(p, 0o600))
	must(t, unix.Symlink(p, filepath.Join(e.cache, "results", "net2-deadsb1-eth1")))
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	err = destroyGone(t, c, "uid-gone", "deadsb1")
	if !errors.Is(err, cni.ErrUnusableEntry) {
		t.Fatalf("answered %v", err)
	}
}
