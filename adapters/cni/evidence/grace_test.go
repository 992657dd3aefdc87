package evidence_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// doc (docs/sdk/cni-freeing.md row 17): "It, or another reservation of its container and
// interface in its network, was reserved (its file's modification time) less than
// Options.ReservationGrace ago (read again right before its DEL: one written since the round
// read them, ...)": keep. Here the reservation's own file is written anew (host-local reserved
// it again for its container and interface) while the round runs, right before its DEL.
func TestAuditReservationRewrittenDuringRoundKept(t *testing.T) {
	e := newEnv(t)
	e.writeConf(t, "10-net1.conflist", hostLocalConf("net1", e.data, "10.0.0.0/24", false))
	old := time.Now().Add(-time.Hour)
	e.reserve(t, "net1", "10.0.0.1", "c0", "eth0", old)
	p := e.reserve(t, "net1", "10.0.0.2", "c1", "eth0", old)
	rt := &fakeRuntime{list: func(n int) ([]*runtimeapi.PodSandbox, error) {
		if n == 2 { // asked again right before the DEL of 10.0.0.2: host-local has just reserved it anew
			if err := os.WriteFile(p, []byte("c1\r\neth0"), 0o644); err != nil {
				t.Error(err)
			}
			now := time.Now()
			os.Chtimes(p, now, now)
		}
		return nil, nil
	}}
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(e.data, "net1", "10.0.0.1")
	runRound(t, c, func() bool {
		rt.mu.Lock()
		n := rt.calls
		rt.mu.Unlock()
		return !testcni.Exists(first) && n >= 2 && roundOver(c, "10.0.0.2")
	})
	if !testcni.Exists(p) {
		st := address(c, "10.0.0.2")
		t.Fatalf("a reservation host-local wrote anew right before its DEL (ReservationGrace 1m) was freed: page says %+v", st.Reservations)
	}
}

// roundOver: the address page tells the reservation of ip in a final state.
func roundOver(c *cni.Collector, ip string) bool {
	st := address(c, ip)
	for _, r := range st.Reservations {
		if r.State != cni.ReservationToFree {
			return true
		}
	}
	return false
}
