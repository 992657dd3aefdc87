package promises_test

// How the collector runs a DEL: only the plugins' DEL verb, never GC, CHECK,
// STATUS or ADD; in the cached network namespace only when it can trust it (a
// bind-mounted nsfs outside /proc, not a link); a DEL that fails or hangs keeps
// its entry, whatever its cached result, frees the others meanwhile, is a plain
// error and is retried; and a second DestroyPU of what is freed is nothing to
// do.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// Hold: "It never calls the plugins' GC verb": the plugin sees DEL only.
func TestAuditHoldsOnlyDelVerb(t *testing.T) {
	e := newEnv(t)
	e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{})
	e.write("net2", "sbB", "uid2", e.netns("b", false), time.Time{})
	c := e.collector(&fakeRuntime{}, 0)
	_, _ = c.ListPUs(context.Background())
	_ = c.DestroyPU(context.Background(), gone("uid1"))
	_ = c.DestroyPU(context.Background(), changed("uid2", "sbB"))
	b, _ := os.ReadFile(filepath.Join(e.plugins, "calls.log"))
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !strings.HasPrefix(l, "DEL ") {
			t.Fatalf("plugin called with %q", l)
		}
	}
	if len(e.dels()) != 2 {
		t.Fatalf("DELs %v", e.dels())
	}
}

// Holds: only DEL is ever run (never GC, CHECK, STATUS or ADD).
func TestAuditHoldsOnlyDel(t *testing.T) {
	e := newEnv(t)
	cmds := filepath.Join(t.TempDir(), "cmds")
	writeFile(t, e.plugins, "logall", "#!/bin/sh\necho \"$CNI_COMMAND\" >> "+cmds+"\nexit 0\n")
	os.Chmod(filepath.Join(e.plugins, "logall"), 0o755)
	cfg := `{"cniVersion":"1.1.0","name":"la","plugins":[{"type":"logall"}]}`
	e.writeEntry(entryOpt{network: "la", sandbox: "sb1", uid: uidA, netns: e.netns("g", false), config: cfg})
	e.writeEntry(entryOpt{network: "la", sandbox: "sb2", uid: uidA, netns: e.netns("g2", false), config: cfg})
	c := e.collector(&fakeRuntime{ignoreFilter: true}, 0)
	ctx := context.Background()
	c.ListPUs(ctx)
	c.SandboxDead(ctx, podOf(uidA), "sb1")
	c.DestroyPU(ctx, changedDefault(uidA, "sb1"))
	c.DestroyPU(ctx, goneDefault(uidA))
	b, _ := os.ReadFile(cmds)
	for _, l := range strings.Fields(string(b)) {
		if l != "DEL" {
			t.Fatalf("ran %q: %s", l, b)
		}
	}
	if strings.Count(string(b), "DEL") != 2 {
		t.Fatalf("want 2 DELs: %s", b)
	}
}

const trustEnv = "PODSWEEPER_NETNS_TRUST_INNER"

