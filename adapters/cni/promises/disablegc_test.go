package promises_test

// A network whose cached config, or whose config in ConfDir, says "disableGC"
// is never touched: true or "TRUE" (as libcni reads them), in a .conflist or a
// single plugin's .conf loaded as the runtimes load one, with the fake plugins
// or the real ones; and a gone pod's ready sandbox that holds only such a
// network's attachment still keeps every sandbox of the pod.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// doc.go: "It never touches a network whose cached config, or whose config
// in Options.ConfDir, says "disableGC": true." and Options.ConfDir: "A
// network that a config there names with "disableGC": true is never
// touched, even when the config its attachments were added with (the
// cached one) did not say so."
//
// The network's config in ConfDir is a single plugin's .conf saying
// "disableGC": true, the format libcni's own LoadNetworkConf (and
// containerd's go-cni) still load and up-convert with ConfListFromConf;
// the cached config is that up-converted list, whose top level does not
// carry disableGC. The gone pod's attachment of it must not be DELed.
func TestAuditDisableGCInSinglePluginConfOfConfDir(t *testing.T) {
	e := newEnv(t)
	single := []byte(`{"cniVersion":"1.0.0","name":"net1","type":"fakeplugin","disableGC":true}`)
	if err := os.WriteFile(filepath.Join(e.conf, "10-net1.conf"), single, 0o644); err != nil {
		t.Fatal(err)
	}
	// What the runtime loads for net1, as libcni does.
	list, err := libcni.LoadNetworkConf(e.conf, "net1")
	if err != nil {
		t.Fatalf("libcni.LoadNetworkConf: %v", err)
	}
	e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{}, func(m map[string]any) { m["config"] = list.Bytes })
	rt := &fakeRuntime{}
	rt.set(sb("sbA", "uid1", false, time.Now().Add(-time.Hour)))
	c := e.collector(rt, 0)
	err = c.DestroyPU(context.Background(), gone("uid1"))
	if n := e.delsOf("sbA"); n != 0 {
		t.Fatalf("DELed network net1 (%d DEL, DestroyPU = %v), whose config in ConfDir (10-net1.conf) says \"disableGC\": true", n, err)
	}
}

// disableGC, cached or in ConfDir, is never DELed.
func TestAuditHoldsDisableGC(t *testing.T) {
	e := newEnv(t)
	e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{}, func(m map[string]any) {
		var c map[string]any
		_ = json.Unmarshal(m["config"].([]byte), &c)
		c["disableGC"] = "True"
		m["config"], _ = json.Marshal(c)
	})
	e.write("net2", "sbA", "uid1", e.netns("a", false), time.Time{})
	b, _ := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": "net2", "disableGC": true, "plugins": []any{map[string]any{"type": "fakeplugin"}}})
	if err := os.WriteFile(filepath.Join(e.conf, "10-net2.conflist"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	e.write("net3", "sbA", "uid1", e.netns("a", false), time.Time{})
	rt := &fakeRuntime{}
	c := e.collector(rt, 0)
	if err := c.DestroyPU(context.Background(), gone("uid1")); err != nil || len(e.dels()) != 1 {
		t.Fatalf("%v %v", err, e.dels())
	}
}

// A single plugin's .conf in ConfDir that says "disableGC": "TRUE" (which libcni reads as true,
// as it does for the cached config and for a .conflist) must keep its network's attachments.
func TestAuditDisableGCConfDirString(t *testing.T) {
	for _, tc := range []struct{ file, body string }{
		{"10-keep.conflist", `{"cniVersion":"1.0.0","name":"keepnet","disableGC":"TRUE","plugins":[{"type":"fakeplug"}]}`},
		{"10-keep.conf", `{"cniVersion":"1.0.0","name":"keepnet","type":"fakeplug","disableGC":"TRUE"}`},
		{"10-keep.json", `{"cniVersion":"1.0.0","name":"keepnet","type":"fakeplug","disableGC":"True"}`},
		{"20-dupkey.conf", `{"cniVersion":"1.0.0","name":"keepnet","type":"fakeplug","disableGC":true,"DisableGC":false}`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			e := newEnv(t)
			writeFile(t, e.conf, tc.file, tc.body)
			e.writeEntry(entryOpt{network: "keepnet", sandbox: "sb1", uid: uidA, netns: e.netns("gone1", false)})
			c := e.collector(&fakeRuntime{ignoreFilter: true}, 0)
			err := c.DestroyPU(context.Background(), goneDefault(uidA))
			if e.delled("sb1") {
				t.Fatalf("DEL run on network keepnet, whose ConfDir config %s says disableGC (err %v)", tc.file, err)
			}
		})
	}
}

// Holds: a cached conflist that says "disableGC": "TRUE" (libcni's reading: true) is never DELed.
func TestAuditHoldsDisableGCCachedString(t *testing.T) {
	e := newEnv(t)
	e.writeEntry(entryOpt{network: "k", sandbox: "sb1", uid: uidA, netns: e.netns("g", false), config: `{"cniVersion":"1.0.0","name":"k","disableGC":"TRUE","plugins":[{"type":"fakeplug"}]}`})
	c := e.collector(&fakeRuntime{ignoreFilter: true}, 0)
	if err := c.DestroyPU(context.Background(), goneDefault(uidA)); e.delled("sb1") {
		t.Fatalf("freed: %v", err)
	}
}

