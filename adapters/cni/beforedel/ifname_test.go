package beforedel_test

import (
	"slices"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// doc.go: "It never takes host-local's lock, nor writes or removes its files: host-local releases a reservation on
// the DEL"; cni-freeing.md: "no sandbox the runtime lists ready is freed", and reservations are "the container ID,
// \r\n, the interface, as host-local writes them; a file otherwise written is never touched". A file in a network's
// directory whose second line is no interface name host-local was ever given (libcni refuses "/" in one) is DELed all
// the same, and libcni, given that interface, reads and removes the file it names as the cache entry: here the
// reservation file of a sandbox the runtime lists ready.
func TestAuditReservationIfNameRemovesLiveReservation(t *testing.T) {
	e := newEnv(t)
	e.hostLocalConf(t, "10-aud.conflist", "aud", [][]map[string]string{{{"subnet": "10.77.0.0/24"}}}, nil)
	const live = "5a4db0c0ffee"
	liveRes := e.reserve(t, "aud", "10.77.0.5", live, "eth0", time.Hour)
	planted := e.reserve(t, "aud", "10.77.0.99", "c0ffee99", "x/../../../data/aud/10.77.0.5", time.Hour)
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
	t.Logf("events %v; planted there %v; live sandbox's reservation there %v", o.list(), testcni.Exists(planted), testcni.Exists(liveRes))
	if !testcni.Exists(liveRes) {
		t.Fatalf("host-local's reservation %s of sandbox %s, which the runtime lists ready, was removed by the sweep (not by host-local's DEL)", liveRes, live)
	}
}
