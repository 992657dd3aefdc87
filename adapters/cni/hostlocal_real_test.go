package cni_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/internal/testkube"
)

// adapters/k8s counts what an Observer hears as metrics.
var _ cni.Observer = (*k8s.ReservationMetrics)(nil)

// hostLocalNode is a node whose one network, "hlnet", chains the real
// bridge (with the real host-local as its IPAM, in a 6-address range) and
// a plugin that fails ADD while failAdd exists: the chain's ADD then
// fails after host-local reserved the address, and libcni caches nothing
// (containerd#12130).
type hostLocalNode struct {
	*node
	conf    []byte
	failAdd string
	adds    int
}

func newHostLocalNode(t *testing.T) *hostLocalNode {
	n := newNode(t)
	h := &hostLocalNode{node: n, failAdd: filepath.Join(filepath.Dir(n.cacheDir), "fail-add")}
	script := fmt.Sprintf(`#!/bin/sh
echo "$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME netns=$CNI_NETNS" >> %s
if [ "$CNI_COMMAND" = ADD ] && [ -e %s ]; then
	echo '{"cniVersion":"1.1.0","code":999,"msg":"ADD fails on purpose"}'
	exit 1
fi
if [ "$CNI_COMMAND" = ADD ]; then
	echo '{"cniVersion":"1.1.0"}'
fi
exit 0
`, n.callLog, h.failAdd)
	require.NoError(t, os.WriteFile(filepath.Join(n.pluginDir, "chained"), []byte(script), 0o755))
	// 10.x.200.1 is the gateway: .2 to .7 are host-local's six addresses.
	h.conf = fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":"hlnet","plugins":[
{"type":"bridge","bridge":"pswhl%d","isGateway":true,"ipam":{"type":"host-local","ranges":[[{"subnet":"10.%d.200.0/29","rangeStart":"10.%d.200.2","rangeEnd":"10.%d.200.7"}]],"dataDir":%q}},
{"type":"chained"}]}`, n.id, 100+n.id, 100+n.id, 100+n.id, n.data)
	require.NoError(t, os.WriteFile(filepath.Join(n.confDir, "10-hlnet.conflist"), h.conf, 0o644))
	return h
}

// addHL ADDs a sandbox of ID id to hlnet through libcni, as containerd
// does; failing, the chain fails after host-local. It returns the ADD's
// error.
func (h *hostLocalNode) addHL(id string, failing bool) error {
	h.t.Helper()
	if failing {
		require.NoError(h.t, os.WriteFile(h.failAdd, nil, 0o644))
		defer os.Remove(h.failAdd)
	}
	list, err := libcni.NetworkConfFromBytes(h.conf)
	require.NoError(h.t, err)
	h.adds++
	netns := newNetNS(h.t, fmt.Sprintf("/run/netns/hl-%s-%d", id[:8], h.adds))
	_, err = h.cni.AddNetworkList(context.Background(), list, &libcni.RuntimeConf{ContainerID: id, NetNS: netns, IfName: "eth0",
		Args: [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", "default"}, {"K8S_POD_NAME", "p-" + id[:6]}, {"K8S_POD_UID", "uid-" + id[:6]}}})
	return err
}

// reservationsOf returns the addresses host-local holds for id in hlnet.
func (h *hostLocalNode) reservationsOf(id string) []string {
	entries, err := os.ReadDir(filepath.Join(h.data, "hlnet"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(h.t, err)
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(h.data, "hlnet", e.Name()))
		if os.IsNotExist(err) {
			continue // freed between the listing and the read
		}
		require.NoError(h.t, err)
		if first, _, _ := strings.Cut(string(b), "\r\n"); first == id && e.Name() != "lock" {
			out = append(out, e.Name())
		}
	}
	return out
}

// age sets the modification time of id's reservations d in the past.
func (h *hostLocalNode) age(id string, d time.Duration) {
	h.t.Helper()
	for _, ip := range h.reservationsOf(id) {
		when := time.Now().Add(-d)
		require.NoError(h.t, os.Chtimes(filepath.Join(h.data, "hlnet", ip), when, when))
	}
}

// recorder is an Observer that counts what it hears.
type recorder struct {
	mu     sync.Mutex
	counts map[string]int
}

func (r *recorder) add(kind, network, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts == nil {
		r.counts = map[string]int{}
	}
	r.counts[kind+" "+network+" "+reason]++
}

func (r *recorder) get(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[key]
}

func (r *recorder) ReservationFreed(network, reason string)      { r.add("freed", network, reason) }
func (r *recorder) ReservationFreeFailed(network, reason string) { r.add("failed", network, reason) }
func (r *recorder) ReservationWouldFree(network, reason string)  { r.add("would", network, reason) }
func (r *recorder) ReservationReported(network, reason string)   { r.add("reported", network, reason) }
func (r *recorder) ReservationNetwork(network string)            { r.add("network", network, "") }

// The real host-local, its range of six filled four ways: a sandbox whose
// chained ADD failed after host-local and that no runtime knows (freed by
// a DEL through the network's config, without a network namespace), one
// the same but reserved a moment ago (kept: it may be being created),
// one the runtime lists not ready with no cache entry (kept), one whose
// ADD succeeded and is cached (kept), and an address of a network whose
// config is gone (reported, untouched). The range is full before, and
// the address freed is given to the next ADD.
func TestResyncFreesALeakedHostLocalReservationThroughThePlugin(t *testing.T) {
	h := newHostLocalNode(t)
	ids := map[string]string{}
	for _, k := range []string{"leaked", "young", "listed", "cached", "filler1", "filler2", "next"} {
		ids[k] = randomID()
	}
	require.Error(t, h.addHL(ids["leaked"], true), "the chain fails after host-local")
	require.Error(t, h.addHL(ids["young"], true))
	require.Error(t, h.addHL(ids["listed"], true))
	require.NoError(t, h.addHL(ids["cached"], false))
	require.NoError(t, h.addHL(ids["filler1"], false))
	require.NoError(t, h.addHL(ids["filler2"], false))
	for _, k := range []string{"leaked", "young", "listed", "cached"} {
		require.Len(t, h.reservationsOf(ids[k]), 1, "%s holds an address", k)
	}
	require.Error(t, h.addHL(ids["next"], false), "the range of six is full")
	for _, k := range []string{"leaked", "listed", "cached", "filler1", "filler2"} {
		h.age(ids[k], time.Hour)
	}
	// The cache holds the sandboxes whose ADD succeeded only.
	entries, err := os.ReadDir(filepath.Join(h.cacheDir, "results"))
	require.NoError(t, err)
	require.Len(t, entries, 3)
	gone := filepath.Join(h.data, "oldnet", "10.9.9.9")
	require.NoError(t, os.MkdirAll(filepath.Dir(gone), 0o755))
	require.NoError(t, os.WriteFile(gone, []byte("abandoned\r\neth0"), 0o600))
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(gone, old, old))

	rt := &listedRuntime{}
	rt.set(nil, listed(ids["listed"], "uid-listed", false, time.Now().Add(-time.Hour)))
	logs := &testkube.Lines{}
	obs := &recorder{}
	coll, err := cni.New(cni.Options{CacheDir: h.cacheDir, PluginDirs: []string{h.pluginDir}, ConfDir: h.confDir, ResyncInterval: time.Hour,
		Runtime: rt, ReservationGrace: time.Minute, HostLocalDataDir: filepath.Join(h.data, "default"), Observer: obs,
		Logger: logs.Logger()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- coll.Resync(ctx, &tracker{}) }()
	defer func() { cancel(); require.NoError(t, <-done) }()

	eventually(t, 30*time.Second, func() bool { return len(h.reservationsOf(ids["leaked"])) == 0 }, "the leaked reservation freed")
	eventually(t, 5*time.Second, func() bool { return obs.get("freed hlnet NoSandbox") == 1 }, "the Observer told")
	for _, k := range []string{"young", "listed", "cached", "filler1", "filler2"} {
		require.Len(t, h.reservationsOf(ids[k]), 1, "%s keeps its address", k)
	}
	_, err = os.Stat(gone)
	require.NoError(t, err, "a reservation of a network whose config is gone is never touched")
	require.Equal(t, 1, obs.get("reported oldnet ConfigGone"))
	require.Positive(t, obs.get("network hlnet "), "told of the network, at each read")
	require.Zero(t, obs.get("network oldnet "), "a network without a config is no network of ConfDir")
	require.Equal(t, 1, logs.Count(cni.LogMessageReservationFreed))
	require.Zero(t, obs.get("failed hlnet NoSandbox"))
	// The DEL ran the network's chain, in reverse, for that container and interface, without a namespace.
	calls, err := os.ReadFile(h.callLog)
	require.NoError(t, err)
	var dels []string
	for line := range strings.Lines(string(calls)) {
		if strings.HasPrefix(line, "DEL ") {
			dels = append(dels, strings.TrimSpace(line))
		}
	}
	want := "DEL " + ids["leaked"] + " eth0 netns="
	require.Equal(t, []string{want, want}, dels, "chained, then bridge (which runs host-local)")
	require.NoError(t, h.addHL(ids["next"], false), "the address freed is given to the next sandbox")
}

// A dry run frees nothing, and lists exactly what it would free.
func TestResyncInADryRunListsTheReservationsItWouldFree(t *testing.T) {
	h := newHostLocalNode(t)
	leaked, live := randomID(), randomID()
	require.Error(t, h.addHL(leaked, true))
	require.Error(t, h.addHL(live, true))
	h.age(leaked, time.Hour)
	h.age(live, time.Hour)
	rt := &listedRuntime{}
	rt.set(nil, listed(live, "uid-live", true, time.Now()))
	obs := &recorder{}
	coll, err := cni.New(cni.Options{CacheDir: h.cacheDir, PluginDirs: []string{h.pluginDir}, ConfDir: h.confDir, ResyncInterval: 50 * time.Millisecond,
		Runtime: rt, HostLocalDataDir: filepath.Join(h.data, "default"), DryRun: true, Observer: obs})
	require.NoError(t, err)
	require.Empty(t, coll.WouldFree(), "before its first resync")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- coll.Resync(ctx, &tracker{}) }()
	eventually(t, 10*time.Second, func() bool { return len(coll.WouldFree()) == 1 }, "the dry run's report")
	time.Sleep(200 * time.Millisecond) // a few rounds more
	cancel()
	require.NoError(t, <-done)
	got := coll.WouldFree()
	require.Len(t, got, 1)
	ip := h.reservationsOf(leaked)
	require.Len(t, ip, 1, "still reserved")
	require.Equal(t, cni.Reservation{Network: "hlnet", DataDir: h.data, IP: ip[0], ContainerID: leaked, IfName: "eth0", Reserved: got[0].Reserved}, got[0])
	require.Equal(t, 1, obs.get("would hlnet NoSandbox"), "told once, whatever the rounds")
	calls, err := os.ReadFile(h.callLog)
	require.NoError(t, err)
	require.NotContains(t, string(calls), "DEL ", "a dry run runs no DEL")
}

// A DEL that succeeds while host-local still holds the address (a chain
// that no longer runs host-local where the reservation is) freed nothing:
// it fails, told, and is tried again.
func TestADELThatFreesNothingFails(t *testing.T) {
	h := newHostLocalNode(t)
	leaked := randomID()
	require.Error(t, h.addHL(leaked, true))
	h.age(leaked, time.Hour)
	// The network's config now runs only the chained plugin, with an ipam
	// that names host-local's data dir but is never run.
	conf := fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":"hlnet","plugins":[{"type":"chained","ipam":{"type":"host-local","dataDir":%q}}]}`, h.data)
	require.NoError(t, os.WriteFile(filepath.Join(h.confDir, "10-hlnet.conflist"), conf, 0o644))
	obs := &recorder{}
	logs := &testkube.Lines{}
	coll, err := cni.New(cni.Options{CacheDir: h.cacheDir, PluginDirs: []string{h.pluginDir}, ConfDir: h.confDir, ResyncInterval: 50 * time.Millisecond,
		Runtime: &listedRuntime{}, HostLocalDataDir: filepath.Join(h.data, "default"), Observer: obs, Logger: logs.Logger()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- coll.Resync(ctx, &tracker{}) }()
	eventually(t, 10*time.Second, func() bool { return obs.get("failed hlnet NoSandbox") >= 2 }, "failed, and tried again")
	cancel()
	require.NoError(t, <-done)
	require.Len(t, h.reservationsOf(leaked), 1)
	require.Zero(t, obs.get("freed hlnet NoSandbox"))
	require.Positive(t, logs.Count("host-local still holds"))
}

