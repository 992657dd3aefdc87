package contracts_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/time/rate"

	"github.com/podsweeper/podsweeper/deletion"
)

// deletion/options.go:133-135 (Options.DestroyBurst): "A burst of more turns than DestroyRate gives in a year
// (MaxDuration) is that many", with options.go:118-119 (DestroyRate): "in any window of w seconds, at most
// DestroyRate*w + DestroyBurst start".
//
// One destroy a day gives 365 turns in a year; a DestroyBurst of 1000 is therefore a burst of 365, and at most 365
// DestroyPU calls may start at once. 400 PUs whose pods are gone are swept for one second: 366 start.
func TestBurstCappedAtAYearsTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		perDay := rate.Limit(1.0 / (24 * 60 * 60))
		yearTurns := int(float64(perDay) * deletion.MaxDuration.Seconds()) // 365
		e := newEngine(t, w, deletion.Options{DestroyRate: perDay, DestroyBurst: 1000})
		for i := range 400 {
			n := fmt.Sprintf("p%03d", i)
			if err := e.Track(w.add(n, "uid-"+n, "")); err != nil {
				t.Fatal(err)
			}
			w.del(n)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		e.Sweep(ctx) // waits for the turns of the others until ctx ends
		if got := len(w.destroyed()); got > yearTurns {
			t.Fatalf("%d DestroyPU calls started within a second at one destroy a day; the burst of 1000 is a year's turns, %d",
				got, yearTurns)
		}
	})
}
