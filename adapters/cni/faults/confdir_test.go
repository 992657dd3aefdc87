package faults_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// logDelEnv makes an env whose plugin "logdel" logs each DEL, with a gone pod's cached attachment of
// network net1 (its cached config without disableGC), and returns it with its Collector and the DEL log.
func logDelEnv(t *testing.T, opts cni.Options) (env, *cni.Collector, string) {
	opts.ResyncInterval = max(opts.ResyncInterval, time.Hour)
	return logDelEnvOpts(t, newEnv(t), opts)
}

// logDelEnvAt is logDelEnv in e.
func logDelEnvAt(t *testing.T, e env) (env, *cni.Collector, string) {
	return logDelEnvOpts(t, e, cni.Options{ResyncInterval: time.Hour})
}

// logDelPlugins returns a plugin directory holding logDelPlugin as "logdel".
func logDelPlugins(t *testing.T) string {
	dir := t.TempDir()
	testcni.Write(t, filepath.Join(dir, "logdel"), logDelPlugin)
	if err := os.Chmod(filepath.Join(dir, "logdel"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func logDelEnvOpts(t *testing.T, e env, opts cni.Options) (env, *cni.Collector, string) {
	e.plugins = logDelPlugins(t)
	testcni.Write(t, filepath.Join(e.cache, "results", "net1-sb-1-eth0"), `{"kind":"cniCacheV1","containerId":"sb-1","ifName":"eth0","networkName":"net1",`+
		`"cniArgs":[["K8S_POD_UID","uid-1"],["K8S_POD_NAMESPACE","ns"],["K8S_POD_NAME","p"]],`+
		`"config":"eyJjbmlWZXJzaW9uIjoiMS4wLjAiLCJuYW1lIjoibmV0MSIsInBsdWdpbnMiOlt7InR5cGUiOiJsb2dkZWwifV19"}`)
	opts.CacheDir, opts.PluginDirs, opts.ConfDir, opts.Runtime = e.cache, []string{e.plugins}, e.conf, emptyRuntime{}
	c, err := cni.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return e, c, filepath.Join(e.plugins, "dels.log")
}

// docs/sdk/cni-freeing.md: "an attachment of a network whose config says "disableGC": true (its cached
// config, or any file of ConfDir that names the network) is never DELed". The operator's config of net1
// that says so is being rewritten in place: the collector reads a prefix that names net1 and says
// "disableGC", cut before its end. The gone pod's attachment of net1 is kept.
func TestAConfigBeingWrittenThatSaysDisableGCKeepsItsNetwork(t *testing.T) {
	e, c, dels := logDelEnv(t, cni.Options{ResyncInterval: time.Hour})
	testcni.Write(t, filepath.Join(e.conf, "10-net1.conflist"), `{"cniVersion":"1.0.0","name":"net1","disableGC":true,"plugins":[{"ty`)
	_ = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"},
		SandboxID: "sb-1", Reason: ports.ReasonPodGone})
	if b, _ := os.ReadFile(dels); len(b) > 0 {
		t.Errorf("a DEL of network net1, which a config being written says disableGC of: %q", b)
	}
}

// Options.HostLocalDataDir and the package doc: a reservation is reported ConfigGone only when no config
// names its network with host-local and its data directory. Two spellings of one data directory (a link,
// as /var/run is /run) are one: the reservation of a network whose config names the link is not reported
// as one of a network whose config is gone.
func TestADataDirThroughALinkIsTheSameDataDir(t *testing.T) {
	e := newEnv(t)
	real := filepath.Join(e.root, "real")
	link := filepath.Join(e.root, "link")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	testcni.Write(t, filepath.Join(e.conf, "10-a.conflist"), `{"cniVersion":"1.0.0","name":"a","plugins":[{"type":"bridge","ipam":{"type":"host-local","dataDir":"`+link+`"}}]}`)
	testcni.Write(t, filepath.Join(e.conf, "20-b.conflist"), `{"cniVersion":"1.0.0","name":"b","plugins":[{"type":"bridge","ipam":{"type":"host-local","dataDir":"`+real+`"}}]}`)
	reservation(t, link, "a", "10.1.0.5", "ctr-a", "eth0", time.Hour)
	obs := &observer{}
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: emptyRuntime{}, DryRun: true, ResyncInterval: time.Hour, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	resyncFor(t, func(ctx context.Context) error { return c.Resync(ctx, testcni.NopTracker{}) }, 5*time.Second, func() bool { return len(c.WouldFree()) > 0 })
	if got := obs.get(&obs.reported); len(got) > 0 {
		t.Errorf("network a's reservation, in the data directory its config names through a link, was reported: %v", got)
	}
	if got := c.WouldFree(); len(got) != 1 {
		t.Errorf("WouldFree = %v, want a's one leaked reservation", got)
	}
}

// adapters/cni's doc: "It never touches a network whose cached config, or whose config in
// Options.ConfDir, says "disableGC": true." net1's attachments were added with a config that says so;
// its file in ConfDir no longer does. A leaked reservation of net1 (of another container) is kept.
func TestACachedDisableGCKeepsItsNetworksReservations(t *testing.T) {
	e := newEnv(t)
	e.plugins = logDelPlugins(t)
	// {"cniVersion":"1.0.0","name":"net1","disableGC":true,"plugins":[{"type":"logdel"}]}
	testcni.Write(t, filepath.Join(e.cache, "results", "net1-sb-1-eth0"), `{"kind":"cniCacheV1","containerId":"sb-1","ifName":"eth0","networkName":"net1",`+
		`"cniArgs":[["K8S_POD_UID","uid-1"],["K8S_POD_NAMESPACE","ns"],["K8S_POD_NAME","p"]],`+
		`"config":"eyJjbmlWZXJzaW9uIjoiMS4wLjAiLCJuYW1lIjoibmV0MSIsImRpc2FibGVHQyI6dHJ1ZSwicGx1Z2lucyI6W3sidHlwZSI6ImxvZ2RlbCJ9XX0="}`)
	resyncWithALeakedReservationOfNet1(t, e)
	if b, _ := os.ReadFile(filepath.Join(e.plugins, "dels.log")); len(b) > 0 {
		t.Errorf("a DEL of network net1, whose cached config says disableGC: %q", b)
	}
}

// resyncWithALeakedReservationOfNet1 writes net1's config in e's ConfDir (host-local in e.data, no disableGC) and a
// leaked reservation of it, then runs a Collector's resync rounds for 300ms.
func resyncWithALeakedReservationOfNet1(t *testing.T, e env) {
	t.Helper()
	testcni.Write(t, filepath.Join(e.conf, "10-net1.conflist"), `{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"logdel","ipam":{"type":"host-local","dataDir":"`+e.data+`"}}]}`)
	reservation(t, e.data, "net1", "10.7.0.9", "leaked-ctr", "eth0", time.Hour)
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: emptyRuntime{}, ResyncInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	resyncFor(t, func(ctx context.Context) error { return c.Resync(ctx, testcni.NopTracker{}) }, 300*time.Millisecond, func() bool { return false })
}

// The same promise when the only entry whose cached config says disableGC is one the collector does not use: its
// cached result cannot be loaded for a DEL, or it is another runtime's (no K8S_POD_* arguments). Its network's
// leaked reservation is kept, and so is a gone pod's attachment of that network.
func TestACachedDisableGCOfAnEntryNotUsedKeepsItsNetwork(t *testing.T) {
	// {"cniVersion":"1.0.0","name":"net1","disableGC":true,"plugins":[{"type":"logdel"}]}
	const never = `"config":"eyJjbmlWZXJzaW9uIjoiMS4wLjAiLCJuYW1lIjoibmV0MSIsImRpc2FibGVHQyI6dHJ1ZSwicGx1Z2lucyI6W3sidHlwZSI6ImxvZ2RlbCJ9XX0="`
	for name, entry := range map[string]string{
		"its result does not load": `{"kind":"cniCacheV1","containerId":"sb-9","ifName":"eth0","networkName":"net1",` +
			`"cniArgs":[["K8S_POD_UID","uid-9"],["K8S_POD_NAMESPACE","ns"],["K8S_POD_NAME","q"]],` + never +
			`,"result":{"cniVersion":"1.0.0","ips":"not a list"}}`,
		"another runtime's": `{"kind":"cniCacheV1","containerId":"sb-9","ifName":"eth0","networkName":"net1",` +
			`"cniArgs":[["IgnoreUnknown","1"]],` + never + `}`,
	} {
		t.Run(name, func(t *testing.T) {
			e, c, dels := logDelEnv(t, cni.Options{ResyncInterval: time.Hour})
			testcni.Write(t, filepath.Join(e.cache, "results", "net1-sb-9-eth0"), entry)
			resyncWithALeakedReservationOfNet1(t, e)
			_ = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"},
				SandboxID: "sb-1", Reason: ports.ReasonPodGone})
			if b, _ := os.ReadFile(dels); len(b) > 0 {
				t.Errorf("a DEL of network net1, whose cached config (of an entry not used) says disableGC: %q", b)
			}
		})
	}
}

