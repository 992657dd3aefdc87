package meanwhile_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// cni-freeing.md:78-81: "A reservation is DELed only while its file still holds it: one released meanwhile by the
// DEL of another reservation of its container and interface is told freed with it, and no DEL is run that would
// match nothing (host-local would then remove the files that hold the container's ID alone)."
//
// Under ReservationRate, the collector checks that the file still holds the reservation, then waits for its turn,
// then DELs: a reservation released while it waits (by its runtime: CRI-O's CNI GC, a teardown retried) is DELed
// all the same, host-local's DEL matches nothing and removes the file holding the container's ID alone, and the
// collector tells it freed by itself.
func TestAuditReservationDELedOnlyWhileItsFileHoldsIt(t *testing.T) {
	e := newEnv(t, testcni.PluginsDir(t))
	conf := `{"cniVersion":"1.0.0","name":"net","plugins":[
 {"type":"host-local","ipam":{"type":"host-local","dataDir":"` + e.data + `","ranges":[[{"subnet":"10.1.0.0/24"}]]}}]}`
	testcni.Write(t, filepath.Join(e.conf, "10-net.conflist"), conf)
	dir := filepath.Join(e.data, "net")
	reserve(t, filepath.Join(dir, "10.1.0.5"), "aaaa\r\neth0")
	second := filepath.Join(dir, "10.1.0.6")
	reserve(t, second, "bbbb\r\neth0")
	legacy := filepath.Join(dir, "10.1.0.9")
	reserve(t, legacy, "bbbb") // the ID alone: never touched

	o := &obs{}
	c := e.collector(t, func(op *cni.Options) { op.Observer = o; op.ReservationRate = 0.5; op.ReservationBurst = 1 })
	start := time.Now()
	removed := false
	resyncUntil(t, c, 15*time.Second, func() bool {
		if !removed && len(o.freedTimes()) >= 1 {
			// The first reservation is freed; the second waits for its turn (2s): its runtime releases it now.
			time.Sleep(500 * time.Millisecond)
			if err := os.Remove(second); err != nil {
				t.Errorf("removing %s: %v", second, err)
			}
			removed = true
			start = time.Now()
		}
		return removed && time.Since(start) > 4*time.Second
	})
	if !removed {
		t.Fatal("precondition: the first reservation was never freed")
	}
	if !testcni.Exists(legacy) {
		t.Errorf("%s, the container's ID alone (never touched), was removed: a DEL was run for a reservation its file no longer held", legacy)
	}
	if n := len(o.freedTimes()); n != 1 {
		t.Errorf("the Observer heard %d reservations freed, want 1: the second was released by its runtime, not by the collector", n)
	}
	rec := httptest.NewRecorder()
	c.AddressHandler().ServeHTTP(rec, httptest.NewRequest("GET", cni.AddressPath+"?ip=10.1.0.6", nil))
	var st cni.AddressStatus
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	for _, r := range st.Reservations {
		if r.State == "freed" {
			t.Errorf("the address page tells 10.1.0.6 %q by the collector (row %d), though its runtime released it while it waited for its turn", r.State, r.Decision.Row)
		}
	}
	if len(st.Freed) > 0 {
		t.Errorf("the address page lists %d frees of 10.1.0.6 by the collector: %+v", len(st.Freed), st.Freed)
	}
}

// The same, with the address reserved anew meanwhile by a live sandbox (dddd): the collector DELs bbbb, which matches
// nothing, and tells the Observer and the address page that it freed bbbb's reservation of 10.1.0.6, which dddd holds.
func TestAuditReservationDELedOnlyWhileItsFileHoldsItReReserved(t *testing.T) {
	e := newEnv(t, testcni.PluginsDir(t))
	conf := `{"cniVersion":"1.0.0","name":"net","plugins":[
 {"type":"host-local","ipam":{"type":"host-local","dataDir":"` + e.data + `","ranges":[[{"subnet":"10.1.0.0/24"}]]}}]}`
	testcni.Write(t, filepath.Join(e.conf, "10-net.conflist"), conf)
	dir := filepath.Join(e.data, "net")
	reserve(t, filepath.Join(dir, "10.1.0.5"), "aaaa\r\neth0")
	second := filepath.Join(dir, "10.1.0.6")
	reserve(t, second, "bbbb\r\neth0")

	o := &obs{}
	c := e.collector(t, func(op *cni.Options) { op.Observer = o; op.ReservationRate = 0.5; op.ReservationBurst = 1 })
	start := time.Now()
	swapped := false
	resyncUntil(t, c, 15*time.Second, func() bool {
		if !swapped && len(o.freedTimes()) >= 1 {
			time.Sleep(500 * time.Millisecond)
			// bbbb's runtime releases it, and host-local gives the address to a new sandbox, dddd.
			if err := os.Remove(second); err != nil {
				t.Errorf("removing %s: %v", second, err)
			}
			testcni.Write(t, second, "dddd\r\neth0")
			swapped, start = true, time.Now()
		}
		return swapped && time.Since(start) > 4*time.Second
	})
	if !swapped {
		t.Fatal("precondition: the first reservation was never freed")
	}
	if n := len(o.freedTimes()); n != 1 {
		t.Errorf("the Observer heard %d reservations freed, want 1: bbbb's was released by its runtime, and 10.1.0.6 is dddd's now", n)
	}
	st := addressStatus(t, c, "10.1.0.6")
	for _, f := range st.Freed {
		t.Errorf("the address page tells the collector freed 10.1.0.6 (container %s, row %d), which dddd holds: %s", f.ContainerID, f.Decision.Row, f.Decision.Why)
	}
}
