package remembers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

type countingObserver struct {
	mu                             sync.Mutex
	freed, failed, would, reported int
}

func (o *countingObserver) ReservationFreed(string, string) { o.mu.Lock(); o.freed++; o.mu.Unlock() }
func (o *countingObserver) ReservationFreeFailed(string, string) {
	o.mu.Lock()
	o.failed++
	o.mu.Unlock()
}
func (o *countingObserver) ReservationWouldFree(string, string) {
	o.mu.Lock()
	o.would++
	o.mu.Unlock()
}
func (o *countingObserver) ReservationReported(string, string) {
	o.mu.Lock()
	o.reported++
	o.mu.Unlock()
}
func (o *countingObserver) ReservationNetwork(string) {}
func (o *countingObserver) get() (int, int, int, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.freed, o.failed, o.would, o.reported
}

// hostLocalConflist is a network that runs the real host-local as its one plugin, in dataDir.
func hostLocalConflist(network, dataDir string) []byte {
	return testcni.HostLocalConflist(network, dataDir, testcni.Subnet("10.99.0.0/24"), nil)
}

// runOneRound runs Resync until the round's work is seen done (done), then stops it.
func runOneRound(t *testing.T, c *cni.Collector, done func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Resync(ctx, testcni.NopTracker{}) }()
	deadline := time.Now().Add(20 * time.Second)
	for !done() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the rest of the round
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Resync: %v", err)
	}
}

// cni-freeing.md: "A reservation is DELed only while its file still holds it: one released meanwhile by the DEL of
// another reservation of its container and interface is told freed with it"; ReservationReleasedMeanwhile: "released
// by its runtime while the round ran, before its DEL"; Observer.ReservationFreed: "a DEL freed a reservation".
// Here the second reservation of the container is released (its file removed) while the round lists the runtime,
// before any DEL of the round: the round's DEL of the first cannot have freed it, yet it is told freed by it.
func TestAuditReleasedBeforeTheDelIsNotToldFreedByIt(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.conf, "10-net1.conflist"), hostLocalConflist("net1", e.data), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	e.reservation(t, "net1", "10.99.0.2", "ctrX", "eth0", old)
	other := e.reservation(t, "net1", "10.99.0.3", "ctrX", "eth0", old)
	rt := &fakeRuntime{answer: func(n int) ([]*runtimeapi.PodSandbox, error) {
		if n == 1 { // the round's list: meanwhile 10.99.0.3 is released, by whoever (its runtime)
			if err := os.Remove(other); err != nil {
				t.Error(err)
			}
		}
		return nil, nil
	}}
	obs := &countingObserver{}
	c := mustNew(t, cni.Options{CacheDir: e.cache, PluginDirs: []string{realPlugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: rt, ReservationGrace: time.Minute, Observer: obs})
	runOneRound(t, c, func() bool { f, fl, _, _ := obs.get(); return f+fl > 0 })
	if _, err := os.Stat(filepath.Join(e.data, "net1", "10.99.0.2")); !os.IsNotExist(err) {
		t.Fatalf("10.99.0.2 not freed by the round: %v", err)
	}
	freed, failed, _, _ := obs.get()
	st := testcni.Address(t, c, "10.99.0.3")
	var state string
	for _, r := range st.Reservations {
		state = r.State
	}
	t.Logf("observer: freed %d, failed %d; 10.99.0.3: state %q, freed entries %d", freed, failed, state, len(st.Freed))
	if freed != 1 {
		t.Errorf("Observer told of %d reservations freed, want 1: 10.99.0.3 was released before any DEL of the round", freed)
	}
	if state != cni.ReservationReleasedMeanwhile {
		t.Errorf("address page: 10.99.0.3's state is %q, want %q", state, cni.ReservationReleasedMeanwhile)
	}
	if len(st.Freed) != 0 {
		t.Errorf("address page: 10.99.0.3 is told freed by the Collector (%+v), though no DEL of its released it", st.Freed)
	}
}

// The same break, as a runtime makes it: the network chains host-local twice, each in a data directory of its own
// (A and B), and container X holds an address in each. While the round lists the runtime, the runtime's own DEL of
// X runs the chain in reverse: host-local B releases X's address in B, then the DEL fails before host-local A. The
// round then DELs X's address in A (held still); B's address, released before that DEL by the runtime's, is told
// freed by the Collector's DEL (Observer, address page, log) instead of "released meanwhile, by its runtime".
func TestAuditReleasedBeforeTheDelIsNotToldFreedByItTwoDataDirs(t *testing.T) {
	e := newEnv(t)
	dataA, dataB := filepath.Join(e.data, "a"), filepath.Join(t.TempDir(), "b")
	hl := func(dir, subnet string) map[string]any {
		return map[string]any{"type": "host-local", "ipam": map[string]any{"type": "host-local", "dataDir": dir,
			"ranges": []any{[]any{map[string]any{"subnet": subnet}}}}}
	}
	b, _ := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": "net1", "plugins": []any{hl(dataA, "10.99.0.0/24"), hl(dataB, "10.98.0.0/24")}})
	if err := os.WriteFile(filepath.Join(e.conf, "10-net1.conflist"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	write := func(dir, ip string) string {
		p := filepath.Join(dir, "net1", ip)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("ctrX\r\neth0"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		return p
	}
	inA, inB := write(dataA, "10.99.0.2"), write(dataB, "10.98.0.2")
	rt := &fakeRuntime{answer: func(n int) ([]*runtimeapi.PodSandbox, error) {
		if n == 1 { // the runtime's own DEL of ctrX meanwhile: host-local B (last in the chain, DELed first) releases
			conf, _ := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": "net1", "type": "host-local", "ipam": hl(dataB, "10.98.0.0/24")["ipam"]})
			cmd := exec.Command(filepath.Join(realPlugins, "host-local"))
			cmd.Env = []string{"CNI_COMMAND=DEL", "CNI_CONTAINERID=ctrX", "CNI_IFNAME=eth0", "CNI_PATH=" + realPlugins, "CNI_NETNS="}
			cmd.Stdin = bytes.NewReader(conf)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("host-local DEL in B: %v: %s", err, out)
			}
		}
		return nil, nil
	}}
	obs := &countingObserver{}
	c := mustNew(t, cni.Options{CacheDir: e.cache, PluginDirs: []string{realPlugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: rt, ReservationGrace: time.Minute, Observer: obs})
	runOneRound(t, c, func() bool { f, fl, _, _ := obs.get(); return f+fl > 0 })
	if testcni.Exists(inA) || testcni.Exists(inB) {
		t.Fatalf("A's reservation still there: %v; B's: %v", testcni.Exists(inA), testcni.Exists(inB))
	}
	freed, _, _, _ := obs.get()
	st := testcni.Address(t, c, "10.98.0.2")
	var state string
	for _, r := range st.Reservations {
		state = r.State
	}
	t.Logf("observer freed %d; 10.98.0.2: state %q, frees told %d", freed, state, len(st.Freed))
	if freed != 1 || state != cni.ReservationReleasedMeanwhile || len(st.Freed) != 0 {
		t.Errorf("10.98.0.2, released by the runtime's DEL before the round's: Observer freed %d (want 1), state %q (want %q), frees told %d (want 0)",
			freed, state, cni.ReservationReleasedMeanwhile, len(st.Freed))
	}
}
