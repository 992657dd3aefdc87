package cacheentries_test

// cni-freeing.md, host-local's reservations: a DEL of a container and interface releases every reservation of them
// in every data directory its network's config names, read right before it. It is run once a round, for all of them
// (its group), each told with it; and only when each it would release is one the round decided to free with it.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// hookRuntime lists no sandbox, and calls hook before its n-th answer (1 the first).
type hookRuntime struct {
	n    int
	hook func(n int)
}

func (h *hookRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	h.n++
	if h.hook != nil {
		h.hook(h.n)
	}
	return nil, nil
}

// hostLocalChain writes network hl's config: host-local in each of dirs (a range of its own each), then a plugin that
// logs each call and fails its DEL while e.root/fail-del exists.
func hostLocalChain(e *env, dirs ...string) {
	e.t.Helper()
	fails := "#!/bin/sh\ncat >/dev/null\necho \"$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME\" >> " + e.delLog + "\n" +
		"if [ \"$CNI_COMMAND\" = DEL ] && [ -e " + filepath.Join(e.root, "fail-del") + " ]; then echo '{\"cniVersion\":\"1.0.0\",\"code\":11,\"msg\":\"DEL fails\"}'; exit 1; fi\n" +
		"if [ \"$CNI_COMMAND\" = VERSION ]; then echo '{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"1.0.0\"]}'; fi\nexit 0\n"
	e.write(filepath.Join(e.bin, "faildel"), fails)
	if err := os.Chmod(filepath.Join(e.bin, "faildel"), 0o755); err != nil {
		e.t.Fatal(err)
	}
	plugins := ""
	for i, d := range dirs {
		plugins += fmt.Sprintf(`{"type":"host-local","ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":"10.%d.0.0/24"}],[{"subnet":"fd0%d::/64"}]]}},`, d, 2+i, 2+i)
	}
	e.write(filepath.Join(e.conf, "10-hl.conflist"), `{"cniVersion":"1.0.0","name":"hl","plugins":[`+plugins+`{"type":"faildel"}]}`)
}

// round runs one Resync until its first round recorded ips' states (none "to free"), and returns them.
func round(t *testing.T, c *cni.Collector, ips ...string) map[string]string {
	t.Helper()
	oneRound(t, c, ips[0])
	states := map[string]string{}
	for _, ip := range ips {
		for _, r := range testcni.Address(t, c, ip).Reservations {
			states[ip] = r.State
		}
	}
	return states
}

// One container and interface hold two addresses (one per family) whose DEL fails: one round runs it once, and both
// are told failed (two failures counted), to be tried again at the next round, which frees both with one DEL.
func TestOneDELOfAContainerAndInterfaceARound(t *testing.T) {
	testcni.PluginsDir(t)
	e := newEnv(t)
	hostLocalChain(e, e.data)
	old := time.Now().Add(-time.Hour)
	e.reservation(e.data, "hl", "10.2.0.5", "c1", "eth0", old)
	e.reservation(e.data, "hl", "fd02::5", "c1", "eth0", old)
	e.write(filepath.Join(e.root, "fail-del"), "")
	o := newObs()
	opts := e.opts(&fakeRuntime{})
	opts.Observer = o
	c, err := cni.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	states := round(t, c, "10.2.0.5", "fd02::5")
	if dels := e.dels(); len(dels) != 1 || states["10.2.0.5"] != cni.ReservationFreeFailed || states["fd02::5"] != cni.ReservationFreeFailed ||
		o.get(o.failed, "hl/NoSandbox") != 2 {
		t.Fatalf("a round whose DEL of c1, eth0 fails: DELs %q, states %v, failures counted %d; want one DEL, both free failed, 2",
			dels, states, o.get(o.failed, "hl/NoSandbox"))
	}
	if err := os.Remove(filepath.Join(e.root, "fail-del")); err != nil {
		t.Fatal(err)
	}
	states = round(t, c, "10.2.0.5", "fd02::5")
	if dels := e.dels(); len(dels) != 2 || states["10.2.0.5"] != cni.ReservationFreed || states["fd02::5"] != cni.ReservationFreed ||
		o.get(o.freed, "hl/NoSandbox") != 2 {
		t.Fatalf("the next round: DELs %q, states %v, frees counted %d; want a second DEL, both freed, 2", dels, states, o.get(o.freed, "hl/NoSandbox"))
	}
}

// A config rewritten while the round runs (a CNI installer's) names a second data directory, which holds a
// reservation of the same container and interface that the round read as none of a config's (reported, row 12):
// the DEL decided again on the new config would release it, unasked, beyond the turns taken. It is not run: both
// stay, the first kept on its recheck and saying why, until the next round decides on them all.
func TestADELThatWouldReleaseMoreThanTheRoundDecidedIsNotRun(t *testing.T) {
	testcni.PluginsDir(t)
	e := newEnv(t)
	d1 := filepath.Join(e.root, "d1")
	hostLocalChain(e, d1)
	old := time.Now().Add(-time.Hour)
	freeing := e.reservation(d1, "hl", "10.2.0.5", "c1", "eth0", old)
	reported := e.reservation(e.data, "hl", "10.3.0.5", "c1", "eth0", old)
	rt := &hookRuntime{hook: func(n int) {
		if n == 1 { // the round's list of the runtime: the config is rewritten meanwhile
			hostLocalChain(e, d1, e.data)
		}
	}}
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	st := oneRound(t, c, "10.2.0.5")
	if len(e.dels()) != 0 || !testcni.Exists(freeing) || !testcni.Exists(reported) {
		t.Fatalf("the DEL of c1, eth0 ran (%q) on a config that names a data directory the round did not decide on", e.dels())
	}
	if len(st.Reservations) != 1 || st.Reservations[0].State != cni.ReservationKeptOnRecheck || st.Reservations[0].Error == "" {
		t.Fatalf("10.2.0.5 on the page: %+v; want kept on its recheck, saying why", st.Reservations)
	}
}