// Without a runtime to ask, or when it fails, nothing is freed.
func TestNoReservationIsFreedWithoutARuntimeToAsk(t *testing.T) {
	for _, tc := range []struct {
		name string
		rt   cni.Runtime
	}{
		{"no runtime", nil},
		{"the runtime fails", func() cni.Runtime { r := &listedRuntime{}; r.set(errors.New("CRI down")); return r }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHostLocalNode(t)
			leaked := randomID()
			require.Error(t, h.addHL(leaked, true))
			h.age(leaked, time.Hour)
			coll, err := cni.New(cni.Options{CacheDir: h.cacheDir, PluginDirs: []string{h.pluginDir}, ConfDir: h.confDir, ResyncInterval: 20 * time.Millisecond,
				Runtime: tc.rt, HostLocalDataDir: filepath.Join(h.data, "default")})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			require.NoError(t, coll.Resync(ctx, &tracker{}))
			require.Len(t, h.reservationsOf(leaked), 1)
			calls, err := os.ReadFile(h.callLog)
			require.NoError(t, err)
			require.False(t, slices.ContainsFunc(strings.Split(string(calls), "\n"), func(l string) bool { return strings.HasPrefix(l, "DEL") }))
		})
	}
}

// host-local's DEL releases every address of its container in the network
// at once, and removes any file of the network's directory that names the
// container, a link the collector never touches among them. So an old
// reservation whose container holds a young one too is kept until both are
// old (row 17), and one that a link names is kept for as long as the link
// does (row 16); the real DEL then frees the two addresses together.
func TestAReservationIsDecidedWithAllThatItsDELReleases(t *testing.T) {
	h := newHostLocalNode(t)
	control, twoAddrs, linkedTo := randomID(), randomID(), randomID()
	for _, id := range []string{control, twoAddrs, linkedTo} {
		require.Error(t, h.addHL(id, true), "the chain fails after host-local")
		h.age(id, time.Hour)
	}
	dir := filepath.Join(h.data, "hlnet")
	// A second address of twoAddrs, reserved a moment ago (as a second range would); and a link that names linkedTo.
	second := fmt.Sprintf("10.%d.200.7", 100+h.id)
	require.NoError(t, os.WriteFile(filepath.Join(dir, second), []byte(twoAddrs+"\r\neth0"), 0o600))
	outside := filepath.Join(t.TempDir(), "named")
	require.NoError(t, os.WriteFile(outside, []byte(linkedTo+"\r\neth0"), 0o600))
	link := filepath.Join(dir, fmt.Sprintf("10.%d.200.6", 100+h.id))
	require.NoError(t, os.Symlink(outside, link))

	logs := &testkube.Lines{}
	round := func(dryRun bool) *cni.Collector {
		t.Helper()
		coll, err := cni.New(cni.Options{CacheDir: h.cacheDir, PluginDirs: []string{h.pluginDir}, ConfDir: h.confDir, ResyncInterval: time.Hour,
			Runtime: &listedRuntime{}, ReservationGrace: time.Minute, HostLocalDataDir: filepath.Join(h.data, "default"), DryRun: dryRun,
			Logger: logs.Logger()})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- coll.Resync(ctx, &tracker{}) }()
		eventually(t, 30*time.Second, func() bool {
			if dryRun {
				return len(coll.WouldFree()) > 0
			}
			// A line for each reservation freed, the one its container's DEL released with another too.
			return len(h.reservationsOf(control)) == 0 && len(h.reservationsOf(twoAddrs)) == 0 &&
				logs.Count(cni.LogMessageReservationFreed) == 3
		}, "the round: the control freed (and, once old, both addresses of the container), each told by a line")
		cancel()
		require.NoError(t, <-done)
		return coll
	}
	coll := round(true)
	var would []string
	for _, r := range coll.WouldFree() {
		would = append(would, r.ContainerID)
	}
	require.Equal(t, []string{control}, would, "the old address of a container that holds a young one, and one a link names, are kept")

	when := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(dir, second), when, when))
	round(false)
	_, err := os.Lstat(link)
	require.NoError(t, err, "the link is never touched")
	require.Len(t, h.reservationsOf(linkedTo), 2, "the reservation a link names is kept while the link is there (which reads as a second)")
}

