package cni_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/adapters/cri"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/ports"
)

// These tests read and DEL cache entries written by the test, with a
// plugin that only logs its calls; the scenarios on the real plugins are
// in scenarios_test.go.

// cacheDir is a libcni cache directory written by hand, with a plugin
// directory whose "logger" plugin records each call and succeeds.
type cacheDir struct {
	t                         *testing.T
	dir, plugins, conf, calls string
	logs                      *testkube.Lines
}

func newCacheDir(t *testing.T) *cacheDir {
	root := t.TempDir()
	c := &cacheDir{t: t, dir: filepath.Join(root, "cache"), plugins: filepath.Join(root, "bin"), conf: filepath.Join(root, "net.d"),
		calls: filepath.Join(root, "calls"), logs: &testkube.Lines{}}
	for _, d := range []string{filepath.Join(c.dir, "results"), c.plugins, c.conf} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	script := fmt.Sprintf("#!/bin/sh\necho \"$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME\" >> %s\n", c.calls)
	require.NoError(t, os.WriteFile(filepath.Join(c.plugins, "logger"), []byte(script), 0o755))
	return c
}

// collector returns a Collector of c.
func (c *cacheDir) collector() *cni.Collector {
	coll, err := cni.New(cni.Options{CacheDir: c.dir, PluginDirs: []string{c.plugins}, ConfDir: c.conf,
		ResyncInterval: time.Minute, Logger: c.logs.Logger()})
	require.NoError(c.t, err)
	return coll
}

// collectorListingNone returns a Collector of c whose Runtime lists no
// sandbox (as after a reboot): one not listed whose network namespace
// tells nothing is not one the runtime is creating, and is freed with its
// gone pod (decide's row 11) or when a later sandbox of its pod is cached
// (row 6). Without a Runtime, nothing would be (row 5).
func (c *cacheDir) collectorListingNone() *cni.Collector {
	return c.collectorWith(&listedRuntime{}, 0)
}

// entry is a cache entry to write; config "" is a conflist of the logger plugin.
type entry struct {
	network, sandbox, ifName string
	uid, namespace, name     string
	config                   string
	// age sets the entry's modification time that far in the past.
	age time.Duration
}

// write writes e as libcni would, and returns its file name.
func (c *cacheDir) write(e entry) string {
	if e.ifName == "" {
		e.ifName = "eth0"
	}
	if e.config == "" {
		e.config = fmt.Sprintf(`{"cniVersion":"1.1.0","name":%q,"plugins":[{"type":"logger"}]}`, e.network)
	}
	args := [][2]string{{"IgnoreUnknown", "1"}}
	for _, kv := range [][2]string{{"K8S_POD_NAMESPACE", e.namespace}, {"K8S_POD_NAME", e.name}, {"K8S_POD_UID", e.uid}} {
		if kv[1] != "" {
			args = append(args, kv)
		}
	}
	b, err := json.Marshal(map[string]any{"kind": "cniCacheV1", "containerId": e.sandbox, "ifName": e.ifName, "networkName": e.network,
		"config": []byte(e.config), "cniArgs": args, "result": map[string]any{"cniVersion": "1.1.0"}})
	require.NoError(c.t, err)
	return c.writeRaw(fmt.Sprintf("%s-%s-%s", e.network, e.sandbox, e.ifName), b, e.age)
}

func (c *cacheDir) writeRaw(name string, b []byte, age time.Duration) string {
	path := filepath.Join(c.dir, "results", name)
	require.NoError(c.t, os.WriteFile(path, b, 0o600))
	when := time.Now().Add(-age)
	require.NoError(c.t, os.Chtimes(path, when, when))
	return name
}

func (c *cacheDir) exists(name string) bool {
	_, err := os.Stat(filepath.Join(c.dir, "results", name))
	return err == nil
}

