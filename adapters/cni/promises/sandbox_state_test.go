package promises_test

// What the runtime's list says of a sandbox: one it lists ready is never freed,
// it is the pod's current one, and a gone pod of which it lists a ready sandbox
// keeps every sandbox (ErrSandboxRunning), with or without the pod-UID label,
// whether the runtime honours the label filter or not, with the fake plugins
// or the real ones; a sandbox listed both ready and stopped is ready, in
// either order; and one listed with a state CRI does not name is not stopped,
// whatever the order of the answer.

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// doc.go and docs/sdk/cni-freeing.md row 2: a gone pod of which the runtime
// lists a sandbox ready keeps every sandbox (ErrSandboxRunning), even when
// that listing has no ID: an answer that makes no sense only ever keeps.
func TestGonePodListedReadyWithoutAnIDKeepsEverySandbox(t *testing.T) {
	e := newEnv(t)
	e.write("net1", "old", "uid1", e.netns("old", false), time.Now().Add(-time.Hour))
	rt := &fakeRuntime{}
	rt.set(sb("", "uid1", true, time.Now()))
	c := e.collector(rt, 0)
	if err := c.DestroyPU(context.Background(), gone("uid1")); !errors.Is(err, cni.ErrSandboxRunning) || len(e.dels()) != 0 {
		t.Fatalf("DestroyPU = %v, DELs %q; want ErrSandboxRunning and no DEL", err, e.dels())
	}
	if !e.exists("net1", "old") {
		t.Fatal("the old sandbox's entry is gone")
	}
}

// Row 1/2: a gone pod with one ready and one stopped sandbox keeps both.
func TestAuditHoldsGonePodReadyAndStoppedKeepsAll(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.write("net1", "sbA", "uid1", e.netns("a", false), now.Add(-time.Hour))
	e.write("net1", "sbB", "uid1", e.netns("b", true), now)
	rt := &fakeRuntime{}
	rt.set(sb("sbA", "uid1", false, now.Add(-time.Hour)), sb("sbB", "uid1", true, now))
	c := e.collector(rt, 0)
	if err := c.DestroyPU(context.Background(), gone("uid1")); !errors.Is(err, cni.ErrSandboxRunning) || len(e.dels()) != 0 {
		t.Fatalf("%v %v", err, e.dels())
	}
}

// Row 2: "The pod is gone, and the runtime lists another of its sandboxes
// ready ... keep ... ErrSandboxRunning". Here the ready sandbox is one the
// runtime lists but the cache holds no (readable) entry of.
func TestAuditRow2RuntimeOnlyReadySandboxAnswersErrSandboxRunning(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	// A: old sandbox of the static pod, stopped, its attachment leaked.
	e.write("net1", "sbA", "uid1", e.netns("a", false), now.Add(-time.Hour))
	rt := &fakeRuntime{}
	// B: the sandbox the kubelet runs the static pod in now (mirror pod
	// missing, so the API says gone). The cache holds none of it.
	rt.set(sb("sbA", "uid1", false, now.Add(-time.Hour)), sb("sbB", "uid1", true, now.Add(-time.Minute)))
	c := e.collector(rt, 0)
	err := c.DestroyPU(context.Background(), gone("uid1"))
	if e.delsOf("sbA") != 0 {
		t.Fatalf("freed a sandbox of a pod the runtime runs: %v", e.dels())
	}
	if !errors.Is(err, cni.ErrSandboxRunning) {
		t.Fatalf("DestroyPU of a gone pod the runtime runs (ready sandbox sbB) = %v, want ErrSandboxRunning (row 2); nil tells the engine the PU is destroyed, so it is dropped and never checked again", err)
	}
}

// "A sandbox listed both ready and stopped is ready", in either order.
func TestAuditHoldsListedTwiceIsReady(t *testing.T) {
	for _, readyFirst := range []bool{true, false} {
		e := newEnv(t)
		e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{})
		rt := &fakeRuntime{}
		r, s := sb("sbA", "uid1", true, time.Now()), sb("sbA", "uid1", false, time.Now())
		if readyFirst {
			rt.set(r, s)
		} else {
			rt.set(s, r)
		}
		c := e.collector(rt, 0)
		if err := c.DestroyPU(context.Background(), gone("uid1")); !errors.Is(err, cni.ErrSandboxRunning) || len(e.dels()) != 0 {
			t.Fatalf("readyFirst=%v: %v %v", readyFirst, err, e.dels())
		}
		if err := c.DestroyPU(context.Background(), changed("uid1", "sbA")); !errors.Is(err, cni.ErrNewestSandbox) || len(e.dels()) != 0 {
			t.Fatalf("readyFirst=%v changed: %v %v", readyFirst, err, e.dels())
		}
	}
}

