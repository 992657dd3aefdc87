package confchange_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// doc.go:138: "At most Options.ReservationRate are freed a second."; Options.ReservationRate: "at most how many
// host-local reservations Resync frees a second, whatever goes wrong upstream ... so the rate's bound over a second
// holds while a single DEL may free more than the burst". With a rate of 1 a second and a burst of 1, net1's config
// is rewritten while the round runs to run host-local in a second data directory too, which holds 5 reservations of
// the second container. Its DEL, taken one turn, frees them all at once with its own: 7 reservations in about a
// second, where the bound allows 2.
func TestTheRateHoldsWhenADataDirectoryIsNamedMidRound(t *testing.T) {
	e := newEnv(t)
	a, b, link := setupSwap(t, e, false)
	os.Remove(link)
	d3 := filepath.Join(e.root, "data3", "net1")
	old := time.Now().Add(-time.Hour)
	var extra []string
	for i := 0; i < 5; i++ {
		p := filepath.Join(d3, fmt.Sprintf("10.9.0.%d", 100+i))
		os.WriteFile(p, []byte("resvb002\r\neth0"), 0o644)
		os.Chtimes(p, old, old)
		extra = append(extra, p)
	}
	c := e.collector(func(o *cni.Options) {
		o.ReservationRate = 1
		o.ReservationBurst = 1
		o.ResyncInterval = 500 * time.Millisecond
	})
	start := time.Now()
	var firstAll time.Duration
	resyncUntil(t, c, 20*time.Second, func() bool {
		for _, p := range append([]string{a, b}, extra...) {
			if exists(p) {
				return false
			}
		}
		firstAll = time.Since(start)
		return true
	})
	freed := 0
	for _, p := range append([]string{a, b}, extra...) {
		if !exists(p) {
			freed++
		}
	}
	if firstAll == 0 {
		t.Fatalf("setup: not all freed (%d)", freed)
	}
	if bound := 1 + firstAll.Seconds()*1; float64(freed) > bound+0.5 {
		t.Fatalf("%d reservations freed in %v under a rate of 1/s and a burst of 1 (bound ~%.1f)", freed, firstAll, bound)
	}
}