// delCalls returns the DELs the logger plugin ran.
func (c *cacheDir) delCalls() []string {
	b, err := os.ReadFile(c.calls)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(c.t, err)
	return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(b)), "DEL ", "DEL:"))
}

func pu(uid, sandbox string) ports.PU {
	return ports.PU{PUID: uid, Pod: types.NamespacedName{Namespace: "ns", Name: "pod-" + uid}, SandboxID: sandbox}
}

func TestNewFailsWhenADirectoryIsMissing(t *testing.T) {
	c := newCacheDir(t)
	_, err := cni.New(cni.Options{CacheDir: filepath.Join(c.dir, "missing"), PluginDirs: []string{c.plugins}})
	require.ErrorIs(t, err, cni.ErrInvalidOptions)
	_, err = cni.New(cni.Options{CacheDir: c.dir, PluginDirs: []string{filepath.Join(c.plugins, "missing")}})
	require.ErrorIs(t, err, cni.ErrInvalidOptions)
	_, err = cni.New(cni.Options{CacheDir: c.dir, PluginDirs: []string{c.plugins}, ResyncInterval: -time.Second})
	require.ErrorIs(t, err, cni.ErrInvalidOptions)
	// A config or data directory that does not exist holds none; a file in its place fails every read.
	file := filepath.Join(c.dir, "a-file")
	require.NoError(t, os.WriteFile(file, []byte("{}"), 0o644))
	_, err = cni.New(cni.Options{CacheDir: c.dir, PluginDirs: []string{c.plugins}, ConfDir: file})
	require.ErrorIs(t, err, cni.ErrInvalidOptions, "ConfDir a regular file")
	_, err = cni.New(cni.Options{CacheDir: c.dir, PluginDirs: []string{c.plugins}, HostLocalDataDir: file})
	require.ErrorIs(t, err, cni.ErrInvalidOptions, "HostLocalDataDir a regular file")
	_, err = cni.New(cni.Options{CacheDir: c.dir, PluginDirs: []string{c.plugins}, ConfDir: filepath.Join(c.dir, "missing"),
		HostLocalDataDir: filepath.Join(c.dir, "missing")})
	require.NoError(t, err, "a config or data directory that does not exist")
}

// "a path that is there and no directory (a file, a loop of links, a link
// to nothing, whose target may hold a config) is invalid": a ConfDir or
// HostLocalDataDir that is a link to nothing (a directory the pod does not
// mount) is not one that does not exist, and New refuses it; a link to a
// directory (the chart's cni.confLinkDirs, mounted) is taken.
func TestNewRefusesAConfigOrDataDirectoryThatIsALinkToNothing(t *testing.T) {
	c := newCacheDir(t)
	target := filepath.Join(t.TempDir(), "not-mounted")
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(target, link))
	data := filepath.Join(t.TempDir(), "networks")
	_, err := cni.New(cni.Options{CacheDir: c.dir, PluginDirs: []string{c.plugins}, ConfDir: link, HostLocalDataDir: data})
	require.ErrorIs(t, err, cni.ErrInvalidOptions, "ConfDir a link to nothing")
	assert.Contains(t, err.Error(), "link to nothing")
	_, err = cni.New(cni.Options{CacheDir: c.dir, PluginDirs: []string{c.plugins}, ConfDir: c.conf, HostLocalDataDir: link})
	require.ErrorIs(t, err, cni.ErrInvalidOptions, "HostLocalDataDir a link to nothing")

	require.NoError(t, os.Mkdir(target, 0o755))
	coll, err := cni.New(cni.Options{CacheDir: c.dir, PluginDirs: []string{c.plugins}, ConfDir: link, HostLocalDataDir: link,
		Logger: c.logs.Logger()})
	require.NoError(t, err, "a link to a directory")
	_, err = coll.ListPUs(context.Background())
	require.NoError(t, err)
}

