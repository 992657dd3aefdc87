package faults_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// releasePlugin is a host-local stand-in: its DEL sleeps for the seconds in its config's "sleep", then
// removes the reservation files of its container in the network's directory of dataDir, logging the
// time it began.
const releasePlugin = `#!/bin/sh
conf=$(cat)
[ "$CNI_COMMAND" = DEL ] || exit 0
echo "$(date +%%s%%N) $CNI_CONTAINERID" >> %q
s=$(echo "$conf" | sed -n 's/.*"sleep":\([0-9]*\).*/\1/p')
[ -n "$s" ] && sleep "$s"
for f in %q/*; do [ "$(head -n1 "$f" | tr -d '\r')" = "$CNI_CONTAINERID" ] && rm -f "$f"; done
exit 0
`

// releaseEnv makes a ConfDir with network "net" run by releasePlugin (sleeping sleep seconds a DEL), and
// n leaked reservations of it, an hour old. It returns the env and the file the plugin logs its DELs in.
func releaseEnv(t *testing.T, n, sleep int) (env, string) {
	e := newEnv(t)
	e.plugins = t.TempDir()
	log := filepath.Join(e.root, "dels.log")
	testcni.Write(t, filepath.Join(e.plugins, "release"), fmt.Sprintf(releasePlugin, log, filepath.Join(e.data, "net")))
	if err := os.Chmod(filepath.Join(e.plugins, "release"), 0o755); err != nil {
		t.Fatal(err)
	}
	testcni.Write(t, filepath.Join(e.conf, "10-net.conflist"),
		fmt.Sprintf(`{"cniVersion":"1.0.0","name":"net","plugins":[{"type":"release","sleep":%d,"ipam":{"type":"host-local","ranges":[[{"subnet":"10.9.0.0/24"}]]}}]}`, sleep))
	for i := range n {
		reservation(t, e.data, "net", fmt.Sprintf("10.9.0.%d", 10+i), fmt.Sprintf("leaked-%02d", i), "eth0", time.Hour)
	}
	return e, log
}

// delStarts reads the times the plugin began its DELs.
func delStarts(t *testing.T, log string) []time.Time {
	b, _ := os.ReadFile(log)
	var out []time.Time
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			ns, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, time.Unix(0, ns))
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// docs/operating/rollout.md: "set --max-destroys-per-second ...: if something upstream goes wrong, at
// most that many destroys start a second (cni-gc's frees of host-local reservations too)";
// Options.ReservationRate: "at most how many host-local reservations Resync frees a second, whatever
// goes wrong upstream". A Runtime that lists no sandbox (a containerd on a fresh state, another
// runtime's endpoint) while 8 reservations are old enough: at 1 a second, burst 1, the k-th DEL starts
// k seconds or more after Resync began, and all are freed.
func TestReservationFreesKeepTheirRate(t *testing.T) {
	e, log := releaseEnv(t, 8, 0)
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: emptyRuntime{}, ResyncInterval: time.Hour, ReservationRate: rate.Limit(1), ReservationBurst: 1})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	resyncFor(t, func(ctx context.Context) error { return c.Resync(ctx, testcni.NopTracker{}) }, 30*time.Second,
		func() bool { return len(delStarts(t, log)) == 8 })
	starts := delStarts(t, log)
	if len(starts) != 8 {
		t.Fatalf("%d DELs of 8 leaked reservations", len(starts))
	}
	// Each start is read by the plugin's shell, which a loaded machine starts up to hundreds of milliseconds
	// after its turn: the gap between two starts may be a turn less that delay, and tells nothing. But no start
	// comes before its turn, and with a burst of 1 the k-th turn (from 0) is k seconds or more after Resync
	// began: sorted, the k-th start is too, however late each plugin started (10 ms: the shell's clock).
	for k, at := range starts {
		if earliest := began.Add(time.Duration(k)*time.Second - 10*time.Millisecond); at.Before(earliest) {
			t.Errorf("DEL %d of 8 started %v after Resync began, under a rate of 1 a second (%d turns: %d s)",
				k+1, at.Sub(began), k, k)
		}
	}
	if _, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ReservationRate: -1}); err == nil {
		t.Error("a negative ReservationRate was accepted")
	}
}

