package promises_test

// Cache entries the collector cannot use: an entry of another network than its
// file name, of a config that would run no plugin or of a version it cannot
// run, truncated, with a cached result that cannot be loaded, not a regular
// file, or without the pod's arguments, is never DELed nor removed; one of the
// PU makes an error wrapping ErrUnusableEntry, permanent once every other
// attachment is freed; the others are listed or logged. New validates its
// options and DestroyPU and SandboxDead their inputs.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// Holds: New's validation, DestroyPU without a PUID, SandboxDead without
// a pod, and an entry without K8S_POD_NAME skipped with one log line.
func TestAuditHoldsInputsValidated(t *testing.T) {
	e := newEnv(t)
	f := filepath.Join(t.TempDir(), "file")
	_ = os.WriteFile(f, nil, 0o644)
	for _, o := range []cni.Options{
		{CacheDir: f, PluginDirs: []string{e.plugins}},
		{CacheDir: e.cache, PluginDirs: []string{e.plugins, "/nonexistent"}},
		{CacheDir: e.cache, PluginDirs: []string{e.plugins}, NewestSandboxTimeout: -1},
		{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ResyncInterval: -1},
	} {
		if _, err := cni.New(o); !errors.Is(err, cni.ErrInvalidOptions) {
			t.Errorf("New(%+v) = %v", o, err)
		}
	}
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(p, a string) { mu.Lock(); lines = append(lines, a); mu.Unlock() }, funcr.Options{})
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DestroyPU(context.Background(), ports.DestroyEvent{}); !ports.IsPermanent(err) {
		t.Errorf("DestroyPU without PUID = %v", err)
	}
	if _, err := c.SandboxDead(context.Background(), nil, "x"); err == nil {
		t.Error("SandboxDead(nil) = nil")
	}
	if _, err := c.SandboxDead(context.Background(), &corev1.Pod{}, "x"); err == nil {
		t.Error("SandboxDead(no UID) = nil")
	}
	e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{}, func(m map[string]any) {
		m["cniArgs"] = [][2]string{{"K8S_POD_NAMESPACE", "ns"}, {"K8S_POD_UID", "uid1"}}
	})
	for range 2 {
		pus, err := c.ListPUs(context.Background())
		if err != nil || len(pus) != 0 {
			t.Fatalf("ListPUs %v %v", pus, err)
		}
	}
	if err := c.DestroyPU(context.Background(), gone("uid1")); err != nil || len(e.dels()) != 0 {
		t.Fatalf("DestroyPU of an entry without K8S_POD_NAME: %v %v", err, e.dels())
	}
	mu.Lock()
	n := strings.Count(strings.Join(lines, "\n"), "net1-sbA-eth0")
	mu.Unlock()
	if n != 1 {
		t.Fatalf("logged %d times: %v", n, lines)
	}
}

// doc.go: "A cached config that would run no plugin (a conflist of none, a
// config of another network) is never "freed": the entry stays, and
// DestroyPU answers ports.Permanent." and DestroyPU: "An attachment gone
// already ... is nothing to do, so DestroyPU is idempotent."
//
// The entry results/net1-sbA-eth0 holds an attachment of network net2
// (networkName and config both net2): a config of another network than
// the entry's. DestroyPU runs net2's DEL, libcni removes
// results/net2-sbA-eth0 (not this file), DestroyPU answers nil, the entry
// stays, and every later DestroyPU runs the DEL again.
func TestAuditEntryOfAnotherNetworkThanItsFileName(t *testing.T) {
	e := newEnv(t)
	p := e.write("net2", "sbA", "uid1", e.netns("a", false), time.Time{})
	misnamed := filepath.Join(e.cache, "results", "net1-sbA-eth0")
	if err := os.Rename(p, misnamed); err != nil {
		t.Fatal(err)
	}
	rt := &fakeRuntime{}
	rt.set(sb("sbA", "uid1", false, time.Now().Add(-time.Hour)))
	c := e.collector(rt, 0)
	err1 := c.DestroyPU(context.Background(), gone("uid1"))
	err2 := c.DestroyPU(context.Background(), gone("uid1"))
	_, statErr := os.Stat(misnamed)
	if statErr == nil && (!ports.IsPermanent(err1) || e.delsOf("sbA") > 0) {
		t.Fatalf("entry %s (of network net2) still there after DestroyPU = %v, then %v; DELs run: %d; want no DEL and a permanent ErrUnusableEntry", misnamed, err1, err2, e.delsOf("sbA"))
	}
}

