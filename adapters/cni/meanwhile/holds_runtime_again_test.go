package meanwhile_test

import (
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// cni-freeing.md:94-98: right before each DEL, "whenever time has passed since the round's list of the runtime (a turn
// waited for under Options.ReservationRate ...), the runtime again (row 15: a sandbox it lists again)".
func TestAuditHoldsRuntimeAskedAgainAfterTurn(t *testing.T) {
	e := newEnv(t, testcni.PluginsDir(t))
	testcni.Write(t, filepath.Join(e.conf, "10-n.conflist"), `{"cniVersion":"1.0.0","name":"n","plugins":[
 {"type":"host-local","ipam":{"type":"host-local","dataDir":"`+e.data+`","ranges":[[{"subnet":"10.1.0.0/24"}]]}}]}`)
	dir := filepath.Join(e.data, "n")
	reserve(t, filepath.Join(dir, "10.1.0.5"), "aaaa\r\neth0")
	second := filepath.Join(dir, "10.1.0.6")
	reserve(t, second, "bbbb\r\neth0")
	rt := &fakeRuntime{}
	o := &obs{}
	c := e.collector(t, func(op *cni.Options) {
		op.Runtime = rt
		op.Observer = o
		op.ReservationRate = 0.5
		op.ReservationBurst = 1
	})
	listed := false
	var at time.Time
	resyncUntil(t, c, 10*time.Second, func() bool {
		if !listed && len(o.freedTimes()) >= 1 {
			rt.mu.Lock()
			rt.sbs = []*runtimeapi.PodSandbox{{Id: "bbbb", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}}
			rt.mu.Unlock()
			listed, at = true, time.Now()
		}
		return listed && time.Since(at) > 3*time.Second
	})
	if !testcni.Exists(second) || len(o.freedTimes()) != 1 {
		t.Fatal("a reservation whose sandbox the runtime lists again was freed after its turn")
	}
}
