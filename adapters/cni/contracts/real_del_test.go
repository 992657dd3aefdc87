package contracts_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/internal/testnode"
)

// docs/sdk/cni-freeing.md:3-4 and row 4 (:21): a gone pod's dead sandbox (its namespace gone) is freed with the
// plugins' own DEL, without a namespace: the real bridge (which, without one, only runs its IPAM's DEL) and
// host-local release the address, and libcni removes the entry.
func TestHoldsRealBridgeHostLocalDelFreesDeadSandbox(t *testing.T) {
	e := realEnv(t)
	for _, p := range []string{"bridge", "host-local"} {
		if _, err := os.Stat(filepath.Join(realPlugins, p)); err != nil {
			testnode.Unavailable(t, "no real %s in CNI_PLUGINS_DIR (make test builds them): %v", p, err)
		}
	}
	conf, _ := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": "net1", "plugins": []any{map[string]any{
		"type": "bridge", "bridge": "pswc0", "isGateway": false, "ipMasq": false,
		"ipam": map[string]any{"type": "host-local", "dataDir": e.data, "ranges": []any{[]any{map[string]any{"subnet": "10.9.0.0/16"}}}},
	}}})
	e.writeConf("10-net1.conflist", conf)
	e.writeEntry("net1", "deadsb1", "eth0", e.goneNetNS("deadsb1"), "uid-gone", conf, "10.9.0.5")
	res := e.writeReservation(e.data, "net1", "10.9.0.5", "deadsb1", "eth0", time.Second)
	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.PluginDirs = []string{realPlugins}
	c, err := cni.New(o)
	must(t, err)
	if err := destroyGone(t, c, "uid-gone", "deadsb1"); err != nil {
		t.Fatalf("DestroyPU: %v", err)
	}
	if _, err := os.Stat(res); !os.IsNotExist(err) {
		t.Fatalf("reservation still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.cache, "results", "net1-deadsb1-eth0")); !os.IsNotExist(err) {
		t.Fatalf("entry still there: %v", err)
	}
	if f := testcni.Address(t, c, "10.9.0.5").Freed; len(f) != 1 || f[0].Decision.Row != 4 {
		t.Fatalf("page freed %+v", f)
	}
}