// doc.go: "A cached config that would run no plugin (a conflist of none, a
// config of another network) is never "freed": the entry stays, and
// DestroyPU answers ports.Permanent." ErrUnusableEntry: "a cache entry of
// the PU cannot be read, or its config would run no plugin. DestroyPU
// wraps it with ports.Permanent".
//
// The cached conflist's cniVersion is not a version: libcni's
// DelNetworkList refuses it before running any plugin, so it would run no
// plugin. Observed: no plugin runs, and DestroyPU answers a plain error
// on every call (retried with backoff forever), not a permanent
// ErrUnusableEntry.
func TestAuditConfigWithInvalidVersionRunsNoPlugin(t *testing.T) {
	e := newEnv(t)
	e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{}, func(m map[string]any) {
		m["config"] = []byte(`{"cniVersion":"one-point-oh","name":"net1","plugins":[{"type":"fakeplugin"}]}`)
	})
	rt := &fakeRuntime{}
	rt.set(sb("sbA", "uid1", false, time.Now().Add(-time.Hour)))
	c := e.collector(rt, 0)
	var err error
	for range 3 {
		err = c.DestroyPU(context.Background(), gone("uid1"))
	}
	if len(e.dels()) != 0 {
		t.Fatalf("a plugin ran: %v", e.dels())
	}
	if !errors.Is(err, cni.ErrUnusableEntry) || !ports.IsPermanent(err) {
		t.Fatalf("DestroyPU = %v (permanent %v), want a permanent ErrUnusableEntry: its config runs no plugin", err, ports.IsPermanent(err))
	}
}

// A config of another network, and a truncated entry, of the pod: the
// others are freed, the entry kept, ErrUnusableEntry; permanent for the
// config of another network, plain for the entry cut short (being written:
// the engine tries again).
func TestAuditHoldsOtherNetworkAndTruncated(t *testing.T) {
	for _, name := range []string{"other network", "truncated"} {
		e := newEnv(t)
		e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{})
		p := e.write("net2", "sbA", "uid1", e.netns("a", false), time.Time{}, func(m map[string]any) {
			if name == "other network" {
				m["config"] = conflist("net9")
			}
		})
		if name == "truncated" {
			b, _ := os.ReadFile(p)
			_ = os.WriteFile(p, b[:len(b)/2], 0o644)
		}
		c := e.collector(&fakeRuntime{}, 0)
		err := c.DestroyPU(context.Background(), gone("uid1"))
		if !errors.Is(err, cni.ErrUnusableEntry) || ports.IsPermanent(err) != (name == "other network") || e.delsOf("sbA") != 1 || !e.exists("net2", "sbA") {
			t.Fatalf("%s: %v %v", name, err, e.dels())
		}
	}
}

// A single plugin's config (not a list) is DELed with that plugin.
func TestAuditHoldsSinglePluginConfig(t *testing.T) {
	e := newEnv(t)
	e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{}, func(m map[string]any) {
		m["config"], _ = json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": "net1", "type": "fakeplugin"})
	})
	c := e.collector(&fakeRuntime{}, 0)
	if err := c.DestroyPU(context.Background(), gone("uid1")); err != nil || e.delsOf("sbA") != 1 || e.exists("net1", "sbA") {
		t.Fatalf("%v %v", err, e.dels())
	}
}

// "An entry of the PU that cannot be read or would run no plugin makes an
// error wrapping ErrUnusableEntry, marked ports.Permanent once every other
// attachment is freed." (collector.go DestroyPU doc). The pod's second
// entry is JSON that names the pod (K8S_POD_UID) but is not a usable libcni
// entry: no kind, no config, no ifName.
func TestAuditUnusableEntryOfThePodIsReported(t *testing.T) {
	cases := map[string]entryEdit{
		"no kind":      func(m map[string]any) { delete(m, "kind") },
		"other kind":   func(m map[string]any) { m["kind"] = "cniCacheV2" },
		"no config":    func(m map[string]any) { delete(m, "config") },
		"empty ifName": func(m map[string]any) { m["ifName"] = "" },
	}
	for name, opt := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			now := time.Now()
			e.write("net1", "sbA", "uid1", e.netns("a", false), now.Add(-time.Hour))
			e.write("net2", "sbA", "uid1", e.netns("a", false), now.Add(-time.Hour), opt)
			rt := &fakeRuntime{}
			rt.set(sb("sbA", "uid1", false, now.Add(-time.Hour)))
			c := e.collector(rt, 0)
			err := c.DestroyPU(context.Background(), gone("uid1"))
			if e.delsOf("sbA") != 1 {
				t.Fatalf("want net1's DEL only, got %v", e.dels())
			}
			if !e.exists("net2", "sbA") {
				t.Fatalf("the unusable entry was removed")
			}
			if !errors.Is(err, cni.ErrUnusableEntry) || !ports.IsPermanent(err) {
				t.Fatalf("DestroyPU = %v, want a permanent error wrapping ErrUnusableEntry for the pod's unusable entry net2-sbA-eth0", err)
			}
		})
	}
}

