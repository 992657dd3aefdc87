package edges_test

import (
	"context"
	"sync"
	"testing"

	"github.com/podsweeper/podsweeper/internal/testcni"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type counts struct {
	mu                             sync.Mutex
	freed, failed, would, reported map[string]int
}

func newCounts() *counts {
	return &counts{freed: map[string]int{}, failed: map[string]int{}, would: map[string]int{}, reported: map[string]int{}}
}
func (c *counts) add(m map[string]int, k string)    { c.mu.Lock(); m[k]++; c.mu.Unlock() }
func (c *counts) ReservationFreed(n, r string)      { c.add(c.freed, n+"/"+r) }
func (c *counts) ReservationFreeFailed(n, r string) { c.add(c.failed, n+"/"+r) }
func (c *counts) ReservationWouldFree(n, r string)  { c.add(c.would, n+"/"+r) }
func (c *counts) ReservationReported(n, r string)   { c.add(c.reported, n+"/"+r) }
func (c *counts) ReservationNetwork(string)         {}

// TestHoldsObserverAgreesWithPage: one reservation freed, one whose DEL fails, one of a network whose config
// is gone: the Observer counts one of each, and the page tells "freed", "free failed" (with its error), "reported".
func TestHoldsObserverAgreesWithPage(t *testing.T) {
	e := newEnv(t)
	e.sweepPluginPre(`[ "$CNI_CONTAINERID" = fail ] && { echo '{"code":11,"msg":"boom"}'; exit 1; };`, "")
	e.netConf("10-net1.conflist", "net1", "")
	e.reservation("net1", "10.1.0.80", "ok1")
	e.reservation("net1", "10.1.0.81", "fail")
	e.reservation("gone", "10.1.0.82", "g1")
	l := &logs{}
	o := e.opts(l)
	obs := newCounts()
	o.Observer = obs
	o.Runtime = &countingRuntime{f: func(context.Context, int) ([]*runtimeapi.PodSandbox, error) { return nil, nil }}
	c := newCollector(t, o)
	resyncUntil(t, c, func() bool {
		st := testcni.Address(t, c, "10.1.0.81")
		return len(st.Reservations) == 1 && st.Reservations[0].State == "free failed"
	})
	want := map[string]string{"10.1.0.80": "freed", "10.1.0.81": "free failed", "10.1.0.82": "reported"}
	for ip, state := range want {
		st := testcni.Address(t, c, ip)
		if len(st.Reservations) != 1 || st.Reservations[0].State != state {
			t.Errorf("%s: want state %q: %s", ip, state, dump(st.Reservations))
		}
	}
	if obs.freed["net1/NoSandbox"] != 1 || obs.failed["net1/NoSandbox"] != 1 || obs.reported["gone/ConfigGone"] != 1 {
		t.Errorf("observer: freed %v failed %v reported %v", obs.freed, obs.failed, obs.reported)
	}
}
