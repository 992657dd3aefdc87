package promises_test

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
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// env is a fake node: a libcni cache, a plugin dir with two fake plugins, a
// conf dir, and a directory of "network namespaces". The plugin fakeplugin
// logs each call to calls.log in the plugin dir (dels reads its DELs);
// fakeplug answers VERSION and logs each DEL to delLog (delLogFields and
// delled read them).
type env struct {
	t                              *testing.T
	cache, plugins, conf, netnsDir string
	delLog                         string
}

// MarshalJSON/UnmarshalJSON carry the directories to a child process.
func (e *env) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{"Cache": e.cache, "Plugins": e.plugins, "Conf": e.conf, "NetnsDir": e.netnsDir})
}

// fromParent returns, in a child process a test ran, the env its parent
// passed in the variable name, and whether there is one.
func fromParent(t *testing.T, name string) (*env, bool) {
	dirs := os.Getenv(name)
	if dirs == "" {
		return nil, false
	}
	e := &env{t: t}
	if err := json.Unmarshal([]byte(dirs), e); err != nil {
		t.Fatal(err)
	}
	e.t = t
	return e, true
}

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

const pluginScript = `#!/bin/sh
if [ "$CNI_COMMAND" = "VERSION" ]; then echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}'; exit 0; fi
if [ "$CNI_COMMAND" = "DEL" ]; then echo "$CNI_CONTAINERID $CNI_IFNAME" >> "%s"; exit 0; fi
exit 0
`

func newEnv(t *testing.T) *env {
	t.Helper()
	d := t.TempDir()
	e := &env{t: t, cache: filepath.Join(d, "cache"), plugins: filepath.Join(d, "bin"), conf: filepath.Join(d, "net.d"), netnsDir: filepath.Join(d, "netns"), delLog: filepath.Join(d, "dels.log")}
	for _, p := range []string{filepath.Join(e.cache, "results"), e.plugins, e.conf, e.netnsDir} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(e.plugins, "fakeplugin"), []byte(fakePlugin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.plugins, "fakeplug"), []byte(fmt.Sprintf(pluginScript, e.delLog)), 0o755); err != nil {
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

type entryEdit func(m map[string]any)

// write writes a libcni cache entry for (net, sandbox, eth0) of pod uid,
// with the given netns and mtime.
func (e *env) write(net, sandbox, uid, netns string, mtime time.Time, opts ...entryEdit) string {
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
	return testcni.WriteFile(e.t, testcni.EntryPath(e.cache, net, sandbox, "eth0"), b, 0o644, mtime)
}

func (e *env) exists(net, sandbox string) bool {
	_, err := os.Stat(testcni.EntryPath(e.cache, net, sandbox, "eth0"))
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
		Runtime: rt, NewestSandboxTimeout: timeout, Logger: testcni.Quiet()})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// fakeRuntime lists its sandboxes, those the label selector picks as a CRI runtime does, or, with ignoreFilter,
// every one whatever the selector.
type fakeRuntime struct {
	mu           sync.Mutex
	sbs          []*runtimeapi.PodSandbox
	ignoreFilter bool
	err          error
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
	for _, sb := range f.sbs {
		if !f.ignoreFilter && filter != nil {
			ok := true
			for k, v := range filter.LabelSelector {
				if sb.GetLabels()[k] != v {
					ok = false
				}
			}
			if !ok {
				continue
			}
		}
		out = append(out, sb)
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

type entryOpt struct {
	network, sandbox, ifName, uid, ns, name, netns string
	config                                         string // raw config JSON; default a conflist of fakeplug
	written                                        time.Time
}

func (e *env) writeEntry(o entryOpt) string {
	e.t.Helper()
	if o.network == "" {
		o.network = "net1"
	}
	if o.ifName == "" {
		o.ifName = "eth0"
	}
	if o.ns == "" {
		o.ns = "default"
	}
	if o.name == "" {
		o.name = "pod"
	}
	if o.config == "" {
		o.config = fmt.Sprintf(`{"cniVersion":"1.0.0","name":%q,"plugins":[{"type":"fakeplug"}]}`, o.network)
	}
	entry := map[string]any{
		"kind":        "cniCacheV1",
		"containerId": o.sandbox,
		"config":      []byte(o.config),
		"ifName":      o.ifName,
		"networkName": o.network,
		"netns":       o.netns,
		"cniArgs":     [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", o.ns}, {"K8S_POD_NAME", o.name}, {"K8S_POD_INFRA_CONTAINER_ID", o.sandbox}, {"K8S_POD_UID", o.uid}},
		"result":      map[string]any{"cniVersion": "1.0.0"},
	}
	b, err := json.Marshal(entry)
	if err != nil {
		e.t.Fatal(err)
	}
	return testcni.WriteFile(e.t, testcni.EntryPath(e.cache, o.network, o.sandbox, o.ifName), b, 0o600, o.written)
}

func (e *env) delLogFields() []string {
	b, err := os.ReadFile(e.delLog)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", " | "))
}

func (e *env) delled(sandbox string) bool {
	b, _ := os.ReadFile(e.delLog)
	return strings.Contains(string(b), sandbox+" ")
}

func sandbox(id, uid string, state runtimeapi.PodSandboxState, created time.Time) *runtimeapi.PodSandbox {
	sb := &runtimeapi.PodSandbox{Id: id, State: state, CreatedAt: created.UnixNano(), Metadata: &runtimeapi.PodSandboxMetadata{Name: "pod", Namespace: "default", Uid: uid}}
	if uid != "" {
		sb.Labels = map[string]string{"io.kubernetes.pod.uid": uid}
	}
	return sb
}

// goneDefault is the DestroyEvent of a gone pod default/pod, as writeEntry writes it by default.
func goneDefault(uid string) ports.DestroyEvent {
	return ports.DestroyEvent{PUID: uid, Pod: types.NamespacedName{Namespace: "default", Name: "pod"}, Reason: ports.ReasonPodGone}
}

// changedDefault is the DestroyEvent of a sandbox change of the pod default/pod, as writeEntry writes it by default.
func changedDefault(uid, sb string) ports.DestroyEvent {
	return ports.DestroyEvent{PUID: uid, Pod: types.NamespacedName{Namespace: "default", Name: "pod"}, SandboxID: sb, Reason: ports.ReasonSandboxChanged}
}

func writeFile(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func timeNow() time.Time { return time.Now() }

const uidA = "0a0a0a0a-0000-0000-0000-00000000000a"

func podOf(uid string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pod", UID: types.UID(uid)}}
}

type fakeTracker struct {
	mu      sync.Mutex
	tracked map[string]ports.PU
}

func (f *fakeTracker) Track(pu ports.PU) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.tracked[pu.PUID]; !ok {
		f.tracked[pu.PUID] = pu
	}
	return nil
}
func (f *fakeTracker) Untrack(puid string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.tracked[puid]
	delete(f.tracked, puid)
	return ok
}
func (f *fakeTracker) TriggerPod(types.NamespacedName) {}

// pluginsDir is where the real CNI plugins are: CNI_PLUGINS_DIR, as the
// Makefile sets it, or the repository's bin/cni.
func pluginsDir() (string, error) {
	if d := os.Getenv("CNI_PLUGINS_DIR"); d != "" {
		return d, nil
	}
	return filepath.Abs("../../../bin/cni")
}
