package remembers_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// WouldFree (go doc): "the host-local reservations that the last resync of a dry run found it would free ...:
// exactly those a resync without the dry run would have DELed then". With a rate (ReservationRate 1/s, burst 1) a
// real round DELs the second reservation only after its turn, and asks the runtime again first (cni-freeing.md:
// "whenever time has passed since the round's list (a turn waited for under Options.ReservationRate ...), the runtime
// again (row 15: a sandbox it lists again)"). The runtime lists ctrB from 400ms after the round began: a real round
// keeps it, the dry run lists it as one it would free.
func TestAuditDryRunWouldFreeWhatARateLimitedRoundKeeps(t *testing.T) {
	run := func(dry bool) (freed, would []string) {
		e := newEnv(t)
		writeConf(t, e, "10-net1.conflist", hostLocalConflist("net1", e.data))
		old := time.Now().Add(-time.Hour)
		e.reservation(t, "net1", "10.99.0.2", "ctrA", "eth0", old)
		e.reservation(t, "net1", "10.99.0.3", "ctrB", "eth0", old)
		var start time.Time
		rt := &fakeRuntime{answer: func(n int) ([]*runtimeapi.PodSandbox, error) {
			if n == 1 {
				start = time.Now()
				return nil, nil
			}
			if time.Since(start) >= 400*time.Millisecond { // ctrB's sandbox, listed again
				return []*runtimeapi.PodSandbox{sb("ctrB", "uid-b", runtimeapi.PodSandboxState_SANDBOX_READY)}, nil
			}
			return nil, nil
		}}
		obs := &countingObserver{}
		c := mustNew(t, cni.Options{CacheDir: e.cache, PluginDirs: []string{realPlugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
			Runtime: rt, ReservationGrace: time.Minute, Observer: obs, DryRun: dry, ReservationRate: 1, ReservationBurst: 1})
		runOneRound(t, c, func() bool {
			if dry {
				_, _, w, _ := obs.get()
				return w > 0
			}
			st := testcni.Address(t, c, "10.99.0.3")
			return len(st.Reservations) == 1 && st.Reservations[0].State != cni.ReservationToFree
		})
		for _, ip := range []string{"10.99.0.2", "10.99.0.3"} {
			if !testcni.Exists(filepath.Join(e.data, "net1", ip)) {
				freed = append(freed, ip)
			}
		}
		for _, r := range c.WouldFree() {
			would = append(would, r.IP)
		}
		return freed, would
	}
	_, would := run(true)
	freed, _ := run(false)
	slices.Sort(would)
	t.Logf("dry run would free %v; the real round freed %v", would, freed)
	if !slices.Equal(would, freed) {
		t.Errorf("WouldFree lists %v, but a resync without the dry run DELed %v then (it kept 10.99.0.3 by row 15 after its turn)", would, freed)
	}
}
