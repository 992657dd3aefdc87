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

// cni-freeing.md: host-local's reservations are "the container ID, \r\n, the interface, as host-local writes them; a
// file otherwise written is never touched"; doc.go: "It never removes a cache file itself: libcni does, after a DEL
// whose plugins all succeeded". A file in a network's directory, named as an address, whose first line is no
// container ID a runtime can give host-local (libcni refuses "/" in one) is not host-local's: the sweep DELs it all
// the same, and libcni, given that ID, removes a file outside libcni's cache before any plugin ran.
func TestAuditReservationContainerIDPathEscapes(t *testing.T) {
	e := newEnv(t)
	e.hostLocalConf(t, "10-aud.conflist", "aud", [][]map[string]string{{{"subnet": "10.77.0.0/24"}}}, nil)
	victim := filepath.Join(e.root, "victim-eth0") // beside the cache directory, outside it
	if err := os.WriteFile(victim, []byte("not libcni's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := e.reserve(t, "aud", "10.77.0.99", "zz/../../../victim", "eth0", time.Hour)
	rt := &fakeRuntime{}
	o := newObs()
	c, err := cni.New(e.opts(rt, o))
	if err != nil {
		t.Fatal(err)
	}
	oneRound(t, c, func() bool {
		ev := o.list()
		return slices.Contains(ev, "freed aud NoSandbox") || slices.Contains(ev, "failed aud NoSandbox") || e.settled(t, c)
	}, 20*time.Second)
	t.Logf("events %v; reservation file there %v; victim there %v", o.list(), testcni.Exists(res), testcni.Exists(victim))
	if !testcni.Exists(victim) || !testcni.Exists(res) {
		t.Fatalf("a reservation file no host-local wrote (container ID %q) was DELed: it is there %v, and %s, outside libcni's cache, is there %v",
			"zz/../../../victim", testcni.Exists(res), victim, testcni.Exists(victim))
	}
}

// The same aimed at the cache entry of a sandbox the runtime lists ready: host-local refuses the ID, and libcni keeps the
// entry (it reads as a result): "It never removes a cache file itself" holds here.
func TestAuditHoldsLiveCacheEntryAgainstInvalidContainerID(t *testing.T) {
	e := newEnv(t)
	e.hostLocalConf(t, "10-aud.conflist", "aud", [][]map[string]string{{{"subnet": "10.77.0.0/24"}}}, nil)
	const live = "11ve5a4db0c"
	entry := e.writeEntry(t, "aud", live, "eth0", "uid-live")
	liveRes := e.reserve(t, "aud", "10.77.0.5", live, "eth0", time.Hour)
	res := e.reserve(t, "aud", "10.77.0.99", "zz/../../results/aud-"+live, "eth0", time.Hour)
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
		return slices.Contains(ev, "freed aud NoSandbox") || slices.Contains(ev, "failed aud NoSandbox") || e.settled(t, c)
	}, 20*time.Second)
	t.Logf("events %v; planted file there %v; live entry there %v; live reservation there %v", o.list(), testcni.Exists(res), testcni.Exists(entry), testcni.Exists(liveRes))
	if !testcni.Exists(entry) {
		t.Fatalf("the cache entry %s of sandbox %s, which the runtime lists ready, was removed by the sweep's DEL of a reservation file no host-local wrote", entry, live)
	}
}