// "Negative values, and a ReservationRate that is no number (NaN), are
// invalid"; rate.Inf and +Inf are no limit.
func TestNewRefusesAReservationRateThatIsNoNumber(t *testing.T) {
	c := newCacheDir(t)
	data := filepath.Join(t.TempDir(), "networks")
	_, err := cni.New(cni.Options{CacheDir: c.dir, PluginDirs: []string{c.plugins}, ConfDir: c.conf, HostLocalDataDir: data,
		ReservationRate: rate.Limit(math.NaN())})
	require.ErrorIs(t, err, cni.ErrInvalidOptions, "NaN")
	for _, r := range []rate.Limit{rate.Inf, rate.Limit(math.Inf(1))} {
		_, err = cni.New(cni.Options{CacheDir: c.dir, PluginDirs: []string{c.plugins}, ConfDir: c.conf, HostLocalDataDir: data,
			ReservationRate: r, Logger: c.logs.Logger()})
		require.NoError(t, err, "%v: no limit", r)
	}
}

// HostLocalDataDir: `"" alone (not ".", the working directory):
// DefaultHostLocalDataDir`. A HostLocalDataDir of "." reads the
// reservations of the working directory: a dry run's round finds the one a
// network of ConfDir without "dataDir" holds there.
func TestHostLocalDataDirDotIsTheWorkingDirectoryNotTheDefault(t *testing.T) {
	c := newCacheDir(t)
	data := t.TempDir()
	t.Chdir(data)
	conf := `{"cniVersion":"1.1.0","name":"hl","plugins":[{"type":"logger","ipam":{"type":"host-local","ranges":[[{"subnet":"10.9.0.0/24"}]]}}]}`
	require.NoError(t, os.WriteFile(filepath.Join(c.conf, "10-hl.conflist"), []byte(conf), 0o644))
	writeAged(t, filepath.Join(data, "hl", "10.9.0.7"), "leaked\r\neth0", time.Hour)
	for _, dir := range []string{".", "./"} {
		coll, err := cni.New(cni.Options{CacheDir: c.dir, PluginDirs: []string{c.plugins}, ConfDir: c.conf, HostLocalDataDir: dir,
			ResyncInterval: time.Minute, Runtime: &listedRuntime{}, DryRun: true, Logger: c.logs.Logger()})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- coll.Resync(ctx, &tracker{}) }()
		require.Eventually(t, func() bool { return len(coll.WouldFree()) == 1 }, 10*time.Second, 20*time.Millisecond,
			"HostLocalDataDir %q: the working directory's reservation", dir)
		cancel()
		require.NoError(t, <-done)
		assert.Equal(t, "leaked", coll.WouldFree()[0].ContainerID)
	}
	assert.Empty(t, c.delCalls(), "a dry run")
}

