package audit6_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// env is a fake node: a libcni cache, a plugin dir with a fake plugin that
// logs each call, a conf dir, and a directory of "network namespaces".
type env struct {
	t                              *testing.T
	cache, plugins, conf, netnsDir string
}

// MarshalJSON/UnmarshalJSON carry the directories to a child process.
func (e *env) UnmarshalJSON(b []byte) error {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	e.cache, e.plugins, e.conf, e.netnsDir = m["Cache"], m["Plugins"], m["Conf"], m["NetnsDir"]
	return nil
}

const fakePlugin = `#!/bin/sh
cat >/dev/null
echo "$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME netns=$CNI_NETNS" >> "$(dirname "$0")/calls.log"
exit 0
`

func newEnv(t *testing.T) *env {
	t.Helper()
	d := t.TempDir()
	e := &env{t: t, cache: filepath.Join(d, "cache"), plugins: filepath.Join(d, "bin"), conf: filepath.Join(d, "net.d"), netnsDir: filepath.Join(d, "netns")}
	for _, p := range []string{filepath.Join(e.cache, "results"), e.plugins, e.conf, e.netnsDir} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(e.plugins, "fakeplugin"), []byte(fakePlugin), 0o755); err != nil {
		t.Fatal(err)
	}
	return e
}

// netns returns a namespace path: present makes a file there (the
// collector's netnsPresent is "the path is there"), otherwise the path is
// gone from a directory that is there.
func (e *env) netns(name string, present bool) string {
	p := filepath.Join(e.netnsDir, name)
	if present {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			e.t.Fatal(err)
		}
	}
	return p
}

func conflist(net string) []byte {
	b, _ := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": net, "plugins": []any{map[string]any{"type": "fakeplugin"}}})
	return b
}

type entryOpt func(m map[string]any)

// write writes a libcni cache entry for (net, sandbox, eth0) of pod uid,
// with the given netns and mtime.
func (e *env) write(net, sandbox, uid, netns string, mtime time.Time, opts ...entryOpt) string {
	e.t.Helper()
	m := map[string]any{
		"kind": "cniCacheV1", "containerId": sandbox, "config": conflist(net), "ifName": "eth0",
		"networkName": net, "netns": netns,
		"cniArgs": [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", "ns"}, {"K8S_POD_NAME", "pod-" + uid}, {"K8S_POD_UID", uid}},
	}
	for _, o := range opts {
		o(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		e.t.Fatal(err)
	}
	p := filepath.Join(e.cache, "results", net+"-"+sandbox+"-eth0")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		e.t.Fatal(err)
	}
	if !mtime.IsZero() {
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			e.t.Fatal(err)
		}
	}
	return p
}

func (e *env) exists(net, sandbox string) bool {
	_, err := os.Stat(filepath.Join(e.cache, "results", net+"-"+sandbox+"-eth0"))
	return err == nil
}

// dels returns the DEL calls the fake plugin saw, as "sandbox ifName".
func (e *env) dels() []string {
	b, _ := os.ReadFile(filepath.Join(e.plugins, "calls.log"))
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasPrefix(l, "DEL ") {
			out = append(out, strings.TrimPrefix(l, "DEL "))
		}
	}
	return out
}

func (e *env) delsOf(sandbox string) int {
	n := 0
	for _, d := range e.dels() {
		if strings.HasPrefix(d, sandbox+" ") {
			n++
		}
	}
	return n
}

func (e *env) collector(rt cni.Runtime, timeout time.Duration) *cni.Collector {
	e.t.Helper()
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf,
		Runtime: rt, NewestSandboxTimeout: timeout, Logger: funcr.New(func(string, string) {}, funcr.Options{})})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// fakeRuntime is a CRI that lists what it is told.
type fakeRuntime struct {
	mu  sync.Mutex
	sbs []*runtimeapi.PodSandbox
	err error
}

func (f *fakeRuntime) set(sbs ...*runtimeapi.PodSandbox) {
	f.mu.Lock()
	f.sbs = sbs
	f.mu.Unlock()
}

func (f *fakeRuntime) ListPodSandbox(_ context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	var out []*runtimeapi.PodSandbox
	for _, s := range f.sbs {
		if uid := filter.GetLabelSelector()["io.kubernetes.pod.uid"]; uid != "" && s.GetLabels()["io.kubernetes.pod.uid"] != uid {
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

func sb(id, uid string, ready bool, created time.Time) *runtimeapi.PodSandbox {
	st := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if ready {
		st = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	var c int64
	if !created.IsZero() {
		c = created.UnixNano()
	}
	return &runtimeapi.PodSandbox{Id: id, State: st, CreatedAt: c,
		Labels:   map[string]string{"io.kubernetes.pod.uid": uid},
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "pod-" + uid, Namespace: "ns", Uid: uid}}
}

func gone(uid string) ports.DestroyEvent {
	return ports.DestroyEvent{PUID: uid, Pod: types.NamespacedName{Namespace: "ns", Name: "pod-" + uid}, Reason: ports.ReasonPodGone}
}

func changed(uid, sandbox string) ports.DestroyEvent {
	return ports.DestroyEvent{PUID: uid, Pod: types.NamespacedName{Namespace: "ns", Name: "pod-" + uid}, SandboxID: sandbox, Reason: ports.ReasonSandboxChanged}
}

var timeZero time.Time