// trackedTracker records the PUIDs tracked.
type trackedTracker struct {
	mu      sync.Mutex
	tracked []string
}

func (r *trackedTracker) Track(pu ports.PU) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tracked = append(r.tracked, pu.PUID)
	return nil
}
func (r *trackedTracker) Untrack(string) bool             { return false }
func (r *trackedTracker) TriggerPod(types.NamespacedName) {}
func (r *trackedTracker) has(puid string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.tracked, puid)
}

// Collector.Requeue: "it asks a running Resync to list the cache at once, so that the pod's next sandbox
// in the cache is tracked and checked without waiting for ResyncInterval". While the sweep's DEL of a
// leaked reservation takes 20 s (a plugin waiting for the xtables lock), a requeued pod's new sandbox
// is tracked within seconds, not once that DEL is done.
func TestARequeueIsNotHeldByAReservationsDEL(t *testing.T) {
	e, log := releaseEnv(t, 1, 20)
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: emptyRuntime{}, ResyncInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	tr := &trackedTracker{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Resync(ctx, tr) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Resync: %v", err)
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); len(delStarts(t, log)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the sweep did not DEL the leaked reservation")
		}
	}
	testcni.Write(t, filepath.Join(e.cache, "results", "net-sb-new-eth0"), `{"kind":"cniCacheV1","containerId":"sb-new","ifName":"eth0","networkName":"net",`+
		`"cniArgs":[["K8S_POD_UID","uid-new"],["K8S_POD_NAMESPACE","ns"],["K8S_POD_NAME","p"]],"config":"eyJjbmlWZXJzaW9uIjoiMS4wLjAiLCJuYW1lIjoibmV0IiwidHlwZSI6InJlbGVhc2UifQ=="}`)
	requeued := time.Now()
	if err := c.Requeue(ctx, pod("ns", "p")); err != nil {
		t.Fatal(err)
	}
	for !tr.has("uid-new") {
		if time.Since(requeued) > 5*time.Second {
			t.Fatal("the requeued pod's sandbox is not tracked 5 s after Requeue: the list waits for the sweep's DEL")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pod returns a pod object named ns/name.
func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// countingTracker counts the Tracks of each PUID.
type countingTracker struct {
	mu     sync.Mutex
	tracks map[string]int
}

func (r *countingTracker) Track(pu ports.PU) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tracks[pu.PUID]++
	return nil
}
func (r *countingTracker) Untrack(string) bool             { return false }
func (r *countingTracker) TriggerPod(types.NamespacedName) {}
func (r *countingTracker) of(puid string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tracks[puid]
}

// docs/operating/rollout.md and docs/metrics.md: a dry run reports each PU that would go once per reason,
// and a long dry run does not grow. Its engine drops a gone pod's PU once reported; Resync must not track
// it again at every list of the cache, where the entry stays (nothing is DELed): in a dry run a PU listed
// before with the same sandbox is tracked once, however many lists; without the dry run, at every list
// (Track is insert-only: a PU destroyed whose entry is still there must come back).
func TestADryRunTracksAListedPUOnce(t *testing.T) {
	for _, dry := range []bool{true, false} {
		e := newEnv(t)
		testcni.Write(t, filepath.Join(e.cache, "results", "net-sb-1-eth0"), `{"kind":"cniCacheV1","containerId":"sb-1","ifName":"eth0","networkName":"net",`+
			`"cniArgs":[["K8S_POD_UID","uid-1"],["K8S_POD_NAMESPACE","ns"],["K8S_POD_NAME","p"]],"config":"eyJjbmlWZXJzaW9uIjoiMS4wLjAiLCJuYW1lIjoibmV0IiwidHlwZSI6InJlbGVhc2UifQ=="}`)
		c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, Runtime: emptyRuntime{},
			ResyncInterval: time.Hour, DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		tr := &countingTracker{tracks: map[string]int{}}
		rounds := 0
		resyncFor(t, func(ctx context.Context) error { return c.Resync(ctx, tr) }, 10*time.Second, func() bool {
			rounds++
			_ = c.Requeue(context.Background(), pod("ns", "other")) // a list at once, for another pod
			time.Sleep(200 * time.Millisecond)
			return rounds == 5
		})
		switch got := tr.of("uid-1"); {
		case dry && got != 1:
			t.Errorf("a dry run's Resync tracked a PU it listed before %d times, want once", got)
		case !dry && got < 5:
			t.Errorf("Resync tracked a listed PU %d times in 5 lists, want at each", got)
		}
	}
}

// README.md: "any network whose config, cached or in /etc/cni/net.d, says "disableGC": true" is never
// touched. The operator sets it on net while a round of the sweep waits for its turns under the frees'
// rate (1 a second): no DEL of net starts after it is set.
func TestDisableGCSetWhileARoundWaitsStopsIt(t *testing.T) {
	e, log := releaseEnv(t, 4, 0)
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: emptyRuntime{}, ResyncInterval: time.Hour, ReservationRate: rate.Limit(1), ReservationBurst: 1})
	if err != nil {
		t.Fatal(err)
	}
	var set time.Time
	resyncFor(t, func(ctx context.Context) error { return c.Resync(ctx, testcni.NopTracker{}) }, 3500*time.Millisecond, func() bool {
		if set.IsZero() && len(delStarts(t, log)) == 1 {
			testcni.Write(t, filepath.Join(e.conf, "10-net.conflist"),
				`{"cniVersion":"1.0.0","name":"net","disableGC":true,"plugins":[{"type":"release","ipam":{"type":"host-local"}}]}`)
			set = time.Now()
		}
		return false
	})
	for _, s := range delStarts(t, log) {
		if !set.IsZero() && s.After(set) {
			t.Errorf("a DEL of net started %v after disableGC was set on it", s.Sub(set))
		}
	}
}