// Hold: doc.go "It never runs a DEL in a network namespace it cannot
// trust: the cached path is passed only when it is a bind-mounted nsfs
// outside /proc, not a link". Run in a private mount namespace (unshare
// -m), where the test bind-mounts its own network namespace onto a file.
func TestAuditHoldsDelNetnsOnlyTrusted(t *testing.T) {
	if e, inner := fromParent(t, trustEnv); inner {
		pinned := filepath.Join(e.netnsDir, "pinned")
		if err := os.WriteFile(pinned, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("/proc/self/ns/net", pinned, "", unix.MS_BIND, ""); err != nil {
			t.Fatalf("bind mount: %v", err)
		}
		link := filepath.Join(e.netnsDir, "link")
		_ = os.Symlink(pinned, link)
		plain := filepath.Join(e.netnsDir, "plain")
		_ = os.WriteFile(plain, nil, 0o644)
		rt := &fakeRuntime{}
		var sbs = map[string]string{"sbPinned": pinned, "sbLink": link, "sbProc": "/proc/" + strconv.Itoa(os.Getpid()) + "/ns/net", "sbPlain": plain}
		for id, ns := range sbs {
			e.write("net1", id, "uid-"+id, ns, time.Time{})
			rt.sbs = append(rt.sbs, sb(id, "uid-"+id, false, time.Now()))
		}
		c := e.collector(rt, 0)
		for id := range sbs {
			if err := c.DestroyPU(context.Background(), gone("uid-"+id)); err != nil {
				t.Fatalf("%s: %v", id, err)
			}
		}
		return
	}
	if os.Getuid() != 0 {
		t.Skip("needs root")
	}
	e := newEnv(t)
	dirs, _ := json.Marshal(e)
	cmd := exec.Command("unshare", "-m", "--propagation", "private", os.Args[0], "-test.run=^TestAuditHoldsDelNetnsOnlyTrusted$", "-test.count=1")
	cmd.Env = append(os.Environ(), trustEnv+"="+string(dirs))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("inner: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(filepath.Join(e.plugins, "calls.log"))
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) >= 4 {
			got[f[1]] = strings.TrimPrefix(f[3], "netns=")
		} else if len(f) == 3 {
			got[f[1]] = ""
		}
	}
	want := map[string]string{"sbPinned": filepath.Join(e.netnsDir, "pinned"), "sbLink": "", "sbProc": "", "sbPlain": ""}
	for id, w := range want {
		if g, ok := got[id]; !ok || g != w {
			t.Errorf("%s: DEL netns %q (ran %v), want %q; log:\n%s", id, g, ok, w, b)
		}
	}
}

// Holds (private namespaces only): the DEL gets the cached namespace path only when it is a
// bind-mounted nsfs outside /proc, not a link: a link to one, /proc/self/ns/net, and a plain file
// all give "".
func TestAuditHoldsTrustedNetnsOnly(t *testing.T) {
	needPrivateNS(t)
	e := newEnv(t)
	log := filepath.Join(t.TempDir(), "netns.log")
	writeFile(t, e.plugins, "nslog", "#!/bin/sh\n[ \"$CNI_COMMAND\" = DEL ] && echo \"$CNI_CONTAINERID=$CNI_NETNS\" >> "+log+"\nexit 0\n")
	os.Chmod(filepath.Join(e.plugins, "nslog"), 0o755)
	pinned := filepath.Join(e.netnsDir, "pinned")
	os.WriteFile(pinned, nil, 0o644)
	if out, err := exec.Command("unshare", "--net="+pinned, "true").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	defer unix.Unmount(pinned, unix.MNT_DETACH) // mount(2), not umount(8): nothing written to the host's /run/mount
	link := filepath.Join(e.netnsDir, "link")
	os.Symlink(pinned, link)
	plain := e.netns("plain", true)
	cfg := `{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"nslog"}]}`
	for id, p := range map[string]string{"sbpinned": pinned, "sblink": link, "sbproc": "/proc/self/ns/net", "sbplain": plain} {
		e.writeEntry(entryOpt{network: "n", sandbox: id, uid: uidA, netns: p, config: cfg})
	}
	// Each sandbox is listed stopped: freed whatever its namespace tells.
	rt := &fakeRuntime{ignoreFilter: true}
	for _, id := range []string{"sbpinned", "sblink", "sbproc", "sbplain"} {
		rt.sbs = append(rt.sbs, sandbox(id, uidA, 1, timeNow()))
	}
	c := e.collector(rt, 0)
	if err := c.DestroyPU(context.Background(), goneDefault(uidA)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(log)
	got := string(b)
	for id, want := range map[string]string{"sbpinned": pinned, "sblink": "", "sbproc": "", "sbplain": ""} {
		if !strings.Contains(got, fmt.Sprintf("%s=%s\n", id, want)) {
			t.Errorf("%s: want netns %q; DELs:\n%s", id, want, got)
		}
	}
}

const failPlugin = `#!/bin/sh
cat >/dev/null
echo "$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME" >> "$(dirname "$0")/calls.log"
echo '{"cniVersion":"1.0.0","code":11,"msg":"injected failure"}'
exit 1
`

// Hold: a DEL that fails keeps its entry and makes a plain error; the
// others are DELed meanwhile; the failed one is retried on the next call.
func TestAuditHoldsFailedDelKeepsEntry(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.plugins, "failplugin"), []byte(failPlugin), 0o755); err != nil {
		t.Fatal(err)
	}
	e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{}, func(m map[string]any) {
		m["config"] = []byte(`{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"failplugin"}]}`)
	})
	e.write("net2", "sbA", "uid1", e.netns("a", false), time.Time{})
	c := e.collector(&fakeRuntime{}, 0)
	err := c.DestroyPU(context.Background(), gone("uid1"))
	if err == nil || ports.IsPermanent(err) || !e.exists("net1", "sbA") || e.exists("net2", "sbA") {
		t.Fatalf("%v; net1 %v net2 %v", err, e.exists("net1", "sbA"), e.exists("net2", "sbA"))
	}
	if errors.Is(err, cni.ErrUnusableEntry) {
		t.Fatal(err)
	}
}

