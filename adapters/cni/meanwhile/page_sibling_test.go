package meanwhile_test

import (
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

func addressStatus(t *testing.T, c *cni.Collector, ip string) cni.AddressStatus {
	t.Helper()
	rec := httptest.NewRecorder()
	c.AddressHandler().ServeHTTP(rec, httptest.NewRequest("GET", cni.AddressPath+"?ip="+ip, nil))
	var st cni.AddressStatus
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatalf("%s: %v", rec.Body.String(), err)
	}
	return st
}

// cni-freeing.md:109-113: AddressHandler "tells, for one address, ... each reservation's row and what its last round
// did with it, and the latest frees"; cni-freeing.md:79-80: "one released meanwhile by the DEL of another reservation
// of its container and interface is told freed with it"; ReservationStatus.State (go doc): '"to free" (waiting for its
// turn under the rate)'.
//
// Dual stack under ReservationRate: the DEL of a container's IPv4 reservation frees its IPv6 one too, at once; while
// the round waits for the next container's turn, the page still tells the IPv6 address "to free", waiting for a turn,
// and lists no free of it, though its file is gone and the collector's DEL freed it.
func TestAuditAddressPageTellsSiblingFreedWithIt(t *testing.T) {
	e := newEnv(t, testcni.PluginsDir(t))
	conf := `{"cniVersion":"1.0.0","name":"dual","plugins":[
 {"type":"host-local","ipam":{"type":"host-local","dataDir":"` + e.data + `","ranges":[[{"subnet":"10.1.0.0/24"}],[{"subnet":"fd00::/64"}]]}}]}`
	testcni.Write(t, filepath.Join(e.conf, "10-dual.conflist"), conf)
	dir := filepath.Join(e.data, "dual")
	reserve(t, filepath.Join(dir, "10.1.0.5"), "aaaa\r\neth0")
	reserve(t, filepath.Join(dir, "fd00::5"), "aaaa\r\neth0")
	reserve(t, filepath.Join(dir, "10.1.0.6"), "bbbb\r\neth0")
	reserve(t, filepath.Join(dir, "fd00::6"), "bbbb\r\neth0")

	o := &obs{}
	c := e.collector(t, func(op *cni.Options) { op.Observer = o; op.ReservationRate = 0.2; op.ReservationBurst = 1 })
	var st cni.AddressStatus
	asked := false
	resyncUntil(t, c, 20*time.Second, func() bool {
		if len(o.freedTimes()) >= 1 && !asked {
			time.Sleep(500 * time.Millisecond) // aaaa's DEL is done; the round waits 5s for bbbb's turn
			st, asked = addressStatus(t, c, "fd00::5"), true
			return true
		}
		return false
	})
	if !asked {
		t.Fatal("precondition: nothing was freed")
	}
	if testcni.Exists(filepath.Join(dir, "fd00::5")) {
		t.Fatal("precondition: fd00::5 is still held")
	}
	for _, r := range st.Reservations {
		if r.State != "freed" {
			t.Errorf("the page tells fd00::5 %q (row %d), though the DEL of its container's IPv4 reservation freed it already", r.State, r.Decision.Row)
		}
	}
	if len(st.Freed) == 0 {
		t.Errorf("the page lists no free of fd00::5, though the collector's DEL freed it")
	}
}
