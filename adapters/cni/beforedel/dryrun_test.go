package beforedel_test

import (
	"context"
	"errors"
	"slices"
	"sort"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

type failingAfter struct {
	fakeRuntime
	okCalls int
}

func (f *failingAfter) ListPodSandbox(ctx context.Context, flt *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	f.fakeRuntime.ListPodSandbox(ctx, flt)
	if f.calls() > f.okCalls {
		return nil, errors.New("rpc error: code = Unavailable desc = connection refused")
	}
	return nil, nil
}

// dualStack sets up one container with two reservations (v4 and v6) on one interface, both old.
func dualStack(t *testing.T) (*env, []string) {
	e := newEnv(t)
	e.hostLocalConf(t, "10-aud.conflist", "aud", [][]map[string]string{{{"subnet": "10.77.0.0/24"}}, {{"subnet": "fd77::/64"}}}, nil)
	a := e.reserve(t, "aud", "10.77.0.5", "c0ffee01", "eth0", time.Hour)
	b := e.reserve(t, "aud", "fd77::5", "c0ffee01", "eth0", time.Hour)
	return e, []string{a, b}
}

// WouldFree "lists the reservations the last resync would have freed" / "exactly those a resync without the dry
// run would have DELed then": a runtime that fails after the round's list.
func TestAuditDryRunWouldFreeDivergesFromRealRound(t *testing.T) {
	// The real round.
	e, files := dualStack(t)
	rt := &failingAfter{okCalls: 1}
	o := newObs()
	c, err := cni.New(e.opts(rt, o))
	if err != nil {
		t.Fatal(err)
	}
	oneRound(t, c, func() bool {
		ev := o.list()
		return !testcni.Exists(files[0]) && !testcni.Exists(files[1]) || slices.Contains(ev, "failed aud NoSandbox")
	}, 20*time.Second)
	var realFreed []string
	for _, f := range files {
		if !testcni.Exists(f) {
			realFreed = append(realFreed, f)
		}
	}
	t.Logf("real round: events %v, freed %v, runtime calls %d", o.list(), realFreed, rt.calls())

	// The same node, in a dry run.
	e2, files2 := dualStack(t)
	rt2 := &failingAfter{okCalls: 1}
	o2 := newObs()
	opts := e2.opts(rt2, o2)
	opts.DryRun = true
	c2, err := cni.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	oneRound(t, c2, func() bool {
		return len(c2.WouldFree()) > 0 && rt2.calls() >= 2 || rt2.calls() >= 1 && len(c2.WouldFree()) > 0
	}, 20*time.Second)
	time.Sleep(200 * time.Millisecond)
	var would []string
	for _, r := range c2.WouldFree() {
		would = append(would, r.Path())
	}
	t.Logf("dry run: events %v, would free %v, runtime calls %d", o2.list(), would, rt2.calls())
	rel := func(fs []string, e *env) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f[len(e.data):])
		}
		sort.Strings(out)
		return out
	}
	if got, want := rel(would, e2), rel(realFreed, e); !slices.Equal(got, want) {
		t.Fatalf("a dry run would free %v; the same round without the dry run freed %v", got, want)
	}
	_ = files2
}