// Holds: listed both stopped and ready, in either order, is ready.
func TestAuditHoldsReadyAndStopped(t *testing.T) {
	for _, rev := range []bool{false, true} {
		e := newEnv(t)
		e.writeEntry(entryOpt{sandbox: "sb1", uid: uidA, netns: e.netns("g", false)})
		a := sandbox("sb1", uidA, runtimeapi.PodSandboxState_SANDBOX_READY, time.Now())
		b := sandbox("sb1", uidA, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, time.Now())
		sbs := []*runtimeapi.PodSandbox{a, b}
		if rev {
			sbs = []*runtimeapi.PodSandbox{b, a}
		}
		c := e.collector(&fakeRuntime{ignoreFilter: true, sbs: sbs}, 0)
		if err := c.DestroyPU(context.Background(), goneDefault(uidA)); e.delled("sb1") {
			t.Fatalf("rev %v: freed: %v", rev, err)
		}
	}
}

// unfilteredRuntime lists its sandboxes whatever the filter (a CRI that
// does not implement label selectors).
type unfilteredRuntime struct{ sbs []*runtimeapi.PodSandbox }

func (u unfilteredRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return u.sbs, nil
}

// doc.go: "A sandbox the runtime lists ready is never freed: it is the
// pod's current one. A gone pod of which the runtime lists a ready
// sandbox ... keeps every sandbox (ErrSandboxRunning)". The runtime lists
// the cached sandbox sbA, by its ID, ready, but without the kubelet's
// io.kubernetes.pod.uid label. ListPUs reads it as ready; DestroyPU drops
// it as "not listed" and, its namespace telling nothing (the cached path
// is in a directory the collector does not see), frees it (row 11).
func TestAuditReadySandboxWithoutUIDLabelIsKept(t *testing.T) {
	e := newEnv(t)
	e.write("net1", "sbA", "uid1", "/nonexistent-dir/netns/a", time.Time{})
	s := sb("sbA", "uid1", true, time.Now())
	s.Labels = nil
	c := e.collector(unfilteredRuntime{sbs: []*runtimeapi.PodSandbox{s}}, 0)
	err := c.DestroyPU(context.Background(), gone("uid1"))
	if e.delsOf("sbA") != 0 {
		t.Fatalf("freed sandbox sbA, which the runtime lists ready (DestroyPU = %v)", err)
	}
	if !errors.Is(err, cni.ErrSandboxRunning) {
		t.Fatalf("DestroyPU = %v, want ErrSandboxRunning", err)
	}
}

// The runtime lists the gone pod's sandbox ready (unfiltered), but without the pod-UID label; a
// CRI runtime that honors the label filter does not return it to a per-pod list.
func TestAuditReadyUnlabeledSandbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		ns := e.netns("live", true)
		e.writeEntry(entryOpt{sandbox: "sbready", uid: uidA, netns: ns})
		ready := sandbox("sbready", uidA, runtimeapi.PodSandboxState_SANDBOX_READY, time.Now())
		ready.Labels = nil // CRI's metadata still names the pod's UID; the kubelet's label is missing
		rt := &fakeRuntime{sbs: []*runtimeapi.PodSandbox{ready}}
		c := e.collector(rt, 0)
		ctx := context.Background()
		pus, err := c.ListPUs(ctx)
		t.Logf("ListPUs: %v %v", pus, err)
		var errs []error
		for i := 0; i < 3; i++ {
			errs = append(errs, c.DestroyPU(ctx, goneDefault(uidA)))
			time.Sleep(3 * time.Minute)
		}
		if e.delled("sbready") {
			t.Fatalf("DEL of a sandbox the runtime lists ready (errors %v)", errs)
		}
	})
}

// Row 2 through the same door: the gone pod's dead sandbox is freed although the runtime lists
// another sandbox of the pod ready (CRI metadata names the pod; the label is missing).
func TestAuditReadyUnlabeledSandboxRow2(t *testing.T) {
	e := newEnv(t)
	e.writeEntry(entryOpt{sandbox: "sbdead", uid: uidA, netns: e.netns("gone", false)})
	ready := sandbox("sbcur", uidA, runtimeapi.PodSandboxState_SANDBOX_READY, time.Now())
	ready.Labels = nil
	c := e.collector(&fakeRuntime{sbs: []*runtimeapi.PodSandbox{ready}}, 0)
	err := c.DestroyPU(context.Background(), goneDefault(uidA))
	if e.delled("sbdead") {
		t.Fatalf("freed a sandbox of a gone pod the runtime runs (lists sbcur ready): err %v", err)
	}
}

