package rounds_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/internal/testcni"
)

// fakePlugins makes a plugin directory with "okplug", a plugin whose every
// command succeeds, and records its DELs (one line per call) in log.
func fakePlugins(t *testing.T) (dir, log string) {
	dir = filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	log = filepath.Join(dir, "calls.log")
	script := "#!/bin/sh\ncat >/dev/null\necho \"$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME\" >> " + log + "\nexit 0\n"
	if err := os.WriteFile(filepath.Join(dir, "okplug"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, log
}

type entryOpts struct {
	network, id, ifName, netns, uid, ns, name, ip string
	conf                                          string // the cached config's JSON; "" a conflist running okplug
}

// cacheEntry writes a libcni cache entry (<cache>/results/<network>-<id>-<ifName>).
func cacheEntry(t *testing.T, cache string, o entryOpts) {
	t.Helper()
	conf := o.conf
	if conf == "" {
		conf = `{"cniVersion":"1.0.0","name":"` + o.network + `","plugins":[{"type":"okplug"}]}`
	}
	e := map[string]any{
		"kind": "cniCacheV1", "containerId": o.id, "config": []byte(conf), "ifName": o.ifName, "networkName": o.network,
		"netns":   o.netns,
		"cniArgs": [][2]string{{"K8S_POD_NAMESPACE", o.ns}, {"K8S_POD_NAME", o.name}, {"K8S_POD_UID", o.uid}},
		"result":  json.RawMessage(`{"cniVersion":"1.0.0","ips":[{"address":"` + o.ip + `/24"}]}`),
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	testcni.WriteFile(t, testcni.EntryPath(cache, o.network, o.id, o.ifName), b, 0o600, time.Time{})
}
