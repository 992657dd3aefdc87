package contracts_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// docs/sdk/cni-freeing.md:99-102: the page tells "each reservation's row and what its last round did with it";
// addresses.go ReservationStatus.State: "freed", or "kept: decided again before its DEL". A dual-stack container's
// two reservations: the DEL of the first releases both (host-local releases every address of the container and
// interface); an operator sets disableGC on the network meanwhile, so the second is kept when decided again. The
// page tells the second "kept", and nothing tells it freed, while the collector's DEL released it.
func TestPageTellsKeptAReservationItsDELFreed(t *testing.T) {
	e := newEnv(t)
	plug := filepath.Join(e.plugins, "relplug")
	dis, _ := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": "net1", "disableGC": true, "plugins": []any{map[string]any{
		"type": "relplug", "ipam": map[string]any{"type": "host-local", "dataDir": e.data}}}})
	script := "#!/bin/sh\ncat >/dev/null\necho \"$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME\" >> " + e.calls + "\n" +
		"if [ \"$CNI_COMMAND\" = DEL ]; then for f in " + filepath.Join(e.data, "net1") + "/*; do\n" +
		"  [ \"$(cat \"$f\" | tr -d '\\r')\" = \"$(printf '%s\\n%s' \"$CNI_CONTAINERID\" \"$CNI_IFNAME\")\" ] && rm -f \"$f\"\ndone\n" +
		"printf '%s' '" + string(dis) + "' > " + filepath.Join(e.conf, "10-net1.conflist") + "\nfi\nexit 0\n"
	must(t, os.WriteFile(plug, []byte(script), 0o755))
	conf, _ := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": "net1", "plugins": []any{map[string]any{
		"type": "relplug", "ipam": map[string]any{"type": "host-local", "dataDir": e.data}}}})
	e.writeConf("10-net1.conflist", conf)
	v4 := e.writeReservation(e.data, "net1", "10.9.0.7", "deadcontainer", "eth0", time.Hour)
	v6 := e.writeReservation(e.data, "net1", "fd00::7", "deadcontainer", "eth0", time.Hour)
	obs := &recObserver{}
	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.Observer = obs
	c, err := cni.New(o)
	must(t, err)
	sweepOnce(t, c, "10.9.0.7", "fd00::7")
	_, e4 := os.Stat(v4)
	_, e6 := os.Stat(v6)
	if !os.IsNotExist(e4) || !os.IsNotExist(e6) || len(e.dels()) != 1 {
		t.Fatalf("setup: v4 %v, v6 %v, DELs %v", e4, e6, e.dels())
	}
	st := testcni.Address(t, c, "fd00::7")
	if len(st.Reservations) == 1 && st.Reservations[0].State != "freed" && len(st.Freed) == 0 {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		t.Fatalf("fd00::7 was released by the collector's DEL (of 10.9.0.7's container and interface); the page tells it %q (row %d) and no free of it; Observer freed count %d",
			st.Reservations[0].State, st.Reservations[0].Decision.Row, obs.freed)
	}
}
