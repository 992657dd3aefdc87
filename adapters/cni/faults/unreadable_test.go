package faults_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/internal/testnode"
	"github.com/podsweeper/podsweeper/ports"
)

// asDeployed runs the test again in a child process as the chart runs the collector: root without
// CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (capabilities: drop ALL), so that a directory's mode keeps
// it out. It reports whether the caller is that child, which runs the test's body.
func asDeployed(t *testing.T) bool {
	t.Helper()
	if os.Getenv("FAULTS_CHILD") == t.Name() {
		return true
	}
	if os.Geteuid() != 0 {
		testnode.Unavailable(t, "not root: the collector runs as root without the capabilities that read any directory")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		testnode.Unavailable(t, "no setpriv (util-linux) to drop the capabilities: %v", err)
	}
	cmd := exec.Command(setpriv, "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-all", "--",
		os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "FAULTS_CHILD="+t.Name())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the test as deployed: %v\n%s", err, out)
	}
	return false
}

// docs/sdk/cni-freeing.md: "on every resync the collector also reads host-local's reservations ...
// for each network of Options.ConfDir whose plugins run host-local"; Observer.ReservationWouldFree
// and ReservationReported: "told once for each"; LogMessageReservationWouldFree: "once for each
// host-local reservation it would free, while its file holds it"; WouldFree: "exactly those a resync
// without the dry run would have DELed then".
//
// A dry run over host-local's data directory holding a leaked reservation of net-a and one of a
// network no config names, beside a directory it may not read (another tool's): the leak is found
// all the same. Then one round cannot read the network's directory, one the data directory, one the
// cache: each frees nothing (WouldFree is empty), and the files untouched are told of once in all.
func TestAnUnreadableDirectoryHidesOnlyWhatItHolds(t *testing.T) {
	if !asDeployed(t) {
		return
	}
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		testcni.Write(t, filepath.Join(e.conf, "10-a.conflist"), `{"cniVersion":"1.0.0","name":"net-a","plugins":[{"type":"bridge","ipam":{"type":"host-local","ranges":[[{"subnet":"10.0.0.0/24"}]]}}]}`)
		leak := reservation(t, e.data, "net-a", "10.0.0.5", "leaked-ctr", "eth0", time.Hour)
		reservation(t, e.data, "net-gone", "10.1.0.5", "other-ctr", "eth0", time.Hour)
		foreign := filepath.Join(e.data, "zz-foreign")
		if err := os.Mkdir(foreign, 0); err != nil {
			t.Fatal(err)
		}
		obs := &observer{}
		c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
			Runtime: emptyRuntime{}, DryRun: true, ResyncInterval: time.Minute, Observer: obs})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go func() { _ = c.Resync(ctx, testcni.NopTracker{}) }()
		synctest.Wait()
		if got := c.WouldFree(); len(got) != 1 || got[0].Path() != leak {
			t.Fatalf("WouldFree = %v, want %s: a directory beside it that cannot be read hides nothing else", got, leak)
		}
		for _, blind := range []string{filepath.Join(e.data, "net-a"), e.data, filepath.Join(e.cache, "results")} {
			if err := os.Chmod(blind, 0); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Minute) // one round cannot read it
			synctest.Wait()
			if got := c.WouldFree(); len(got) != 0 {
				t.Errorf("WouldFree = %v in a round that cannot read %s, want none: that round would DEL nothing", got, blind)
			}
			if err := os.Chmod(blind, 0o755); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Minute)
			synctest.Wait()
			if got := c.WouldFree(); len(got) != 1 || got[0].Path() != leak {
				t.Fatalf("WouldFree = %v once %s is read again, want %s", got, blind, leak)
			}
		}
		cancel()
		if got := obs.get(&obs.would); len(got) != 1 {
			t.Errorf("the leaked reservation, its file untouched, was told %d times as one a dry run would free (%v), want once", len(got), got)
		}
		if got := obs.get(&obs.reported); len(got) != 1 {
			t.Errorf("the reservation of a network no config names was reported %d times (%v), want once", len(got), got)
		}
	})
}

// logDelPlugin logs each DEL it is asked, and frees nothing.
const logDelPlugin = "#!/bin/sh\ncat >/dev/null\n[ \"$CNI_COMMAND\" = DEL ] && echo \"$CNI_CONTAINERID\" >> \"$(dirname \"$0\")/dels.log\"\nexit 0\n"

// docs/sdk/cni-freeing.md: "any file of ConfDir that names the network with "disableGC": true ... is
// never DELed" (row 13 for reservations). disableGC was added in ConfDir after the pod was created (its
// cached config lacks it), in a file the collector cannot read: another's file of mode 0 (as deployed,
// root without CAP_DAC_OVERRIDE), or a link into a directory the collector's pod does not mount (the
// runtime, on the node, reads it). Nothing of that network may be DELed: neither the gone pod's
// attachment nor its leaked reservation; the collector says which file keeps it all.
func TestAConfigThatCannotBeReadKeepsEveryNetwork(t *testing.T) {
	if !asDeployed(t) {
		return
	}
	for name, hide := range map[string]func(conf, path string){
		"mode 0": func(conf, path string) {
			testcni.Write(t, path, `{"cniVersion":"1.0.0","name":"net1","disableGC":true,"plugins":[{"type":"logdel"}]}`)
			if err := os.Chmod(path, 0); err != nil {
				t.Fatal(err)
			}
		},
		"a link into an unmounted directory": func(conf, path string) {
			if err := os.Symlink("/nonexistent-podsweeper-dir/20-net1.conflist", path); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.plugins = logDelPlugins(t)
			testcni.Write(t, filepath.Join(e.conf, "10-net1.conflist"), `{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"logdel","ipam":{"type":"host-local","ranges":[[{"subnet":"10.7.0.0/24"}]]}}]}`)
			hide(e.conf, filepath.Join(e.conf, "20-net1.conflist"))
			testcni.Write(t, filepath.Join(e.cache, "results", "net1-sb-1-eth0"), `{"kind":"cniCacheV1","containerId":"sb-1","ifName":"eth0","networkName":"net1",`+
				`"cniArgs":[["K8S_POD_UID","uid-1"],["K8S_POD_NAMESPACE","ns"],["K8S_POD_NAME","p"]],`+
				`"config":"eyJjbmlWZXJzaW9uIjoiMS4wLjAiLCJuYW1lIjoibmV0MSIsInBsdWdpbnMiOlt7InR5cGUiOiJsb2dkZWwifV19"}`)
			reservation(t, e.data, "net1", "10.7.0.5", "leaked-ctr", "eth0", time.Hour)
			c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
				Runtime: emptyRuntime{}, ResyncInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			err = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"},
				SandboxID: "sb-1", Reason: ports.ReasonPodGone})
			if err == nil || !strings.Contains(err.Error(), "20-net1.conflist") {
				t.Errorf("DestroyPU = %v, want an error naming the config it cannot read", err)
			}
			resyncFor(t, func(ctx context.Context) error { return c.Resync(ctx, testcni.NopTracker{}) }, 300*time.Millisecond, func() bool { return false })
			if b, _ := os.ReadFile(filepath.Join(e.plugins, "dels.log")); len(b) > 0 {
				t.Errorf("DELs of network net1, which a config the collector cannot read may keep: %q", b)
			}
		})
	}
}
