package beforedel_test

import (
	"slices"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// Options.DryRun: "Its rounds go as a real round does, the rate's turns waited for and each reservation decided again
// right before its DEL would run." One container with two reservations (dual stack), rate 1/s, burst 1: a real round
// waits two turns (one per reservation its one DEL releases); the dry run waits three, and asks the runtime again.
func TestAuditDryRunRoundTakesMoreTurnsThanRealRound(t *testing.T) {
	round := func(dry bool) (time.Duration, int) {
		e, files := dualStack(t)
		rt := &fakeRuntime{}
		o := newObs()
		opts := e.opts(rt, o)
		opts.ReservationRate, opts.ReservationBurst, opts.DryRun = 1, 1, dry
		c, err := cni.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		oneRound(t, c, func() bool {
			if dry {
				return len(c.WouldFree()) == 2
			}
			n := 0
			for _, ev := range o.list() {
				if ev == "freed aud NoSandbox" {
					n++
				}
			}
			return n == 2 && !slices.ContainsFunc(files, testcni.Exists)
		}, 20*time.Second)
		return time.Since(start), rt.calls()
	}
	realTook, realCalls := round(false)
	dryTook, dryCalls := round(true)
	t.Logf("real round %v (%d lists of the runtime), dry run %v (%d lists)", realTook, realCalls, dryTook, dryCalls)
	if dryTook > realTook+500*time.Millisecond || dryCalls != realCalls {
		t.Fatalf("the dry run's round took %v and listed the runtime %d times; the real round %v and %d times", dryTook, dryCalls, realTook, realCalls)
	}
}
