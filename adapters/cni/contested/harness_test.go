package contested_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// env is one node's worth of directories, all under a temp dir.
type env struct {
	root, cache, conf, data, bin, netns, dellog string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{root: root, cache: filepath.Join(root, "cache"), conf: filepath.Join(root, "net.d"),
		data: filepath.Join(root, "networks"), bin: filepath.Join(root, "bin"), netns: filepath.Join(root, "netns"),
		dellog: filepath.Join(root, "del.log")}
	for _, d := range []string{filepath.Join(e.cache, "results"), e.conf, e.data, e.bin, e.netns} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// logdel: records every invocation (command, container, interface) and succeeds.
	script := "#!/bin/sh\ncat >/dev/null\necho \"$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME\" >> " + e.dellog + "\nexit 0\n"
	if err := os.WriteFile(filepath.Join(e.bin, "logdel"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return e
}

// dels returns the invocations of logdel so far.
func (e *env) dels() []string {
	b, err := os.ReadFile(e.dellog)
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

func (e *env) delsOf(id string) int {
	n := 0
	for _, l := range e.dels() {
		if strings.Contains(l, " "+id+" ") {
			n++
		}
	}
	return n
}

// netnsPath returns a path in the env's netns dir; present makes the file.
func (e *env) netnsPath(t *testing.T, name string, present bool) string {
	p := filepath.Join(e.netns, name)
	if present {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func conflist(network string, extra map[string]any) []byte {
	m := map[string]any{"cniVersion": "1.0.0", "name": network, "plugins": []any{map[string]any{"type": "logdel"}}}
	for k, v := range extra {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return b
}

type entry struct {
	network, id, ifName, netns string
	uid, ns, name              string
	ip                         string
	config                     []byte
	written                    time.Time
}

// writeEntry writes a libcni cache entry as libcni does.
func (e *env) writeEntry(t *testing.T, en entry) string {
	t.Helper()
	if en.ifName == "" {
		en.ifName = "eth0"
	}
	if en.config == nil {
		en.config = conflist(en.network, nil)
	}
	result := map[string]any{"cniVersion": "1.0.0"}
	if en.ip != "" {
		result["ips"] = []any{map[string]any{"address": en.ip + "/24"}}
	}
	m := map[string]any{
		"kind": "cniCacheV1", "containerId": en.id, "config": base64.StdEncoding.EncodeToString(en.config),
		"ifName": en.ifName, "networkName": en.network, "netns": en.netns,
		"cniArgs": [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", en.ns}, {"K8S_POD_NAME", en.name}, {"K8S_POD_UID", en.uid}},
		"result":  result,
	}
	b, _ := json.Marshal(m)
	p := filepath.Join(e.cache, "results", en.network+"-"+en.id+"-"+en.ifName)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if !en.written.IsZero() {
		if err := os.Chtimes(p, en.written, en.written); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func (e *env) opts(rt cni.Runtime) cni.Options {
	return cni.Options{CacheDir: e.cache, PluginDirs: []string{e.bin}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: rt, ResyncInterval: time.Second, Logger: logr.Discard()}
}

// fakeRuntime answers ListPodSandbox from a function.
type fakeRuntime struct {
	mu    sync.Mutex
	sbs   []*runtimeapi.PodSandbox
	err   error
	calls int
	hook  func(n int) ([]*runtimeapi.PodSandbox, error, bool)
}

func (f *fakeRuntime) ListPodSandbox(ctx context.Context, _ *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	f.mu.Lock()
	f.calls++
	n := f.calls
	h := f.hook
	sbs, err := f.sbs, f.err
	f.mu.Unlock()
	if h != nil {
		if s, e, ok := h(n); ok {
			return s, e
		}
	}
	return sbs, err
}

func (f *fakeRuntime) set(sbs []*runtimeapi.PodSandbox, err error) {
	f.mu.Lock()
	f.sbs, f.err = sbs, err
	f.mu.Unlock()
}

func sandbox(id, uid string, ready bool, created time.Time) *runtimeapi.PodSandbox {
	st := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if ready {
		st = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return &runtimeapi.PodSandbox{Id: id, State: st, CreatedAt: created.UnixNano(),
		Labels:   map[string]string{"io.kubernetes.pod.uid": uid},
		Metadata: &runtimeapi.PodSandboxMetadata{Uid: uid, Name: "p", Namespace: "ns"}}
}

// tracker is a Tracker of our own, recording what Resync does.
type tracker struct {
	mu       sync.Mutex
	refuse   func(pu ports.PU, n int) error
	tracks   []ports.PU
	ok       []ports.PU
	untracks []string
	triggers []types.NamespacedName
	held     map[string]ports.PU
}

func newTracker() *tracker { return &tracker{held: map[string]ports.PU{}} }

func (t *tracker) Track(pu ports.PU) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tracks = append(t.tracks, pu)
	if t.refuse != nil {
		if err := t.refuse(pu, len(t.tracks)); err != nil {
			return err
		}
	}
	t.ok = append(t.ok, pu)
	if _, ok := t.held[pu.PUID]; !ok {
		t.held[pu.PUID] = pu
	}
	return nil
}

func (t *tracker) Untrack(puid string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.untracks = append(t.untracks, puid)
	_, ok := t.held[puid]
	delete(t.held, puid)
	return ok
}

func (t *tracker) TriggerPod(p types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.triggers = append(t.triggers, p)
}

func (t *tracker) snapshot() (tracks, ok []ports.PU, triggers []types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]ports.PU(nil), t.tracks...), append([]ports.PU(nil), t.ok...), append([]types.NamespacedName(nil), t.triggers...)
}

var errRefused = errors.New("tracker: refused (busy)")
