package faults_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

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
	write(t, filepath.Join(e.plugins, "setgc"), fmt.Sprintf(setsDisableGCPlugin, log, e.data, e.conf))
	if err := os.Chmod(filepath.Join(e.plugins, "setgc"), 0o755); err != nil {
		t.Fatal(err)
	}
	confs := map[string]string{}
	for i, name := range []string{"neta", "netb"} {
		confs[name] = fmt.Sprintf(`{"cniVersion":"1.0.0","name":%q,"plugins":[{"type":"setgc","ipam":{"type":"host-local","ranges":[[{"subnet":"10.%d.0.0/24"}]]}}]}`, name, 10+i)
		write(t, filepath.Join(e.conf, fmt.Sprintf("%d-%s.conflist", 10*(i+1), name)), confs[name])
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
		write(t, filepath.Join(e.cache, "results", name+"-sb-1-"+ifName), `{"kind":"cniCacheV1","containerId":"sb-1","ifName":"`+ifName+`","networkName":"`+name+`",`+
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
	resyncFor(t, func(ctx context.Context) error { return c.Resync(ctx, tracker{}) }, 3*time.Second,
		func() bool { return len(dels(log)) == 2 })
	if got := dels(log); len(got) != 1 {
		t.Errorf("DELs %q (observer: freed %v): want the first alone, the second network said disableGC before its DEL", got, obs.get(&obs.freed))
	}
}
