package cacheentries_test

import (
	"context"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// answers lists nothing at its first call, then sandbox "bbbb" stopped.
type answers struct{ fakeRuntime }

func (a *answers) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	a.mu.Lock()
	a.n++
	n := a.n
	a.mu.Unlock()
	if n == 1 {
		return nil, nil
	}
	return []*runtimeapi.PodSandbox{sb("bbbb", "u", false, time.Now())}, nil
}

// cni-freeing.md:82-87: right before each DEL, once time has passed since the round's list (a DEL run before
// it), the runtime is asked again (row 15: a sandbox it lists again).
func TestHoldsRecheckAsksRuntimeAfterADel(t *testing.T) {
	e := newEnv(t)
	e.write(e.conf+"/10-podnet.conflist", hostLocalConf("podnet", e.data, ""))
	a := e.reservation(e.data, "podnet", "10.88.0.21", "aaaa", "eth0", time.Now().Add(-time.Hour))
	b := e.reservation(e.data, "podnet", "10.88.0.22", "bbbb", "eth0", time.Now().Add(-time.Hour))
	o := newObs()
	opts := e.opts(&answers{})
	opts.Observer = o
	c, err := cni.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	st := oneRound(t, c, "10.88.0.22")
	if testcni.Exists(a) || !testcni.Exists(b) {
		t.Fatalf("a there %v, b there %v", testcni.Exists(a), testcni.Exists(b))
	}
	if len(st.Reservations) != 1 || !strings.HasPrefix(st.Reservations[0].State, "kept: decided again") {
		t.Errorf("page: %+v", st.Reservations)
	}
	if o.get(o.freed, "podnet/NoSandbox") != 1 {
		t.Errorf("observer freed %d", o.get(o.freed, "podnet/NoSandbox"))
	}
}

// cni-freeing.md:116: "a reservation kept by row 14 because the runtime did not answer says so".
func TestHoldsRow14RuntimeFailedSaysSo(t *testing.T) {
	e := newEnv(t)
	e.write(e.conf+"/10-podnet.conflist", hostLocalConf("podnet", e.data, ""))
	a := e.reservation(e.data, "podnet", "10.88.0.21", "aaaa", "eth0", time.Now().Add(-time.Hour))
	c, err := cni.New(e.opts(&fakeRuntime{err: context.DeadlineExceeded}))
	if err != nil {
		t.Fatal(err)
	}
	st := oneRound(t, c, "10.88.0.21")
	if !testcni.Exists(a) || len(st.Reservations) != 1 || st.Reservations[0].Decision.Row != 14 || !strings.Contains(st.Reservations[0].Decision.Why, "did not answer") {
		t.Errorf("page: %+v", st.Reservations)
	}
}
