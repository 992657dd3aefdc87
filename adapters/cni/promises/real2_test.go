package promises_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// With the real bridge and host-local plugins (private namespaces only, as
// TestAuditReadyUnlabeledSandboxRealPlugins): a network from a single plugin's .conf that says
// "disableGC": true, loaded as containerd's go-cni and CRI-O's ocicni load one (ConfListFromConf),
// whose .conf has since left ConfDir: the dead sandbox's address is released by the collector.
func TestAuditDisableGCCachedSingleConfRealPlugins(t *testing.T) {
	if os.Getuid() != 0 || os.Getenv("AUDIT7_PRIVATE_NS") != "1" {
		t.Skip("needs root, in private network and mount namespaces (AUDIT7_PRIVATE_NS=1)")
	}
	bin, _ := filepath.Abs("../../../bin/cni")
	d := t.TempDir()
	cache, data, nsfile := filepath.Join(d, "cache"), filepath.Join(d, "ipam"), filepath.Join(d, "netns-pod")
	os.MkdirAll(filepath.Join(cache, "results"), 0o755)
	os.WriteFile(nsfile, nil, 0o644)
	if out, err := exec.Command("unshare", "--net="+nsfile, "true").CombinedOutput(); err != nil {
		t.Fatalf("pinning a pod namespace: %v %s", err, out)
	}
	conf := `{"cniVersion":"1.0.0","name":"keepnet","type":"bridge","bridge":"audit7kb","ipMasq":false,"isGateway":false,"disableGC":true,
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
