package contracts_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// env is one node: a cache, a ConfDir, a plugin dir with a fake plugin that logs its calls, a data dir.
type env struct {
	t                                       *testing.T
	root, cache, conf, plugins, data, calls string
	netnsDir                                string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{t: t, root: root, cache: filepath.Join(root, "cache"), conf: filepath.Join(root, "conf"),
		plugins: filepath.Join(root, "bin"), data: filepath.Join(root, "data"), calls: filepath.Join(root, "calls.log"),
		netnsDir: filepath.Join(root, "netns")}
	for _, d := range []string{filepath.Join(e.cache, "results"), e.conf, e.plugins, e.data, e.netnsDir} {
		must(t, os.MkdirAll(d, 0o755))
	}
	// fakeplug: logs each call; on DEL, releases host-local-like reservations of CNI_CONTAINERID/CNI_IFNAME in
	// the data dir named by the config's ipam.dataDir (when it is a fake "ipam" of type host-local we do not run).
	script := `#!/bin/sh
in=$(cat)
echo "$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME $CNI_NETNS" >> ` + e.calls + `
case "$CNI_COMMAND" in
VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}';;
DEL)
  dd=$(printf '%s' "$in" | sed -n 's/.*"dataDir": *"\([^"]*\)".*/\1/p')
  name=$(printf '%s' "$in" | sed -n 's/.*"name": *"\([^"]*\)".*/\1/p' | head -1)
  if [ -n "$dd" ] && [ -d "$dd/$name" ]; then
    for f in "$dd/$name"/*; do
      [ -f "$f" ] || continue
      c=$(head -1 "$f" | tr -d '\r')
      i=$(sed -n 2p "$f" | tr -d '\r')
      if [ "$c" = "$CNI_CONTAINERID" ] && [ "$i" = "$CNI_IFNAME" ]; then rm -f "$f"; fi
    done
  fi;;
esac
exit 0
`
	must(t, os.WriteFile(filepath.Join(e.plugins, "fakeplug"), []byte(script), 0o755))
	return e
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// netConf is a conflist of network name running fakeplug, with host-local's ipam in dataDir ("" none).
func netConf(name, dataDir string, disableGC bool) []byte {
	plug := map[string]any{"type": "fakeplug"}
	if dataDir != "" {
		plug["ipam"] = map[string]any{"type": "host-local", "dataDir": dataDir, "subnet": "10.9.0.0/16"}
	}
	c := map[string]any{"cniVersion": "1.0.0", "name": name, "plugins": []any{plug}}
	if disableGC {
		c["disableGC"] = true
	}
	b, _ := json.Marshal(c)
	return b
}

func (e *env) writeConf(file string, b []byte) {
	must(e.t, os.WriteFile(filepath.Join(e.conf, file), b, 0o644))
}

// entry is libcni's cache entry JSON of an attachment, exactly as libcni marshals it (field order).
func entryJSON(network, cid, ifname, netns, uid string, conf []byte, ip string) []byte {
	type cachedInfo struct {
		Kind           string         `json:"kind"`
		ContainerID    string         `json:"containerId"`
		Config         []byte         `json:"config"`
		IfName         string         `json:"ifName"`
		NetworkName    string         `json:"networkName"`
		NetNS          string         `json:"netns,omitempty"`
		CniArgs        [][2]string    `json:"cniArgs,omitempty"`
		CapabilityArgs map[string]any `json:"capabilityArgs,omitempty"`
		RawResult      map[string]any `json:"result,omitempty"`
	}
	ci := cachedInfo{Kind: "cniCacheV1", ContainerID: cid, Config: conf, IfName: ifname, NetworkName: network, NetNS: netns,
		CniArgs: [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", "ns"}, {"K8S_POD_NAME", "pod-" + uid}, {"K8S_POD_UID", uid}},
		RawResult: map[string]any{"cniVersion": "1.0.0", "interfaces": []any{map[string]any{"name": ifname}},
			"ips": []any{map[string]any{"address": ip + "/16", "interface": 0}}}}
	b, _ := json.Marshal(ci)
	return b
}

func (e *env) writeEntry(network, cid, ifname, netns, uid string, conf []byte, ip string) string {
	return testcni.WriteFile(e.t, testcni.EntryPath(e.cache, network, cid, ifname), entryJSON(network, cid, ifname, netns, uid, conf, ip), 0o600, time.Time{})
}

// goneNetNS is a namespace path gone from a directory that is there.
func (e *env) goneNetNS(id string) string { return filepath.Join(e.netnsDir, "gone-"+id) }

// presentNetNS is a path that is there (no namespace: "there").
func (e *env) presentNetNS(id string) string {
	p := filepath.Join(e.netnsDir, "there-"+id)
	must(e.t, os.WriteFile(p, nil, 0o644))
	return p
}

// writeReservation writes host-local's file <dataDir>/<network>/<ip>, aged by age.
func (e *env) writeReservation(dataDir, network, ip, cid, ifname string, age time.Duration) string {
	return testcni.Reservation(e.t, dataDir, network, ip, cid, ifname, time.Now().Add(-age))
}

func (e *env) callLog() []string {
	b, err := os.ReadFile(e.calls)
	if os.IsNotExist(err) {
		return nil
	}
	must(e.t, err)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func (e *env) dels() []string {
	var out []string
	for _, l := range e.callLog() {
		if strings.HasPrefix(l, "DEL ") {
			out = append(out, l)
		}
	}
	return out
}

func sandbox(id, uid string, ready bool, created time.Time) *runtimeapi.PodSandbox {
	st := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if ready {
		st = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return &runtimeapi.PodSandbox{Id: id, State: st, CreatedAt: created.UnixNano(),
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "pod-" + uid, Namespace: "ns", Uid: uid},
		Labels:   map[string]string{"io.kubernetes.pod.uid": uid}}
}

// logSink records log lines.
type logRec struct {
	mu    sync.Mutex
	lines []string
}

func (l *logRec) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		l.lines = append(l.lines, prefix+" "+args)
		l.mu.Unlock()
	}, funcr.Options{Verbosity: 10})
}

func (l *logRec) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func (e *env) opts(rt cni.Runtime, log logr.Logger) cni.Options {
	o := cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		ResyncInterval: time.Hour, ReservationGrace: time.Minute, Logger: log}
	if rt != nil {
		o.Runtime = rt
	}
	return o
}

// sweepOnce runs Resync until its first round of host-local's reservations has decided every reservation of ips
// (none "to free" any more), then stops it and waits for it to return.
func sweepOnce(t *testing.T, c *cni.Collector, ips ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Resync(ctx, testcni.NopTracker{}) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		settled := true
		for _, ip := range ips {
			st := testcni.Address(t, c, ip)
			if st.ReservationsRead == nil {
				settled = false
			}
			for _, r := range st.Reservations {
				if r.State == "to free" {
					settled = false
				}
			}
		}
		if settled {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("the round did not settle")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	cancel()
	must(t, <-done)
}

func unixMkfifo(p string) error { return syscall.Mkfifo(p, 0o600) }
