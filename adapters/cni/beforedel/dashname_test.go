package beforedel_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// Row 1 ("The runtime lists it ready: keep") and doc.go's "It never removes a cache file itself: libcni does, after a
// DEL whose plugins all succeeded": network "my" and network "my-net" both run host-local. Sandbox S, listed ready,
// holds the cache entry my-net-S-eth0. A leaked reservation of network "my", of container "net-S" (a valid CNI
// container ID), is freed: libcni's DEL of it (network "my", container "net-S", eth0) reads and, once host-local
// released it, removes <cache>/results/my-net-S-eth0, the live sandbox's entry of the other network.
func TestAuditReservationDelRemovesLiveEntryOfDashedNetwork(t *testing.T) {
	e := newEnv(t)
	ranges := func(s string) [][]map[string]string { return [][]map[string]string{{{"subnet": s}}} }
	e.hostLocalConf(t, "10-my.conflist", "my", ranges("10.66.0.0/24"), nil)
	e.hostLocalConf(t, "20-my-net.conflist", "my-net", ranges("10.77.0.0/24"), nil)
	const live = "5a4db0c0ffee"
	// The live sandbox's attachment of my-net (its cached config is my-net's).
	conf, _ := os.ReadFile(filepath.Join(e.conf, "20-my-net.conflist"))
	os.MkdirAll(filepath.Join(e.cache, "results"), 0o755)
	entry := filepath.Join(e.cache, "results", "my-net-"+live+"-eth0")
	if err := os.WriteFile(entry, entryJSON(conf, "my-net", live, "eth0", "uid-live", "", "10.77.0.5"), 0o600); err != nil {
		t.Fatal(err)
	}
	liveRes := e.reserve(t, "my-net", "10.77.0.5", live, "eth0", time.Hour)
	leaked := e.reserve(t, "my", "10.66.0.9", "net-"+live, "eth0", time.Hour)
	rt := &fakeRuntime{sbs: func(int) []*runtimeapi.PodSandbox {
		return []*runtimeapi.PodSandbox{{Id: live, State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: time.Now().Add(-time.Hour).UnixNano(),
			Labels: map[string]string{"io.kubernetes.pod.uid": "uid-live"}, Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-live"}}}
	}}
	o := newObs()
	c, err := cni.New(e.opts(rt, o))
	if err != nil {
		t.Fatal(err)
	}
	oneRound(t, c, func() bool {
		ev := o.list()
		return slices.Contains(ev, "freed my NoSandbox") || slices.Contains(ev, "failed my NoSandbox") || e.settled(t, c)
	}, 20*time.Second)
	t.Logf("events %v; leaked there %v; live entry there %v; live reservation there %v", o.list(), testcni.Exists(leaked), testcni.Exists(entry), testcni.Exists(liveRes))
	if !testcni.Exists(entry) {
		t.Fatalf("the cache entry %s of sandbox %s, which the runtime lists ready, was removed by the sweep's DEL of network my's reservation of container net-%s",
			entry, live, live)
	}
}