// Row 12 (ConfigGone) is for a reservation whose network no config names: a config being written (cut
// short as it is read) may be its network's. The reservation is not reported while it is.
func TestAConfigBeingWrittenIsNoConfigGone(t *testing.T) {
	e := newEnv(t)
	testcni.Write(t, filepath.Join(e.conf, "10-net1.conflist"), `{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"bridge","ipam":{"type":"host-lo`)
	reservation(t, e.data, "net1", "10.7.0.9", "some-ctr", "eth0", time.Hour)
	obs := &observer{}
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: emptyRuntime{}, DryRun: true, ResyncInterval: time.Hour, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	resyncFor(t, func(ctx context.Context) error { return c.Resync(ctx, testcni.NopTracker{}) }, 300*time.Millisecond, func() bool { return false })
	if got := obs.get(&obs.reported); len(got) > 0 {
		t.Errorf("a reservation of network net1, whose config is being written, was reported ConfigGone: %v", got)
	}
}

// docs/sdk/cni-freeing.md: "while a file of ConfDir cannot be read (its permissions, or a link into a
// directory the collector does not see), nothing is" DELed. ConfDir itself a link into a directory the
// collector does not see (as /etc/cni/net.d linked to a CNI's own directory its pod does not mount) is
// no directory that holds no config: New refuses it, and once its target is gone after New, the gone pod's
// attachment is kept, and the error names it.
func TestAConfDirLinkTheCollectorCannotFollowKeepsEverything(t *testing.T) {
	e := newEnv(t)
	conf, target := filepath.Join(e.root, "net.d-link"), filepath.Join(e.root, "net.d-target")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, conf); err != nil {
		t.Fatal(err)
	}
	e.conf = conf
	_, c, dels := logDelEnvAt(t, e)
	// New refuses a link to nothing; one whose target goes away after (unmounted) leads nowhere from then on.
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	err := c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"},
		SandboxID: "sb-1", Reason: ports.ReasonPodGone})
	if b, _ := os.ReadFile(dels); len(b) > 0 || err == nil {
		t.Errorf("DestroyPU = %v and DELs %q while ConfDir is a link the collector cannot follow", err, b)
	}
}

