package promises_test

// A Runtime and a ConfDir that answer nonsense or hang: the collector keeps everything, with a plain error, and
// Resync goes on.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// rfDirs are a collector's directories, all in a test's temporary directory.
type rfDirs struct {
	root, cache, bin, conf, data, netns string
}

func rfNewDirs(t *testing.T) rfDirs {
	t.Helper()
	root := t.TempDir()
	d := rfDirs{root: root, cache: filepath.Join(root, "cache"), bin: filepath.Join(root, "bin"),
		conf: filepath.Join(root, "conf"), data: filepath.Join(root, "networks"), netns: filepath.Join(root, "netns")}
	for _, p := range []string{filepath.Join(d.cache, "results"), d.bin, d.conf, d.data, d.netns} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func (d rfDirs) options(rt cni.Runtime) cni.Options {
	return cni.Options{CacheDir: d.cache, PluginDirs: []string{d.bin}, ConfDir: d.conf, HostLocalDataDir: d.data,
		Runtime: rt, Logger: logr.Discard()}
}

// rfConflist is a bridge network with host-local, as containerd's tests run it.
func rfConflist(name string) []byte {
	b, _ := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": name, "plugins": []any{
		map[string]any{"type": "bridge", "bridge": "cni0", "ipam": map[string]any{"type": "host-local",
			"ranges": [][]map[string]string{{{"subnet": "10.88.0.0/24"}}}}},
	}})
	return b
}

// writeEntry writes the libcni cache entry of one attachment of a pod, as
// libcni names and writes it.
func (d rfDirs) writeEntry(t *testing.T, network, sandbox, ifName, netns, uid, ns, name string, config []byte) string {
	t.Helper()
	e := map[string]any{"kind": "cniCacheV1", "containerId": sandbox, "config": config, "ifName": ifName,
		"networkName": network, "netns": netns,
		"cniArgs": [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", ns}, {"K8S_POD_NAME", name}, {"K8S_POD_UID", uid}}}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(d.cache, "results", network+"-"+sandbox+"-"+ifName)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// rfRuntime answers ListPodSandbox with sbs, or err.
type rfRuntime struct {
	mu  sync.Mutex
	sbs []*runtimeapi.PodSandbox
	err error
}

func (f *rfRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sbs, f.err
}

// rfTracker is a Tracker that records what Resync does.
type rfTracker struct {
	mu      sync.Mutex
	tracked []ports.PU
}

func (t *rfTracker) Track(pu ports.PU) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tracked = append(t.tracked, pu)
	return nil
}
func (t *rfTracker) Untrack(string) bool             { return false }
func (t *rfTracker) TriggerPod(types.NamespacedName) {}

// adapters/cni/collector.go:397-398 (go doc cni.Collector.DestroyPU):
// "A Runtime that cannot be asked keeps everything (a plain error)."
// A Runtime whose error happens to be marked ports.Permanent makes
// DestroyPU's answer permanent: the engine then drops the PU for good.
func TestARuntimePermanentErrorKeepsWithAPlainError(t *testing.T) {
	d := rfNewDirs(t)
	d.writeEntry(t, "net1", "sb1", "eth0", filepath.Join(d.netns, "sb1"), "uid1", "ns", "p", rfConflist("net1"))
	rt := &rfRuntime{err: ports.Permanent(errors.New("rpc error: code = Unimplemented"))}
	c, err := cni.New(d.options(rt))
	if err != nil {
		t.Fatal(err)
	}
	ev := ports.DestroyEvent{PUID: "uid1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: "sb1", Reason: ports.ReasonPodGone}
	for name, call := range map[string]func(context.Context, ports.DestroyEvent) error{"DestroyPU": c.DestroyPU, "DryRunDestroyPU": c.DryRunDestroyPU} {
		err := call(context.Background(), ev)
		if err == nil {
			t.Fatalf("%s: nil with a Runtime that cannot be asked; want a plain error", name)
		}
		if ports.IsPermanent(err) {
			t.Errorf("%s: the Runtime could not be asked, and the answer is ports.Permanent (the engine gives the PU up): %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(d.cache, "results", "net1-sb1-eth0")); err != nil {
		t.Fatalf("the entry is gone: %v", err)
	}
}

// adapters/cni/collector.go:778-779 (go doc cni.Collector.Resync): "It
// returns when ctx ends (nil)". A garbage file in ConfDir that is no
// regular file (a named pipe, say *.rfConflist) blocks every read of ConfDir
// for good: Resync never returns, whatever ctx says. The cache's and
// host-local's directories pass such files over; ConfDir does not.
func TestResyncReturnsWhenCtxEndsWithANamedPipeInConfDir(t *testing.T) {
	d := rfNewDirs(t)
	if err := os.WriteFile(filepath.Join(d.conf, "10-net1.rfConflist"), rfConflist("net1"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(d.conf, "99-garbage.rfConflist")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unblock(fifo) })
	c, err := cni.New(d.options(&rfRuntime{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Resync(ctx, &rfTracker{}) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Resync: %v, want nil once ctx ends", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Resync has not returned 9.5s after its ctx ended: it is blocked reading %s, a named pipe in ConfDir", fifo)
	}
}

// unblock opens the pipe for writing until every reader blocked on it
// has gone, so that the goroutines a failed test left behind end.
func unblock(fifo string) {
	for i := 0; i < 20; i++ {
		f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return // no reader left
		}
		f.Close()
		time.Sleep(10 * time.Millisecond)
	}
}

// rfHangingRuntime answers no ListPodSandbox until its ctx ends.
type rfHangingRuntime struct{}

func (rfHangingRuntime) ListPodSandbox(ctx context.Context, _ *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// go doc cni.Collector.Resync: "Resync feeds t with what the cache holds
// while the agent runs: every ResyncInterval ... it lists the PUs (ListPUs)
// and tracks each of them"; go doc cni.Collector.ListPUs: "A Runtime that
// cannot be asked makes the order the cache's, logged." With a Runtime that
// hangs (answers only when its ctx ends), Resync, whose ctx lasts as long as
// the agent, tracks nothing, ever.
func TestResyncTracksInTheCachesOrderWhileTheRuntimeHangs(t *testing.T) {
	d := rfNewDirs(t)
	d.writeEntry(t, "net1", "sb1", "eth0", filepath.Join(d.netns, "sb1"), "uid1", "ns", "p", rfConflist("net1"))
	o := d.options(rfHangingRuntime{})
	o.ResyncInterval = 100 * time.Millisecond
	c, err := cni.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tr := &rfTracker{}
	done := make(chan error, 1)
	go func() { done <- c.Resync(ctx, tr) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		tr.mu.Lock()
		n := len(tr.tracked)
		tr.mu.Unlock()
		if n > 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("Resync tracked nothing in 10s (100 ResyncIntervals) while the Runtime hangs")
}
