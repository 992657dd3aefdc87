package deletion_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/utils/clock"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

type countingClock struct {
	clock.RealClock
	now atomic.Int64
}

func (c *countingClock) Now() time.Time { c.now.Add(1); return time.Now() }

// docs/sdk/engine.md:12-13: "an engine with nothing due does not wake up" (after work, failures and a retry too).
func TestAuditHoldsIdleEngineDoesNotWakeUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := &countingClock{}
		cluster := deletiontest.NewCluster()
		pol := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cluster, pol, deletion.Options{Clock: cl})
		deletiontest.Start(t, e)
		a, b := cluster.CreatePod(nsKey("a"), "", ""), cluster.CreatePod(nsKey("b"), "", "")
		_, _ = e.Track(a), e.Track(b)
		cluster.FailReads(b.Pod, errors.New("boom"))
		deletiontest.Advance(10 * time.Second)
		e.Untrack(b.PUID)
		cluster.DeletePod(a.Pod)
		pol.FailNext(1, errors.New("busy"))
		e.TriggerPod(a.Pod)
		deletiontest.Advance(time.Minute)
		if e.Len() != 0 {
			t.Fatalf("%d PUs left", e.Len())
		}
		n := cl.now.Load()
		deletiontest.Advance(time.Hour)
		if d := cl.now.Load() - n; d != 0 {
			t.Errorf("an idle engine read its clock %d times in an hour", d)
		}
	})
}
