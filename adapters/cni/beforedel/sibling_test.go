package beforedel_test

import (
	"slices"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// Row 17 / "nor one younger than ReservationGrace": a reservation of the same container and interface written
// after the round read the reservations (while the runtime is listed) is released by the DEL of its old sibling.
func TestAuditYoungSiblingReleased(t *testing.T) {
	e := newEnv(t)
	e.hostLocalConf(t, "10-aud.conflist", "aud", [][]map[string]string{{{"subnet": "10.77.0.0/24"}}, {{"subnet": "fd77::/64"}}}, nil)
	old := e.reserve(t, "aud", "10.77.0.5", "c0ffee01", "eth0", time.Hour)
	var young string
	rt := &fakeRuntime{hook: func(n int) {
		if n == 1 { // the round's list: the reservations were read already
			young = e.reserve(t, "aud", "fd77::5", "c0ffee01", "eth0", 0)
		}
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
	t.Logf("events %v, old there %v, young there %v", o.list(), testcni.Exists(old), testcni.Exists(young))
	if !testcni.Exists(young) {
		t.Fatalf("the reservation %s, reserved during the round (younger than ReservationGrace), was released by the DEL of its sibling %s", young, old)
	}
}
