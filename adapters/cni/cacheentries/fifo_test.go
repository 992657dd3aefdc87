package cacheentries_test

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// Hold: the same with the network's host-local inline.
func TestHoldsFifoNetworkInlineRow13(t *testing.T) {
	e := newEnv(t)
	e.write(e.conf+"/10-podnet.conflist", hostLocalConf("podnet", e.data, ""))
	e.write(e.conf+"/podnet/.keep", "")
	if err := syscall.Mkfifo(filepath.Join(e.conf, "podnet", "20-pipe.conf"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.reservation(e.data, "podnet", "10.88.0.12", "feed01", "eth0", time.Now().Add(-time.Hour))
	c, err := cni.New(e.opts(&fakeRuntime{}))
	if err != nil {
		t.Fatal(err)
	}
	st := oneRound(t, c, "10.88.0.12")
	if len(st.Reservations) != 1 || st.Reservations[0].Decision.Row != 13 {
		t.Errorf("%+v", st.Reservations)
	}
}