// LogMessageReservationFreed: the line "for each host-local reservation it freed". A chain [a plugin
// whose DEL fails, host-local]: libcni DELs in reverse, so host-local releases the address, then the
// other plugin fails. The reservation is freed: it is counted freed, not failed, and not tried again.
func TestAReservationAFailingChainReleasedIsCountedFreed(t *testing.T) {
	e, _ := releaseEnv(t, 1, 0)
	testcni.Write(t, filepath.Join(e.plugins, "failer"), "#!/bin/sh\ncat >/dev/null\n[ \"$CNI_COMMAND\" = DEL ] && exit 1\nexit 0\n")
	if err := os.Chmod(filepath.Join(e.plugins, "failer"), 0o755); err != nil {
		t.Fatal(err)
	}
	testcni.Write(t, filepath.Join(e.conf, "10-net.conflist"),
		`{"cniVersion":"1.0.0","name":"net","plugins":[{"type":"failer"},{"type":"release","ipam":{"type":"host-local"}}]}`)
	obs := &observer{}
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: emptyRuntime{}, ResyncInterval: time.Hour, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	resyncFor(t, func(ctx context.Context) error { return c.Resync(ctx, testcni.NopTracker{}) }, 5*time.Second,
		func() bool { return len(obs.get(&obs.freed))+len(obs.get(&obs.failed)) > 0 })
	if freed, failed := obs.get(&obs.freed), obs.get(&obs.failed); len(freed) != 1 || len(failed) != 0 {
		t.Errorf("a reservation the chain's DEL released, a plugin failing after: freed %v, failed %v; want freed once", freed, failed)
	}
}

