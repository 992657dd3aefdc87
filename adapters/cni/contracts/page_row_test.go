package contracts_test

import (
	"strings"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// docs/operating/explain.md:285-287: "The sweep asks the runtime only when a reservation needs it (one the cache does
// not account for): without one, every reservation takes row 14, and says so". Documented: holds.
func TestHoldsPageRow14NotAsked(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
	e.writeReservation(e.data, "net1", "10.9.0.7", "livesb", "eth0", time.Hour)
	e.writeEntry("net1", "livesb", "eth0", e.presentNetNS("livesb"), "uid-live", netConf("net1", e.data, false), "10.9.0.7")
	rt := &testcni.Runtime{}
	c, err := cni.New(e.opts(rt, (&logRec{}).logger()))
	must(t, err)
	sweepOnce(t, c, "10.9.0.7")
	st := testcni.Address(t, c, "10.9.0.7")
	if len(st.Reservations) != 1 {
		t.Fatalf("reservations %+v", st.Reservations)
	}
	d := st.Reservations[0].Decision
	if d.Row != 14 || !strings.Contains(d.Why, "not asked") || rt.Calls() != 0 {
		t.Fatalf("row %d %q, %d lists", d.Row, d.Why, rt.Calls())
	}
}
