package whosesandbox_test

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testnode"
	"github.com/podsweeper/podsweeper/ports"
)

// pluginsDir is the real CNI plugins' directory: $CNI_PLUGINS_DIR, or the one `make cni-plugins` fills.
func pluginsDir(t *testing.T) string {
	d, _ := filepath.Abs(cmp.Or(os.Getenv("CNI_PLUGINS_DIR"), "../../../bin/cni"))
	if _, err := os.Stat(filepath.Join(d, "host-local")); err != nil {
		testnode.Unavailable(t, "no host-local in %s (run `make cni-plugins`, or `make test`): %v", d, err)
	}
	return d
}

type env struct {
	cache, conf, data, netns string
	plugins                  string
}

func newEnv(t *testing.T) *env {
	root := t.TempDir()
	e := &env{cache: filepath.Join(root, "cache"), conf: filepath.Join(root, "conf"), data: filepath.Join(root, "data"), netns: filepath.Join(root, "netns"), plugins: pluginsDir(t)}
	for _, d := range []string{filepath.Join(e.cache, "results"), e.conf, e.data, e.netns} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// hostLocalList is a conflist running host-local as its only plugin, in e.data.
func (e *env) hostLocalList(name string, extra map[string]any) []byte {
	ipam := map[string]any{"type": "host-local", "dataDir": e.data, "ranges": [][]map[string]any{{{"subnet": "10.22.0.0/24"}}}}
	p := map[string]any{"type": "host-local", "ipam": ipam}
	l := map[string]any{"cniVersion": "1.0.0", "name": name, "plugins": []any{p}}
	for k, v := range extra {
		l[k] = v
	}
	b, _ := json.Marshal(l)
	return b
}

func (e *env) writeConf(t *testing.T, file string, b []byte) {
	if err := os.WriteFile(filepath.Join(e.conf, file), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// entry writes a libcni cache entry of a pod's attachment.
func (e *env) entry(t *testing.T, network, cid, ifname, uid, ns, name, netns string, conf []byte, ip string) string {
	ent := map[string]any{
		"kind": "cniCacheV1", "containerId": cid, "config": conf, "ifName": ifname, "networkName": network,
		"netns":   netns,
		"cniArgs": [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", ns}, {"K8S_POD_NAME", name}, {"K8S_POD_UID", uid}, {"K8S_POD_INFRA_CONTAINER_ID", cid}},
	}
	if ip != "" {
		ent["result"] = map[string]any{"cniVersion": "1.0.0", "ips": []map[string]any{{"address": ip + "/24"}}}
	}
	b, _ := json.Marshal(ent)
	f := filepath.Join(e.cache, "results", network+"-"+cid+"-"+ifname)
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// reserve writes a host-local reservation file as host-local does.
func (e *env) reserve(t *testing.T, network, ip, cid, ifname string, age time.Duration) string {
	d := filepath.Join(e.data, network)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(d, ip)
	if err := os.WriteFile(f, []byte(cid+"\r\n"+ifname), 0o644); err != nil {
		t.Fatal(err)
	}
	if age > 0 {
		at := time.Now().Add(-age)
		os.Chtimes(f, at, at)
	}
	return f
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// fakeRuntime answers ListPodSandbox with what it holds.
type fakeRuntime struct {
	mu    sync.Mutex
	sbs   []*runtimeapi.PodSandbox
	err   error
	calls int
	hook  func(n int)
}

func (f *fakeRuntime) ListPodSandbox(ctx context.Context, _ *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	f.mu.Lock()
	f.calls++
	n := f.calls
	h := f.hook
	f.mu.Unlock()
	if h != nil {
		h(n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sbs, f.err
}

func (f *fakeRuntime) set(sbs ...*runtimeapi.PodSandbox) {
	f.mu.Lock()
	f.sbs = sbs
	f.mu.Unlock()
}

func sandbox(id, labelUID, metaUID string, state runtimeapi.PodSandboxState, created time.Time) *runtimeapi.PodSandbox {
	sb := &runtimeapi.PodSandbox{Id: id, State: state, CreatedAt: created.UnixNano(), Metadata: &runtimeapi.PodSandboxMetadata{Uid: metaUID, Name: "p", Namespace: "ns"}}
	if labelUID != "" {
		sb.Labels = map[string]string{"io.kubernetes.pod.uid": labelUID}
	}
	return sb
}

func (e *env) opts(rt cni.Runtime) cni.Options {
	o := cni.Options{CacheDir: e.cache, ConfDir: e.conf, PluginDirs: []string{e.plugins}, HostLocalDataDir: e.data,
		ResyncInterval: time.Hour, NewestSandboxTimeout: time.Minute, ReservationGrace: time.Minute}
	if rt != nil {
		o.Runtime = rt
	}
	return o
}

func goneEvent(uid, sandboxID string) ports.DestroyEvent {
	return ports.DestroyEvent{PUID: uid, Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: sandboxID, Reason: ports.ReasonPodGone}
}

// changedEvent is the engine's DestroyEvent of a sandbox change of the pod uid, sandbox sb.
func changedEvent(uid, sb string) ports.DestroyEvent {
	return ports.DestroyEvent{PUID: uid, Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: sb, Reason: ports.ReasonSandboxChanged}
}
