package cacheentries_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// cni-freeing.md:30-32: "an attachment of a network whose config says "disableGC": true (its cached config, or
// that of any entry of the cache of that network, one the collector does not use included ...) is never
// DELed." An entry of podnet the collector does not use (its kind is not libcni's v1, or a field is missing)
// holds a cached config that says disableGC.
func TestDisableGCOfUnusedEntryWithoutKind(t *testing.T) {
	for name, ent := range map[string]libcniEntry{
		"kind other": {Kind: "cniCacheV2", ContainerID: "s9", IfName: "eth0", NetworkName: "podnet"},
		"no ifName":  {Kind: "cniCacheV1", ContainerID: "s9", NetworkName: "podnet"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			old := time.Now().Add(-time.Hour)
			rt := &fakeRuntime{}
			rt.sbs = append(rt.sbs, sb("s1", "uid-a", false, old))
			e.entry("podnet", "s1", "eth0", "uid-a", "", loggerConf("podnet", ""), "10.88.0.5", old)
			ent.Config = []byte(loggerConf("podnet", `,"disableGC":true`))
			ent.CniArgs = [][2]string{{"K8S_POD_UID", "uid-b"}, {"K8S_POD_NAMESPACE", "ns"}, {"K8S_POD_NAME", "b"}}
			b, _ := json.Marshal(ent)
			e.write(filepath.Join(e.cache, "results", "podnet-s9-eth0"), string(b))
			c, err := cni.New(e.opts(rt))
			if err != nil {
				t.Fatal(err)
			}
			err = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-a", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-uid-a"}, SandboxID: "s1", Reason: ports.ReasonPodGone})
			st := testcni.Address(t, c, "10.88.0.5")
			t.Logf("DestroyPU: %v; page: %+v", err, st)
			if d := e.dels(); len(d) > 0 {
				t.Errorf("network podnet, whose cached config in an entry not used says disableGC, was DELed: %q", d)
			}
		})
	}
}

// Hold: the same with the entry of no pod (whole, unused) keeps the network.
func TestHoldsDisableGCOfEntryOfNoPod(t *testing.T) {
	e := newEnv(t)
	old := time.Now().Add(-time.Hour)
	rt := &fakeRuntime{}
	rt.sbs = append(rt.sbs, sb("s1", "uid-a", false, old))
	e.entry("podnet", "s1", "eth0", "uid-a", "", loggerConf("podnet", ""), "10.88.0.5", old)
	b, _ := json.Marshal(libcniEntry{Kind: "cniCacheV1", ContainerID: "s9", IfName: "eth0", NetworkName: "podnet", Config: []byte(loggerConf("podnet", `,"disableGC":true`))})
	e.write(filepath.Join(e.cache, "results", "podnet-s9-eth0"), string(b))
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	_ = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-a", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-uid-a"}, SandboxID: "s1", Reason: ports.ReasonPodGone})
	if d := e.dels(); len(d) > 0 {
		t.Errorf("DELed %q", d)
	}
}

// cni-freeing.md:30-32 (and doc.go: "It never touches a network whose cached config (of any entry of the cache,
// one it does not use included) ... says "disableGC": true"). Pod a's entry of podnet was added with a config
// that says disableGC (a used entry of a live pod); pod b's entry of podnet with an older config that does not.
func TestDisableGCOfAnotherUsedEntry(t *testing.T) {
	e := newEnv(t)
	old := time.Now().Add(-time.Hour)
	rt := &fakeRuntime{}
	rt.sbs = append(rt.sbs, sb("s1", "uid-a", false, old), sb("s2", "uid-b", true, old))
	e.entry("podnet", "s1", "eth0", "uid-a", "", loggerConf("podnet", ""), "10.88.0.5", old)
	e.entry("podnet", "s2", "eth0", "uid-b", "", loggerConf("podnet", `,"disableGC":true`), "10.88.0.6", old)
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	err = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-a", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-uid-a"}, SandboxID: "s1", Reason: ports.ReasonPodGone})
	if d := e.dels(); len(d) > 0 {
		t.Errorf("network podnet, whose cached config in pod b's entry says disableGC, was DELed for pod a: %q (DestroyPU: %v)", d, err)
	}
}
