package remembers_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// hostLocalDualConflist runs the real host-local with two range sets (dual stack): it releases a container twice.
func hostLocalDualConflist(network, dataDir string) []byte {
	return testcni.HostLocalConflist(network, dataDir, [][]map[string]string{{{"subnet": "10.99.0.0/24"}}, {{"subnet": "fd99::/64"}}}, nil)
}

func writeConf(t *testing.T, e env, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.conf, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// cni-freeing.md row 16: where host-local releases a container more than once in one DEL (a range set per address
// family), "a file naming its container alone, as host-local before v0.8 wrote it" keeps the reservation.
func TestAuditHoldsLegacyFileKeptUnderDualStack(t *testing.T) {
	e := newEnv(t)
	writeConf(t, e, "10-net1.conflist", hostLocalDualConflist("net1", e.data))
	old := time.Now().Add(-time.Hour)
	r := e.reservation(t, "net1", "10.99.0.7", "ctrX", "eth0", old)
	legacy := filepath.Join(e.data, "net1", "10.99.0.8")
	if err := os.WriteFile(legacy, []byte("ctrX"), 0o644); err != nil {
		t.Fatal(err)
	}
	obs := &countingObserver{}
	rt := &fakeRuntime{answer: func(int) ([]*runtimeapi.PodSandbox, error) { return nil, nil }}
	c := mustNew(t, cni.Options{CacheDir: e.cache, PluginDirs: []string{realPlugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: rt, ReservationGrace: time.Minute, Observer: obs})
	runOneRound(t, c, func() bool { return testcni.Address(t, c, "10.99.0.7").ReservationsRead != nil })
	if !testcni.Exists(r) || !testcni.Exists(legacy) {
		t.Fatalf("reservation %v, legacy file %v: want both kept", testcni.Exists(r), testcni.Exists(legacy))
	}
	st := testcni.Address(t, c, "10.99.0.7")
	if len(st.Reservations) != 1 || st.Reservations[0].Decision.Row != 16 {
		t.Fatalf("page: %+v, want row 16", st.Reservations)
	}
}

// cni-freeing.md: "right before each DEL, ConfDir again (rows 12 and 13: a disableGC set ... while the round runs)".
// The DEL of the first reservation writes a config that says disableGC for the network: the second is kept.
func TestAuditHoldsDisableGCSetDuringRoundKeepsNextReservation(t *testing.T) {
	e := newEnv(t)
	// A plugin that releases as host-local does (removes the files naming the container and interface) and, on its
	// first DEL, has an operator set disableGC on the network.
	script := "#!/bin/sh\ncat >/dev/null\nif [ \"$CNI_COMMAND\" = DEL ]; then\n" +
		"  for f in " + filepath.Join(e.data, "net1") + "/10.*; do if [ \"$(cat $f)\" = \"$(printf '%s\\r\\n%s' $CNI_CONTAINERID $CNI_IFNAME)\" ]; then rm -f $f; fi; done\n" +
		"  printf '{\"cniVersion\":\"1.0.0\",\"name\":\"net1\",\"disableGC\":true,\"plugins\":[{\"type\":\"rel\"}]}' > " + filepath.Join(e.conf, "99-keep.conflist") + "\n" +
		"fi\necho '{\"cniVersion\":\"1.0.0\"}'\n"
	if err := os.WriteFile(filepath.Join(e.bin, "rel"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": "net1", "plugins": []any{map[string]any{
		"type": "rel", "ipam": map[string]any{"type": "host-local", "dataDir": e.data}}}})
	writeConf(t, e, "10-net1.conflist", b)
	old := time.Now().Add(-time.Hour)
	a := e.reservation(t, "net1", "10.99.0.2", "ctrA", "eth0", old)
	bb := e.reservation(t, "net1", "10.99.0.3", "ctrB", "eth0", old)
	obs := &countingObserver{}
	rt := &fakeRuntime{answer: func(int) ([]*runtimeapi.PodSandbox, error) { return nil, nil }}
	c := mustNew(t, cni.Options{CacheDir: e.cache, PluginDirs: []string{e.bin}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: rt, ReservationGrace: time.Minute, Observer: obs})
	runOneRound(t, c, func() bool { f, fl, _, _ := obs.get(); return f+fl > 0 })
	if testcni.Exists(a) || !testcni.Exists(bb) {
		t.Fatalf("first freed: %v, second kept: %v; want true, true", !testcni.Exists(a), testcni.Exists(bb))
	}
	st := testcni.Address(t, c, "10.99.0.3")
	if len(st.Reservations) != 1 || st.Reservations[0].State != cni.ReservationKeptOnRecheck {
		t.Fatalf("page of the second: %+v", st.Reservations)
	}
}

