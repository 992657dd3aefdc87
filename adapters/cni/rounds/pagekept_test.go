package rounds_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// A reservation released with its sibling by one DEL (told freed) is told
// "kept: could not be decided again before its DEL", row -1, when a later
// reservation of the round cannot be decided again.
func TestAuditPageTellsFreedSiblingKept(t *testing.T) {
	pd := testcni.PluginsDir(t)
	e := newEnv(t)
	write(t, filepath.Join(e.conf, "10-net.conf"), `{"cniVersion":"1.0.0","name":"net","type":"host-local","ipam":{"type":"host-local","dataDir":"`+e.data+`","ranges":[[{"subnet":"10.22.0.0/24"}]]}}`, 0)
	dir := filepath.Join(e.data, "net")
	write(t, filepath.Join(dir, "10.22.0.1"), "aaaa\r\neth0", time.Hour)
	write(t, filepath.Join(dir, "10.22.0.2"), "bbbb\r\neth0", time.Hour)
	write(t, filepath.Join(dir, "10.22.0.3"), "aaaa\r\neth0", time.Hour)
	rt := &testcni.Runtime{}
	rt.Hook = func(n int) {
		if n >= 2 {
			rt.SetErr(errors.New("runtime unavailable"))
		}
	}
	o := newObs()
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{pd}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: rt, ReservationGrace: time.Minute, Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	runRound(t, c, func() bool { return strings.HasPrefix(stateOf(t, c, "10.22.0.2"), "kept: could not") }, 5*time.Second)
	if testcni.Exists(filepath.Join(dir, "10.22.0.3")) {
		t.Fatal("setup: 10.22.0.3 was not released by the DEL of aaaa")
	}
	st, _ := page(t, c, "10.22.0.3")
	if len(st.Reservations) != 1 {
		t.Fatalf("reservations of 10.22.0.3: %+v", st.Reservations)
	}
	r := st.Reservations[0]
	freedListed := false
	for _, f := range st.Freed {
		freedListed = freedListed || f.Reservation
	}
	if r.State != "freed" {
		t.Fatalf("10.22.0.3 was released by the DEL of its sibling 10.22.0.1 (file gone, Observer freed=%d, in Freed: %v), but the page tells its last round's state %q, row %d, verdict %q: %s",
			o.freed, freedListed, r.State, r.Decision.Row, r.Decision.Verdict, r.Decision.Why)
	}
}
