package rounds_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// A config of network a that starts being written while the round runs ends
// the round at a's DEL: network b's leaked reservation, decided free, is kept
// by no row for a's config ("every other network is decided as ever").
func TestAuditConfigWrittenMidRoundKeepsOtherNetworkReservation(t *testing.T) {
	pd := testcni.PluginsDir(t)
	e := newEnv(t)
	confA := filepath.Join(e.conf, "10-a.conf")
	write(t, confA, strings.ReplaceAll(strings.ReplaceAll(hlConf, "DATA", e.data), `"net"`, `"a"`), 0)
	write(t, filepath.Join(e.conf, "20-b.conf"), strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(hlConf, "DATA", e.data), `"net"`, `"b"`), "10.22.0.0", "10.23.0.0"), 0)
	write(t, filepath.Join(e.data, "a", "10.22.0.5"), "gonea\r\neth0", time.Hour)
	fb := filepath.Join(e.data, "b", "10.23.0.5")
	write(t, fb, "goneb\r\neth0", time.Hour)
	rt := &testcni.Runtime{}
	rt.Hook = func(n int) {
		if n == 1 { // the round read ConfDir: the installer starts writing a's config anew
			if err := os.WriteFile(confA, []byte(`{"cniVersion":"1.0.0","name":"a","type":"host-lo`), 0o644); err != nil {
				t.Error(err)
			}
		}
	}
	o := newObs()
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{pd}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: rt, ReservationGrace: time.Minute, Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	runRound(t, c, func() bool { s := stateOf(t, c, "10.23.0.5"); return s != "" && s != "to free" }, 5*time.Second)
	st, _ := page(t, c, "10.23.0.5")
	r := st.Reservations[0]
	if testcni.Exists(fb) {
		t.Fatalf("network b's leaked reservation (b's config whole and unchanged) was not freed in the round: state %q, row %d: %s",
			r.State, r.Decision.Row, r.Decision.Why)
	}
}