// cni-freeing.md row 15 and doc.go: "A running sandbox the runtime lists without an ID may be any sandbox: ... no
// reservation is freed while it is listed (row 15)".
func TestAuditHoldsRunningSandboxWithoutIDKeepsReservations(t *testing.T) {
	e := newEnv(t)
	writeConf(t, e, "10-net1.conflist", hostLocalConflist("net1", e.data))
	r := e.reservation(t, "net1", "10.99.0.9", "ctrZ", "eth0", time.Now().Add(-time.Hour))
	rt := &fakeRuntime{answer: func(int) ([]*runtimeapi.PodSandbox, error) {
		return []*runtimeapi.PodSandbox{sb("", "uid-other", runtimeapi.PodSandboxState_SANDBOX_READY)}, nil
	}}
	c := mustNew(t, cni.Options{CacheDir: e.cache, PluginDirs: []string{realPlugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: rt, ReservationGrace: time.Minute})
	runOneRound(t, c, func() bool { return testcni.Address(t, c, "10.99.0.9").ReservationsRead != nil })
	st := testcni.Address(t, c, "10.99.0.9")
	if !testcni.Exists(r) || len(st.Reservations) != 1 || st.Reservations[0].Decision.Row != 15 {
		t.Fatalf("kept %v, page %+v: want kept by row 15", testcni.Exists(r), st.Reservations)
	}
}

// Options.ReservationRate: "at most how many host-local reservations Resync frees a second"; dual stack: "a DEL that
// releases several reservations of one container waits a turn for each".
func TestAuditHoldsRateBoundsDualStackFrees(t *testing.T) {
	e := newEnv(t)
	writeConf(t, e, "10-net1.conflist", hostLocalDualConflist("net1", e.data))
	old := time.Now().Add(-time.Hour)
	e.reservation(t, "net1", "10.99.0.2", "ctrA", "eth0", old)
	e.reservation(t, "net1", "fd99::2", "ctrA", "eth0", old)
	e.reservation(t, "net1", "10.99.0.3", "ctrB", "eth0", old)
	obs := &timedObserver{}
	rt := &fakeRuntime{answer: func(int) ([]*runtimeapi.PodSandbox, error) { return nil, nil }}
	c := mustNew(t, cni.Options{CacheDir: e.cache, PluginDirs: []string{realPlugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: rt, ReservationGrace: time.Minute, Observer: obs, ReservationRate: 4, ReservationBurst: 1})
	start := time.Now()
	runOneRound(t, c, func() bool { return obs.count() >= 3 })
	ts := obs.times()
	if len(ts) != 3 {
		t.Fatalf("freed %d, want 3", len(ts))
	}
	// 3 turns at 4/s with a burst of 1: the third free comes 0.5s after the round began at the earliest.
	if d := ts[2].Sub(start); d < 450*time.Millisecond {
		t.Fatalf("3 reservations freed within %v at 4/s, burst 1", d)
	}
}

type timedObserver struct {
	mu sync.Mutex
	ts []time.Time
}

func (o *timedObserver) ReservationFreed(string, string) {
	o.mu.Lock()
	o.ts = append(o.ts, time.Now())
	o.mu.Unlock()
}
func (o *timedObserver) ReservationFreeFailed(string, string) {}
func (o *timedObserver) ReservationWouldFree(string, string)  {}
func (o *timedObserver) ReservationReported(string, string)   {}
func (o *timedObserver) ReservationNetwork(string)            {}
func (o *timedObserver) count() int                           { o.mu.Lock(); defer o.mu.Unlock(); return len(o.ts) }
func (o *timedObserver) times() []time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.ts)
}