// Holds (the contrast to TestAuditReadyUnlabeledSandbox): the same ready, unlabeled sandbox is
// kept when the runtime ignores the label filter.
func TestAuditHoldsReadyUnlabeledFilterIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.writeEntry(entryOpt{sandbox: "sbready", uid: uidA, netns: e.netns("live", true)})
		ready := sandbox("sbready", uidA, runtimeapi.PodSandboxState_SANDBOX_READY, time.Now())
		ready.Labels = nil
		c := e.collector(&fakeRuntime{ignoreFilter: true, sbs: []*runtimeapi.PodSandbox{ready}}, 0)
		for i := 0; i < 3; i++ {
			c.DestroyPU(context.Background(), goneDefault(uidA))
			time.Sleep(3 * time.Minute)
		}
		if e.delled("sbready") {
			t.Fatal("freed")
		}
	})
}

// With the real bridge and host-local plugins, in private network and mount namespaces only
// (TestMain runs the package in them as root): a live
// pod's sandbox, which the runtime lists ready but without the pod-UID label (CRI metadata names
// the pod), loses its interface and its address once the API says the pod is gone.
func TestAuditReadyUnlabeledSandboxRealPlugins(t *testing.T) {
	needPrivateNS(t)
	bin, err := pluginsDir()
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
	conf := `{"cniVersion":"1.0.0","name":"podnet","plugins":[{"type":"bridge","bridge":"podbr0","ipMasq":false,"isGateway":false,
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

// doc.go: "A sandbox is dead when the runtime lists it stopped, or does
// not list it and its network namespace is gone." and "nothing is freed
// without evidence" (row 3: "The runtime lists it stopped | free"). The
// runtime lists the sandbox in a state that is neither READY nor NOTREADY
// (a value this CRI version does not know); its namespace is there. That
// is no evidence that it is stopped: the gone pod's sandbox must not be
// freed, nor reported dead.
func TestAuditUnknownSandboxStateIsNotStopped(t *testing.T) {
	e := newEnv(t)
	e.write("net1", "sbA", "uid1", e.netns("a", true), time.Time{})
	rt := &fakeRuntime{}
	s := sb("sbA", "uid1", true, time.Now())
	s.State = runtimeapi.PodSandboxState(2)
	rt.set(s)
	c := e.collector(rt, 0)
	pod := &corev1.Pod{}
	pod.UID, pod.Namespace, pod.Name = "uid1", "ns", "pod-uid1"
	dead, err := c.SandboxDead(context.Background(), pod, "sbA")
	derr := c.DestroyPU(context.Background(), gone("uid1"))
	if e.delsOf("sbA") != 0 || dead {
		t.Fatalf("sandbox listed in unknown state %v with its namespace there: SandboxDead = %v (%v), DestroyPU = %v, DELs %v; want it kept", s.State, dead, err, derr, e.dels())
	}
}

// Holds: a sandbox listed only with an unknown state is kept for a gone pod.
func TestAuditHoldsUnknownStateKept(t *testing.T) {
	e := newEnv(t)
	e.writeEntry(entryOpt{sandbox: "sb1", uid: uidA, netns: e.netns("g", false)})
	c := e.collector(&fakeRuntime{ignoreFilter: true, sbs: []*runtimeapi.PodSandbox{sandbox("sb1", uidA, 9, time.Now())}}, 0)
	err := c.DestroyPU(context.Background(), goneDefault(uidA))
	if e.delled("sb1") {
		t.Fatalf("freed: %v", err)
	}
	_ = cni.ErrSandboxRunning
}

// A sandbox listed twice: once with a state CRI does not name (which alone keeps it, as ready),
// once stopped. The verdict must not depend on the order of the runtime's answer.
func TestAuditDuplicateUnknownStateOrder(t *testing.T) {
	for _, order := range []string{"notready-then-unknown", "unknown-then-notready"} {
		t.Run(order, func(t *testing.T) {
			e := newEnv(t)
			e.writeEntry(entryOpt{sandbox: "sbdup", uid: uidA, netns: e.netns("live", true)})
			unk := sandbox("sbdup", uidA, runtimeapi.PodSandboxState(7), time.Now())
			nr := sandbox("sbdup", uidA, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, time.Now())
			sbs := []*runtimeapi.PodSandbox{nr, unk}
			if order == "unknown-then-notready" {
				sbs = []*runtimeapi.PodSandbox{unk, nr}
			}
			c := e.collector(&fakeRuntime{ignoreFilter: true, sbs: sbs}, 0)
			dead, derr := c.SandboxDead(context.Background(), podOf(uidA), "sbdup")
			t.Logf("SandboxDead: %v %v", dead, derr)
			err := c.DestroyPU(context.Background(), goneDefault(uidA))
			if e.delled("sbdup") {
				t.Fatalf("freed a sandbox listed with an unknown state and stopped (order %s; err %v)", order, err)
			}
		})
	}
}