// host-local's DEL removes the files that hold the container's ID alone (as
// host-local before v0.8 wrote them) when it finds none of the ID and the
// interface: in a network whose chain runs host-local twice, the second
// does so after the first released the reservation. A leaked reservation
// whose container such a file names is then kept (row 16), and the file is
// never touched; with host-local once in the chain, the DEL leaves that
// file alone, and the reservation is freed. So of a container whose ID is
// an address (libcni takes one): the file that holds it alone is then
// host-local's own last_reserved_ip.
func TestALegacyFileOfTheContainerKeepsItsReservationWhenTheChainRunsHostLocalTwice(t *testing.T) {
	for _, tc := range []struct{ twice, addressID bool }{{true, false}, {false, false}, {true, true}} {
		twice := tc.twice
		t.Run(fmt.Sprintf("host-local twice: %v, an address as container ID: %v", twice, tc.addressID), func(t *testing.T) {
			h := newHostLocalNode(t)
			if twice {
				// A second plugin whose IPAM is host-local too, on the same data directory: its DEL is host-local's.
				second := fmt.Sprintf(`#!/bin/sh
echo "$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME netns=$CNI_NETNS second" >> %s
if [ "$CNI_COMMAND" = DEL ]; then
	exec %s
fi
echo '{"cniVersion":"1.1.0"}'
`, h.callLog, filepath.Join(h.pluginDir, "host-local"))
				require.NoError(t, os.WriteFile(filepath.Join(h.pluginDir, "second"), []byte(second), 0o755))
				conf := strings.Replace(string(h.conf), `{"type":"chained"}`, fmt.Sprintf(`{"type":"second","ipam":{"type":"host-local",`+
					`"ranges":[[{"subnet":"10.%d.201.0/29"}]],"dataDir":%q}},{"type":"chained"}`, 100+h.id, h.data), 1)
				require.NotEqual(t, string(h.conf), conf)
				require.NoError(t, os.WriteFile(filepath.Join(h.confDir, "10-hlnet.conflist"), []byte(conf), 0o644))
			}
			leaked := randomID()
			if tc.addressID {
				leaked = fmt.Sprintf("10.%d.200.77", 100+h.id)
			}
			require.NoError(t, os.WriteFile(filepath.Join(h.failAdd), nil, 0o644))
			list, err := libcni.NetworkConfFromBytes(h.conf) // the ADD through the first host-local alone
			require.NoError(t, err)
			netns := newNetNS(t, fmt.Sprintf("/run/netns/hl-%s-legacy", leaked[:8]))
			_, err = h.cni.AddNetworkList(context.Background(), list, &libcni.RuntimeConf{ContainerID: leaked, NetNS: netns, IfName: "eth0"})
			require.Error(t, err, "the chain fails after host-local")
			require.NoError(t, os.Remove(h.failAdd))
			h.age(leaked, time.Hour)
			reserved := h.reservationsOf(leaked)
			require.Len(t, reserved, 1)
			held := func() bool { _, err := os.Stat(filepath.Join(h.data, "hlnet", reserved[0])); return err == nil }
			legacy := filepath.Join(h.data, "hlnet", fmt.Sprintf("10.%d.200.9", 100+h.id))
			if tc.addressID { // host-local's own, the last address it reserved in the range: the container's ID
				legacy = filepath.Join(h.data, "hlnet", "last_reserved_ip.0")
			}
			require.NoError(t, os.WriteFile(legacy, []byte(leaked), 0o600))

			coll, err := cni.New(cni.Options{CacheDir: h.cacheDir, PluginDirs: []string{h.pluginDir}, ConfDir: h.confDir, ResyncInterval: 50 * time.Millisecond,
				Runtime: &listedRuntime{}, ReservationGrace: time.Minute, HostLocalDataDir: filepath.Join(h.data, "default")})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- coll.Resync(ctx, &tracker{}) }()
			if twice {
				time.Sleep(time.Second) // rounds enough
			} else {
				eventually(t, 30*time.Second, func() bool { return !held() }, "the leaked reservation freed")
			}
			cancel()
			require.NoError(t, <-done)
			_, err = os.Stat(legacy)
			require.NoError(t, err, "the file that holds the container's ID alone is never touched")
			if twice {
				require.True(t, held(), "kept: its DEL would remove the file never touched")
				calls, err := os.ReadFile(h.callLog)
				require.NoError(t, err)
				require.NotContains(t, string(calls), "DEL "+leaked)
			}
		})
	}
}

