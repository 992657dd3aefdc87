package beforedel_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// reentrant calls back into the Collector from each Observer method.
type reentrant struct {
	*obs
	c func() *cni.Collector
}

func (r *reentrant) poke() {
	c := r.c()
	_ = c.WouldFree()
	_, _ = c.ListPUs(context.Background())
	c.AddressHandler().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/?ip=10.77.0.5", nil))
	_ = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "nobody", Pod: types.NamespacedName{Namespace: "d", Name: "n"}, Reason: ports.ReasonPodGone})
	_, _ = c.SandboxDead(context.Background(), podOf("nobody"), "x")
}
func (r *reentrant) ReservationFreed(n, why string)     { r.poke(); r.obs.ReservationFreed(n, why) }
func (r *reentrant) ReservationWouldFree(n, why string) { r.poke(); r.obs.ReservationWouldFree(n, why) }
func (r *reentrant) ReservationNetwork(n string)        { r.poke(); r.obs.ReservationNetwork(n) }
func (r *reentrant) ReservationReported(n, why string)  { r.poke(); r.obs.ReservationReported(n, why) }
func (r *reentrant) ReservationFreeFailed(n, why string) {
	r.poke()
	r.obs.ReservationFreeFailed(n, why)
}

// "Options.Observer ... Its methods are called from Resync's goroutine and must not block": one that calls back into
// the Collector (WouldFree, ListPUs, AddressHandler, DestroyPU, SandboxDead) is not deadlocked, real round and dry run.
func TestAuditHoldsObserverCallsBack(t *testing.T) {
	for _, dry := range []bool{false, true} {
		e, files := dualStack(t)
		e.reserve(t, "gone", "10.99.0.1", "deadbeef", "eth0", time.Hour) // reported (ConfigGone)
		var c *cni.Collector
		o := &reentrant{obs: newObs(), c: func() *cni.Collector { return c }}
		opts := e.opts(&fakeRuntime{}, o)
		opts.DryRun = dry
		var err error
		c, err = cni.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		oneRound(t, c, func() bool {
			ev := o.list()
			return slices.Contains(ev, "freed aud NoSandbox") && !testcni.Exists(files[1]) || slices.Contains(ev, "would aud NoSandbox") && len(c.WouldFree()) == 2
		}, 20*time.Second)
		t.Logf("dry %v: %v", dry, o.list())
	}
}
