package faults_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/internal/testnode"
)

// docs/sdk/cni-freeing.md, "host-local's reservations": a reservation is freed, kept, or reported, never passed
// over. A node whose <dataDir>/<network> is a link to a directory on another disk has host-local reserve through
// it; host-local's DEL does not release through it (it walks the network's directory without following the link),
// so no DEL can free a reservation there: each is reported (logged once, LogMessageReservationSkipped), never
// touched, never listed by a dry run, and not reported as one whose config is gone.
func TestAReservationInALinkedNetworkDirectoryIsReportedNeverTouched(t *testing.T) {
	plugins := os.Getenv("CNI_PLUGINS_DIR")
	if _, err := os.Stat(filepath.Join(plugins, "host-local")); err != nil {
		testnode.Unavailable(t, "no reference plugins in CNI_PLUGINS_DIR (make test builds them): %v", err)
	}
	for _, dryRun := range []bool{true, false} {
		root := t.TempDir()
		cache, conf, data := filepath.Join(root, "cache"), filepath.Join(root, "conf"), filepath.Join(root, "networks")
		elsewhere := filepath.Join(root, "otherdisk", "net1")
		for _, d := range []string{filepath.Join(cache, "results"), conf, data, elsewhere} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(elsewhere, filepath.Join(data, "net1")); err != nil {
			t.Fatal(err)
		}
		testcni.Write(t, filepath.Join(conf, "10-net1.conflist"), `{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"host-local","ipam":{"type":"host-local","dataDir":"`+data+`","ranges":[[{"subnet":"10.89.0.0/16"}]]}}]}`)
		p := reservation(t, data, "net1", "10.89.0.9", "deadbeefdeadbeef", "eth0", time.Hour) // written through the link, as host-local does
		obs := &observer{}
		var logs testkube.Lines
		c, err := cni.New(cni.Options{CacheDir: cache, PluginDirs: []string{plugins}, ConfDir: conf, HostLocalDataDir: data,
			Runtime: emptyRuntime{}, ReservationGrace: time.Minute, ResyncInterval: 50 * time.Millisecond, DryRun: dryRun, Observer: obs,
			Logger: logs.Logger()})
		if err != nil {
			t.Fatal(err)
		}
		resyncFor(t, func(ctx context.Context) error { return c.Resync(ctx, testcni.NopTracker{}) }, 3*time.Second,
			func() bool { return len(obs.get(&obs.nets)) >= 3 })
		if got := logs.Count(cni.LogMessageReservationSkipped); got != 1 || logs.Count(p) != 1 {
			t.Errorf("dry run %v: %d lines %q, %d naming %s, want it reported once", dryRun, got, cni.LogMessageReservationSkipped, logs.Count(p), p)
		}
		if _, err := os.Stat(p); err != nil {
			t.Errorf("dry run %v: the reservation %s, in a linked network directory: %v", dryRun, p, err)
		}
		if got := c.WouldFree(); len(got) > 0 {
			t.Errorf("dry run %v: WouldFree = %v, want none", dryRun, got)
		}
		if f, fl, r := obs.get(&obs.freed), obs.get(&obs.failed), obs.get(&obs.reported); len(f)+len(fl)+len(r) > 0 {
			t.Errorf("dry run %v: the Observer heard freed %v, failed %v, reported %v; want nothing: it is never touched, and its config is there", dryRun, f, fl, r)
		}
	}
}