// A single plugin's .conf that says "disableGC": true, loaded as the runtimes load one (libcni's
// ConfListFromConf, go-cni and ocicni): the cached config is a list of that one plugin, which
// still says "disableGC": true. With the .conf still in ConfDir, it is kept (a hold); once the
// .conf left ConfDir, only the cached config says so.
func TestAuditDisableGCCachedSingleConf(t *testing.T) {
	conf := `{"cniVersion":"1.0.0","name":"single","type":"fakeplug","disableGC":true}`
	//lint:ignore SA1019 the runtimes still load a single plugin's .conf this way
	pc, err := libcni.ConfFromBytes([]byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 the runtimes still load a single plugin's .conf this way
	list, err := libcni.ConfListFromConf(pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cached config: %s", list.Bytes)
	for _, inConfDir := range []bool{true, false} {
		name := map[bool]string{true: "conf-in-confdir", false: "conf-gone-from-confdir"}[inConfDir]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			if inConfDir {
				writeFile(t, e.conf, "10-single.conf", conf)
			}
			e.writeEntry(entryOpt{network: "single", sandbox: "sb1", uid: uidA, netns: e.netns("g", false), config: string(list.Bytes)})
			c := e.collector(&fakeRuntime{ignoreFilter: true}, 0)
			err := c.DestroyPU(context.Background(), goneDefault(uidA))
			if e.delled("sb1") {
				t.Fatalf("DEL of network single, whose cached config says disableGC: true (err %v)", err)
			}
		})
	}
}

// Hold: a gone pod whose ready sandbox holds only an attachment of a
// disableGC network still keeps every sandbox (ErrSandboxRunning).
func TestAuditHoldsReadySandboxOfDisableGCNetworkKeepsPod(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.write("net1", "sbA", "uid1", e.netns("a", false), now.Add(-time.Hour))
	e.write("net2", "sbB", "uid1", e.netns("b", true), now, func(m map[string]any) {
		m["config"] = []byte(`{"cniVersion":"1.0.0","name":"net2","disableGC":true,"plugins":[{"type":"fakeplugin"}]}`)
	})
	rt := &fakeRuntime{}
	rt.set(sb("sbA", "uid1", false, now.Add(-time.Hour)), sb("sbB", "uid1", true, now))
	c := e.collector(rt, 0)
	if err := c.DestroyPU(context.Background(), gone("uid1")); !errors.Is(err, cni.ErrSandboxRunning) || len(e.dels()) != 0 {
		t.Fatalf("%v %v", err, e.dels())
	}
}

// With the real bridge and host-local plugins (private namespaces only, as
// TestAuditReadyUnlabeledSandboxRealPlugins): a network from a single plugin's .conf that says
// "disableGC": true, loaded as containerd's go-cni and CRI-O's ocicni load one (ConfListFromConf),
// whose .conf has since left ConfDir: the dead sandbox's address is released by the collector.
func TestAuditDisableGCCachedSingleConfRealPlugins(t *testing.T) {
	needPrivateNS(t)
	bin, _ := pluginsDir()
	d := t.TempDir()
	cache, data, nsfile := filepath.Join(d, "cache"), filepath.Join(d, "ipam"), filepath.Join(d, "netns-pod")
	os.MkdirAll(filepath.Join(cache, "results"), 0o755)
	os.WriteFile(nsfile, nil, 0o644)
	if out, err := exec.Command("unshare", "--net="+nsfile, "true").CombinedOutput(); err != nil {
		t.Fatalf("pinning a pod namespace: %v %s", err, out)
	}
	conf := `{"cniVersion":"1.0.0","name":"keepnet","type":"bridge","bridge":"keepbr0","ipMasq":false,"isGateway":false,"disableGC":true,
		"ipam":{"type":"host-local","dataDir":"` + data + `","ranges":[[{"subnet":"10.78.0.0/24"}]]}}`
	//lint:ignore SA1019 the runtimes still load a single plugin's .conf this way
	pc, err := libcni.ConfFromBytes([]byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 the runtimes still load a single plugin's .conf this way
	list, err := libcni.ConfListFromConf(pc)
	if err != nil {
		t.Fatal(err)
	}
	rt := &libcni.RuntimeConf{ContainerID: "sbdead", NetNS: nsfile, IfName: "eth0",
		Args: [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", "default"}, {"K8S_POD_NAME", "pod"}, {"K8S_POD_INFRA_CONTAINER_ID", "sbdead"}, {"K8S_POD_UID", uidA}}}
	if _, err := libcni.NewCNIConfigWithCacheDir([]string{bin}, cache, nil).AddNetworkList(context.Background(), list, rt); err != nil {
		t.Fatalf("ADD: %v", err)
	}
	// The sandbox dies: its namespace is unpinned and removed.
	unix.Unmount(nsfile, unix.MNT_DETACH) // mount(2), not umount(8): nothing written to the host's /run/mount
	os.Remove(nsfile)
	addrs := func() (held []string) {
		fs, _ := os.ReadDir(filepath.Join(data, "keepnet"))
		for _, f := range fs {
			if strings.HasPrefix(f.Name(), "10.78.") {
				held = append(held, f.Name())
			}
		}
		return held
	}
	if len(addrs()) == 0 {
		t.Fatal("no address after ADD")
	}
	c, err := cni.New(cni.Options{CacheDir: cache, PluginDirs: []string{bin}, ConfDir: filepath.Join(d, "net.d"), Runtime: &fakeRuntime{ignoreFilter: true}, Logger: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	err = c.DestroyPU(context.Background(), goneDefault(uidA))
	if len(addrs()) == 0 {
		t.Fatalf("the address of network keepnet (disableGC: true in its cached config) was released (err %v)", err)
	}
}
