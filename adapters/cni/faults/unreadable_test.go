package faults_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testnode"
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
		write(t, filepath.Join(e.conf, "10-a.conflist"), `{"cniVersion":"1.0.0","name":"net-a","plugins":[{"type":"bridge","ipam":{"type":"host-local","ranges":[[{"subnet":"10.0.0.0/24"}]]}}]}`)
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
		go func() { _ = c.Resync(ctx, tracker{}) }()
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