// Options.DryRun / WouldFree: "exactly those a resync without the dry run would have DELed then".
func TestAuditHoldsDryRunListsWhatARealRoundFrees(t *testing.T) {
	setup := func(dry bool) (env, *cni.Collector, *countingObserver) {
		e := newEnv(t)
		writeConf(t, e, "10-net1.conflist", hostLocalDualConflist("net1", e.data))
		old := time.Now().Add(-time.Hour)
		e.reservation(t, "net1", "10.99.0.2", "ctrA", "eth0", old)
		e.reservation(t, "net1", "fd99::2", "ctrA", "eth0", old)
		e.reservation(t, "net1", "10.99.0.3", "ctrB", "eth0", old)
		e.reservation(t, "net1", "10.99.0.4", "ctrC", "eth0", time.Now()) // young: row 17
		e.reservation(t, "net1", "10.99.0.5", "ctrD", "eth0", old)        // listed: row 15
		rt := &fakeRuntime{answer: func(int) ([]*runtimeapi.PodSandbox, error) {
			return []*runtimeapi.PodSandbox{sb("ctrD", "uid-d", runtimeapi.PodSandboxState_SANDBOX_NOTREADY)}, nil
		}}
		obs := &countingObserver{}
		return e, mustNew(t, cni.Options{CacheDir: e.cache, PluginDirs: []string{realPlugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
			Runtime: rt, ReservationGrace: time.Minute, Observer: obs, DryRun: dry}), obs
	}
	_, dry, dobs := setup(true)
	runOneRound(t, dry, func() bool { _, _, w, _ := dobs.get(); return w > 0 })
	var would []string
	for _, r := range dry.WouldFree() {
		would = append(would, r.IP)
	}
	e, real, robs := setup(false)
	runOneRound(t, real, func() bool { f, _, _, _ := robs.get(); return f >= 3 })
	var freed []string
	for _, ip := range []string{"10.99.0.2", "fd99::2", "10.99.0.3", "10.99.0.4", "10.99.0.5"} {
		if !testcni.Exists(filepath.Join(e.data, "net1", ip)) {
			freed = append(freed, ip)
		}
	}
	slices.Sort(would)
	slices.Sort(freed)
	if !slices.Equal(would, freed) {
		t.Fatalf("dry run would free %v, a real round freed %v", would, freed)
	}
}

// Observer: "Its methods are called from Resync's goroutine and must not block": one that calls back into the
// Collector (WouldFree, the address page, ListPUs, DestroyPU) does not block the round.
func TestAuditHoldsObserverMayCallBackIntoTheCollector(t *testing.T) {
	e := newEnv(t)
	writeConf(t, e, "10-net1.conflist", hostLocalConflist("net1", e.data))
	e.reservation(t, "net1", "10.99.0.2", "ctrA", "eth0", time.Now().Add(-time.Hour))
	rt := &fakeRuntime{answer: func(int) ([]*runtimeapi.PodSandbox, error) { return nil, nil }}
	obs := &callbackObserver{}
	c := mustNew(t, cni.Options{CacheDir: e.cache, PluginDirs: []string{realPlugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: rt, ReservationGrace: time.Minute, Observer: obs})
	obs.c, obs.t = c, t
	runOneRound(t, c, func() bool { obs.mu.Lock(); defer obs.mu.Unlock(); return obs.freed > 0 })
	if obs.freed != 1 {
		t.Fatalf("freed %d", obs.freed)
	}
}

type callbackObserver struct {
	c     *cni.Collector
	t     *testing.T
	mu    sync.Mutex
	freed int
}

func (o *callbackObserver) call() {
	_ = o.c.WouldFree()
	_ = testcni.Address(o.t, o.c, "10.99.0.2")
	_, _ = o.c.ListPUs(context.Background())
	_ = o.c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "u", Pod: types.NamespacedName{Namespace: "n", Name: "p"}, Reason: ports.ReasonPodGone})
	if err := o.c.Resync(context.Background(), testcni.NopTracker{}); !errors.Is(err, cni.ErrResyncRunning) {
		o.t.Errorf("Resync from the Observer: %v", err)
	}
}
func (o *callbackObserver) ReservationFreed(string, string) {
	o.call()
	o.mu.Lock()
	o.freed++
	o.mu.Unlock()
}
func (o *callbackObserver) ReservationFreeFailed(string, string) { o.call() }
func (o *callbackObserver) ReservationWouldFree(string, string)  { o.call() }
func (o *callbackObserver) ReservationReported(string, string)   { o.call() }
func (o *callbackObserver) ReservationNetwork(string)            { o.call() }

// doc.go: "A gone pod of which the runtime lists a ready sandbox ... keeps every sandbox (ErrSandboxRunning)".
func TestAuditHoldsGonePodWithReadySandboxKeepsAll(t *testing.T) {
	e := newEnv(t)
	log := e.fakePlugin(t, "fake")
	conf := conflist("net1", "fake")
	e.writeEntry(t, "net1", "sbOld", "eth0", "uid-1", conf, time.Now().Add(-2*time.Hour))
	e.writeEntry(t, "net1", "sbNew", "eth0", "uid-1", conf, time.Now().Add(-time.Hour))
	rt := &fakeRuntime{answer: func(int) ([]*runtimeapi.PodSandbox, error) {
		return []*runtimeapi.PodSandbox{sb("sbOld", "uid-1", runtimeapi.PodSandboxState_SANDBOX_NOTREADY),
			sb("sbNew", "uid-1", runtimeapi.PodSandboxState_SANDBOX_READY)}, nil
	}}
	c := mustNew(t, cni.Options{CacheDir: e.cache, PluginDirs: []string{e.bin}, ConfDir: e.conf, HostLocalDataDir: e.data, Runtime: rt})
	err := c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "pod"},
		SandboxID: "sbOld", Reason: ports.ReasonPodGone})
	if !errors.Is(err, cni.ErrSandboxRunning) || testcni.Exists(log) {
		t.Fatalf("DestroyPU: %v; plugin ran: %v", err, testcni.Exists(log))
	}
}