func TestListPUsSkipsWhatItCannotUseAndLogsItOnce(t *testing.T) {
	c := newCacheDir(t)
	c.write(entry{network: "podnet", sandbox: "good", uid: "u1", namespace: "ns", name: "pod-u1"})
	skipped := map[string]string{
		c.write(entry{network: "podnet", sandbox: "nouid", namespace: "ns", name: "p"}):                                                                                                          "no K8S_POD_UID",
		c.write(entry{network: "podnet", sandbox: "noname", uid: "u2", namespace: "ns"}):                                                                                                         "no K8S_POD_UID",
		c.writeRaw("podnet-garbage-eth0", []byte("{not json"), 0):                                                                                                                                "not a libcni cache entry",
		c.writeRaw("podnet-kind-eth0", []byte(`{"kind":"other","containerId":"kind","ifName":"eth0","networkName":"podnet"}`), 0):                                                                "kind",
		c.write(entry{network: "podnet", sandbox: "none", uid: "u3", namespace: "ns", name: "p", config: `{"cniVersion":"1.1.0","name":"podnet","plugins":[]}`}):                                 "no plugins",
		c.write(entry{network: "podnet", sandbox: "notype", uid: "u4", namespace: "ns", name: "p", config: `{"cniVersion":"1.1.0","name":"podnet"}`}):                                            "runs no plugin",
		c.write(entry{network: "podnet", sandbox: "other", uid: "u5", namespace: "ns", name: "p", config: `{"cniVersion":"1.1.0","name":"elsewhere","plugins":[{"type":"logger"}]}`}):            "of network",
		c.write(entry{network: "keep", sandbox: "keep", uid: "u6", namespace: "ns", name: "p", config: `{"cniVersion":"1.1.0","name":"keep","disableGC":"true","plugins":[{"type":"logger"}]}`}): "disableGC",
	}
	coll := c.collector()
	pus, err := coll.ListPUs(context.Background())
	require.NoError(t, err)
	require.Equal(t, []ports.PU{pu("u1", "good")}, pus)
	for file, why := range skipped {
		require.Equal(t, 1, c.logs.Count(file), "one log line for %s", file)
		require.True(t, c.exists(file))
		require.Positive(t, c.logs.Count(why), why)
	}
	_, err = coll.ListPUs(context.Background())
	require.NoError(t, err)
	for file := range skipped {
		require.Equal(t, 1, c.logs.Count(file), "still one log line for %s after a second list", file)
	}
}

