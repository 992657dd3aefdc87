package rounds_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// host-local turns a legacy "subnet" beside "ranges" into one range set more
// (subnet first), and releases a container once per range set: the second
// release finds nothing left and removes the files holding the container's ID
// alone. The collector counts the range sets by "ranges" alone.
func TestAuditLegacyFileNeverTouchedSubnetAndRanges(t *testing.T) {
	for name, ipam := range map[string]string{
		"subnet+ranges":        `"subnet":"10.22.0.0/24","ranges":[[{"subnet":"fd00::/64"}]]`,
		"runtimeConfig+ranges": `"ranges":[[{"subnet":"fd00::/64"}]]},"runtimeConfig":{"ipRanges":[[{"subnet":"10.22.0.0/24"}]]`,
	} {
		t.Run(name, func(t *testing.T) { legacyCase(t, ipam, true) })
	}
}

func TestAuditHoldsLegacyFileNeverTouchedTwoRanges(t *testing.T) {
	legacyCase(t, `"ranges":[[{"subnet":"10.22.0.0/24"}],[{"subnet":"fd00::/64"}]]`, false)
}

func legacyCase(t *testing.T, ipam string, _ bool) {
	pd := testcni.PluginsDir(t)
	e := newEnv(t)
	write(t, filepath.Join(e.conf, "10-dual.conf"), `{"cniVersion":"1.0.0","name":"dual","type":"host-local",
"ipam":{"type":"host-local","dataDir":"`+e.data+`",`+ipam+`}}`, 0)
	dir := filepath.Join(e.data, "dual")
	write(t, filepath.Join(dir, "10.22.0.5"), "leaked\r\neth0", time.Hour)
	write(t, filepath.Join(dir, "fd00::5"), "leaked\r\neth0", time.Hour)
	// A file holding the container's ID alone, as host-local before v0.8 wrote it.
	legacy := filepath.Join(dir, "10.22.0.9")
	write(t, legacy, "leaked", time.Hour)
	o := newObs()
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{pd}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: &testcni.Runtime{}, ReservationGrace: time.Minute, Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	runRound(t, c, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.freed+o.failed > 0 || !testcni.Exists(legacy) || stateOf(t, c, "10.22.0.5") == "kept"
	}, 5*time.Second)
	if !testcni.Exists(legacy) {
		t.Fatalf("the legacy file %s holding container ID alone was removed by the collector's DEL (freed=%d); cni-freeing.md row 16 promises the reservation kept", legacy, o.freed)
	}
	if o.freed > 0 {
		t.Fatalf("reservations of container %q freed (%d) though host-local releases it twice and a file names it alone", "leaked", o.freed)
	}
	st, _ := page(t, c, "10.22.0.5")
	if len(st.Reservations) != 1 || st.Reservations[0].Decision.Row != 16 {
		t.Fatalf("10.22.0.5 not decided row 16: %+v", st.Reservations)
	}
}
