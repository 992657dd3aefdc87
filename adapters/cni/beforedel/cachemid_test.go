package beforedel_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// writeEntry writes a libcni cache entry of a pod's attachment.
func (e *env) writeEntry(t *testing.T, network, id, ifName, uid string) string {
	t.Helper()
	conf, _ := os.ReadFile(filepath.Join(e.conf, "10-aud.conflist"))
	entry := map[string]any{"kind": "cniCacheV1", "containerId": id, "config": base64.StdEncoding.EncodeToString(conf), "ifName": ifName,
		"networkName": network, "netns": "", "cniArgs": [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_UID", uid}, {"K8S_POD_NAMESPACE", "default"}, {"K8S_POD_NAME", "web"}},
		"result": json.RawMessage(`{"cniVersion":"1.0.0","ips":[{"address":"10.77.0.5/24"}]}`)}
	b, _ := json.Marshal(entry)
	dir := filepath.Join(e.cache, "results")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, network+"-"+id+"-"+ifName)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Row 16 ("A cache entry names its container ID: keep") and "It never removes a cache file itself": a cache entry of
// the reservation's container written after the round read the cache is removed by the reservation's DEL.
func TestAuditCacheEntryWrittenMidRoundRemoved(t *testing.T) {
	e := newEnv(t)
	e.hostLocalConf(t, "10-aud.conflist", "aud", [][]map[string]string{{{"subnet": "10.77.0.0/24"}}}, nil)
	res := e.reserve(t, "aud", "10.77.0.5", "c0ffee01", "eth0", time.Hour)
	var entry string
	rt := &fakeRuntime{hook: func(n int) {
		if n == 1 {
			entry = e.writeEntry(t, "aud", "c0ffee01", "eth0", "uid-1")
		}
	}}
	o := newObs()
	c, err := cni.New(e.opts(rt, o))
	if err != nil {
		t.Fatal(err)
	}
	oneRound(t, c, func() bool {
		ev := o.list()
		return slices.Contains(ev, "freed aud NoSandbox") || slices.Contains(ev, "failed aud NoSandbox") || e.settled(t, c)
	}, 20*time.Second)
	t.Logf("events %v, reservation there %v, cache entry there %v", o.list(), testcni.Exists(res), testcni.Exists(entry))
	if !testcni.Exists(entry) || !testcni.Exists(res) {
		t.Fatalf("the cache entry %s (there %v) of container c0ffee01, written before the reservation's DEL, and its reservation (there %v) were freed by the sweep",
			entry, testcni.Exists(entry), testcni.Exists(res))
	}
}
