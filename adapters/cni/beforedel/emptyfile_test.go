package beforedel_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// Rows 16 and 17, "nor one younger than ReservationGrace": the round reads, beside an old reservation of c0ffee01/eth0,
// a file named as an address that is empty ("host-local may be writing it": what it holds cannot be told). host-local
// finishes writing it (c0ffee01/eth0) before the DEL: the DEL of the old one releases the new one too.
func TestAuditReservationBeingWrittenReleased(t *testing.T) {
	e := newEnv(t)
	e.hostLocalConf(t, "10-aud.conflist", "aud", [][]map[string]string{{{"subnet": "10.77.0.0/24"}}, {{"subnet": "fd77::/64"}}}, nil)
	old := e.reserve(t, "aud", "10.77.0.5", "c0ffee01", "eth0", time.Hour)
	writing := filepath.Join(e.data, "aud", "fd77::5")
	if err := os.WriteFile(writing, nil, 0o644); err != nil { // being written: read empty
		t.Fatal(err)
	}
	rt := &fakeRuntime{hook: func(n int) {
		if n == 1 { // host-local's write ends
			os.WriteFile(writing, []byte("c0ffee01\r\neth0"), 0o644)
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
	t.Logf("events %v; old there %v; young there %v", o.list(), testcni.Exists(old), testcni.Exists(writing))
	if !testcni.Exists(writing) {
		t.Fatalf("the reservation %s, read while host-local wrote it and reserved now, was released by the DEL of %s", writing, old)
	}
}