// doc.go: "It never removes a cache file itself: libcni does, after a DEL
// whose plugins all succeeded. A DEL that fails keeps the file and is
// retried by the engine with backoff." DestroyPU: "A DEL that fails keeps
// its entry and makes a plain error, for the engine to retry with backoff".
//
// The gone pod's entry is a libcni entry the collector accepts, but its
// cached "result" is one libcni cannot load (a result of a version it does
// not know, or malformed). The plugin's DEL fails. libcni's DelNetworkList
// removes the entry before running the plugins when the cached result does
// not load, so the failed DEL left no entry: the leak was never retried. It is now reported and kept.
func TestAuditFailedDelKeepsEntryWhateverItsCachedResult(t *testing.T) {
	for name, result := range map[string]any{
		"unknown version": map[string]any{"cniVersion": "9.9.9", "ips": []any{}},
		"malformed":       map[string]any{"cniVersion": "1.0.0", "interfaces": "not a list"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			if err := os.WriteFile(filepath.Join(e.plugins, "failplugin"), []byte(failPlugin), 0o755); err != nil {
				t.Fatal(err)
			}
			e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{}, func(m map[string]any) {
				m["config"] = []byte(`{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"failplugin"}]}`)
				b, _ := json.Marshal(result)
				m["result"] = json.RawMessage(b)
			})
			rt := &fakeRuntime{}
			rt.set(sb("sbA", "uid1", false, time.Now().Add(-time.Hour)))
			c := e.collector(rt, 0)
			// Unusable for a DEL, it is skipped when the cache is read: ListPUs lists no PU of it.
			pus, err := c.ListPUs(context.Background())
			if err != nil || len(pus) != 0 {
				t.Fatalf("ListPUs %v %v: an entry unusable for a DEL is listed", pus, err)
			}
			err = c.DestroyPU(context.Background(), gone("uid1"))
			// An entry whose cached result libcni cannot load is one the collector cannot read: it is
			// reported (ErrUnusableEntry, permanent) and left as it is, never DELed, since libcni would
			// remove it before running any plugin.
			if e.delsOf("sbA") != 0 {
				t.Fatalf("DELs %v (err %v): libcni removes such an entry before any plugin runs", e.dels(), err)
			}
			if !errors.Is(err, cni.ErrUnusableEntry) || !ports.IsPermanent(err) {
				t.Fatalf("DestroyPU = %v, want a permanent ErrUnusableEntry", err)
			}
			if !e.exists("net1", "sbA") {
				t.Fatalf("the DEL failed (%v) and the cache entry is gone: nothing is left to retry", err)
			}
		})
	}
}

// Holds: a conflist whose second DEL fails keeps the entry, and the retry, once the plugin
// works, frees it.
func TestAuditHoldsHalfDel(t *testing.T) {
	e := newEnv(t)
	flag := filepath.Join(e.plugins, "fail.flag")
	writeFile(t, e.plugins, "flaky", "#!/bin/sh\nif [ \"$CNI_COMMAND\" = DEL ] && [ -e "+flag+" ]; then echo '{\"code\":11,\"msg\":\"x\"}'; exit 1; fi\nexit 0\n")
	os.Chmod(filepath.Join(e.plugins, "flaky"), 0o755)
	writeFile(t, e.plugins, "fail.flag", "")
	f := e.writeEntry(entryOpt{network: "chain", sandbox: "sb1", uid: uidA, netns: e.netns("g", false), config: `{"cniVersion":"1.0.0","name":"chain","plugins":[{"type":"flaky"},{"type":"fakeplug"}]}`})
	c := e.collector(&fakeRuntime{ignoreFilter: true}, 0)
	if err := c.DestroyPU(context.Background(), goneDefault(uidA)); err == nil || ports.IsPermanent(err) {
		t.Fatalf("half DEL: %v", err)
	}
	if _, err := os.Stat(f); err != nil || !e.delled("sb1") {
		t.Fatalf("entry %v dels %v", err, e.delLogFields())
	}
	os.Remove(flag)
	if err := c.DestroyPU(context.Background(), goneDefault(uidA)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f); !os.IsNotExist(err) {
		t.Fatalf("entry left after a DEL that succeeded: %v", err)
	}
}

