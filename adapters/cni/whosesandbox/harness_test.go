package whosesandbox_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

type env struct {
	cache, conf, data, netns string
	plugins                  string
}

func newEnv(t *testing.T) *env {
	root := t.TempDir()
	e := &env{cache: filepath.Join(root, "cache"), conf: filepath.Join(root, "conf"), data: filepath.Join(root, "data"), netns: filepath.Join(root, "netns"), plugins: testcni.PluginsDir(t)}
	for _, d := range []string{filepath.Join(e.cache, "results"), e.conf, e.data, e.netns} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// hostLocalList is a conflist running host-local as its only plugin, in e.data.
func (e *env) hostLocalList(name string, extra map[string]any) []byte {
	return testcni.HostLocalConflist(name, e.data, testcni.Subnet("10.22.0.0/24"), extra)
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
	return testcni.WriteFile(t, testcni.EntryPath(e.cache, network, cid, ifname), b, 0o600, time.Time{})
}

// reserve writes a host-local reservation file as host-local does.
func (e *env) reserve(t *testing.T, network, ip, cid, ifname string, age time.Duration) string {
	return testcni.Reservation(t, e.data, network, ip, cid, ifname, testcni.Ago(age))
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
