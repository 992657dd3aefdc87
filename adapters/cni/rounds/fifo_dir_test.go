package rounds_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// cni-freeing.md: "A network kept for a named pipe in its own directory of
// plugin configs is kept with its reservations (row 13), not reported gone."
// Here the network's host-local is one of the plugin configs of that
// directory (libcni appends them to the conflist's inline plugins).
func TestAuditNamedPipeInPluginDirReservationsReportedGone(t *testing.T) {
	pd, _ := fakePlugins(t)
	e := newEnv(t)
	write(t, filepath.Join(e.conf, "10-net.conflist"), `{"cniVersion":"1.0.0","name":"net","plugins":[{"type":"okplug"}]}`, 0)
	write(t, filepath.Join(e.conf, "net", "20-hl.conf"), `{"type":"host-local","ipam":{"type":"host-local","ranges":[[{"subnet":"10.22.0.0/24"}]]}}`, 0)
	if err := syscall.Mkfifo(filepath.Join(e.conf, "net", "30-pipe.conf"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(e.data, "net", "10.22.0.5")
	write(t, f, "gone\r\neth0", time.Hour)
	o := newObs()
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{pd}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: &testcni.Runtime{}, ReservationGrace: time.Minute, Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	runRound(t, c, func() bool { s := stateOf(t, c, "10.22.0.5"); return s != "" && s != "to free" }, 5*time.Second)
	st, _ := page(t, c, "10.22.0.5")
	if !testcni.Exists(f) {
		t.Fatal("the reservation was freed")
	}
	r := st.Reservations[0]
	if r.Decision.Row != 13 || r.State == "reported" || o.reported != 0 {
		t.Fatalf("the network kept for a named pipe in its directory of plugin configs: its reservation decided row %d (%s), state %q, "+
			"Observer ReservationReported=%d; want row 13, kept, not reported gone", r.Decision.Row, r.Decision.Why, r.State, o.reported)
	}
	_ = os.Remove
}

// The same with host-local inline in the conflist: row 13.
func TestAuditHoldsNamedPipeInPluginDirInlineHostLocal(t *testing.T) {
	pd, _ := fakePlugins(t)
	e := newEnv(t)
	write(t, filepath.Join(e.conf, "10-net.conflist"), `{"cniVersion":"1.0.0","name":"net","plugins":[{"type":"host-local","ipam":{"type":"host-local","ranges":[[{"subnet":"10.22.0.0/24"}]]}}]}`, 0)
	if err := os.MkdirAll(filepath.Join(e.conf, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(e.conf, "net", "30-pipe.conf"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(e.data, "net", "10.22.0.5")
	write(t, f, "gone\r\neth0", time.Hour)
	o := newObs()
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{pd}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: &testcni.Runtime{}, ReservationGrace: time.Minute, Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	runRound(t, c, func() bool { s := stateOf(t, c, "10.22.0.5"); return s != "" && s != "to free" }, 5*time.Second)
	st, _ := page(t, c, "10.22.0.5")
	if !testcni.Exists(f) || st.Reservations[0].Decision.Row != 13 || o.reported != 0 {
		t.Fatalf("page %+v reported %d", st.Reservations, o.reported)
	}
}

// Without the named pipe, the plugin directory's host-local is read: the network runs host-local (row 18).
func TestAuditHoldsPluginDirHostLocalRead(t *testing.T) {
	pd, _ := fakePlugins(t)
	e := newEnv(t)
	write(t, filepath.Join(e.conf, "10-net.conflist"), `{"cniVersion":"1.0.0","name":"net","plugins":[{"type":"okplug"}]}`, 0)
	write(t, filepath.Join(e.conf, "net", "20-hl.conf"), `{"type":"host-local","ipam":{"type":"host-local","ranges":[[{"subnet":"10.22.0.0/24"}]]}}`, 0)
	f := filepath.Join(e.data, "net", "10.22.0.5")
	write(t, f, "gone\r\neth0", time.Hour)
	o := newObs()
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{pd, testcni.PluginsDir(t)}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: &testcni.Runtime{}, ReservationGrace: time.Minute, Observer: o, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	runRound(t, c, func() bool { s := stateOf(t, c, "10.22.0.5"); return s != "" && s != "to free" }, 5*time.Second)
	st, _ := page(t, c, "10.22.0.5")
	if st.Reservations[0].Decision.Row != 18 || o.reported != 0 {
		t.Fatalf("page %+v reported %d", st.Reservations, o.reported)
	}
}
