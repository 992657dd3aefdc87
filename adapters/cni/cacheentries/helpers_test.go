// Package cacheentries_test holds the collector's promises on what libcni's cache and ConfDir hold at
// their edges: entries of the same network that disagree, unused entries' disableGC, entries cut short or linked
// to pipes, sandboxes listed without an ID, and the agreement of DestroyPU, the dry run, SandboxDead and ListPUs.
package cacheentries_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// env is one collector's directories, all under t.TempDir().
type env struct {
	t                                    *testing.T
	root, cache, conf, data, bin, delLog string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{t: t, root: root, cache: filepath.Join(root, "cache"), conf: filepath.Join(root, "net.d"),
		data: filepath.Join(root, "networks"), bin: filepath.Join(root, "bin"), delLog: filepath.Join(root, "dels.log")}
	for _, d := range []string{e.cache, filepath.Join(e.cache, "results"), e.conf, e.data, e.bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A plugin that logs each call and succeeds.
	script := "#!/bin/sh\necho \"$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME\" >> " + e.delLog + "\ncat >/dev/null\n" +
		"if [ \"$CNI_COMMAND\" = VERSION ]; then echo '{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\"]}'; fi\nexit 0\n"
	if err := os.WriteFile(filepath.Join(e.bin, "logger"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) write(path, body string) {
	e.t.Helper()
	testcni.Write(e.t, path, body)
}

func (e *env) dels() []string {
	b, _ := os.ReadFile(e.delLog)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasPrefix(l, "DEL") {
			out = append(out, l)
		}
	}
	return out
}

// entry writes a libcni cache entry of a pod's attachment.
func (e *env) entry(network, cid, ifName, uid, netns, config, ip string, written time.Time) string {
	e.t.Helper()
	args := [][2]string{{"K8S_POD_NAMESPACE", "ns"}, {"K8S_POD_NAME", "pod-" + uid}, {"K8S_POD_UID", uid}, {"IgnoreUnknown", "1"}}
	if uid == "" {
		args = nil
	}
	m := map[string]any{"kind": "cniCacheV1", "containerId": cid, "config": []byte(config), "ifName": ifName,
		"networkName": network, "netns": netns, "cniArgs": args,
		"result": map[string]any{"cniVersion": "1.0.0", "ips": []any{map[string]any{"address": ip + "/16"}}}}
	if args == nil {
		delete(m, "cniArgs")
	}
	b, err := json.Marshal(m)
	if err != nil {
		e.t.Fatal(err)
	}
	p := filepath.Join(e.cache, "results", network+"-"+cid+"-"+ifName)
	e.write(p, string(b))
	if !written.IsZero() {
		_ = os.Chtimes(p, written, written)
	}
	return p
}

func loggerConf(network string, extra string) string {
	return `{"cniVersion":"1.0.0","name":"` + network + `"` + extra + `,"plugins":[{"type":"logger"}]}`
}

// reservation writes host-local's file.
func (e *env) reservation(dataDir, network, ip, cid, ifName string, mod time.Time) string {
	return testcni.Reservation(e.t, dataDir, network, ip, cid, ifName, mod)
}

type fakeRuntime struct {
	mu   sync.Mutex
	sbs  []*runtimeapi.PodSandbox
	err  error
	hang bool
	n    int
}

func (f *fakeRuntime) ListPodSandbox(ctx context.Context, _ *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	f.mu.Lock()
	f.n++
	sbs, err, hang := f.sbs, f.err, f.hang
	f.mu.Unlock()
	if hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return sbs, err
}

func sb(id, uid string, ready bool, created time.Time) *runtimeapi.PodSandbox {
	st := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if ready {
		st = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return &runtimeapi.PodSandbox{Id: id, State: st, CreatedAt: created.UnixNano(),
		Labels: map[string]string{"io.kubernetes.pod.uid": uid}, Metadata: &runtimeapi.PodSandboxMetadata{Uid: uid}}
}

type obs struct {
	mu                                      sync.Mutex
	freed, failed, would, reported, network map[string]int
}

func newObs() *obs {
	return &obs{freed: map[string]int{}, failed: map[string]int{}, would: map[string]int{}, reported: map[string]int{}, network: map[string]int{}}
}
func (o *obs) inc(m map[string]int, k string)    { o.mu.Lock(); m[k]++; o.mu.Unlock() }
func (o *obs) ReservationFreed(n, r string)      { o.inc(o.freed, n+"/"+r) }
func (o *obs) ReservationFreeFailed(n, r string) { o.inc(o.failed, n+"/"+r) }
func (o *obs) ReservationWouldFree(n, r string)  { o.inc(o.would, n+"/"+r) }
func (o *obs) ReservationReported(n, r string)   { o.inc(o.reported, n+"/"+r) }
func (o *obs) ReservationNetwork(n string)       { o.inc(o.network, n) }
func (o *obs) get(m map[string]int, k string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return m[k]
}

func (e *env) opts(rt cni.Runtime) cni.Options {
	var r cni.Runtime
	if rt != nil {
		r = rt
	}
	return cni.Options{CacheDir: e.cache, PluginDirs: []string{e.bin, testcni.PluginsPath()}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: r, ReservationGrace: time.Minute, NewestSandboxTimeout: time.Minute, ResyncInterval: time.Hour, Logger: logr.Discard()}
}

// oneRound runs Resync until its first reservation round recorded something (ReservationsRead set and no
// reservation "to free"), then stops it.
func oneRound(t *testing.T, c *cni.Collector, ip string) cni.AddressStatus {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Resync(ctx, testcni.NopTracker{}) }()
	// A round over 65,536 reservations takes tens of seconds on a loaded machine: what bounds the wait is that the
	// round ends, not how fast.
	deadline := time.Now().Add(5 * time.Minute)
	var st cni.AddressStatus
	for {
		st = testcni.Address(t, c, ip)
		if st.ReservationsRead != nil && !hasState(st, "to free") {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("no round of the reservations ended within 5 minutes: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	st = testcni.Address(t, c, ip)
	cancel()
	<-done
	return st
}

func hasState(st cni.AddressStatus, s string) bool {
	for _, r := range st.Reservations {
		if r.State == s {
			return true
		}
	}
	return false
}

func podOf(uid string) *corev1.Pod {
	p := &corev1.Pod{}
	p.UID = types.UID(uid)
	p.Namespace, p.Name = "ns", "pod-"+uid
	return p
}
