package meanwhile_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

func dualConf(e env, name string) string {
	return `{"cniVersion":"1.0.0","name":"` + name + `","plugins":[
 {"type":"host-local","ipam":{"type":"host-local","dataDir":"` + e.data + `","ranges":[[{"subnet":"10.1.0.0/24"}],[{"subnet":"fd00::/64"}]]}}]}`
}

// cni-freeing.md row 15: a reservation of a sandbox the runtime lists, ready or not (NOTREADY), is kept.
func TestAuditHoldsReservationOfListedStoppedSandboxKept(t *testing.T) {
	e := newEnv(t, testcni.PluginsDir(t))
	testcni.Write(t, filepath.Join(e.conf, "10-n.conflist"), dualConf(e, "n"))
	f := filepath.Join(e.data, "n", "10.1.0.5")
	reserve(t, f, "aaaa\r\neth0")
	rt := &fakeRuntime{sbs: []*runtimeapi.PodSandbox{{Id: "aaaa", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}}}
	o := &obs{}
	c := e.collector(t, func(op *cni.Options) { op.Runtime = rt; op.Observer = o })
	resyncUntil(t, c, 2*time.Second, func() bool { return false })
	if !testcni.Exists(f) || len(o.freedTimes()) > 0 {
		t.Fatal("a reservation of a sandbox the runtime lists NOTREADY was freed")
	}
}

// cni-freeing.md row 17: a young sibling (the IPv6 file of the same container and interface) keeps the old one.
func TestAuditHoldsYoungSiblingKeepsOldReservation(t *testing.T) {
	e := newEnv(t, testcni.PluginsDir(t))
	testcni.Write(t, filepath.Join(e.conf, "10-n.conflist"), dualConf(e, "n"))
	old := filepath.Join(e.data, "n", "10.1.0.5")
	reserve(t, old, "aaaa\r\neth0")
	testcni.Write(t, filepath.Join(e.data, "n", "fd00::5"), "aaaa\r\neth0") // now
	o := &obs{}
	c := e.collector(t, func(op *cni.Options) { op.Observer = o })
	resyncUntil(t, c, 2*time.Second, func() bool { return false })
	if !testcni.Exists(old) || len(o.freedTimes()) > 0 {
		t.Fatal("an old reservation whose sibling is young was freed")
	}
}

// cni-freeing.md row 16: a cache entry naming the container (of another network) keeps its reservation.
func TestAuditHoldsCacheEntryOfOtherNetworkKeepsReservation(t *testing.T) {
	e := newEnv(t, testcni.PluginsDir(t))
	testcni.Write(t, filepath.Join(e.conf, "10-n.conflist"), dualConf(e, "n"))
	f := filepath.Join(e.data, "n", "10.1.0.5")
	reserve(t, f, "aaaa\r\neth0")
	// An entry of network "other" for container aaaa (not a pod's: no K8S_POD_*): it names the container.
	testcni.Write(t, filepath.Join(e.cache, "results", "other-aaaa-net1"),
		`{"kind":"cniCacheV1","containerId":"aaaa","config":"eyJjbmlWZXJzaW9uIjoiMS4wLjAiLCJuYW1lIjoib3RoZXIiLCJ0eXBlIjoibG9vcGJhY2sifQ==","ifName":"net1","networkName":"other","result":{"cniVersion":"1.0.0"}}`)
	o := &obs{}
	c := e.collector(t, func(op *cni.Options) { op.Observer = o })
	resyncUntil(t, c, 2*time.Second, func() bool { return false })
	if !testcni.Exists(f) || len(o.freedTimes()) > 0 {
		t.Fatal("a reservation whose container a cache entry names was freed")
	}
}

// cni-freeing.md row 14: a runtime that panics keeps every reservation; collector.go Options.Runtime.
func TestAuditHoldsPanickingRuntimeKeepsReservations(t *testing.T) {
	e := newEnv(t, testcni.PluginsDir(t))
	testcni.Write(t, filepath.Join(e.conf, "10-n.conflist"), dualConf(e, "n"))
	f := filepath.Join(e.data, "n", "10.1.0.5")
	reserve(t, f, "aaaa\r\neth0")
	o := &obs{}
	c := e.collector(t, func(op *cni.Options) { op.Runtime = panicky{}; op.Observer = o })
	resyncUntil(t, c, 2*time.Second, func() bool { return false })
	if !testcni.Exists(f) || len(o.freedTimes()) > 0 {
		t.Fatal("a reservation was freed while the runtime panics")
	}
}

type panicky struct{}

func (panicky) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	panic("boom")
}

// cni-freeing.md row 16: a link not named as an address, naming the container and interface, keeps its reservation.
func TestAuditHoldsLinkNamingContainerKeepsReservation(t *testing.T) {
	e := newEnv(t, testcni.PluginsDir(t))
	testcni.Write(t, filepath.Join(e.conf, "10-n.conflist"), dualConf(e, "n"))
	f := filepath.Join(e.data, "n", "10.1.0.5")
	reserve(t, f, "aaaa\r\neth0")
	target := filepath.Join(filepath.Dir(e.data), "elsewhere")
	testcni.Write(t, target, "aaaa\r\neth0")
	if err := os.Symlink(target, filepath.Join(e.data, "n", "note")); err != nil {
		t.Fatal(err)
	}
	o := &obs{}
	c := e.collector(t, func(op *cni.Options) { op.Observer = o })
	resyncUntil(t, c, 2*time.Second, func() bool { return false })
	if !testcni.Exists(f) || !testcni.Exists(filepath.Join(e.data, "n", "note")) || len(o.freedTimes()) > 0 {
		t.Fatal("a reservation whose DEL would remove a link never touched was freed")
	}
}

// doc.go: a gone pod of which the runtime lists a ready sandbox keeps every sandbox (ErrSandboxRunning).
func TestAuditHoldsGonePodWithReadySandboxKept(t *testing.T) {
	e := newEnv(t, "")
	conf := `{"cniVersion":"1.0.0","name":"n","type":"loopback"}`
	b64 := "eyJjbmlWZXJzaW9uIjoiMS4wLjAiLCJuYW1lIjoibiIsInR5cGUiOiJsb29wYmFjayJ9"
	_ = conf
	entry := `{"kind":"cniCacheV1","containerId":"old1","config":"` + b64 + `","ifName":"eth0","networkName":"n","netns":"` +
		filepath.Join(e.cache, "gone-ns") + `","cniArgs":[["K8S_POD_UID","u1"],["K8S_POD_NAMESPACE","ns"],["K8S_POD_NAME","p"]],"result":{"cniVersion":"1.0.0"}}`
	testcni.Write(t, filepath.Join(e.cache, "results", "n-old1-eth0"), entry)
	rt := &fakeRuntime{sbs: []*runtimeapi.PodSandbox{{Id: "new2", State: runtimeapi.PodSandboxState_SANDBOX_READY,
		Labels: map[string]string{"io.kubernetes.pod.uid": "u1"}, Metadata: &runtimeapi.PodSandboxMetadata{Uid: "u1"}}}}
	c := e.collector(t, func(op *cni.Options) { op.Runtime = rt })
	err := c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "u1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: "old1", Reason: ports.ReasonPodGone})
	if !errors.Is(err, cni.ErrSandboxRunning) {
		t.Fatalf("DestroyPU = %v, want ErrSandboxRunning", err)
	}
	if !testcni.Exists(filepath.Join(e.cache, "results", "n-old1-eth0")) {
		t.Fatal("entry removed")
	}
}