// Holds: an entry whose cached result cannot be loaded is left as it is (ErrUnusableEntry,
// permanent), never DELed, its file kept.
func TestAuditHoldsBadCachedResultKept(t *testing.T) {
	e := newEnv(t)
	f := e.writeEntry(entryOpt{sandbox: "sb1", uid: uidA, netns: e.netns("g", false)})
	var m map[string]any
	b, _ := os.ReadFile(f)
	json.Unmarshal(b, &m)
	m["result"] = map[string]any{"cniVersion": "9.9.9"}
	b, _ = json.Marshal(m)
	os.WriteFile(f, b, 0o600)
	c := e.collector(&fakeRuntime{ignoreFilter: true}, 0)
	err := c.DestroyPU(context.Background(), goneDefault(uidA))
	if !errors.Is(err, cni.ErrUnusableEntry) || !ports.IsPermanent(err) || e.delled("sb1") {
		t.Fatalf("err %v dels %v", err, e.delLogFields())
	}
	if _, serr := os.Stat(f); serr != nil {
		t.Fatalf("entry removed: %v", serr)
	}
}

// doc.go: "It skips, with a log line, and never deletes, entries without
// K8S_POD_UID, K8S_POD_NAMESPACE and K8S_POD_NAME ... and entries it
// cannot read." ListPUs: "Entries without the pod's arguments,
// unreadable, unusable for a DEL or of a disableGC network are skipped,
// logged once." A results/ entry that is not a regular file (a symbolic
// link to a pod's entry, which libcni itself reads; a directory) is
// neither listed nor logged: the pod's attachment is invisible.
func TestAuditNonRegularEntryIsListedOrLogged(t *testing.T) {
	e := newEnv(t)
	real := e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{})
	outside := filepath.Join(t.TempDir(), "saved")
	if err := os.Rename(real, outside); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, real); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(e.cache, "results", "net2-sbD-eth0"), 0o755); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(p, a string) { mu.Lock(); lines = append(lines, a); mu.Unlock() }, funcr.Options{Verbosity: 9})
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	pus, err := c.ListPUs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	all := strings.Join(lines, "\n")
	mu.Unlock()
	for _, f := range []string{"net1-sbA-eth0", "net2-sbD-eth0"} {
		listed := f == "net1-sbA-eth0" && len(pus) == 1
		if !listed && !strings.Contains(all, f) {
			t.Errorf("entry %s neither listed (PUs %v) nor logged; log:\n%s", f, pus, all)
		}
	}
}

// Holds: an entry without the K8S_POD_* arguments, of the very sandbox being freed, is never DELed.
func TestAuditHoldsNoPodArgsKept(t *testing.T) {
	e := newEnv(t)
	e.writeEntry(entryOpt{sandbox: "sb1", uid: uidA, netns: e.netns("g", false)})
	f := e.writeEntry(entryOpt{network: "other", sandbox: "sb1", ifName: "eth9", uid: "", ns: "x", netns: e.netns("g", false)})
	// drop the pod's arguments but the namespace and name
	b, _ := os.ReadFile(f)
	_ = b
	c := e.collector(&fakeRuntime{ignoreFilter: true}, 0)
	c.DestroyPU(context.Background(), goneDefault(uidA))
	if _, err := os.Stat(filepath.Join(e.cache, "results", "other-sb1-eth9")); err != nil {
		t.Fatalf("entry of no pod removed: %v", err)
	}
	for _, d := range e.delLogFields() {
		if d == "eth9" {
			t.Fatalf("DEL of an entry of no pod: %v", e.delLogFields())
		}
	}
}
