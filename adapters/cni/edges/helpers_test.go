// Package edges_test holds the collector's promises at the edges of what it reads: cache entries that are links
// or cut short, configs being written, data directories it cannot read, runtime answers that make no sense, and
// what the address page tells of them.
package edges_test

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
	"github.com/go-logr/logr/funcr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// env is one collector's directories, all under t.TempDir().
type env struct {
	t                                    *testing.T
	cache, conf, plugins, data, netnsDir string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{t: t, cache: filepath.Join(root, "cache"), conf: filepath.Join(root, "conf"),
		plugins: filepath.Join(root, "bin"), data: filepath.Join(root, "data"), netnsDir: filepath.Join(root, "netns")}
	for _, d := range []string{e.cache, filepath.Join(e.cache, "results"), e.conf, e.plugins, e.data, e.netnsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// sweepPlugin writes the plugin "sweep": its DEL releases host-local's reservation of CNI_CONTAINERID and
// CNI_IFNAME in every network directory of the env's data directory, as host-local's would; extra runs after.
func (e *env) sweepPlugin(extra string) { e.sweepPluginPre("", extra) }

// sweepPluginPre is sweepPlugin, with pre run first on DEL.
func (e *env) sweepPluginPre(pre, extra string) {
	script := `#!/bin/sh
[ "$CNI_COMMAND" = DEL ] && { ` + pre + ` :; }
read -r _conf || true
case "$CNI_COMMAND" in
VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0"]}'; exit 0;;
DEL)
  for f in ` + e.data + `/*/*; do
    [ -f "$f" ] || continue
    id=$(head -n1 "$f" | tr -d '\r')
    if [ "$id" = "$CNI_CONTAINERID" ]; then rm -f "$f"; fi
  done
  ` + extra + `
  exit 0;;
esac
exit 0
`
	p := filepath.Join(e.plugins, "sweep")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		e.t.Fatal(err)
	}
}

// netConf writes a conflist of network name running "sweep" with host-local as its ipam in the env's data dir.
func (e *env) netConf(file, name string, extra string) {
	e.t.Helper()
	testcni.Write(e.t, filepath.Join(e.conf, file), fmt.Sprintf(`{"cniVersion":"1.0.0","name":%q%s,"plugins":[{"type":"sweep","ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":"10.1.0.0/16"}]]}}]}`, name, extra, e.data))
}

// reservation writes host-local's file of ip in network, for container id, reserved an hour ago.
func (e *env) reservation(network, ip, id string) string {
	e.t.Helper()
	return testcni.Reservation(e.t, e.data, network, ip, id, "eth0", time.Now().Add(-time.Hour))
}

// entry is a libcni cache entry.
type entry struct {
	Network, ID, IfName, UID, NS, Name, NetNS, IP string
	Config                                        string // the cached config; "" a conflist of sweep
}

func (e *env) entryJSON(en entry) []byte {
	conf := en.Config
	if conf == "" {
		conf = fmt.Sprintf(`{"cniVersion":"1.0.0","name":%q,"plugins":[{"type":"sweep","ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":"10.1.0.0/16"}]]}}]}`, en.Network, e.data)
	}
	if en.IfName == "" {
		en.IfName = "eth0"
	}
	m := map[string]any{
		"kind": "cniCacheV1", "containerId": en.ID, "config": []byte(conf), "ifName": en.IfName, "networkName": en.Network,
		"netns":  en.NetNS,
		"result": json.RawMessage(fmt.Sprintf(`{"cniVersion":"1.0.0","interfaces":[{"name":%q}],"ips":[{"address":"%s/16","gateway":"10.1.0.1","interface":0}]}`, en.IfName, en.IP)),
	}
	if en.UID != "" {
		m["cniArgs"] = [][2]string{{"K8S_POD_NAMESPACE", en.NS}, {"K8S_POD_NAME", en.Name}, {"K8S_POD_UID", en.UID}, {"IgnoreUnknown", "1"}}
	}
	b, err := json.Marshal(m)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// cacheEntry writes en in libcni's cache under its libcni name, and returns its path.
func (e *env) cacheEntry(en entry) string {
	e.t.Helper()
	if en.IfName == "" {
		en.IfName = "eth0"
	}
	p := filepath.Join(e.cache, "results", en.Network+"-"+en.ID+"-"+en.IfName)
	testcni.Write(e.t, p, string(e.entryJSON(en)))
	return p
}

// logs collects what a collector logs.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		l.lines = append(l.lines, prefix+" "+args)
		l.mu.Unlock()
	}, funcr.Options{Verbosity: 1})
}

func (l *logs) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// runtimeFunc is a cni.Runtime of a function.
type runtimeFunc func(ctx context.Context, n int) ([]*runtimeapi.PodSandbox, error)

type countingRuntime struct {
	mu sync.Mutex
	n  int
	f  runtimeFunc
}

func (r *countingRuntime) ListPodSandbox(ctx context.Context, _ *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r.mu.Lock()
	r.n++
	n := r.n
	r.mu.Unlock()
	return r.f(ctx, n)
}

// opts returns Options on the env's directories.
func (e *env) opts(l *logs) cni.Options {
	return cni.Options{CacheDir: e.cache, ConfDir: e.conf, PluginDirs: []string{e.plugins}, HostLocalDataDir: e.data,
		ResyncInterval: time.Hour, ReservationGrace: time.Minute, NewestSandboxTimeout: time.Minute, Logger: l.logger()}
}

func newCollector(t *testing.T, o cni.Options) *cni.Collector {
	t.Helper()
	c, err := cni.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// resyncUntil runs c.Resync until cond holds (or 60s pass), then stops it and waits for it to return.
func resyncUntil(t *testing.T, c *cni.Collector, cond func() bool) {
	t.Helper()
	held, err := testcni.ResyncUntil(c, testcni.NopTracker{}, 60*time.Second, 20*time.Millisecond, cond)
	if !held {
		t.Fatalf("condition not met within 60s")
	}
	if err != nil {
		t.Fatalf("Resync: %v", err)
	}
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