// adapters/cni's Observer: ReservationWouldFree is "told once for each" reservation while its file holds
// it. A CNI installer that removes its conflist and writes it back (as on its restart) leaves the
// reservations of the network's data directory untouched; the dry run, which does not read that
// directory while no config names it, must not tell them again once the config is back.
func TestAConfigRemovedAndWrittenBackTellsNothingAgain(t *testing.T) {
	e := newEnv(t)
	own := filepath.Join(e.root, "own-data")
	conf := filepath.Join(e.conf, "10-net1.conflist")
	body := `{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"bridge","ipam":{"type":"host-local","dataDir":"` + own + `"}}]}`
	testcni.Write(t, conf, body)
	reservation(t, own, "net1", "10.7.0.9", "leaked-ctr", "eth0", time.Hour)
	obs, round := dryRunRounds(t, e)
	round()
	if got := obs.get(&obs.would); len(got) != 1 {
		t.Fatalf("the leaked reservation of net1 was told %v, want once", got)
	}
	if err := os.Remove(conf); err != nil {
		t.Fatal(err)
	}
	round()
	testcni.Write(t, conf, body)
	round()
	if got := obs.get(&obs.would); len(got) != 1 {
		t.Errorf("a reservation whose file was untouched while its config was removed and written back was told again: %v", got)
	}
}

// docs/sdk/cni-freeing.md: "an attachment of a network whose config says "disableGC": true (its cached config, or
// any file of ConfDir that names the network) is never DELed". A config being rewritten in place (cut short) names
// its network by its own top-level "name", not by a plugin's: net1's attachment is kept when its file, cut, lists
// a plugin with a "name" of its own before its own. When the cut text does not tell its top-level name yet, which
// network it keeps cannot be told: every one is kept.
func TestAConfigBeingWrittenKeepsItsOwnNetworkNotAPlugins(t *testing.T) {
	for name, body := range map[string]string{
		"named after its plugins":        `{"cniVersion":"1.0.0","plugins":[{"name":"inner","type":"logdel"}],"name":"net1","disableGC":true`,
		"its own name not there yet":     `{"cniVersion":"1.0.0","disableGC":true,"plugins":[{"name":"inner","type":"logdel"}],"na`,
		"its own name cut in the middle": `{"cniVersion":"1.0.0","disableGC":true,"plugins":[{"name":"inner","type":"logdel"}],"name":"ne`,
	} {
		e, c, dels := logDelEnv(t, cni.Options{ResyncInterval: time.Hour})
		testcni.Write(t, filepath.Join(e.conf, "10-net1.conflist"), body)
		_ = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"},
			SandboxID: "sb-1", Reason: ports.ReasonPodGone})
		if b, _ := os.ReadFile(dels); len(b) > 0 {
			t.Errorf("%s: a DEL of network net1, which a config being written names and says disableGC of: %q", name, b)
		}
	}
}