// Holds: a DEL that fails for one attachment keeps it, frees the others, and is a plain error.
func TestAuditHoldsDelFailurePlain(t *testing.T) {
	e := newEnv(t)
	failing := `#!/bin/sh
if [ "$CNI_COMMAND" = "DEL" ]; then echo '{"cniVersion":"1.0.0","code":11,"msg":"boom"}'; exit 1; fi
exit 0
`
	writeFile(t, e.plugins, "failplug", failing)
	os.Chmod(filepath.Join(e.plugins, "failplug"), 0o755)
	f := e.writeEntry(entryOpt{network: "bad", sandbox: "sb1", uid: uidA, netns: e.netns("g", false), config: `{"cniVersion":"1.0.0","name":"bad","plugins":[{"type":"fakeplug"},{"type":"failplug"}]}`})
	e.writeEntry(entryOpt{network: "good", sandbox: "sb1", ifName: "eth1", uid: uidA, netns: e.netns("g", false)})
	c := e.collector(&fakeRuntime{ignoreFilter: true}, 0)
	err := c.DestroyPU(context.Background(), goneDefault(uidA))
	if err == nil || ports.IsPermanent(err) {
		t.Fatalf("want a plain error, got %v", err)
	}
	if _, serr := os.Stat(f); serr != nil {
		t.Fatalf("failed entry removed: %v", serr)
	}
	if !strings.Contains(strings.Join(e.delLogFields(), " "), "eth1") {
		t.Fatalf("the good attachment was not DELed: %v", e.delLogFields())
	}
}

// Holds: a DEL that hangs ends with the context, the entry kept, a plain error.
func TestAuditHoldsDelHang(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.plugins, "hangplug", "#!/bin/sh\nexec sleep 30\n")
	os.Chmod(filepath.Join(e.plugins, "hangplug"), 0o755)
	f := e.writeEntry(entryOpt{network: "h", sandbox: "sb1", uid: uidA, netns: e.netns("g", false), config: `{"cniVersion":"1.0.0","name":"h","plugins":[{"type":"hangplug"}]}`})
	c := e.collector(&fakeRuntime{ignoreFilter: true}, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := c.DestroyPU(ctx, goneDefault(uidA))
	if err == nil || ports.IsPermanent(err) {
		t.Fatalf("want a plain error, got %v", err)
	}
	if _, serr := os.Stat(f); serr != nil {
		t.Fatalf("hung entry removed: %v", serr)
	}
}

// Sanity and a hold: a gone pod whose only sandbox the runtime lists
// stopped is freed with the plugins' DEL (row 3), and a second DestroyPU
// is nothing to do (idempotent).
func TestAuditHoldsGonePodStoppedSandboxFreedOnce(t *testing.T) {
	e := newEnv(t)
	e.write("net1", "sbA", "uid1", e.netns("a", true), time.Time{})
	rt := &fakeRuntime{}
	rt.set(sb("sbA", "uid1", false, time.Now().Add(-time.Hour)))
	c := e.collector(rt, 0)
	if err := c.DestroyPU(context.Background(), gone("uid1")); err != nil {
		t.Fatalf("DestroyPU: %v", err)
	}
	if err := c.DestroyPU(context.Background(), gone("uid1")); err != nil {
		t.Fatalf("second DestroyPU: %v", err)
	}
	if n := e.delsOf("sbA"); n != 1 || e.exists("net1", "sbA") {
		t.Fatalf("want 1 DEL and the entry gone; DELs %v, exists %v", e.dels(), e.exists("net1", "sbA"))
	}
}