// Options.ReservationRate counts reservations, not DELs: "at most how many host-local reservations Resync frees a
// second". One container holds three leaked reservations, which its one DEL releases together; at 5 a second,
// burst 1, that DEL waits for three turns after the DEL of the reservation before it: 600 ms, not 200.
func TestARateCountsEveryReservationADELReleases(t *testing.T) {
	e, log := releaseEnv(t, 0, 0)
	reservation(t, e.data, "net", "10.9.0.10", "one", "eth0", time.Hour)
	for i := range 3 {
		reservation(t, e.data, "net", fmt.Sprintf("10.9.0.%d", 11+i), "three", "eth0", time.Hour)
	}
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: emptyRuntime{}, ResyncInterval: time.Hour, ReservationRate: rate.Limit(5), ReservationBurst: 1})
	if err != nil {
		t.Fatal(err)
	}
	resyncFor(t, func(ctx context.Context) error { return c.Resync(ctx, testcni.NopTracker{}) }, 20*time.Second,
		func() bool { return len(delStarts(t, log)) == 2 })
	starts := delStarts(t, log)
	if len(starts) != 2 {
		t.Fatalf("%d DELs, want one a container", len(starts))
	}
	if gap := starts[1].Sub(starts[0]); gap < 500*time.Millisecond {
		t.Errorf("the DEL of three reservations started %v after the one before it: under a rate of 5 a second, it frees three", gap)
	}
}

// countingObserver counts what cni.Observer is told of the reservations.
type countingObserver struct {
	mu            sync.Mutex
	freed, failed int
}

func (o *countingObserver) ReservationFreed(string, string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.freed++
}

func (o *countingObserver) ReservationFreeFailed(string, string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failed++
}
func (o *countingObserver) ReservationWouldFree(string, string) {}
func (o *countingObserver) ReservationReported(string, string)  {}
func (o *countingObserver) ReservationNetwork(string)           {}

// cni-freeing.md: a DEL that fails while host-local still holds the reservations is tried again, "each of them told
// failed"; one that fails after host-local released them (a plugin before host-local in the chain failed: DEL runs
// the chain in reverse) freed them: each is told freed, with the DEL's error on the address page, and nothing names
// the container to try again. A chain [teardown, release] whose teardown fails its DEL: the leaked reservation is
// freed, told so with the error, counted freed (not failed), and the next round runs no DEL.
func TestADELThatFailsAfterHostLocalReleasedFreed(t *testing.T) {
	e, log := releaseEnv(t, 1, 0)
	testcni.Write(t, filepath.Join(e.plugins, "teardown"), "#!/bin/sh\ncat >/dev/null\n[ \"$CNI_COMMAND\" = DEL ] || exit 0\n"+
		"echo '{\"code\":11,\"msg\":\"teardown failed\"}'\nexit 1\n")
	if err := os.Chmod(filepath.Join(e.plugins, "teardown"), 0o755); err != nil {
		t.Fatal(err)
	}
	testcni.Write(t, filepath.Join(e.conf, "10-net.conflist"), `{"cniVersion":"1.0.0","name":"net","plugins":[{"type":"teardown"},`+
		`{"type":"release","ipam":{"type":"host-local","ranges":[[{"subnet":"10.9.0.0/24"}]]}}]}`)
	obs := &countingObserver{}
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: emptyRuntime{}, ResyncInterval: time.Hour, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	freed := func() bool { obs.mu.Lock(); defer obs.mu.Unlock(); return obs.freed+obs.failed > 0 }
	resyncFor(t, func(ctx context.Context) error { return c.Resync(ctx, testcni.NopTracker{}) }, 10*time.Second, freed)
	st := testcni.Address(t, c, "10.9.0.10")
	if len(st.Reservations) != 1 || st.Reservations[0].State != cni.ReservationFreed ||
		!strings.Contains(st.Reservations[0].Error, "failed after host-local released") || !strings.Contains(st.Reservations[0].Error, "teardown failed") {
		t.Fatalf("the page tells %+v, not freed with the DEL's error", st.Reservations)
	}
	obs.mu.Lock()
	if obs.freed != 1 || obs.failed != 0 {
		t.Errorf("the Observer heard %d freed, %d failed: want 1 freed", obs.freed, obs.failed)
	}
	obs.mu.Unlock()
	resyncFor(t, func(ctx context.Context) error { return c.Resync(ctx, testcni.NopTracker{}) }, 500*time.Millisecond, func() bool { return false })
	if n := len(delStarts(t, log)); n != 1 {
		t.Errorf("%d DELs: nothing names the container to run another", n)
	}
}