// adapters/cni's doc (ReasonConfigGone) and docs/sdk/cni-freeing.md row 12: a reservation is reported ConfigGone only
// when no config in ConfDir names its network with host-local and its data directory. net1's config does, and net1
// is kept untouched for its own directory of plugin configs (<ConfDir>/net1/) holds a named pipe, whose read would
// block: its leaked reservation is kept, not reported gone, and the Observer is told of net1 as a network that runs
// host-local.
func TestAReservationOfANetworkKeptForItsPluginDirectoryIsNotReportedConfigGone(t *testing.T) {
	e := newEnv(t)
	testcni.Write(t, filepath.Join(e.conf, "10-net1.conflist"), `{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"bridge","ipam":{"type":"host-local","dataDir":"`+e.data+`"}}]}`)
	if err := os.MkdirAll(filepath.Join(e.conf, "net1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(e.conf, "net1", "p.conf"), 0o644); err != nil {
		t.Fatal(err)
	}
	reservation(t, e.data, "net1", "10.1.0.5", "leaked-ctr", "eth0", time.Hour)
	obs := &observer{}
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: emptyRuntime{}, DryRun: true, ResyncInterval: 50 * time.Millisecond, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	resyncFor(t, func(ctx context.Context) error { return c.Resync(ctx, testcni.NopTracker{}) }, 3*time.Second, func() bool { return len(obs.get(&obs.nets)) >= 2 })
	if got := obs.get(&obs.reported); len(got) > 0 {
		t.Errorf("net1's reservation reported while 10-net1.conflist names net1 with host-local and its data directory: %v", got)
	}
	if got := obs.get(&obs.nets); len(got) == 0 || got[0] != "net1" {
		t.Errorf("the Observer was told of networks %v, want net1 at each round", got)
	}
	if got := c.WouldFree(); len(got) > 0 {
		t.Errorf("WouldFree = %v, want none: net1 is never touched", got)
	}
}

// adapters/cni's Observer: ReservationReported is "told once for each"; examples/cni-gc's README: a reservation whose
// network's config is gone is "reported once in the log and in podsweeper_cni_reservations_reported_total". An
// installer that removes its config and writes it back, again and again, while the reservation's file is untouched,
// gets it reported once.
func TestAReservationWhoseConfigComesAndGoesIsReportedOnce(t *testing.T) {
	e := newEnv(t)
	conf := filepath.Join(e.conf, "10-net1.conflist")
	body := `{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"bridge","ipam":{"type":"host-local","dataDir":"` + e.data + `"}}]}`
	reservation(t, e.data, "net1", "10.7.0.9", "some-ctr", "eth0", time.Hour)
	obs, round := dryRunRounds(t, e)
	for range 3 {
		round() // no config: reported
		testcni.Write(t, conf, body)
		round()
		if err := os.Remove(conf); err != nil {
			t.Fatal(err)
		}
	}
	if got := obs.get(&obs.reported); len(got) != 1 {
		t.Errorf("a reservation whose file was untouched while its config came and went was reported %v, want once", got)
	}
}

// docs/sdk/cni-freeing.md: "a file being written whose top-level name cannot be told yet keeps every network";
// and a file being written may yet say "disableGC" of the network it names. A ConfDir file truncated to be
// written anew (empty), or cut before its name, keeps the gone pod's attachment of any network; one cut after
// its name, before any "disableGC", keeps the network it names.
func TestAConfigBeingWrittenKeepsWhatItMayYetSayDisableGCOf(t *testing.T) {
	for name, body := range map[string]string{
		"empty":                                 ``,
		"cut before its name":                   `{"cniVersion":"1.0.0",`,
		"cut before its name, a plugin's named": `{"cniVersion":"1.0.0","plugins":[{"type":"fake","name":"x"}],`,
		"named net1, no disableGC yet":          `{"cniVersion":"1.0.0","name":"net1","plugins":[{"ty`,
	} {
		t.Run(name, func(t *testing.T) {
			e, c, dels := logDelEnv(t, cni.Options{ResyncInterval: time.Hour})
			testcni.Write(t, filepath.Join(e.conf, "10-being-written.conflist"), body)
			_ = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"},
				SandboxID: "sb-1", Reason: ports.ReasonPodGone})
			if b, _ := os.ReadFile(dels); len(b) > 0 {
				t.Errorf("a DEL of network net1 while a config being written (%q) may yet say disableGC of it: %q", body, b)
			}
		})
	}
}

// dryRunRounds returns a dry run's Collector in e, with no sandbox listed, as its Observer and a function that runs
// one round of Resync.
func dryRunRounds(t *testing.T, e env) (*observer, func()) {
	obs := &observer{}
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: emptyRuntime{}, DryRun: true, ResyncInterval: time.Hour, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	return obs, func() {
		resyncFor(t, func(ctx context.Context) error { return c.Resync(ctx, testcni.NopTracker{}) }, 300*time.Millisecond, func() bool { return false })
	}
}
