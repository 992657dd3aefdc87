package faults_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// returningRuntime lists no sandbox until back is set (a runtime restarting, or on a fresh state for a
// moment), then lists ids, ready.
type returningRuntime struct {
	ids  []string
	back atomic.Bool
}

func (r *returningRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	if !r.back.Load() {
		return nil, nil
	}
	var sbs []*runtimeapi.PodSandbox
	for _, id := range r.ids {
		sbs = append(sbs, &runtimeapi.PodSandbox{Id: id, State: runtimeapi.PodSandboxState_SANDBOX_READY,
			Labels: map[string]string{"io.kubernetes.pod.uid": "uid-" + id}})
	}
	return sbs, nil
}

// returnsAfterTheFirstDEL runs a round of the reservations' sweep of e (releaseEnv's n reservations)
// with opts, the runtime listing none of their sandboxes until the first DEL starts and every one of
// them from then on, for d or until every reservation was DELed. It returns the DELs' starts.
func returnsAfterTheFirstDEL(t *testing.T, e env, log string, n int, opts cni.Options, d time.Duration) []time.Time {
	t.Helper()
	rt := &returningRuntime{}
	for i := range n {
		rt.ids = append(rt.ids, fmt.Sprintf("leaked-%02d", i))
	}
	opts.CacheDir, opts.PluginDirs, opts.ConfDir, opts.HostLocalDataDir = e.cache, []string{e.plugins}, e.conf, e.data
	opts.Runtime, opts.ResyncInterval = rt, time.Hour
	c, err := cni.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	resyncFor(t, func(ctx context.Context) error { return c.Resync(ctx, testcni.NopTracker{}) }, d, func() bool {
		starts := delStarts(t, log)
		if len(starts) > 0 {
			rt.back.Store(true)
		}
		return len(starts) == n
	})
	starts := delStarts(t, log)
	if len(starts) == 0 {
		t.Fatal("setup: no reservation was DELed while the runtime listed none of their sandboxes")
	}
	return starts
}

// docs/sdk/cni-freeing.md, row 15: a reservation is kept while "the runtime lists a sandbox of its
// container ID, ready or not", and the runtime is asked right before its DEL. Four leaked reservations
// of sandboxes the runtime does not list for a moment, freed at 2 a second: the first is freed at once;
// the runtime lists all four sandboxes again before the next turn comes, and none of the others is
// DELed.
func TestAReservationIsKeptWhileTheRuntimeListsItsSandboxWhenItsTurnComes(t *testing.T) {
	e, log := releaseEnv(t, 4, 0)
	starts := returnsAfterTheFirstDEL(t, e, log, 4, cni.Options{ReservationRate: rate.Limit(2), ReservationBurst: 1}, 2500*time.Millisecond)
	if len(starts) != 1 {
		t.Errorf("%d reservations DELed; %d of them on turns that came while the runtime listed their sandboxes ready", len(starts), len(starts)-1)
	}
}

// The same without a rate: the first DEL takes a second (a plugin waiting for a lock), and the runtime
// lists the sandboxes again while it runs. The round's next reservations are kept.
func TestAReservationIsKeptWhileTheRuntimeListsItsSandboxAfterASlowDEL(t *testing.T) {
	e, log := releaseEnv(t, 3, 1)
	starts := returnsAfterTheFirstDEL(t, e, log, 3, cni.Options{}, 4*time.Second)
	if len(starts) != 1 {
		t.Errorf("%d reservations DELed; %d of them after a slow DEL, while the runtime listed their sandboxes ready", len(starts), len(starts)-1)
	}
}

// setsDisableGCPlugin is a plugin whose DEL logs its container and interface, releases the container's
// host-local reservations in the data directory (%[2]q), then sets "disableGC": true on every network
// of ConfDir (%[3]q), as an operator who does it while the DEL runs.
const setsDisableGCPlugin = `#!/bin/sh
cat >/dev/null
[ "$CNI_COMMAND" = DEL ] || exit 0
echo "$CNI_CONTAINERID $CNI_IFNAME" >> %[1]q
for f in %[2]q/*/*; do [ -f "$f" ] && [ "$(head -n1 "$f" | tr -d '\r')" = "$CNI_CONTAINERID" ] && rm -f "$f"; done
for f in %[3]q/*.conflist; do grep -q disableGC "$f" || sed -i 's/"plugins"/"disableGC":true,"plugins"/' "$f"; done
exit 0
`