func TestListPUsGivesAPodItsOldestSandbox(t *testing.T) {
	c := newCacheDir(t)
	for _, net := range []string{"cni-loopback", "podnet", "second-net"} {
		c.write(entry{network: net, sandbox: "current", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Minute})
		c.write(entry{network: net, sandbox: "newer", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Second})
	}
	c.write(entry{network: "second-net", sandbox: "leaked", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
	pus, err := c.collector().ListPUs(context.Background())
	require.NoError(t, err)
	require.Equal(t, []ports.PU{pu("u1", "leaked")}, pus)
}

func TestDestroyPUOfAChangedSandboxFreesOnlyItAndNeverTheNewest(t *testing.T) {
	c := newCacheDir(t)
	old := c.write(entry{network: "podnet", sandbox: "old", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
	oldLo := c.write(entry{network: "cni-loopback", sandbox: "old", ifName: "lo", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
	now := c.write(entry{network: "podnet", sandbox: "now", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Minute})
	other := c.write(entry{network: "podnet", sandbox: "other", uid: "u2", namespace: "ns", name: "pod-u2", age: time.Hour})
	coll := c.collectorListingNone()
	ctx := context.Background()

	ev := ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, SandboxID: "now", Reason: ports.ReasonSandboxChanged}
	err := coll.DestroyPU(ctx, ev)
	require.ErrorIs(t, err, cni.ErrNewestSandbox)
	require.False(t, ports.IsPermanent(err), "a plain error: the engine checks the pod again")
	require.Empty(t, c.delCalls())

	ev.SandboxID = "old"
	require.NoError(t, coll.DestroyPU(ctx, ev))
	require.ElementsMatch(t, []string{"DEL:old", "eth0", "DEL:old", "lo"}, c.delCalls())
	require.False(t, c.exists(old))
	require.False(t, c.exists(oldLo))
	require.True(t, c.exists(now))
	require.True(t, c.exists(other))

	// Two sandboxes written at the same instant cannot be told apart:
	// neither is freed for a sandbox change.
	twin := c.write(entry{network: "podnet", sandbox: "twin", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Minute})
	info, err := os.Stat(filepath.Join(c.dir, "results", now))
	require.NoError(t, err)
	require.NoError(t, os.Chtimes(filepath.Join(c.dir, "results", twin), info.ModTime(), info.ModTime()))
	for _, id := range []string{"now", "twin"} {
		ev.SandboxID = id
		require.ErrorIs(t, coll.DestroyPU(ctx, ev), cni.ErrNewestSandbox, id)
	}
	ev.SandboxID = "old"

	// Again: nothing left to free is a success, and runs no plugin.
	require.NoError(t, coll.DestroyPU(ctx, ev))
	require.Len(t, c.delCalls(), 4)
}

func TestDestroyPUOfAGonePodFreesEverySandboxOfItsUID(t *testing.T) {
	c := newCacheDir(t)
	a := c.write(entry{network: "podnet", sandbox: "a", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
	b := c.write(entry{network: "podnet", sandbox: "b", uid: "u1", namespace: "ns", name: "pod-u1"})
	other := c.write(entry{network: "podnet", sandbox: "c", uid: "u2", namespace: "ns", name: "pod-u1"})
	coll := c.collectorListingNone()
	require.NoError(t, coll.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, Reason: ports.ReasonPodGone}))
	require.False(t, c.exists(a))
	require.False(t, c.exists(b))
	require.True(t, c.exists(other), "another UID under the same name is another pod")
}

func TestDestroyPUOfAnEntryThatRunsNoPluginIsPermanentAndKeepsIt(t *testing.T) {
	c := newCacheDir(t)
	good := c.write(entry{network: "podnet", sandbox: "s", uid: "u1", namespace: "ns", name: "pod-u1"})
	none := c.write(entry{network: "empty", sandbox: "s", uid: "u1", namespace: "ns", name: "pod-u1", config: `{"cniVersion":"1.1.0","name":"empty","plugins":[]}`})
	garbage := c.writeRaw("garbled-s-net1", []byte("[]"), 0) // whole, and not libcni's: not being written
	err := c.collectorListingNone().DestroyPU(context.Background(), ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, SandboxID: "s", Reason: ports.ReasonPodGone})
	require.ErrorIs(t, err, cni.ErrUnusableEntry)
	require.True(t, ports.IsPermanent(err))
	require.Contains(t, err.Error(), none)
	require.Contains(t, err.Error(), garbage)
	require.False(t, c.exists(good), "the usable attachment is freed")
	require.True(t, c.exists(none), "never removed as if freed")
	require.True(t, c.exists(garbage))
}

// DestroyPU: "An entry of the PU that cannot be read ... makes an error wrapping ErrUnusableEntry, marked
// ports.Permanent". An entry of the PU's pod whose JSON is whole but holds a field of the wrong type (its netns a
// number) cannot be read: it is told as that pod's, and kept; the good one beside it is freed.
func TestDestroyPUOfAnEntryWithAFieldOfTheWrongTypeIsPermanentAndKeepsIt(t *testing.T) {
	c := newCacheDir(t)
	good := c.write(entry{network: "podnet", sandbox: "s", uid: "u1", namespace: "ns", name: "pod-u1"})
	b, err := json.Marshal(map[string]any{"kind": "cniCacheV1", "containerId": "s", "ifName": "net1", "networkName": "other",
		"netns": 12, "cniArgs": [][2]string{{"K8S_POD_NAMESPACE", "ns"}, {"K8S_POD_NAME", "pod-u1"}, {"K8S_POD_UID", "u1"}},
		"config": []byte(`{"cniVersion":"1.1.0","name":"other","plugins":[{"type":"logger"}]}`), "result": map[string]any{"cniVersion": "1.1.0"}})
	require.NoError(t, err)
	bad := c.writeRaw("other-s-net1", b, 0)
	for _, dry := range []bool{true, false} {
		ev := ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, SandboxID: "s", Reason: ports.ReasonPodGone}
		coll := c.collectorListingNone()
		var err error
		if dry {
			err = coll.DryRunDestroyPU(context.Background(), ev)
		} else {
			err = coll.DestroyPU(context.Background(), ev)
		}
		require.ErrorIs(t, err, cni.ErrUnusableEntry, "dry run %v", dry)
		require.True(t, ports.IsPermanent(err))
		require.Contains(t, err.Error(), bad)
	}
	require.False(t, c.exists(good), "the usable attachment is freed")
	require.True(t, c.exists(bad), "never removed as if freed")
}

// Options.Runtime and Options.Observer: a typed nil (a *T left nil) is nil, as ports.IsNil says; Resync refuses a
// typed-nil Tracker as it refuses nil. With a Runtime left a nil *cri.SandboxExtractor, a gone pod's sandbox whose
// network namespace is gone is freed (as with no Runtime), and nothing panics.
func TestATypedNilPortIsOneNotGiven(t *testing.T) {
	c := newCacheDir(t)
	ns := filepath.Join(t.TempDir(), "netns")
	require.NoError(t, os.MkdirAll(ns, 0o755))
	a := c.write(entry{network: "podnet", sandbox: "a", uid: "u1", namespace: "ns", name: "pod-u1"})
	raw, err := os.ReadFile(filepath.Join(c.dir, "results", a))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	m["netns"] = filepath.Join(ns, "gone") // its network namespace is gone from a directory that is there
	raw, err = json.Marshal(m)
	require.NoError(t, err)
	c.writeRaw(a, raw, 0)
	data := filepath.Join(t.TempDir(), "data") // a network of host-local: the Observer would be told of it at each sweep
	require.NoError(t, os.WriteFile(filepath.Join(c.conf, "10-hl.conflist"),
		fmt.Appendf(nil, `{"cniVersion":"1.0.0","name":"hl","plugins":[{"type":"logger","ipam":{"type":"host-local","dataDir":%q}}]}`, data), 0o644))
	var rt *cri.SandboxExtractor
	var obs *nilObserver
	coll, err := cni.New(cni.Options{CacheDir: c.dir, PluginDirs: []string{c.plugins}, ConfDir: c.conf, Runtime: rt, Observer: obs,
		Logger: c.logs.Logger()})
	require.NoError(t, err)
	require.NoError(t, coll.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, SandboxID: "a",
		Reason: ports.ReasonPodGone}))
	require.False(t, c.exists(a), "freed: its network namespace is gone")
	var eng *deletion.Engine
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	require.Error(t, coll.Resync(ctx, eng), "a typed-nil Tracker is refused")
	require.NoError(t, coll.Resync(ctx, &tracker{}), "the typed-nil Observer hears nothing") // its sweep reads ConfDir
}

// nilObserver is an Observer whose methods read it: a nil one panics when told.
type nilObserver struct{ n int }

func (o *nilObserver) ReservationFreed(string, string)      { o.n++ }
func (o *nilObserver) ReservationFreeFailed(string, string) { o.n++ }
func (o *nilObserver) ReservationWouldFree(string, string)  { o.n++ }
func (o *nilObserver) ReservationReported(string, string)   { o.n++ }
func (o *nilObserver) ReservationNetwork(string)            { o.n++ }

func TestDestroyPUOfASinglePluginConfigRunsThatPlugin(t *testing.T) {
	c := newCacheDir(t)
	f := c.write(entry{network: "single", sandbox: "s", uid: "u1", namespace: "ns", name: "pod-u1", config: `{"cniVersion":"1.1.0","name":"single","type":"logger"}`})
	require.NoError(t, c.collectorListingNone().DestroyPU(context.Background(), ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, Reason: ports.ReasonPodGone}))
	require.Equal(t, []string{"DEL:s", "eth0"}, c.delCalls())
	require.False(t, c.exists(f))
}

