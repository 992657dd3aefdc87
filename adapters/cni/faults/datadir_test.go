package faults_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/internal/testnode"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// emptyRuntime answers at once, listing no sandbox.
type emptyRuntime struct{}

func (emptyRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return nil, nil
}

const otherNet = `{"cniVersion":"1.0.0","name":"other","plugins":[{"type":"bridge","bridge":"cni1","ipam":{"type":"host-local","ranges":[[{"subnet":"10.89.0.0/16"}]]}}]}`

// badDataDirSetup makes a ConfDir with network "other" (host-local in the default data directory, one
// leaked reservation an hour old, of no sandbox and no cache entry) and network "podnet", whose
// config's "dataDir" is bad (made by mk), and a dry run's Collector with a runtime that lists nothing.
func badDataDirSetup(t *testing.T, mk func(path string)) (*cni.Collector, string) {
	root := t.TempDir()
	cache, bin, conf, data := filepath.Join(root, "cache"), filepath.Join(root, "bin"), filepath.Join(root, "conf"), filepath.Join(root, "networks")
	for _, d := range []string{filepath.Join(cache, "results"), bin, conf, data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bad := filepath.Join(root, "podnet-data")
	mk(bad)
	testcni.Write(t, filepath.Join(conf, "10-other.conflist"), otherNet)
	testcni.Write(t, filepath.Join(conf, "20-podnet.conflist"), `{"cniVersion":"1.0.0","name":"podnet","plugins":[{"type":"bridge","bridge":"cni0","ipam":{"type":"host-local","dataDir":"`+bad+`","ranges":[[{"subnet":"10.88.0.0/16"}]]}}]}`)
	p := reservation(t, data, "other", "10.89.0.9", "deadbeefdeadbeef", "eth0", time.Hour)
	c, err := cni.New(cni.Options{CacheDir: cache, PluginDirs: []string{bin}, ConfDir: conf, HostLocalDataDir: data,
		Runtime: emptyRuntime{}, ReservationGrace: time.Minute, ResyncInterval: 100 * time.Millisecond, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

// docs/sdk/cni-freeing.md:41-46,56: "on every resync the collector also reads host-local's reservations
// ... for each network of Options.ConfDir whose plugins run host-local" and row 18: "Otherwise | free".
// WouldFree (go doc): "exactly those a resync without the dry run would have DELed then". A leaked
// reservation of network "other" must be found whatever another network's config names as its dataDir:
// here a regular file.
func TestADryRunListsAReservationThoughAnotherNetworksDataDirIsAFile(t *testing.T) {
	c, p := badDataDirSetup(t, func(path string) { testcni.Write(t, path, "not a directory") })
	resyncFor(t, func(ctx context.Context) error { return c.Resync(ctx, testcni.NopTracker{}) }, 3*time.Second,
		func() bool { return len(c.WouldFree()) > 0 })
	if got := c.WouldFree(); len(got) != 1 || got[0].Path() != p {
		t.Fatalf("WouldFree = %v, want the leaked reservation %s of network other", got, p)
	}
}

// The same without the dry run, with the reference plugins (bin/cni): the leaked reservation of
// "other" is DELed (its file removed by host-local) when podnet's config is sound, and must be when
// podnet's dataDir is a file.
func TestAReservationIsFreedThoughAnotherNetworksDataDirIsAFile(t *testing.T) {
	plugins := os.Getenv("CNI_PLUGINS_DIR")
	if _, err := os.Stat(filepath.Join(plugins, "host-local")); err != nil {
		testnode.Unavailable(t, "no reference plugins in CNI_PLUGINS_DIR (make test builds them): %v", err)
	}
	for _, bad := range []bool{false, true} {
		root := t.TempDir()
		cache, conf, data := filepath.Join(root, "cache"), filepath.Join(root, "conf"), filepath.Join(root, "networks")
		for _, d := range []string{filepath.Join(cache, "results"), conf, data} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		testcni.Write(t, filepath.Join(conf, "10-other.conflist"), `{"cniVersion":"1.0.0","name":"other","plugins":[{"type":"host-local","ipam":{"type":"host-local","dataDir":"`+data+`","ranges":[[{"subnet":"10.89.0.0/16"}]]}}]}`)
		if bad {
			testcni.Write(t, filepath.Join(root, "podnet-data"), "not a directory")
			testcni.Write(t, filepath.Join(conf, "20-podnet.conflist"), `{"cniVersion":"1.0.0","name":"podnet","plugins":[{"type":"host-local","ipam":{"type":"host-local","dataDir":"`+filepath.Join(root, "podnet-data")+`","ranges":[[{"subnet":"10.88.0.0/16"}]]}}]}`)
		}
		p := reservation(t, data, "other", "10.89.0.9", "deadbeefdeadbeef", "eth0", time.Hour)
		c, err := cni.New(cni.Options{CacheDir: cache, PluginDirs: []string{plugins}, ConfDir: conf, HostLocalDataDir: data,
			Runtime: emptyRuntime{}, ReservationGrace: time.Minute, ResyncInterval: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		gone := func() bool { _, err := os.Stat(p); return os.IsNotExist(err) }
		resyncFor(t, func(ctx context.Context) error { return c.Resync(ctx, testcni.NopTracker{}) }, 3*time.Second, gone)
		if !gone() {
			t.Errorf("podnet's dataDir a file: %v: the leaked reservation %s of network other was not freed", bad, p)
		}
	}
}