// setsDisableGCEnv makes networks neta and netb (host-local in e.data), both run by setsDisableGCPlugin.
// It returns the env, the file the plugin logs its DELs in, and the networks' configs by name.
func setsDisableGCEnv(t *testing.T) (env, string, map[string]string) {
	e := newEnv(t)
	e.plugins = t.TempDir()
	log := filepath.Join(e.root, "dels.log")
	testcni.Write(t, filepath.Join(e.plugins, "setgc"), fmt.Sprintf(setsDisableGCPlugin, log, e.data, e.conf))
	if err := os.Chmod(filepath.Join(e.plugins, "setgc"), 0o755); err != nil {
		t.Fatal(err)
	}
	confs := map[string]string{}
	for i, name := range []string{"neta", "netb"} {
		confs[name] = fmt.Sprintf(`{"cniVersion":"1.0.0","name":%q,"plugins":[{"type":"setgc","ipam":{"type":"host-local","ranges":[[{"subnet":"10.%d.0.0/24"}]]}}]}`, name, 10+i)
		testcni.Write(t, filepath.Join(e.conf, fmt.Sprintf("%d-%s.conflist", 10*(i+1), name)), confs[name])
	}
	return e, log, confs
}

// dels returns the DELs the plugin logged.
func dels(log string) []string {
	b, _ := os.ReadFile(log)
	return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(b)), " ", "/"))
}

// docs/sdk/cni-freeing.md: "Whatever the row, an attachment of a network whose config says
// "disableGC": true (its cached config, or any file of ConfDir that names the network) is never
// DELed", whenever it is set. A gone pod has one attachment on each of neta and netb; while the DEL of
// the first runs, the operator sets disableGC on both networks in ConfDir. The second is not DELed.
func TestADisableGCSetWhileDestroyPUDELsKeepsTheNetworksAttachment(t *testing.T) {
	e, log, confs := setsDisableGCEnv(t)
	for name, ifName := range map[string]string{"neta": "eth0", "netb": "net1"} {
		testcni.Write(t, filepath.Join(e.cache, "results", name+"-sb-1-"+ifName), `{"kind":"cniCacheV1","containerId":"sb-1","ifName":"`+ifName+`","networkName":"`+name+`",`+
			`"cniArgs":[["K8S_POD_UID","uid-1"],["K8S_POD_NAMESPACE","ns"],["K8S_POD_NAME","p"]],`+
			`"config":"`+base64.StdEncoding.EncodeToString([]byte(confs[name]))+`"}`)
	}
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: emptyRuntime{}, ResyncInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	err = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"},
		SandboxID: "sb-1", Reason: ports.ReasonPodGone})
	if got := dels(log); len(got) != 1 {
		t.Errorf("DestroyPU = %v; DELs %q: want the first alone, the second network said disableGC before its DEL", err, got)
	}
}

// docs/sdk/cni-freeing.md, row 13: a reservation of a network a config of ConfDir names with
// "disableGC": true is kept, whenever it is set, with no ReservationRate as with one. Two leaked
// reservations, of neta and netb, in one round; while the DEL of the first runs, the operator sets
// disableGC on both networks. The second is not DELed.
func TestADisableGCSetDuringARoundWithoutARateKeepsTheNetworksReservation(t *testing.T) {
	e, log, _ := setsDisableGCEnv(t)
	reservation(t, e.data, "neta", "10.10.0.5", "dead-a", "eth0", time.Hour)
	reservation(t, e.data, "netb", "10.11.0.5", "dead-b", "eth0", time.Hour)
	obs := &observer{}
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: emptyRuntime{}, ResyncInterval: time.Hour, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	resyncFor(t, func(ctx context.Context) error { return c.Resync(ctx, testcni.NopTracker{}) }, 3*time.Second,
		func() bool { return len(dels(log)) == 2 })
	if got := dels(log); len(got) != 1 {
		t.Errorf("DELs %q (observer: freed %v): want the first alone, the second network said disableGC before its DEL", got, obs.get(&obs.freed))
	}
}
