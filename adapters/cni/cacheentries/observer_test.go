package cacheentries_test

import (
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// cni-freeing.md:92-95: "A DEL that succeeds while the file still names the container is a failure, retried at
// the next resync ... Options.Observer counts the reservations freed, failed and reported"; the page tells "free
// failed" and no free.
func TestHoldsDelThatFreesNothingIsAFailure(t *testing.T) {
	e := newEnv(t)
	e.write(e.conf+"/10-podnet.conflist", `{"cniVersion":"1.0.0","name":"podnet","plugins":[{"type":"logger","ipam":{"type":"host-local","dataDir":"`+e.data+`"}}]}`)
	res := e.reservation(e.data, "podnet", "10.88.0.41", "dd01", "eth0", time.Now().Add(-time.Hour))
	e.reservation(e.data, "gonenet", "10.88.0.41", "dd02", "eth0", time.Now().Add(-time.Hour))
	o := newObs()
	opts := e.opts(&fakeRuntime{})
	opts.Observer = o
	c, err := cni.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	st := oneRound(t, c, "10.88.0.41")
	states := map[string]string{}
	for _, r := range st.Reservations {
		states[r.Network] = r.State
	}
	if !testcni.Exists(res) || states["podnet"] != "free failed" || states["gonenet"] != "reported" || len(st.Freed) != 0 {
		t.Errorf("page: %+v", st)
	}
	if o.get(o.failed, "podnet/NoSandbox") != 1 || o.get(o.freed, "podnet/NoSandbox") != 0 || o.get(o.reported, "gonenet/ConfigGone") != 1 {
		t.Errorf("observer: failed %v freed %v reported %v", o.failed, o.freed, o.reported)
	}
}

// ReservationWouldFree: a dry run "would free a reservation; told once for each". The same address held, between
// two rounds, by the same container on another interface is another reservation (another DEL): it is told too.
func TestDryRunTellsAReservationOfAnotherInterfaceAtTheSameAddress(t *testing.T) {
	e := newEnv(t)
	e.write(e.conf+"/10-podnet.conflist", hostLocalConf("podnet", e.data, ""))
	e.reservation(e.data, "podnet", "10.88.0.42", "cidb", "eth0", time.Now().Add(-time.Hour))
	o := newObs()
	opts := e.opts(&fakeRuntime{})
	opts.Observer, opts.DryRun = o, true
	c, err := cni.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	oneRound(t, c, "10.88.0.42")
	e.reservation(e.data, "podnet", "10.88.0.42", "cidb", "eth1", time.Now().Add(-time.Hour))
	oneRound(t, c, "10.88.0.42")
	if got := o.get(o.would, "podnet/NoSandbox"); got != 2 {
		t.Errorf("told %d reservations the dry run would free; want 2, eth0's then eth1's", got)
	}
}
