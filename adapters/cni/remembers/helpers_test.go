package remembers_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// realPlugins is the directory of the real CNI plugins: CNI_PLUGINS_DIR, or the clone's bin/cni (make cni-plugins).
var realPlugins = testcni.PluginsPath()

type env struct {
	cache, conf, data, bin string
}

func newEnv(t *testing.T) env {
	t.Helper()
	testcni.NeedPlugins(t, realPlugins)
	d := t.TempDir()
	e := env{cache: filepath.Join(d, "cache"), conf: filepath.Join(d, "conf"), data: filepath.Join(d, "data"), bin: filepath.Join(d, "bin")}
	for _, p := range []string{e.cache, filepath.Join(e.cache, "results"), e.conf, e.data, e.bin} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// fakePlugin writes a plugin named name that logs its command and container to log and succeeds.
func (e env) fakePlugin(t *testing.T, name string) string {
	t.Helper()
	log := filepath.Join(e.bin, name+".log")
	script := "#!/bin/sh\necho \"$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME\" >> " + log + "\ncat >/dev/null\necho '{\"cniVersion\":\"1.0.0\"}'\n"
	if err := os.WriteFile(filepath.Join(e.bin, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return log
}

func conflist(network, pluginType string) []byte {
	b, _ := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": network, "plugins": []any{map[string]any{"type": pluginType}}})
	return b
}

func entryBytes(t *testing.T, network, cid, ifName, uid, ns, name, netns string, config []byte) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"kind": "cniCacheV1", "containerId": cid, "config": base64.StdEncoding.EncodeToString(config), "ifName": ifName,
		"networkName": network, "netns": netns,
		"cniArgs": [][2]string{{"K8S_POD_NAMESPACE", ns}, {"K8S_POD_NAME", name}, {"K8S_POD_UID", uid}},
		"result":  map[string]any{"cniVersion": "1.0.0", "ips": []any{map[string]any{"address": "10.99.0.5/24"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (e env) entryPath(network, cid, ifName string) string {
	return testcni.EntryPath(e.cache, network, cid, ifName)
}

func (e env) writeEntry(t *testing.T, network, cid, ifName, uid string, config []byte, written time.Time) {
	t.Helper()
	testcni.WriteFile(t, e.entryPath(network, cid, ifName), entryBytes(t, network, cid, ifName, uid, "ns", "pod", "", config), 0o600, written)
}

// reservation writes host-local's file <data>/<network>/<ip>.
func (e env) reservation(t *testing.T, network, ip, cid, ifName string, at time.Time) string {
	t.Helper()
	return testcni.Reservation(t, e.data, network, ip, cid, ifName, at)
}

// fakeRuntime answers ListPodSandbox with answer(n), n the call's number from 1.
type fakeRuntime struct {
	mu     sync.Mutex
	calls  int
	answer func(n int) ([]*runtimeapi.PodSandbox, error)
}

func (f *fakeRuntime) ListPodSandbox(ctx context.Context, _ *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	f.mu.Lock()
	f.calls++
	n := f.calls
	f.mu.Unlock()
	return f.answer(n)
}

func (f *fakeRuntime) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func sb(id, uid string, state runtimeapi.PodSandboxState) *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{Id: id, State: state, Labels: map[string]string{"io.kubernetes.pod.uid": uid},
		Metadata: &runtimeapi.PodSandboxMetadata{Uid: uid, Name: "pod", Namespace: "ns"}, CreatedAt: time.Now().UnixNano()}
}

func mustNew(t *testing.T, o cni.Options) *cni.Collector {
	t.Helper()
	c, err := cni.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func podOf(uid string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod", UID: k8stypes.UID(uid)}}
}
