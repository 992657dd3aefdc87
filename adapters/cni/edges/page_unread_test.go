package edges_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podsweeper/podsweeper/internal/testcni"
)

// TestThePageSaysWhichDataDirectoryItCouldNotRead: a network's directory of host-local's data directory is a link the collector
// cannot follow (into what its pod does not mount). The round cannot read the reservations there; the page, which
// tells the round's reservations, must say in Unread what it could not read, and says nothing.
func TestThePageSaysWhichDataDirectoryItCouldNotRead(t *testing.T) {
	e := newEnv(t)
	e.sweepPlugin("")
	e.netConf("10-net1.conflist", "net1", "")
	if err := os.Symlink(filepath.Join(t.TempDir(), "not-mounted", "net1"), filepath.Join(e.data, "net1")); err != nil {
		t.Fatal(err)
	}
	l := &logs{}
	c := newCollector(t, e.opts(l))
	resyncUntil(t, c, func() bool { return testcni.Address(t, c, "10.1.0.7").ReservationsRead != nil })
	st := testcni.Address(t, c, "10.1.0.7")
	if len(st.Reservations) == 0 && !strings.Contains(strings.Join(st.Unread, "\n"), "net1") {
		t.Errorf("host-local's reservations of net1 (a link the collector cannot follow) were not read, and the page says nothing of it: %s\nlog:\n%s", dump(st), l)
	}
}

// TestThePageTellsALinkedCacheEntry: an entry of libcni's cache that is a link to a pod's entry holding the
// address (the runtime's libcni reads through it): the collector never touches it, and the page must tell it with
// why (neverTouched), or say it could not read it. It says nothing.
func TestThePageTellsALinkedCacheEntry(t *testing.T) {
	e := newEnv(t)
	e.sweepPlugin("")
	e.netConf("10-net1.conflist", "net1", "")
	target := filepath.Join(t.TempDir(), "net1-ccc-eth0")
	testcni.Write(t, target, string(e.entryJSON(entry{Network: "net1", ID: "ccc", UID: "uid-c", NS: "ns", Name: "pod-c", IP: "10.1.0.9"})))
	if err := os.Symlink(target, filepath.Join(e.cache, "results", "net1-ccc-eth0")); err != nil {
		t.Fatal(err)
	}
	l := &logs{}
	c := newCollector(t, e.opts(l))
	st := testcni.Address(t, c, "10.1.0.9")
	if len(st.Attachments) == 0 && len(st.Unread) == 0 {
		t.Errorf("a cache entry (a link) holding 10.1.0.9 is never touched, and the page neither tells it nor says it could not read it: %s", dump(st))
	}
}

// TestThePageSaysACutShortCacheEntryIsUnread: an entry of libcni's cache that is not whole JSON (libcni writes it in
// place, os.WriteFile, not by rename) and holds the address: the page must tell it, or say in Unread that an
// entry of the cache could not be read. It says nothing.
func TestThePageSaysACutShortCacheEntryIsUnread(t *testing.T) {
	e := newEnv(t)
	e.sweepPlugin("")
	e.netConf("10-net1.conflist", "net1", "")
	b := e.entryJSON(entry{Network: "net1", ID: "ddd", UID: "uid-d", NS: "ns", Name: "pod-d", IP: "10.1.0.10"})
	testcni.Write(t, filepath.Join(e.cache, "results", "net1-ddd-eth0"), string(b[:len(b)-3]))
	l := &logs{}
	c := newCollector(t, e.opts(l))
	st := testcni.Address(t, c, "10.1.0.10")
	if len(st.Attachments) == 0 && len(st.Unread) == 0 {
		t.Errorf("a cache entry holding 10.1.0.10, cut short, is neither told nor said unread: %s", dump(st))
	}
}

// TestHoldsPageLinkedNetworkDirNeverTouched: a network directory that is a link to a directory: its
// reservation is told "never touched", row -1, with why.
func TestHoldsPageLinkedNetworkDirNeverTouched(t *testing.T) {
	e := newEnv(t)
	e.sweepPlugin("")
	e.netConf("10-net1.conflist", "net1", "")
	other := filepath.Join(t.TempDir(), "disk", "net1")
	testcni.Write(t, filepath.Join(other, "10.1.0.11"), "eee\r\neth0")
	if err := os.Symlink(other, filepath.Join(e.data, "net1")); err != nil {
		t.Fatal(err)
	}
	l := &logs{}
	c := newCollector(t, e.opts(l))
	resyncUntil(t, c, func() bool { return testcni.Address(t, c, "10.1.0.11").ReservationsRead != nil })
	st := testcni.Address(t, c, "10.1.0.11")
	if len(st.Reservations) != 1 || st.Reservations[0].State != "never touched" || st.Reservations[0].Decision.Row != -1 || st.Reservations[0].Decision.Why == "" {
		t.Errorf("want one reservation, never touched, row -1, with why: %s", dump(st))
	}
	if _, err := os.Stat(filepath.Join(other, "10.1.0.11")); err != nil {
		t.Errorf("the linked reservation was touched: %v", err)
	}
}