// tracker records what Resync hands an engine.
type tracker struct {
	mu        sync.Mutex
	tracked   []ports.PU
	untracked []string
	triggered []types.NamespacedName
}

func (r *tracker) Untrack(puid string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.untracked = append(r.untracked, puid)
	return slices.ContainsFunc(r.tracked, func(pu ports.PU) bool { return pu.PUID == puid })
}

func (r *tracker) Track(pu ports.PU) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tracked = append(r.tracked, pu)
	return nil
}

func (r *tracker) TriggerPod(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.triggered = append(r.triggered, key)
}

func (r *tracker) counts() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.tracked), len(r.triggered)
}

func TestResyncTracksWhatAppearsAndTriggersOnlyWhatChanged(t *testing.T) {
	c := newCacheDir(t)
	synctest.Test(t, func(t *testing.T) {
		coll := c.collector() // ResyncInterval: a minute; its channels are the bubble's
		ctx, cancel := context.WithCancel(t.Context())
		var r tracker
		done := make(chan error)
		go func() { done <- coll.Resync(ctx, &r) }()

		c.write(entry{network: "podnet", sandbox: "s1", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
		synctest.Wait()
		tracked, triggered := r.counts()
		require.Zero(t, tracked, "the engine's Inventory lists the cache at start; Resync waits an interval")
		require.Zero(t, triggered)
		require.ErrorIs(t, coll.Resync(ctx, &r), cni.ErrResyncRunning)

		time.Sleep(time.Minute)
		synctest.Wait()
		tracked, triggered = r.counts()
		require.Equal(t, 1, tracked)
		require.Equal(t, 1, triggered, "new: checked at once")

		time.Sleep(time.Minute)
		synctest.Wait()
		tracked, triggered = r.counts()
		require.Equal(t, 2, tracked, "tracked again (insert-only)")
		require.Equal(t, 1, triggered, "unchanged: not triggered")

		// The engine freed s1 for a sandbox change and requeues the pod:
		// the list runs at once and the next sandbox is tracked.
		require.NoError(t, os.Remove(filepath.Join(c.dir, "results", "podnet-s1-eth0")))
		c.write(entry{network: "podnet", sandbox: "s2", uid: "u1", namespace: "ns", name: "pod-u1"})
		require.NoError(t, coll.Requeue(ctx, &corev1.Pod{}))
		synctest.Wait()
		tracked, triggered = r.counts()
		require.Equal(t, 3, tracked)
		require.Equal(t, 2, triggered)
		require.Equal(t, pu("u1", "s2"), r.tracked[2])

		cancel()
		require.NoError(t, <-done)
	})
}

// DestroyPU is called from the engine's workers at once: concurrent DELs of
// one Collector share nothing unguarded (libcni's CNIConfig sets up its
// plugin runner on first use unless it is given one, which -race sees).
func TestConcurrentDestroysShareTheCollectorSafely(t *testing.T) {
	c := newCacheDir(t)
	// A plugin slow enough for the DELs to overlap.
	script := fmt.Sprintf("#!/bin/sh\nsleep 0.3\necho \"$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME\" >> %s\n", c.calls)
	require.NoError(t, os.WriteFile(filepath.Join(c.plugins, "slow"), []byte(script), 0o755))
	const pods = 8
	for i := range pods {
		c.write(entry{network: "net", sandbox: fmt.Sprintf("s%d", i), uid: fmt.Sprintf("u%d", i), namespace: "ns", name: fmt.Sprintf("pod-u%d", i),
			config: `{"cniVersion":"1.1.0","name":"net","plugins":[{"type":"slow"}]}`})
	}
	coll := c.collectorListingNone()
	var wg sync.WaitGroup
	for i := range pods {
		wg.Go(func() {
			uid := fmt.Sprintf("u%d", i)
			require.NoError(t, coll.DestroyPU(context.Background(), ports.DestroyEvent{PUID: uid, Pod: pu(uid, "").Pod, Reason: ports.ReasonPodGone}))
		})
	}
	wg.Wait()
	require.Len(t, c.delCalls(), 2*pods, "a DEL per pod")
}

// docs/sdk/cni-freeing.md: a file of ConfDir is being written when it is "not whole JSON yet, or whole and failing to
// load while the network's own directory of plugin configs is there". A whole config beside a file (not a directory)
// named after its network fails to load, and is not being written: the network's attachments are decided as ever
// (a gone pod's freed), not kept for good as if the file were being written.
func TestAWholeConfigBesideAFileNamedAsItsNetworkIsNotBeingWritten(t *testing.T) {
	c := newCacheDir(t)
	require.NoError(t, os.WriteFile(filepath.Join(c.conf, "10-podnet.conflist"),
		[]byte(`{"cniVersion":"1.1.0","name":"podnet","plugins":[{"type":"logger"}]}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(c.conf, "podnet"), []byte("a note, not a directory"), 0o644))
	a := c.write(entry{network: "podnet", sandbox: "a", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
	coll := c.collectorListingNone()
	pus, err := coll.ListPUs(t.Context())
	require.NoError(t, err)
	require.Equal(t, []ports.PU{pu("u1", "a")}, pus, "listed: its network is read")
	require.NoError(t, coll.DestroyPU(t.Context(), ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, SandboxID: "a", Reason: ports.ReasonPodGone}))
	require.False(t, c.exists(a), "freed with its gone pod")
}

// DestroyPU: "An entry of the PU that cannot be read or would run no plugin makes an error wrapping ErrUnusableEntry,
// marked ports.Permanent once every other attachment is freed" — for a sandbox change too, and whichever part of it
// cannot be read. The old sandbox s1 of a pod holds a good entry and one whose containerId cannot be read (a number,
// or none; of the pod by its arguments, of s1 by its file's name), or whose arguments cannot be read (of s1 by its
// container): DestroyPU frees the good one and answers the other, the pod gone or its sandbox changed.
func TestDestroyPUOfAChangedSandboxAnswersItsUnreadableEntry(t *testing.T) {
	args := [][2]string{{"K8S_POD_NAMESPACE", "ns"}, {"K8S_POD_NAME", "pod-u1"}, {"K8S_POD_UID", "u1"}}
	for name, fields := range map[string]map[string]any{
		"containerId a number":   {"containerId": 7, "cniArgs": args},
		"no containerId":         {"cniArgs": args},
		"its arguments a string": {"containerId": "s1", "cniArgs": "K8S_POD_UID=u1"},
	} {
		for _, reason := range []ports.Reason{ports.ReasonSandboxChanged, ports.ReasonPodGone} {
			t.Run(name+", "+string(reason), func(t *testing.T) {
				c := newCacheDir(t)
				now := time.Now()
				good := c.write(entry{network: "net2", sandbox: "s1", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
				m := map[string]any{"kind": "cniCacheV1", "ifName": "eth0", "networkName": "net1",
					"config": []byte(`{"cniVersion":"1.1.0","name":"net1","plugins":[{"type":"logger"}]}`), "result": map[string]any{"cniVersion": "1.1.0"}}
				maps.Copy(m, fields)
				b, err := json.Marshal(m)
				require.NoError(t, err)
				bad := c.writeRaw("net1-s1-eth0", b, time.Hour)
				rt := &listedRuntime{}
				if reason == ports.ReasonSandboxChanged {
					c.write(entry{network: "net2", sandbox: "s2", uid: "u1", namespace: "ns", name: "pod-u1"})
					rt.set(nil, listed("s1", "u1", false, now.Add(-time.Hour)), listed("s2", "u1", true, now))
				} else {
					rt.set(nil, listed("s1", "u1", false, now.Add(-time.Hour)))
				}
				err = c.collectorWith(rt, 0).DestroyPU(t.Context(), ports.DestroyEvent{PUID: "u1", Pod: pu("u1", "").Pod, SandboxID: "s1",
					Reason: reason})
				require.ErrorIs(t, err, cni.ErrUnusableEntry)
				require.True(t, ports.IsPermanent(err))
				require.Contains(t, err.Error(), bad)
				require.False(t, c.exists(good), "the usable attachment is freed")
				require.True(t, c.exists(bad), "never removed as if freed")
			})
		}
	}
}
