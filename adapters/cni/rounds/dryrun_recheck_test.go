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

// WouldFree: "exactly those a resync without the dry run would have DELed then". A disableGC set on the network while
// the round runs (after its ConfDir read, before the DEL) keeps the reservation in a real resync (ConfDir is read
// again right before each DEL); the dry run's round lists it all the same.
func TestAuditWouldFreeListsWhatRealResyncKeeps(t *testing.T) {
	run := func(t *testing.T, dry bool) (*cni.Collector, *obs, string) {
		pd := testcni.PluginsDir(t)
		e := newEnv(t)
		conf := filepath.Join(e.conf, "10-net.conf")
		write(t, conf, strings.ReplaceAll(hlConf, "DATA", e.data), 0)
		f := filepath.Join(e.data, "net", "10.22.0.5")
		write(t, f, "gone\r\neth0", time.Hour)
		rt := &testcni.Runtime{}
		rt.Hook = func(n int) {
			if n == 1 { // the round read ConfDir: the operator sets disableGC now
				if err := os.WriteFile(conf, []byte(strings.Replace(strings.ReplaceAll(hlConf, "DATA", e.data), `"name":"net",`, `"name":"net","disableGC":true,`, 1)), 0o644); err != nil {
					t.Error(err)
				}
			}
		}
		o := newObs()
		c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{pd}, ConfDir: e.conf, HostLocalDataDir: e.data,
			Runtime: rt, ReservationGrace: time.Minute, Observer: o, DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		runRound(t, c, func() bool { s := stateOf(t, c, "10.22.0.5"); return s != "" && s != "to free" }, 5*time.Second)
		return c, o, f
	}
	real, ro, f := run(t, false)
	if !testcni.Exists(f) || ro.freed != 0 {
		t.Fatalf("setup: the real resync freed it (freed=%d)", ro.freed)
	}
	rs, _ := page(t, real, "10.22.0.5")
	dry, do, _ := run(t, true)
	if w := dry.WouldFree(); len(w) != 0 || do.would != 0 {
		t.Fatalf("a real resync kept it (state %q), but the dry run's WouldFree lists %d and told the Observer %d would-free", rs.Reservations[0].State, len(w), do.would)
	}
}
