package cacheentries_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// An entry of no pod (another runtime's) names the container of an old
// reservation: it keeps it (row 16), under libcni's name or another.
func TestHoldsRow16EntryOfNoPod(t *testing.T) {
	for _, name := range []string{"podnet-c0ffee-eth0", "someone-elses-name"} {
		t.Run(name, func(t *testing.T) { holdsRow16EntryOfNoPod(t, name) })
	}
}

func holdsRow16EntryOfNoPod(t *testing.T, name string) {
	e := newEnv(t)
	e.write(e.conf+"/10-podnet.conflist", hostLocalConf("podnet", e.data, ""))
	res := e.reservation(e.data, "podnet", "10.88.0.11", "c0ffee", "eth0", time.Now().Add(-time.Hour))
	b, _ := json.Marshal(libcniEntry{Kind: "cniCacheV1", ContainerID: "c0ffee", Config: []byte(hostLocalConf("podnet", e.data, "")),
		IfName: "eth0", NetworkName: "podnet"})
	e.write(filepath.Join(e.cache, "results", name), string(b))
	c, err := cni.New(e.opts(&fakeRuntime{}))
	if err != nil {
		t.Fatal(err)
	}
	oneRound(t, c, "10.88.0.11")
	if !testcni.Exists(res) {
		t.Errorf("the reservation of container c0ffee, which the cache entry %s names, was freed", name)
	}
}
