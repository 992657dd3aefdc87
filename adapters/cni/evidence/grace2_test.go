package evidence_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// doc (docs/sdk/cni-freeing.md row 17): "It, or another reservation of its container and
// interface in its network, was reserved ... less than Options.ReservationGrace ago (read again
// right before its DEL: one written since the round read them ... counts too): host-local's DEL
// releases every address of the container and interface in the network at once": keep.
// The network's chain runs host-local twice, each with its data directory (as the doc's "a chain
// that runs it twice" allows); the young reservation is written, during the round, in the
// second one.
func TestAuditReservationOfSecondDataDirWrittenDuringRoundKeepsSibling(t *testing.T) {
	e := newEnv(t)
	d2 := filepath.Join(t.TempDir(), "data2")
	conf, _ := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": "net1", "plugins": []any{
		map[string]any{"type": "host-local", "ipam": map[string]any{"type": "host-local", "dataDir": e.data, "ranges": []any{[]any{map[string]any{"subnet": "10.0.0.0/24"}}}}},
		map[string]any{"type": "host-local", "ipam": map[string]any{"type": "host-local", "dataDir": d2, "ranges": []any{[]any{map[string]any{"subnet": "10.1.0.0/24"}}}}},
	}})
	e.writeConf(t, "10-net1.conflist", conf)
	old := time.Now().Add(-time.Hour)
	e.reserve(t, "net1", "10.0.0.1", "c0", "eth0", old)
	e.reserve(t, "net1", "10.0.0.2", "c1", "eth0", old)
	young := filepath.Join(d2, "net1", "10.1.0.5")
	rt := &fakeRuntime{list: func(n int) ([]*runtimeapi.PodSandbox, error) {
		if n == 2 { // right before the DEL of 10.0.0.2: host-local (the chain's second) reserves for c1/eth0
			os.MkdirAll(filepath.Dir(young), 0o755)
			if err := os.WriteFile(young, []byte("c1\r\neth0"), 0o644); err != nil {
				t.Error(err)
			}
		}
		return nil, nil
	}}
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	runRound(t, c, func() bool {
		rt.mu.Lock()
		n := rt.calls
		rt.mu.Unlock()
		return n >= 2 && roundOver(c, "10.0.0.2")
	})
	if !testcni.Exists(young) {
		st := address(c, "10.0.0.2")
		t.Fatalf("a reservation of c1/eth0 written right before the DEL of its sibling was released by that DEL; the sibling's page: %+v", st.Reservations)
	}
}
