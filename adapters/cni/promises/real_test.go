package promises_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// With the real bridge and host-local plugins, in private network and mount namespaces only
// (run under `unshare --net --mount --propagation private` with AUDIT7_PRIVATE_NS=1): a live
// pod's sandbox, which the runtime lists ready but without the pod-UID label (CRI metadata names
// the pod), loses its interface and its address once the API says the pod is gone.
func TestAuditReadyUnlabeledSandboxRealPlugins(t *testing.T) {
	if os.Getuid() != 0 || os.Getenv("AUDIT7_PRIVATE_NS") != "1" {
		t.Skip("needs root, in private network and mount namespaces (AUDIT7_PRIVATE_NS=1)")
	}
	bin, err := filepath.Abs("../../../bin/cni")
	if err != nil {
		t.Fatal(err)
	}
	d := t.TempDir()
	cache, data, nsfile := filepath.Join(d, "cache"), filepath.Join(d, "ipam"), filepath.Join(d, "netns-pod")
	os.MkdirAll(filepath.Join(cache, "results"), 0o755)
	if err := os.WriteFile(nsfile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("unshare", "--net="+nsfile, "true").CombinedOutput(); err != nil {
		t.Fatalf("pinning a pod namespace: %v %s", err, out)
	}
	defer unix.Unmount(nsfile, unix.MNT_DETACH) // mount(2), not umount(8): nothing written to the host's /run/mount
	conf := `{"cniVersion":"1.0.0","name":"podnet","plugins":[{"type":"bridge","bridge":"audit7br","ipMasq":false,"isGateway":false,
		"ipam":{"type":"host-local","dataDir":"` + data + `","ranges":[[{"subnet":"10.77.0.0/24"}]]}}]}`
	list, err := libcni.NetworkConfFromBytes([]byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	uid := uidA
	rt := &libcni.RuntimeConf{ContainerID: "sbready", NetNS: nsfile, IfName: "eth0",
		Args: [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", "default"}, {"K8S_POD_NAME", "pod"}, {"K8S_POD_INFRA_CONTAINER_ID", "sbready"}, {"K8S_POD_UID", uid}}}
	cn := libcni.NewCNIConfigWithCacheDir([]string{bin}, cache, nil)
	if _, err := cn.AddNetworkList(context.Background(), list, rt); err != nil {
		t.Fatalf("ADD: %v", err)
	}
	if out, _ := exec.Command("nsenter", "--net="+nsfile, "ip", "-o", "addr", "show", "eth0").CombinedOutput(); !strings.Contains(string(out), "10.77.0.") {
		t.Fatalf("after ADD, eth0 has no address: %s", out)
	}
	ready := sandbox("sbready", uid, runtimeapi.PodSandboxState_SANDBOX_READY, time.Now())
	ready.Labels = nil
	c, err := cni.New(cni.Options{CacheDir: cache, PluginDirs: []string{bin}, ConfDir: filepath.Join(d, "none"),
		Runtime: &fakeRuntime{sbs: []*runtimeapi.PodSandbox{ready}}, NewestSandboxTimeout: time.Millisecond, Logger: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	first := c.DestroyPU(context.Background(), goneDefault(uid))
	time.Sleep(5 * time.Millisecond)
	second := c.DestroyPU(context.Background(), goneDefault(uid))
	out, _ := exec.Command("nsenter", "--net="+nsfile, "ip", "-o", "link", "show", "eth0").CombinedOutput()
	ips, _ := os.ReadDir(filepath.Join(data, "podnet"))
	var held []string
	for _, f := range ips {
		if strings.HasPrefix(f.Name(), "10.77.") {
			held = append(held, f.Name())
		}
	}
	if !strings.Contains(string(out), "eth0") || len(held) == 0 {
		t.Fatalf("the live sandbox's network was freed: eth0 in its namespace %q, host-local addresses %v (first %v, second %v)", strings.TrimSpace(string(out)), held, first, second)
	}
}
