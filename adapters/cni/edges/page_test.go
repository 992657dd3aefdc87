package edges_test

import (
	"context"
	"errors"
	"testing"

	"github.com/podsweeper/podsweeper/internal/testcni"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestThePageTellsAReservationKeptUndecidedBeforeItsDEL: a round decides two reservations free; the first is freed, and
// right before the second's DEL the runtime, asked again (time passed: a DEL ran), cannot answer. The round keeps
// the second and ends. The page must tell what the round did with it: kept by no row (row -1, and why), not
// "to free" (waiting for its turn) and row 18's "free".
func TestThePageTellsAReservationKeptUndecidedBeforeItsDEL(t *testing.T) {
	e := newEnv(t)
	e.sweepPlugin("")
	e.netConf("10-net1.conflist", "net1", "")
	e.reservation("net1", "10.1.0.5", "aaa")
	p2 := e.reservation("net1", "10.1.0.6", "bbb")
	l := &logs{}
	o := e.opts(l)
	rt := &countingRuntime{f: func(_ context.Context, n int) ([]*runtimeapi.PodSandbox, error) {
		if n >= 2 {
			return nil, errors.New("runtime unavailable")
		}
		return nil, nil
	}}
	o.Runtime = rt
	c := newCollector(t, o)
	resyncUntil(t, c, func() bool { return l.has("host-local's reservations kept") })
	st := testcni.Address(t, c, "10.1.0.6")
	if len(st.Reservations) != 1 {
		t.Fatalf("page of 10.1.0.6 tells %d reservations, want 1:\n%s", len(st.Reservations), dump(st))
	}
	r := st.Reservations[0]
	if r.File != p2 {
		t.Fatalf("unexpected file %s", r.File)
	}
	if r.State == "to free" || r.Decision.Row != -1 {
		t.Errorf("the round ended and kept 10.1.0.6 (its recheck could not ask the runtime), but the page tells state %q, row %d, verdict %q, why %q; want it kept by no row (row -1) saying why\nlog:\n%s",
			r.State, r.Decision.Row, r.Decision.Verdict, r.Decision.Why, l)
	}
}

// TestThePageTellsAReservationKeptForAConfigBeingWritten: as above, but what cannot be read right before the second DEL
// is ConfDir: the first DEL (a plugin) leaves the network's config half-written.
func TestThePageTellsAReservationKeptForAConfigBeingWritten(t *testing.T) {
	e := newEnv(t)
	// The first DEL leaves the network's config being written (not whole JSON yet).
	e.sweepPlugin(`printf '{"cniVersion":"1.0.0","name":"net1","plugins":[' > ` + e.conf + `/20-net1.conflist`)
	e.netConf("10-net1.conflist", "net1", "")
	e.reservation("net1", "10.1.0.5", "aaa")
	e.reservation("net1", "10.1.0.6", "bbb")
	l := &logs{}
	o := e.opts(l)
	o.Runtime = &countingRuntime{f: func(context.Context, int) ([]*runtimeapi.PodSandbox, error) { return nil, nil }}
	c := newCollector(t, o)
	resyncUntil(t, c, func() bool { return l.has("host-local's reservations kept") })
	st := testcni.Address(t, c, "10.1.0.6")
	if len(st.Reservations) != 1 {
		t.Fatalf("page of 10.1.0.6 tells %d reservations, want 1:\n%s", len(st.Reservations), dump(st))
	}
	r := st.Reservations[0]
	if r.State == "to free" || r.Decision.Row != -1 {
		t.Errorf("the round ended and kept 10.1.0.6 (ConfDir's config of net1 was being written right before its DEL), but the page tells state %q, row %d, verdict %q, why %q; want it kept by no row (row -1) saying why\nlog:\n%s",
			r.State, r.Decision.Row, r.Decision.Verdict, r.Decision.Why, l)
	}
}
