package meanwhile_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// collector.go Options.ReservationRate (go doc): "ReservationRate is at most how many host-local reservations Resync
// frees a second ... the rest wait for their turn, in their round"; doc.go:138: "At most Options.ReservationRate are
// freed a second."
//
// A dual-stack host-local network (two ranges): each leaked sandbox holds two reservations, and one DEL releases
// both. With ReservationRate 1 and ReservationBurst 1, the collector frees (and tells the Observer it freed) two
// reservations at once, twice the rate.
func TestAuditReservationRateBoundsReservationsFreed(t *testing.T) {
	e := newEnv(t, testcni.PluginsDir(t))
	conf := `{"cniVersion":"1.0.0","name":"dual","plugins":[
 {"type":"host-local","ipam":{"type":"host-local","dataDir":"` + e.data + `","ranges":[[{"subnet":"10.1.0.0/24"}],[{"subnet":"fd00::/64"}]]}}]}`
	testcni.Write(t, filepath.Join(e.conf, "10-dual.conflist"), conf)
	dir := filepath.Join(e.data, "dual")
	for i, id := range []string{"aaaa", "bbbb"} {
		reserve(t, filepath.Join(dir, "10.1.0."+string(rune('5'+i))), id+"\r\neth0")
		reserve(t, filepath.Join(dir, "fd00::"+string(rune('5'+i))), id+"\r\neth0")
	}
	o := &obs{}
	c := e.collector(t, func(op *cni.Options) { op.Observer = o; op.ReservationRate = 1; op.ReservationBurst = 1 })
	start := time.Now()
	resyncUntil(t, c, 20*time.Second, func() bool { return len(o.freedTimes()) >= 4 })
	ts := o.freedTimes()
	if len(ts) < 4 {
		t.Fatalf("precondition: %d reservations freed, want 4", len(ts))
	}
	// At most 1 a second with a burst of 1: the i-th free (from 0) comes i seconds after the round began, at the
	// earliest (a DEL that releases two waits for two turns, and frees both at the second).
	for i := range ts {
		if gap := ts[i].Sub(start); gap < time.Duration(i)*time.Second-100*time.Millisecond {
			t.Errorf("free %d came %v after the round began: %d reservations freed within %v under a rate of 1 a second (burst 1)", i, gap, i+1, gap)
		}
	}
}
