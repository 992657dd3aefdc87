package cacheentries_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// Hold: the same entry under libcni's name keeps it (row 16).
func TestHoldsRow16EntryOfNoPod(t *testing.T) {
	e := newEnv(t)
	e.write(e.conf+"/10-podnet.conflist", hostLocalConf("podnet", e.data, ""))
	res := e.reservation(e.data, "podnet", "10.88.0.11", "c0ffee", "eth0", time.Now().Add(-time.Hour))
	b, _ := json.Marshal(libcniEntry{Kind: "cniCacheV1", ContainerID: "c0ffee", Config: []byte(hostLocalConf("podnet", e.data, "")),
		IfName: "eth0", NetworkName: "podnet"})
	e.write(filepath.Join(e.cache, "results", "podnet-c0ffee-eth0"), string(b))
	c, err := cni.New(e.opts(&fakeRuntime{}))
	if err != nil {
		t.Fatal(err)
	}
	oneRound(t, c, "10.88.0.11")
	if !exists(res) {
		t.Errorf("freed")
	}
}
