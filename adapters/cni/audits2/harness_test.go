package audit7_test

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

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// env is a cache dir, a plugin dir with a fake plugin that logs every DEL, and a conf dir.
type env struct {
	t                              *testing.T
	cache, plugins, conf, netnsDir string
	delLog                         string
}

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
	if err := os.WriteFile(filepath.Join(e.plugins, "fakeplug"), []byte(fmt.Sprintf(pluginScript, e.delLog)), 0o755); err != nil {
		t.Fatal(err)
	}
	return e
}

// netns returns a path in the namespace dir: present (a plain file there) or gone.
func (e *env) netns(name string, present bool) string {
	p := filepath.Join(e.netnsDir, name)
	if present {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			e.t.Fatal(err)
		}
	}
	return p
}

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
	f := filepath.Join(e.cache, "results", o.network+"-"+o.sandbox+"-"+o.ifName)
	if err := os.WriteFile(f, b, 0o600); err != nil {
		e.t.Fatal(err)
	}
	if !o.written.IsZero() {
		if err := os.Chtimes(f, o.written, o.written); err != nil {
			e.t.Fatal(err)
		}
	}
	return f
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

func (e *env) collector(rt cni.Runtime, timeout time.Duration) *cni.Collector {
	e.t.Helper()
	o := cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, NewestSandboxTimeout: timeout, Logger: logr.Discard()}
	if rt != nil {
		o.Runtime = rt
	}
	c, err := cni.New(o)
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

func sandbox(id, uid string, state runtimeapi.PodSandboxState, created time.Time) *runtimeapi.PodSandbox {
	sb := &runtimeapi.PodSandbox{Id: id, State: state, CreatedAt: created.UnixNano(), Metadata: &runtimeapi.PodSandboxMetadata{Name: "pod", Namespace: "default", Uid: uid}}
	if uid != "" {
		sb.Labels = map[string]string{"io.kubernetes.pod.uid": uid}
	}
	return sb
}

func goneDefault(uid string) ports.DestroyEvent {
	return ports.DestroyEvent{PUID: uid, Pod: types.NamespacedName{Namespace: "default", Name: "pod"}, Reason: ports.ReasonPodGone}
}

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
