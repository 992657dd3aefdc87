package crossings_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// Options.DestroyRate: a PU whose turn has come and whose check learns nothing is read again at each tick: once a
// SweepInterval when that is under half a second (here 100 ms: about ten times a second), not once or twice a second.
func TestAuditATurnComeIsReadAtEachTickOfAShortInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		pol := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cl, pol, deletion.Options{NodeName: "n", DestroyRate: 0.5, DestroyBurst: 1,
			SweepInterval: 100 * time.Millisecond})
		a, b := cl.CreatePod(key("a"), "n", ""), cl.CreatePod(key("b"), "n", "")
		for _, p := range []ports.PU{a, b} {
			if err := e.Track(p); err != nil {
				t.Fatal(err)
			}
		}
		deletiontest.Start(t, e)
		deletiontest.Advance(time.Second)
		cl.DeletePod(a.Pod)
		e.TriggerPod(a.Pod)
		deletiontest.Advance(10 * time.Millisecond)
		cl.DeletePod(b.Pod)
		e.TriggerPod(b.Pod)
		deletiontest.Advance(10 * time.Millisecond)
		if pol.CallCount() != 1 || e.Backlog().RateLimited != 1 {
			t.Fatalf("a destroyed, b waiting its turn: %d destroys, %d rate-limited", pol.CallCount(), e.Backlog().RateLimited)
		}
		cl.FailAllReads(errors.New("API server down"))
		deletiontest.Advance(3 * time.Second) // b's turn has come (2 s after a's)
		r0 := cl.Reads(b.Pod)
		deletiontest.Advance(5 * time.Second)
		if n := cl.Reads(b.Pod) - r0; n < 40 || n > 55 {
			t.Fatalf("a PU whose turn has come, its reads failing, was read %d times in 5 s; want once a SweepInterval of 100 ms", n)
		}
	})
}
