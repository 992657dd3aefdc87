package cacheentries_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// cni-freeing.md:109-110: "A round records at most 65,536 reservations for the page ...; past that, `unread`
// says how many were not recorded."
func TestHoldsManyReservationsUnreadCount(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	e := newEnv(t)
	e.write(e.conf+"/10-podnet.conflist", hostLocalConf("podnet", e.data, ""))
	dir := filepath.Join(e.data, "podnet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	body := []byte("c\r\neth0")
	for x := 0; x < 256; x++ {
		for y := 0; y < 256; y++ {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("10.88.%d.%d", x, y)), body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for y := 0; y < 4; y++ {
		e.reservation(e.data, "podnet", fmt.Sprintf("10.89.0.%d", y), "c", "eth0", old)
	}
	c, err := cni.New(e.opts(nil))
	if err != nil {
		t.Fatal(err)
	}
	st := oneRound(t, c, "10.89.0.2")
	if len(st.Reservations) != 0 || !strings.Contains(strings.Join(st.Unread, "\n"), "read 4 more") {
		t.Errorf("page of an unrecorded one: %d reservations, unread %q", len(st.Reservations), st.Unread)
	}
	st = testcni.Address(t, c, "10.88.3.4")
	if len(st.Reservations) != 1 {
		t.Errorf("page of a recorded one: %+v", st.Reservations)
	}
}
