package freeing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/privatens"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// The tests run inside private network and mount namespaces
// (internal/privatens): /var/lib and /run are a tmpfs there, and every
// directory, plugin and "network namespace" path they make is in them.

const insideEnv = "PODSWEEPER_CNI_FREEING_IN_NETNS"

var noNS string

func TestMain(m *testing.M) {
	os.Exit(privatens.Run(insideEnv, func() int {
		// every temporary directory in the private tmpfs, never the host's /tmp
		if err := os.MkdirAll("/run/freeing-tmp", 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.Setenv("TMPDIR", "/run/freeing-tmp")
		return m.Run()
	}, func(reason string) int {
		noNS = reason
		return m.Run()
	}))
}

func needNS(t *testing.T) {
	t.Helper()
	if noNS != "" || !privatens.Inside(insideEnv) {
		t.Skip("not in private namespaces: ", noNS)
	}
}

// node is one test's CNI node: a cache dir, a plugin dir with a fake
// plugin "fake" that logs each call, a conf dir, and a netns dir.
type node struct {
	t                                  *testing.T
	cache, plugins, conf, netns, calls string
}

func newNode(t *testing.T) *node {
	needNS(t)
	base := t.TempDir()
	n := &node{t: t, cache: filepath.Join(base, "cache"), plugins: filepath.Join(base, "bin"),
		conf: filepath.Join(base, "conf"), netns: filepath.Join(base, "netns"), calls: filepath.Join(base, "calls")}
	for _, d := range []string{n.cache, filepath.Join(n.cache, "results"), n.plugins, n.conf, n.netns} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// fake: logs "CMD containerID ifName" and fails when <base>/fail exists,
	// sleeps when <base>/slow exists.
	script := fmt.Sprintf(`#!/bin/sh
cat >/dev/null
[ -f %[1]s/slow ] && sleep "$(cat %[1]s/slow)"
echo "$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME" >> %[2]s
echo "$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME netns=$CNI_NETNS" >> %[2]s.full
if [ -f %[1]s/fail ]; then
  echo '{"cniVersion":"1.0.0","code":11,"msg":"injected failure"}'
  exit 1
fi
exit 0
`, base, n.calls)
	if err := os.WriteFile(filepath.Join(n.plugins, "fake"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *node) base() string { return filepath.Dir(n.cache) }

// att describes one cache entry.
type att struct {
	Network, Sandbox, IfName string
	UID, PodNS, PodName      string
	NetNS                    string // a path; see nsPresent/nsGone
	Config                   string // "" : a conflist of the fake plugin
	Written                  time.Time
	FileName                 string // "" : libcni's
}

func conflist(name string, extra string) string {
	return fmt.Sprintf(`{"cniVersion":"1.0.0","name":%q%s,"plugins":[{"type":"fake"}]}`, name, extra)
}

func (n *node) write(a att) string {
	n.t.Helper()
	if a.IfName == "" {
		a.IfName = "eth0"
	}
	if a.PodNS == "" {
		a.PodNS = "default"
	}
	if a.PodName == "" {
		a.PodName = "p"
	}
	if a.Config == "" {
		a.Config = conflist(a.Network, "")
	}
	entry := map[string]any{
		"kind":        "cniCacheV1",
		"containerId": a.Sandbox,
		"config":      []byte(a.Config),
		"ifName":      a.IfName,
		"networkName": a.Network,
		"netns":       a.NetNS,
		"cniArgs":     [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", a.PodNS}, {"K8S_POD_NAME", a.PodName}, {"K8S_POD_INFRA_CONTAINER_ID", a.Sandbox}, {"K8S_POD_UID", a.UID}},
		"result":      map[string]any{"cniVersion": "1.0.0", "interfaces": []any{}, "ips": []any{}},
	}
	b, err := json.Marshal(entry)
	if err != nil {
		n.t.Fatal(err)
	}
	p := testcni.EntryPath(n.cache, a.Network, a.Sandbox, a.IfName)
	if a.FileName != "" {
		p = filepath.Join(n.cache, "results", a.FileName)
	}
	return testcni.WriteFile(n.t, p, b, 0o600, a.Written)
}

// nsPresent makes a netns path that is there; nsGone one that is gone
// from a directory that is there.
func (n *node) nsPresent(name string) string {
	p := filepath.Join(n.netns, name)
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		n.t.Fatal(err)
	}
	return p
}
func (n *node) nsGone(name string) string { return filepath.Join(n.netns, name) }

// dels returns the DELs the fake plugin ran, "containerID ifName" each.
func (n *node) dels() []string {
	b, err := os.ReadFile(n.calls)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		n.t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if rest, ok := strings.CutPrefix(l, "DEL "); ok {
			out = append(out, rest)
		}
	}
	return out
}

func (n *node) entries() []string {
	des, err := os.ReadDir(filepath.Join(n.cache, "results"))
	if err != nil {
		n.t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

func (n *node) collector(rt cni.Runtime, mod ...func(*cni.Options)) *cni.Collector {
	n.t.Helper()
	o := cni.Options{CacheDir: n.cache, PluginDirs: []string{n.plugins}, ConfDir: n.conf, Logger: testcni.Quiet()}
	if rt != nil {
		o.Runtime = rt
	}
	for _, f := range mod {
		f(&o)
	}
	c, err := cni.New(o)
	if err != nil {
		n.t.Fatal(err)
	}
	return c
}

// fakeRuntime answers ListPodSandbox with list(), counting calls.
type fakeRuntime struct {
	mu    sync.Mutex
	calls int
	list  func(call int) ([]*runtimeapi.PodSandbox, error)
}

func (f *fakeRuntime) ListPodSandbox(ctx context.Context, _ *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	f.mu.Lock()
	f.calls++
	c := f.calls
	f.mu.Unlock()
	return f.list(c)
}

func static(sbs ...*runtimeapi.PodSandbox) *fakeRuntime {
	return &fakeRuntime{list: func(int) ([]*runtimeapi.PodSandbox, error) { return sbs, nil }}
}

func sb(id, uid string, state runtimeapi.PodSandboxState, created time.Time) *runtimeapi.PodSandbox {
	s := &runtimeapi.PodSandbox{Id: id, State: state, Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: uid}}
	if uid != "" {
		s.Labels = map[string]string{"io.kubernetes.pod.uid": uid}
	}
	if !created.IsZero() {
		s.CreatedAt = created.UnixNano()
	}
	return s
}

const (
	ready    = runtimeapi.PodSandboxState_SANDBOX_READY
	notReady = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
)

func gone(uid string) ports.DestroyEvent {
	return ports.DestroyEvent{PUID: uid, Pod: types.NamespacedName{Namespace: "default", Name: "p"}, Reason: ports.ReasonPodGone}
}

func changed(uid, sandbox string) ports.DestroyEvent {
	return ports.DestroyEvent{PUID: uid, Pod: types.NamespacedName{Namespace: "default", Name: "p"}, SandboxID: sandbox, Reason: ports.ReasonSandboxChanged}
}

func pod(uid string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: types.UID(uid)}}
}

// full returns every plugin call, with its CNI_NETNS.
func (n *node) full() []string {
	b, err := os.ReadFile(n.calls + ".full")
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		n.t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}
