package rounds_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// The round decides row 16 (a file naming the container alone, where
// host-local releases more than once) on ConfDir as read at its start, but its
// DEL runs the config read right before it: a config made dual stack meanwhile
// (two range sets) releases twice, and the second release removes the file.
func TestAuditRecheckedDelLegacyFileConfigMadeDualStack(t *testing.T) {
	pd := testcni.PluginsDir(t)
	e := newEnv(t)
	conf := filepath.Join(e.conf, "10-net.conf")
	single := `{"cniVersion":"1.0.0","name":"net","type":"host-local","ipam":{"type":"host-local","dataDir":"` + e.data + `","ranges":[[{"subnet":"10.22.0.0/24"}]]}}`
	dual := `{"cniVersion":"1.0.0","name":"net","type":"host-local","ipam":{"type":"host-local","dataDir":"` + e.data + `","ranges":[[{"subnet":"10.22.0.0/24"}],[{"subnet":"fd00::/64"}]]}}`
	write(t, conf, single, 0)
	dir := filepath.Join(e.data, "net")
	write(t, filepath.Join(dir, "10.22.0.5"), "leaked\r\neth0", time.Hour)
	legacy := filepath.Join(dir, "10.22.0.9")
	write(t, legacy, "leaked", time.Hour)
	rt := &testcni.Runtime{}
	rt.Hook = func(n int) {
		if n == 1 { // the round's list: ConfDir was read already; the installer writes the dual-stack config now
			if err := os.WriteFile(conf, []byte(dual), 0o644); err != nil {
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
	runRound(t, c, func() bool { o.mu.Lock(); defer o.mu.Unlock(); return o.freed+o.failed > 0 || !testcni.Exists(legacy) }, 3*time.Second)
	if !testcni.Exists(legacy) {
		t.Fatalf("the file %s holding container ID alone was removed by the collector's DEL run with the dual-stack config read right before it (freed=%d)", legacy, o.freed)
	}
}