// linkingRuntime is a runtime that lists nothing and, when asked the at-th time, replaces each of the files of paths
// still there with a link to a copy of it elsewhere: the same content, no longer host-local's file. A round of the
// sweep asks it first once it has read host-local's reservations; under a rate, once a reservation waited its turn,
// it asks again right before that reservation's DEL.
type linkingRuntime struct {
	listedRuntime
	paths []string
	at    int
	mu    sync.Mutex
	calls int
}

func (r *linkingRuntime) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r.mu.Lock()
	r.calls++
	if r.calls == r.at {
		for _, p := range r.paths {
			b, err := os.ReadFile(p)
			old := time.Now().Add(-time.Hour) // as old as the reservation: only what the file is tells it apart
			if err == nil && os.WriteFile(p+".elsewhere", b, 0o600) == nil && os.Chtimes(p+".elsewhere", old, old) == nil && os.Remove(p) == nil {
				_ = os.Symlink(p+".elsewhere", p)
			}
		}
	}
	r.mu.Unlock()
	return r.listedRuntime.ListPodSandbox(ctx, f)
}

// A reservation replaced by a link after the round read it is no longer host-local's file ("replaced by a link, or
// anything else: no reservation of host-local's, never touched"): a leaked address the round decided to free is not
// DELed once its file is a link, whatever the link's target holds, and the link stays; so when it is replaced while
// it waits its turn under the rate, right before its DEL. The other leaked address is freed.
func TestAReservationReplacedByALinkMidRoundIsNeverTouched(t *testing.T) {
	for _, at := range []int{1, 2} {
		t.Run(fmt.Sprintf("replaced at the runtime's call %d", at), func(t *testing.T) { reservationReplacedByALink(t, at) })
	}
}

