package faults_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

const bridgeHostLocal = `{"cniVersion":"1.0.0","name":"podnet","plugins":[{"type":"bridge","bridge":"cni0","ipam":{"type":"host-local","ranges":[[{"subnet":"10.88.0.0/16"}]]}}]}`

// docs/sdk/cni-freeing.md:50 row 12: a reservation is reported ConfigGone only when "No config in
// ConfDir names its network with host-local and its data directory". Options.HostLocalDataDir is
// "where host-local keeps its reservations for a network of ConfDir whose config sets no dataDir".
// Given as a path with a trailing slash (the same directory), the reservation of a network whose
// config runs host-local there must not be reported ConfigGone.
func TestAConfigGoneIsReportedOnlyWithoutAConfig(t *testing.T) {
	root := t.TempDir()
	cache, bin, conf, data := filepath.Join(root, "cache"), filepath.Join(root, "bin"), filepath.Join(root, "conf"), filepath.Join(root, "networks")
	for _, d := range []string{cache, bin, conf, data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testcni.Write(t, filepath.Join(conf, "10-podnet.conflist"), bridgeHostLocal)
	reservation(t, data, "podnet", "10.88.0.7", "0123456789abcdef", "eth0", time.Minute)
	obs := &observer{}
	c, err := cni.New(cni.Options{CacheDir: cache, PluginDirs: []string{bin}, ConfDir: conf, HostLocalDataDir: data + "/", Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	resyncFor(t, func(ctx context.Context) error { return c.Resync(ctx, testcni.NopTracker{}) }, 2*time.Second,
		func() bool { return len(obs.get(&obs.nets)) > 0 && len(obs.get(&obs.reported)) > 0 })
	if got := obs.get(&obs.nets); len(got) == 0 {
		t.Fatalf("no network of ConfDir told to run host-local: %v", got)
	}
	if got := obs.get(&obs.reported); len(got) > 0 {
		t.Fatalf("the reservation of podnet, whose config in ConfDir runs host-local in %s, was reported: %v", data, got)
	}
}
