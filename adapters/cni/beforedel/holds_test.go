package beforedel_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// "ConfDir is read again right before each DEL ...: a disableGC set ... while the round runs" keeps the reservation.
func TestAuditHoldsDisableGCSetMidRound(t *testing.T) {
	e := newEnv(t)
	ranges := [][]map[string]string{{{"subnet": "10.77.0.0/24"}}}
	e.hostLocalConf(t, "10-aud.conflist", "aud", ranges, nil)
	res := e.reserve(t, "aud", "10.77.0.5", "c0ffee01", "eth0", time.Hour)
	rt := &fakeRuntime{hook: func(n int) {
		if n == 1 {
			e.hostLocalConf(t, "10-aud.conflist", "aud", ranges, map[string]any{"disableGC": true})
		}
	}}
	o := newObs()
	c, err := cni.New(e.opts(rt, o))
	if err != nil {
		t.Fatal(err)
	}
	oneRound(t, c, func() bool { return rt.calls() >= 1 }, 20*time.Second)
	time.Sleep(300 * time.Millisecond)
	if !testcni.Exists(res) || slices.Contains(o.list(), "freed aud NoSandbox") {
		t.Fatalf("freed: %v", o.list())
	}
}

// "At most Options.ReservationRate are freed a second", a DEL of several reservations waiting a turn for each.
func TestAuditHoldsReservationRate(t *testing.T) {
	e := newEnv(t)
	e.hostLocalConf(t, "10-aud.conflist", "aud", [][]map[string]string{{{"subnet": "10.77.0.0/24"}}, {{"subnet": "fd77::/64"}}}, nil)
	var files []string
	for i := range 2 {
		id := fmt.Sprintf("c0ffee%02d", i)
		files = append(files, e.reserve(t, "aud", fmt.Sprintf("10.77.0.%d", 10+i), id, "eth0", time.Hour),
			e.reserve(t, "aud", fmt.Sprintf("fd77::%d", 10+i), id, "eth0", time.Hour))
	}
	o := newObs()
	opts := e.opts(&fakeRuntime{}, o)
	opts.ReservationRate, opts.ReservationBurst = 4, 1
	c, err := cni.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	oneRound(t, c, func() bool { return !slices.ContainsFunc(files, testcni.Exists) }, 20*time.Second)
	if el := time.Since(start); el < 700*time.Millisecond {
		t.Fatalf("4 reservations freed in %v at 4/s, burst 1", el)
	}
}

// Row 16: where host-local releases the container more than once in one DEL (a range set per family), a file naming
// its container alone keeps the container's reservations, and the file stays.
func TestAuditHoldsLegacyFileKeepsDualStack(t *testing.T) {
	e, files := dualStack(t)
	legacy := filepath.Join(e.data, "aud", "10.77.0.200")
	if err := os.WriteFile(legacy, []byte("c0ffee01"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(legacy, old, old)
	rt := &fakeRuntime{}
	o := newObs()
	c, err := cni.New(e.opts(rt, o))
	if err != nil {
		t.Fatal(err)
	}
	oneRound(t, c, func() bool { return rt.calls() >= 1 }, 20*time.Second)
	time.Sleep(300 * time.Millisecond)
	if !testcni.Exists(legacy) || !testcni.Exists(files[0]) || !testcni.Exists(files[1]) {
		t.Fatalf("legacy %v, %v %v; events %v", testcni.Exists(legacy), testcni.Exists(files[0]), testcni.Exists(files[1]), o.list())
	}
}