func reservationReplacedByALink(t *testing.T, at int) {
	h := newHostLocalNode(t)
	first, second := randomID(), randomID()
	var paths []string
	for _, id := range []string{first, second} {
		require.Error(t, h.addHL(id, true), "the chain fails after host-local")
		ips := h.reservationsOf(id)
		require.Len(t, ips, 1)
		h.age(id, time.Hour)
		paths = append(paths, filepath.Join(h.data, "hlnet", ips[0]))
	}
	rt := &linkingRuntime{paths: paths, at: at}
	if at == 2 {
		rt.paths = nil // the one freed second, whichever it is: the other is gone by then
	}
	obs := &recorder{}
	coll, err := cni.New(cni.Options{CacheDir: h.cacheDir, PluginDirs: []string{h.pluginDir}, ConfDir: h.confDir, ResyncInterval: time.Hour,
		Runtime: rt, ReservationGrace: time.Minute, ReservationRate: 5, ReservationBurst: 1,
		HostLocalDataDir: filepath.Join(h.data, "default"), Observer: obs, Logger: quiet()})
	require.NoError(t, err)
	if at == 2 {
		rt.paths = paths
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- coll.Resync(ctx, &tracker{}) }()
	eventually(t, 30*time.Second, func() bool { rt.mu.Lock(); defer rt.mu.Unlock(); return rt.calls >= at }, "the runtime asked")
	time.Sleep(time.Second) // the round's end: its DELs, 0.2 s apart under the rate
	cancel()
	require.NoError(t, <-done)
	calls, err := os.ReadFile(h.callLog)
	require.NoError(t, err)
	linked := 0
	for i, p := range paths {
		id := []string{first, second}[i]
		fi, err := os.Lstat(p)
		if err != nil {
			require.Contains(t, string(calls), "DEL "+id, "%s: its reservation is gone, and was not DELed", id)
			continue
		}
		linked++
		require.Equal(t, os.ModeSymlink, fi.Mode().Type(), "%s: the link is left as it is", id)
		require.NotContains(t, string(calls), "DEL "+id, "%s: no DEL of the container whose reservation is a link", id)
		b, err := os.ReadFile(p + ".elsewhere")
		require.NoError(t, err)
		require.Contains(t, string(b), id, "%s: the link's target is left as it is", id)
	}
	require.Equal(t, map[int]int{1: 2, 2: 1}[at], linked, "reservations replaced by a link")
}
